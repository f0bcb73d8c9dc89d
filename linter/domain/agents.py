"""Helpers of the SEC rules about AI agents and secrets (SEC003 to SEC010).

- code-executing agent detection (`executes_code`), on top of `extract.is_agent_pod`;
- RuntimeClass classification (`runtime_class_of`, `is_sandbox_handler`);
- secret shapes from `data/secrets.json` (`secret_kind` for a literal env value,
  `scan_config_text` for config files kept in ConfigMaps and `runtimeEnvYAML` strings);
- long-lived credential shapes and short-lived identities for agents (`long_lived_credentials`,
  `short_lived_identity`);
- small text-edit helpers for fixes these rules share (`env_value_to_secret_ref`,
  `delete_seq_item`, `text_occurrences`).

Everything tolerates any shape and never raises.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import lru_cache
from itertools import accumulate

from ailint.core import pkgdata
from ailint.core.lazyre import lazy_re
from ailint.core.model import Edit, K8sObject, Path, as_dict, iter_dicts
from ailint.domain.extract import Container, PodTemplate
from ailint.domain.roles import is_agent_pod

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

CODE_EXEC_ANNOTATION = "ailint.io/code-execution"


# ---------------------------------------------------------------------------------------
# Code-executing agents
# ---------------------------------------------------------------------------------------
_CODE_EXEC_IMAGE = lazy_re(
    r"code[-_]?interpreter|jupyter|ipykernel|kernel[-_]?gateway|enterprise[-_]?gateway|"
    r"runtime[-_]?sandbox|sandbox[-_]?(exec|runtime|runner|server)|e2b|open[-_]?interpreter|openhands|opendevin|"
    r"swe[-_]?agent|code[-_]?(exec|runner|sandbox)|exec[-_]?server|pyodide|daytona"
)
_CODE_EXEC_CMD = lazy_re(
    r"\b(jupyter(-kernel|-server|-lab|-notebook)?|ipykernel(_launcher)?|kernel_gateway|jupyter_kernel_gateway|"
    r"enterprise_gateway|code[-_]interpreter|open-interpreter|interpreter --server|openhands|swe-agent)\b"
)


def executes_code(pod: PodTemplate) -> bool:
    """An agent pod that runs generated code: an agent-sandbox object, a code-interpreter,
    Jupyter-kernel or sandbox-exec image or entrypoint, or `ailint.io/code-execution: "true"`."""
    ann = pod.annotation(CODE_EXEC_ANNOTATION)
    if ann is not None:
        return str(ann).strip().lower() in ("true", "yes", "1")
    if not is_agent_pod(pod):
        return False
    obj = pod.obj
    if obj.kind in ("Sandbox", "SandboxTemplate") and "agents.x-k8s.io" in obj.group:
        return True
    for c in pod.containers(include_init=False):
        if _CODE_EXEC_IMAGE.search(c.image.lower()):
            return True
        head = " ".join(c.tokens[:12]).lower()
        if _CODE_EXEC_CMD.search(head):
            return True
    return False


# ---------------------------------------------------------------------------------------
# RuntimeClasses
# ---------------------------------------------------------------------------------------
_SANDBOX_HANDLER = lazy_re(r"^(runsc|gvisor)|kata|firecracker|^fc$|cloud-hypervisor|^clh$|^vm$|microvm")
_RUNC_HANDLER = lazy_re(r"^(runc|crun|youki|nvidia|nvidia-cdi|nvidia-legacy|docker|containerd)?$")
_GVISOR = lazy_re(r"^(runsc|gvisor)")


def is_sandbox_handler(handler: str) -> bool:
    return bool(_SANDBOX_HANDLER.search(handler.strip().lower()))


def is_runc_handler(handler: str) -> bool:
    return bool(_RUNC_HANDLER.match(handler.strip().lower()))


def is_gvisor_handler(handler: str) -> bool:
    return bool(_GVISOR.match(handler.strip().lower()))


@dataclass(slots=True)
class RuntimeClassInfo:
    """The RuntimeClass a pod names, and its handler when the RuntimeClass is in the run."""

    name: str
    obj: K8sObject | None  # None when the RuntimeClass is not in the run
    handler: str | None

    @property
    def node_selector(self) -> dict[str, Any]:
        if self.obj is None:
            return {}
        return as_dict(self.obj.get("scheduling", "nodeSelector"))


def runtime_class_of(pod: PodTemplate, ctx: Any) -> RuntimeClassInfo | None:
    """The pod's RuntimeClass (None when `runtimeClassName` is unset or empty)."""
    name = pod.spec.get("runtimeClassName")
    if not isinstance(name, str) or not name.strip():
        return None
    for rc in ctx.of_kind("RuntimeClass"):
        if rc.name == name and rc.group.startswith("node.k8s.io"):
            h = rc.data.get("handler")
            return RuntimeClassInfo(name, rc, h if isinstance(h, str) else "")
    return RuntimeClassInfo(name, None, None)


def sandbox_runtime_classes(ctx: Any) -> list[K8sObject]:
    return [
        rc
        for rc in ctx.of_kind("RuntimeClass")
        if rc.group.startswith("node.k8s.io")
        and isinstance(rc.data.get("handler"), str)
        and is_sandbox_handler(rc.data["handler"])
    ]


# ---------------------------------------------------------------------------------------
# Secret shapes (data/secrets.json)
# ---------------------------------------------------------------------------------------
@lru_cache(maxsize=1)
def secret_data() -> dict[str, Any]:
    return pkgdata.load_json("ailint.data", "secrets.json")


@lru_cache(maxsize=1)
def _compiled() -> dict[str, Any]:
    d = secret_data()
    # A line is a secret by its key only when the key holds one of these (a config key's
    # word, a secret name or suffix, a URL name): a text without any of them, and without
    # a value shape, has no secret line to look for (most config files).
    hints = _cover(w.lower() for w in (*d["config_keys"], *d["names"], *d["name_suffixes"], *d["url_names"]))
    shapes = "|".join(f"(?:{s['pattern']})" for s in d["value_shapes"])
    return {
        "names": set(d["names"]),
        "suffixes": tuple(d["name_suffixes"]),
        "not_secret": lazy_re(d["name_not_secret"]),
        "url_names": set(d["url_names"]),
        "url_pw": lazy_re(d["url_with_password"]),
        "shapes": [
            (s["name"], lazy_re(r"(?<![A-Za-z0-9_-])(" + s["pattern"] + r")(?![A-Za-z0-9_-])"))
            for s in d["value_shapes"]
        ],
        # One alternation answers "does any shape match?" in one pass (most values match
        # none); the ordered list above then names the first shape that does.
        "any_shape": lazy_re(r"(?<![A-Za-z0-9_-])(?:" + shapes + r")(?![A-Za-z0-9_-])"),
        # The same alternation without its lookarounds matches wherever a shape does (and
        # a little more): the first question, since each of its branches starts with a
        # literal, which the engine skips ahead to; the lookbehind in front made it try
        # every position (37 to 17 ms over the 3,953 values and texts of a corpus run).
        "may_shape": lazy_re(shapes),
        "config_keys": lazy_re("(^|_)(" + "|".join(map(re.escape, d["config_keys"])) + ")$"),
        "key_hints": hints,
        "config_not": lazy_re(d["config_key_not_secret"]),
        "placeholders": {p.lower() for p in d["placeholders"]},
        "placeholder_res": [lazy_re(p) for p in d["placeholder_patterns"]],
        "references": lazy_re("|".join(f"(?:{p})" for p in d["references"])),  # any of them
        "long_lived": lazy_re(d["long_lived_names"]),
        "mask_pem": lazy_re(d["mask_shapes"]["pem_block"]),
        "mask_url": lazy_re(d["mask_shapes"]["url_password"]),
        "mask_aws": lazy_re(d["mask_shapes"]["aws_secret_key"]),
    }


def value_shape(value: str) -> str | None:
    """The kind of credential a value looks like (`value_shapes` in data/secrets.json, first match:
    `sk-ant-…` Anthropic, `sk-proj-…`/`sk-…` OpenAI, `hf_…`, `AKIA…`, `nvapi-…`), or None."""
    c = _compiled()
    if not c["may_shape"].search(value):
        return None
    for name, rx in c["shapes"]:
        if rx.search(value):
            return name
    return None


def is_secret_name(name: str) -> bool:
    c = _compiled()
    n = name.strip().upper()
    if not (n in c["names"] or n.endswith(c["suffixes"]) or n in c["url_names"]):
        return False  # (most names: the exceptions' pattern is asked only of the others)
    return not c["not_secret"].search(n)


def is_reference(value: str) -> bool:
    v = value.strip()
    return _compiled()["references"].search(v) is not None


def is_placeholder(value: str) -> bool:
    c = _compiled()
    v = value.strip().strip("'\"")
    if v.lower() in c["placeholders"]:
        return True
    return any(rx.search(v) for rx in c["placeholder_res"])


def _not_a_secret_value(value: str) -> bool:
    v = value.strip().lower()
    return (
        v in ("true", "false", "yes", "no", "on", "off", "0", "1", "")
        or re.fullmatch(r"[-+]?\d+(\.\d+)?", v) is not None
        or " " in value.strip()
    )


@dataclass(slots=True)
class SecretHit:
    """A literal secret: what matched (`by`), and whether it is only a placeholder (info)."""

    by: str
    placeholder: bool


def secret_kind(name: str, value: Any) -> SecretHit | None:
    """Does `NAME=value` (an env var or a config entry) hold a literal secret?"""
    if value is None or isinstance(value, (bool, dict, list)):
        return None
    v = str(value)
    if not v.strip():
        return None
    c = _compiled()
    n = name.strip().upper()
    url = n in c["url_names"]
    named = not url and is_secret_name(n)  # (asked once: the name's test below reads it)
    # Only the value's shape, a URL name or a secret name can make a hit: most entries hold
    # none and are passed over here, before the reference and shape patterns run
    if not url and not named and not c["may_shape"].search(v):
        return None
    if is_reference(v) and not re.match(r"^\$\{", v.strip()):
        return None
    shape = value_shape(v)
    if shape:
        return SecretHit(f"the value looks like {shape}", is_placeholder(v))
    if url:
        m = c["url_pw"].search(v)
        if not m:
            return None
        return SecretHit("the URL embeds a password", is_placeholder(m.group(1)) or m.group(1).startswith("$"))
    if not named:
        return None
    if _not_a_secret_value(v) and not re.match(r"^\$\{", v.strip()):
        return None
    return SecretHit("matched by its name", is_placeholder(v))


_CONFIG_LINE = lazy_re(
    r"""^(?P<indent>\s*(?:-\s+)?)(?P<q>["']?)(?P<key>[A-Za-z_][A-Za-z0-9_.-]*)(?P=q)\s*(?::|=)\s*"""
    r"""(?P<value>[^#\n]*?)\s*,?\s*(?:\s#.*)?$"""
)


def _config_line_hit(line: str) -> tuple[str, str, SecretHit] | None:
    """A `key: value` / `KEY=value` / `export KEY=value` line holding a literal secret, by
    its key or its value's shape: (key, value, hit)."""
    c = _compiled()
    if line.lstrip().startswith("export "):
        line = line.replace("export ", "", 1)
    m = _CONFIG_LINE.match(line)
    if not m:
        return None
    key, raw = m.group("key"), m.group("value").strip()
    value = raw.strip("'\"")
    if not value or value in ("|", ">", "|-", ">-", "{", "["):
        return None
    lk = key.lower()
    hit = None
    if c["config_keys"].search(lk) and not c["config_not"].search(lk):
        hit = secret_kind("API_KEY" if not is_secret_name(key) else key, value)
        if hit is not None and not value_shape(value):
            hit = SecretHit("matched by its key", hit.placeholder)
    else:
        hit = secret_kind(key, value)
    return None if hit is None else (key, value, hit)


def _cover(words: Iterable[str]) -> tuple[str, ...]:
    """The words none of the others is part of: a text holds one of `words` only if it
    holds one of these (`token` stands for `hf_token` and `_token`)."""
    distinct = set(words)
    return tuple(sorted(w for w in distinct if not any(o != w and o in w for o in distinct)))


def may_name_a_secret(text: str) -> bool:
    """Whether some key in `text` could make its line a secret (`_config_line_hit` by key):
    such a key holds a config key's word, a secret name or suffix, or a URL name, and so
    does the text, lower-cased, wherever the key is."""
    lowered = text.lower()
    return any(w in lowered for w in _compiled()["key_hints"])


def scan_config_text(text: str) -> Iterator[tuple[str, str, SecretHit]]:
    """Literal secrets in a config file's text (YAML, JSON, `.env`, shell `export`):
    (key, value, hit) per matching line, and value shapes anywhere."""
    if not isinstance(text, str):
        return
    c = _compiled()
    # A shape that matches no line matches nowhere in the text either (no shape spans or
    # anchors on a line break), so one search over the text rules most shapes out at once.
    shapes = [(name, rx) for name, rx in c["shapes"] if rx.search(text)] if c["may_shape"].search(text) else []
    if not shapes and not may_name_a_secret(text):
        return  # no line can hold a secret, by its value or by its key
    seen_values: set[str] = set()
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith(("#", "//")):
            continue
        found = _config_line_hit(line)
        if found is not None:
            seen_values.add(found[1])
            yield found
            continue
        for name, rx in shapes:
            for mm in rx.finditer(line):
                val = mm.group(1)
                if val not in seen_values:
                    seen_values.add(val)
                    yield "", val, SecretHit(f"the text holds {name}", is_placeholder(val))


# ---------------------------------------------------------------------------------------
# Masking secrets in output (reports, webhook answers): the one detector, applied to text
# ---------------------------------------------------------------------------------------
_ENV_NAME = lazy_re(r"""^\s*(?:-\s+)?\{?\s*["']?name["']?\s*:\s*["']?([A-Za-z_][A-Za-z0-9_.-]*)["']?""")
_ENV_VALUE = lazy_re(r"""["']?value["']?\s*:\s*(["']?)([^"'\n#,}]*)\1""")
# where `mask_shapes.aws_secret_key` can match (`secret_spans`): whole runs of 40 or more,
# each tried from its start only (without the lookbehind, a run is tried again from each of
# its characters: a quarter more time over a file)
_KEY_RUN = lazy_re(r"(?<![A-Za-z0-9/+=])[A-Za-z0-9/+=]{40,}")
_FAST_OUT = lazy_re(r"[A-Za-z0-9_-]{16}|://|PRIVATE KEY|name|=|:")


def secret_spans(text: str) -> list[tuple[int, int]]:
    """Offsets (start, end) of every secret value in `text`, any kind of file: what SEC007
    recognises (value shapes, values of secret-named keys and env entries, URL passwords),
    PEM private key blocks and AWS-style secret access keys. Placeholders found by name
    (`changeme`, `${TOKEN}`) are not secrets and stay readable; a value shape is masked even
    when it looks like an example."""
    if not text or not _FAST_OUT.search(text):
        return []
    c = _compiled()
    spans: list[tuple[int, int]] = []
    if c["may_shape"].search(text):
        spans.extend(m.span() for m in c["any_shape"].finditer(text))
    shaped = [start for start, _ in spans]  # where a value shape starts, in order
    if "PRIVATE KEY" in text:
        spans.extend(m.span() for m in c["mask_pem"].finditer(text))
    if "://" in text:
        spans.extend(m.span(1) for m in c["mask_url"].finditer(text))
    # an AWS-style secret key is a whole run of exactly 40 of `[A-Za-z0-9/+]` (its pattern's
    # lookarounds also keep `=` off both ends): the pattern is tried on such runs only, not
    # at every word of the text (a third of the masking of a whole file)
    aws = c["mask_aws"].fullmatch
    spans.extend(m.span() for m in _KEY_RUN.finditer(text) if len(m.group()) == 40 and aws(m.group()))
    # A line can hold a secret by its key, or name an env entry's secret, only if it holds
    # a key hint (`may_name_a_secret`: keys are ASCII, so its lower-cased line holds one);
    # by its value, only if a value shape starts on it (no shape spans a line break). The
    # other lines are passed over unless an env entry waits for its value: a code frame
    # masks its whole file, and matching every line was most of a text report.
    # the lines a hint is on: one search of the lower-cased text (lower() keeps every line
    # break, as no break has a case), each match found among the lowered lines' starts
    lowered = text.lower()
    hinted: set[int] = set()
    found_hints = _places(lowered, c["key_hints"])
    if found_hints:
        starts = [0, *accumulate(map(len, lowered.splitlines(keepends=True)))]
        hinted = {bisect_right(starts, p) - 1 for p in found_hints}
    next_shape = 0
    pos = 0
    pending: str | None = None  # an env entry's secret name, waiting for its `value:`
    for n, line in enumerate(text.splitlines(keepends=True)):
        end = pos + len(line)
        if pending is None:
            shape_here = False
            while next_shape < len(shaped) and shaped[next_shape] < end:
                shape_here = shape_here or shaped[next_shape] >= pos
                next_shape += 1
            if not shape_here and n not in hinted:
                pos = end
                continue
        body = line.rstrip("\r\n")
        found = _config_line_hit(body) if ":" in body or "=" in body else None
        if found is not None and not found[2].placeholder:
            _mark(spans, body, pos, found[1])
        m = _ENV_NAME.match(body)
        if m:
            pending = m.group(1) if is_secret_name(m.group(1)) or m.group(1).upper() in c["url_names"] else None
        if pending is not None:
            v = _ENV_VALUE.search(body, m.end() if m else 0)
            if v is not None:
                hit = secret_kind(pending, v.group(2).strip())
                if hit is not None and not hit.placeholder:
                    spans.append((pos + v.start(2), pos + v.end(2)))
                pending = None
            elif not m and body.strip().startswith("-"):
                pending = None  # the next list item: this entry had no value
        pos += len(line)
    return spans


def _places(text: str, words: Iterable[str]) -> list[int]:
    """Where each of `words` occurs in `text` (any order; overlaps too): `str.find` for each
    word, twice as fast over a whole file as one search for all of them (an alternation of
    21 words is tried at every position). The lines these fall on are the lines a search
    for any of them would find, as no word spans a line break."""
    out: list[int] = []
    for w in words:
        i = text.find(w)
        while i >= 0:
            out.append(i)
            i = text.find(w, i + 1)
    return out


def _mark(spans: list[tuple[int, int]], line: str, pos: int, value: str) -> None:
    i = line.rfind(value)
    if i >= 0:
        spans.append((pos + i, pos + i + len(value)))


def redact(text: str) -> str:
    """`text` with every secret value masked by `*`, one for one (line breaks kept), so that
    lines, columns and carets computed on the original text still point at the same places."""
    spans = secret_spans(text)
    if not spans:
        return text
    chars = list(text)
    for start, end in spans:
        for i in range(start, end):
            if chars[i] not in "\r\n":
                chars[i] = "*"
    return "".join(chars)


# ---------------------------------------------------------------------------------------
# Long-lived credentials (SEC006)
# ---------------------------------------------------------------------------------------
AWS_STATIC = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")


def is_long_lived_name(name: str) -> bool:
    return bool(_compiled()["long_lived"].search(name.strip().upper()))


def service_account_name(pod: PodTemplate) -> str:
    sa = pod.spec.get("serviceAccountName") or pod.spec.get("serviceAccount")
    return sa if isinstance(sa, str) and sa else "default"


def secret_keys(secret: K8sObject | None) -> list[str]:
    if secret is None:
        return []
    return [str(k) for k in {**as_dict(secret.data.get("data")), **as_dict(secret.data.get("stringData"))}]


@dataclass(slots=True)
class Credential:
    """A long-lived credential a pod is given: where in the object, and what kind it is."""

    path: Path
    what: str


def long_lived_credentials(pod: PodTemplate, ctx: Any) -> list[Credential]:
    """Static AWS keys, PAT/API-token env from Secrets, kubeconfig Secrets and legacy
    service-account-token Secrets held by the pod: one credential per source. A kubeconfig
    Secret is reported at its volume, and a `KUBECONFIG` env var pointing into that volume
    is named in the same credential (it is evidence, not a second credential)."""
    out: list[Credential] = []
    ns = pod.obj.namespace_or_default
    # volume name -> (secret name, volume path, "legacy" | "kubeconfig" | None)
    secret_vols: dict[str, tuple[str, Path, str | None]] = {}
    for i, v in iter_dicts(pod.spec.get("volumes")):
        sec = as_dict(v.get("secret"))
        name = sec.get("secretName")
        if not isinstance(name, str):
            continue
        s = ctx.named("Secret", name, namespace=ns, near=pod.obj)  # (a blueprint's own copy)
        items = [str(it.get("key", "")) + str(it.get("path", "")) for _, it in iter_dicts(sec.get("items"))]
        kind = None
        if s is not None and s.data.get("type") == "kubernetes.io/service-account-token":
            kind = "legacy"
        elif (
            "kubeconfig" in name.lower()
            or any("kubeconfig" in x.lower() for x in items)
            or any("kubeconfig" in k.lower() for k in secret_keys(s))
        ):
            kind = "kubeconfig"
        secret_vols[str(v.get("name"))] = (name, pod.path("volumes", i), kind)
    kubeconfig_env: dict[str, str] = {}  # volume name -> "KUBECONFIG=<path>"
    for c in pod.containers():
        for i, e in iter_dicts(c.data.get("env")):
            name = str(e.get("name") or "")
            epath = c.path_of("env", i)
            ref = as_dict(as_dict(e.get("valueFrom")).get("secretKeyRef"))
            if name.upper() in AWS_STATIC and ("value" in e or "valueFrom" in e):
                out.append(Credential(epath, f"static {name.upper()} in container {c.name}"))
            elif is_long_lived_name(name) and (ref or e.get("value")):
                src = f"Secret {ref.get('name')}" if ref else "a literal value"
                out.append(Credential(epath, f"{name} from {src} in container {c.name}"))
            elif name.upper() == "KUBECONFIG" and isinstance(e.get("value"), str):
                vol = _secret_volume_at(c, e["value"], secret_vols)
                if vol is not None and secret_vols[vol][2] != "legacy":
                    kubeconfig_env.setdefault(vol, f"KUBECONFIG={e['value']}")
        for i, ef in iter_dicts(c.data.get("envFrom")):
            ref = as_dict(ef.get("secretRef"))
            s = ctx.named("Secret", ref.get("name"), namespace=ns, near=pod.obj)
            keys = secret_keys(s)
            hit = [k for k in keys if k.upper() in AWS_STATIC or is_long_lived_name(k)]
            if hit:
                out.append(
                    Credential(
                        c.path_of("envFrom", i), f"envFrom Secret {ref.get('name')} holds {', '.join(sorted(hit)[:3])}"
                    )
                )
    for vol, (name, path, kind) in secret_vols.items():
        if kind == "legacy":
            out.append(Credential(path, f"legacy service-account token Secret {name} is mounted"))
        elif vol in kubeconfig_env:
            out.append(Credential(path, f"kubeconfig Secret {name}, read as {kubeconfig_env[vol]}"))
        elif kind == "kubeconfig":
            out.append(Credential(path, f"kubeconfig Secret {name} is mounted"))
    sa = service_account_name(pod)
    for s in ctx.of_kind("Secret"):
        if (
            s.data.get("type") == "kubernetes.io/service-account-token"
            and s.namespace_or_default == ns
            and s.annotations.get("kubernetes.io/service-account.name") == sa
        ) and not any(f"Secret {s.name} " in x.what for x in out):
            out.append(Credential(pod.spec_path, f"legacy token Secret {s.name} exists for ServiceAccount {sa}"))
    return out


def _secret_volume_at(c: Container, file_path: str, secret_vols: dict[str, Any]) -> str | None:
    """The Secret volume mounted (by container `c`) where `file_path` lives: the longest
    mountPath that is the path or one of its parent directories."""
    best, best_len = None, -1
    for m in c.volume_mounts:
        mp = str(m.get("mountPath") or "").rstrip("/")
        vol = str(m.get("name"))
        if not mp or vol not in secret_vols:
            continue
        if (file_path == mp or file_path.startswith(mp + "/")) and len(mp) > best_len:
            best, best_len = vol, len(mp)
    return best


def short_lived_identity(pod: PodTemplate, ctx: Any) -> str | None:
    """IRSA, EKS Pod Identity or a projected service-account token of at most one hour."""
    ns = pod.obj.namespace_or_default
    sa = service_account_name(pod)
    account = ctx.named("ServiceAccount", sa, namespace=ns, near=pod.obj)  # (a blueprint's own copy)
    if account is not None and account.annotations.get("eks.amazonaws.com/role-arn"):
        return "IRSA"
    for o in ctx.of_kind("PodIdentityAssociation"):
        spec = as_dict(o.data.get("spec"))
        if spec.get("serviceAccount") == sa and (spec.get("namespace") or o.namespace_or_default) == ns:
            return "EKS Pod Identity"
    for o in ctx.of_kind("ClusterConfig"):
        iam = as_dict(o.get("iam"))
        for _, a in iter_dicts(iam.get("podIdentityAssociations")):
            if a.get("serviceAccountName") == sa and (a.get("namespace") or "default") == ns:
                return "EKS Pod Identity"
        for _, a in iter_dicts(iam.get("serviceAccounts")):
            md = as_dict(a.get("metadata"))
            if md.get("name") == sa and (md.get("namespace") or "default") == ns:
                return "IRSA"
    for _, v in iter_dicts(pod.spec.get("volumes")):
        for _, src in iter_dicts(as_dict(v.get("projected")).get("sources")):
            tok = src.get("serviceAccountToken")
            if isinstance(tok, dict):
                exp = tok.get("expirationSeconds", 3600)
                if isinstance(exp, int) and not isinstance(exp, bool) and exp <= 3600:
                    return "a projected service-account token"
    return None


# ---------------------------------------------------------------------------------------
# Text edits shared by the fixes
# ---------------------------------------------------------------------------------------
def _nl(text: str) -> str:
    return "\r\n" if "\r\n" in text else "\n"


def env_value_to_secret_ref(obj: K8sObject, env_path: Path, secret: str, key: str) -> Edit | None:
    """Replace `value: <literal>` of the env item at `env_path` with a `valueFrom.secretKeyRef`."""
    vpath = tuple(env_path) + ("value",)
    kp = obj.positions.get(obj.base + vpath)
    if kp is None or kp[4] != kp[0] or kp[6] != kp[4]:
        return None  # only a one-line `value: x`
    src = obj.source
    text = src.text
    start = src.offset(kp[0], kp[1])
    end = src.offset(kp[6], kp[7])
    if text[src.offset(kp[4], kp[5]) :][:1] in ("&", "*", "!", "|", ">"):
        return None
    item_pos = obj.positions.get(obj.base + tuple(env_path))
    if item_pos is None or text[src.offset(item_pos[4], item_pos[5]) :][:1] == "{":
        return None  # flow-style item
    col = kp[1] - 1
    unit = 2
    nl = _nl(text)
    pad = " " * col
    from ailint.fix.edits import scalar  # local import: edits imports yaml, keep agents light

    body = (
        f"valueFrom:{nl}{pad}{' ' * unit}secretKeyRef:{nl}{pad}{' ' * 2 * unit}name: {scalar(secret)}{nl}"
        f"{pad}{' ' * 2 * unit}key: {scalar(key)}"
    )
    return Edit(start, end, body)


def delete_seq_item(obj: K8sObject, item_path: Path) -> Edit | None:
    """Remove a block-sequence item (`- name: X\\n  value: Y`) whole lines, when it is
    neither the only item nor written in flow style."""
    seq_path = tuple(item_path[:-1])
    seq = obj.get(*seq_path)
    idx = item_path[-1]
    if not isinstance(seq, list) or len(seq) < 2 or not isinstance(idx, int):
        return None
    src = obj.source
    text = src.text
    p = obj.positions.get(obj.base + tuple(item_path))
    if p is None:
        return None
    start_val = src.offset(p[4], p[5])
    ls = text.rfind("\n", 0, start_val) + 1
    before = text[ls:start_val]
    if before.strip() != "-":
        return None
    if idx + 1 < len(seq):
        np_ = obj.positions.get(obj.base + seq_path + (idx + 1,))
        if np_ is None:
            return None
        nxt = src.offset(np_[4], np_[5])
        end = text.rfind("\n", 0, nxt) + 1
    else:
        end = src.offset(p[6], p[7])
        if end < len(text) and text[end - 1 : end] != "\n":
            nl = text.find("\n", end)
            end = len(text) if nl == -1 else nl + 1
        # step back over trailing blank/comment lines that belong to what follows
        while True:
            prev = text.rfind("\n", 0, end - 1) + 1
            if prev <= ls or (text[prev:end].strip() and not text[prev:end].strip().startswith("#")):
                break
            end = prev
    if "#" in text[ls:end]:
        return None  # comments inside the item would be lost
    return Edit(ls, end, "")


def text_occurrences(obj: K8sObject, path: Path, needle: str) -> list[int] | None:
    """Offsets of `needle` inside the source text of the scalar at `path`, when the raw
    text holds exactly as many occurrences as the parsed value (so each one maps)."""
    p = obj.positions.get(obj.base + tuple(path))
    value = obj.get(*path)
    if p is None or not isinstance(value, str):
        return None
    src = obj.source
    start, end = src.offset(p[4], p[5]), src.offset(p[6], p[7])
    raw = src.text[start:end]
    if raw[:1] in ("&", "*", "!"):
        return None
    found = [m.start() + start for m in re.finditer(re.escape(needle), raw)]
    if len(found) != value.count(needle):
        return None
    return found


def version_tuple(v: Any) -> tuple[int, ...] | None:
    """`"v0.17.1"`, `"0.17"`, `0.17` -> (0, 17, 1) / (0, 17); None when not a version."""
    if v is None or isinstance(v, bool):
        return None
    m = re.match(r"^\s*v?(\d+(?:\.\d+)*)", str(v))
    if not m:
        return None
    return tuple(int(x) for x in m.group(1).split("."))


def version_at_least(v: Any, minimum: str) -> bool | None:
    """True/False against `minimum`; None when `v` is unset or unreadable."""
    t = version_tuple(v)
    if t is None:
        return None
    m = version_tuple(minimum) or ()
    n = max(len(t), len(m))
    return t + (0,) * (n - len(t)) >= m + (0,) * (n - len(m))


__all__ = [
    "AWS_STATIC",
    "CODE_EXEC_ANNOTATION",
    "Credential",
    "RuntimeClassInfo",
    "SecretHit",
    "delete_seq_item",
    "env_value_to_secret_ref",
    "executes_code",
    "is_gvisor_handler",
    "is_long_lived_name",
    "is_placeholder",
    "is_reference",
    "is_runc_handler",
    "is_sandbox_handler",
    "is_secret_name",
    "long_lived_credentials",
    "runtime_class_of",
    "sandbox_runtime_classes",
    "scan_config_text",
    "secret_data",
    "secret_keys",
    "secret_kind",
    "service_account_name",
    "short_lived_identity",
    "text_occurrences",
    "value_shape",
    "version_at_least",
    "version_tuple",
]
