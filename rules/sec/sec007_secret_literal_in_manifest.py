"""
## What it does
Finds secrets written as literals: a container `env[].value` whose name is a secret name
(`HF_TOKEN`, `HUGGING_FACE_HUB_TOKEN`, `NGC_API_KEY`, `OPENAI_API_KEY`,
`ANTHROPIC_API_KEY`, `AWS_SECRET_ACCESS_KEY`, `LITELLM_MASTER_KEY`, `WANDB_API_KEY`,
`*_PASSWORD`, `*_TOKEN`, `*_API_KEY`, a `DATABASE_URL` with a password) or whose value has
a credential's shape, named for its issuer in the message: `sk-ant-…` (Anthropic),
`sk-proj-…`, `sk-svcacct-…`, `sk-admin-…` (OpenAI), other `sk-…` (OpenAI-style, as LiteLLM
keys), `hf_…` (Hugging Face), `AKIA…`/`ASIA…` (AWS access key IDs, long-term/temporary),
`nvapi-…` (NVIDIA), GitHub, GitLab and Slack tokens, Google API keys (`AIza…`), JSON Web
Tokens and PEM private keys. The same checks run over ConfigMap data (for example a LiteLLM config with
`master_key: sk-…`), RayJob `runtimeEnvYAML` and RayService `serveConfigV2` `env_vars`.
Placeholders and templating (`changeme`, `${HF_TOKEN}`, `<your-token>`) are reported as
info; references (`$(VAR)`, `os.environ/VAR`, file paths) are not reported.

Severity: info when the value is a placeholder (changeme, <token>, ${VAR}), not a real
secret.

## Why is this bad?
Anything in a manifest ends up in Git history, CI logs, `kubectl get -o yaml` output and
every reader of the namespace's ConfigMaps. A Hugging Face or NGC token leaked this way
gives access to gated models and private repositories; an `sk-…` key bills your account.
Secrets (ideally synced from a secret manager by an ExternalSecret) keep the value out of
the manifest and can be rotated without a redeploy.

## Example
```yaml
apiVersion: apps/v1
kind: Deployment
metadata:
  name: vllm
spec:
  template:
    spec:
      containers:
        - name: vllm
          image: vllm/vllm-openai:v0.9.2
          env:
            - name: HUGGING_FACE_HUB_TOKEN
              value: hf_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789
```

## Use instead
```yaml
apiVersion: apps/v1
kind: Deployment
metadata:
  name: vllm
spec:
  template:
    spec:
      containers:
        - name: vllm
          image: vllm/vllm-openai:v0.9.2
          env:
            - name: HUGGING_FACE_HUB_TOKEN
              valueFrom:
                secretKeyRef:
                  name: hf-token
                  key: token
```

## Options
None. Names, value shapes and placeholders are data (`ailint/data/secrets.json`).

## Fix
Unsafe, for container env only: replaces `value:` with `valueFrom.secretKeyRef` naming
the Secret `<object name>-secrets` and the key `<ENV NAME>`. The linter cannot create the
Secret safely (the value would stay in the file); create it first (or an ExternalSecret),
then rotate the leaked value. ConfigMap and Ray runtime-env findings have no fix.

## References
- https://kubernetes.io/docs/concepts/configuration/secret/#using-secrets-as-environment-variables
- https://external-secrets.io/latest/
- https://docs.litellm.ai/docs/proxy/prod
"""

from __future__ import annotations

from collections.abc import Iterator

from ailint.core.model import Finding, FixAvailability, K8sObject, Severity, Span, as_dict, iter_dicts
from ailint.core.rule import Options, Rule, make_fix
from ailint.domain.agents import env_value_to_secret_ref, redact, scan_config_text, secret_kind
from ailint.domain.context import Context
from ailint.domain.extract import POD_KINDS, all_containers

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

RULE = Rule(
    code="SEC007",
    name="secret-literal-in-manifest",
    severity=Severity.ERROR,
    summary="A token, API key or password is written as a literal in the manifest",
    kinds=(*POD_KINDS, "ConfigMap"),
    fix=FixAvailability.SOMETIMES,
    tags=("security", "secrets"),
    precision="high",
    security_severity=8.0,
    why_when=(  # the harm of each condition, not the remedy sentence ("Secrets ... keep the value out")
        (r"holds a placeholder", "Anything in a manifest ends up"),
        (r"Hugging Face|NGC|NVIDIA API key|\(sk-", "A Hugging Face or NGC token leaked"),
        (r"", "Anything in a manifest ends up"),
    ),
)


def _short(value: str) -> str:
    value = redact(value)  # a placeholder-looking real key is masked before it is cut short
    return value if len(value) <= 24 else value[:21] + "..."


def check(obj: K8sObject, ctx: Context, opts: Options) -> Iterator[Finding]:
    if obj.kind == "ConfigMap":
        yield from _config_map(obj)
        return
    secret_name = f"{obj.name or 'app'}-secrets"
    for c in all_containers(obj):
        for i, e in iter_dicts(c.data.get("env")):
            if "value" not in e or not isinstance(e.get("name"), str):
                continue
            hit = secret_kind(e["name"], e.get("value"))
            if hit is None:
                continue
            name = e["name"]
            path = c.path_of("env", i)
            fix = make_fix(
                f"read {name} from Secret {secret_name} (key {name}); create that Secret first",
                [env_value_to_secret_ref(obj, path, secret_name, name)],
                unsafe=True,
            )
            where = f"env {name} in container {c.name or '?'}"
            if hit.placeholder:
                yield RULE.finding(
                    obj,
                    path + ("value",),
                    f"{where} holds a placeholder ({_short(str(e.get('value')))}); take it from a "
                    "Secret so a real value never lands in the manifest",
                    severity=Severity.INFO,
                    fix=fix,
                )
            else:
                yield RULE.finding(
                    obj,
                    path + ("value",),
                    f"{where} is a literal secret ({hit.by}); move it to a Secret "
                    "(valueFrom.secretKeyRef) and rotate it",
                    fix=fix,
                )
    spec = as_dict(obj.data.get("spec"))
    if obj.kind == "RayJob" and isinstance(spec.get("runtimeEnvYAML"), str):
        yield from _text_findings(obj, ("spec", "runtimeEnvYAML"), "runtimeEnvYAML")
    if obj.kind == "RayService" and isinstance(spec.get("serveConfigV2"), str):
        yield from _text_findings(obj, ("spec", "serveConfigV2"), "serveConfigV2")


def _config_map(obj: Any) -> Iterator[Finding]:
    for key, value in as_dict(obj.data.get("data")).items():
        if not isinstance(value, str):
            continue
        path = ("data", key)
        if "\n" not in value.strip():
            hit = secret_kind(str(key), value)
            if hit is None:
                continue
            if hit.placeholder:
                yield RULE.finding(
                    obj,
                    path,
                    f"ConfigMap key {key} holds a placeholder secret "
                    f"({_short(value.strip())}); keep credentials in a Secret",
                    severity=Severity.INFO,
                )
            else:
                yield RULE.finding(
                    obj,
                    path,
                    f"ConfigMap key {key} is a literal secret ({hit.by}); ConfigMaps "
                    "are not secret: move it to a Secret and rotate it",
                )
            continue
        yield from _text_findings(obj, path, f"ConfigMap key {key}")


def _text_findings(obj: Any, path: tuple, where: str) -> Iterator[Finding]:
    text = obj.get(*path)
    after = 0  # findings come in line order: each one is searched after the previous match
    for key, value, hit in scan_config_text(text):
        span, after = _span_of(obj, path, value, after)
        label = f"{key} in {where}" if key else where
        if hit.placeholder:
            yield RULE.finding(
                obj,
                path,
                f"{label} holds a placeholder secret ({_short(value)}); take the real "
                "value from a Secret or the environment",
                severity=Severity.INFO,
                span=span,
            )
        else:
            yield RULE.finding(
                obj,
                path,
                f"{label} is a literal secret ({hit.by}); reference a Secret or an "
                "environment variable instead and rotate it",
                span=span,
            )


def _span_of(obj: Any, path: tuple, value: str, after: int = 0) -> tuple[Span | None, int]:
    """The secret's own position inside a block scalar, when the raw text shows it, searched
    from offset `after` (so that a value written twice gets each finding at its own line),
    and the offset to search the next one from."""
    loc = obj.location(path)
    if loc is None or not value:
        return None, after
    src = obj.source
    i = src.text.find(value, max(loc.value_start, after), loc.value_end)
    if i < 0:
        return None, after
    line, col = src.position(i)
    eline, ecol = src.position(i + len(value))
    if eline != line:
        return None, i + len(value)
    return Span(line, col, line, ecol), i + len(value)
