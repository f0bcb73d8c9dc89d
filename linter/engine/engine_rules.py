"""Metadata and documentation of the findings the engine itself produces (YML, AIL).

They are registered like every other rule (listing, docs, SARIF, selection) but have no
check function: the loader and the suppression pass emit them.
"""

from __future__ import annotations

from ailint.core.model import Severity
from ailint.engine.registry import Rule

_E = Severity.ERROR
_W = Severity.WARNING
_I = Severity.INFO


def _r(code: str, name: str, severity: Severity, summary: str, doc: str) -> tuple[Rule, str]:
    return Rule(
        code=code,
        name=name,
        severity=severity,
        summary=summary,
        engine=True,
        tags=("input",) if code.startswith("YML") else ("linter",),
    ), doc


def _doc(what: str, why: str, example: str, instead: str, fix: str = "None.") -> str:
    return f"""
## What it does
{what}

## Why is this bad?
{why}

## Example
```yaml
{example}
```

## Use instead
```yaml
{instead}
```

## Options
None.

## Fix
{fix}

## References
- YAML 1.1 and the Kubernetes API conventions.
"""


ENGINE_RULES: list[tuple[Rule, str]] = [
    _r(
        "YML001",
        "syntax-error",
        _E,
        "The file is not valid YAML",
        _doc(
            "Reports a YAML syntax error (bad indentation, a tab used for indentation, an "
            "unterminated quoted scalar) at the line and column where the parser stopped.",
            "`kubectl apply` rejects the file, and no other rule can check what cannot be read. "
            "Documents before the error are still linted.",
            'metadata:\n  name: "vllm\n',
            'metadata:\n  name: "vllm"\n',
        ),
    ),
    _r(
        "YML002",
        "unrendered-template",
        _W,
        "The file is an unrendered Helm or Go template",
        _doc(
            "Reports `{{ ... }}` template markers that make a file unparseable as plain YAML.",
            "Templates are not manifests: the values they produce are unknown until rendered, so "
            "linting them would guess. Lint the output of `helm template` instead.",
            "image: {{ .Values.image }}\n",
            "image: vllm/vllm-openai:v0.9.2\n",
        ),
    ),
    _r(
        "YML003",
        "duplicate-key",
        _E,
        "A mapping repeats a key",
        _doc(
            "Reports the second occurrence of a key in the same mapping.",
            "The Kubernetes API server (strict decoding) rejects duplicate fields, and tools that "
            "accept them silently keep only one of the values.",
            "resources:\n  limits: {cpu: 1}\n  limits: {nvidia.com/gpu: 1}\n",
            "resources:\n  limits: {cpu: 1, nvidia.com/gpu: 1}\n",
        ),
    ),
    _r(
        "YML004",
        "alias-expansion-limit",
        _E,
        "Aliases expand beyond the configured bound",
        _doc(
            "Reports a document whose anchors and aliases expand to more nodes than "
            "`limits.max-alias-expansion` (100,000 by default).",
            "A 'billion laughs' document exhausts memory in every consumer that expands it, "
            "including the API server's clients.",
            "a: &a [x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\n",
            "a: [x]\n",
        ),
    ),
    _r(
        "YML005",
        "nesting-too-deep",
        _E,
        "Nesting is deeper than the configured bound",
        _doc(
            "Reports a document nested deeper than `limits.max-depth` (200 levels).",
            "No real manifest nests that deep; such input is built to exhaust parsers.",
            "a: [[[[[[[[...]]]]]]]]\n",
            "a: [1]\n",
        ),
    ),
    _r(
        "YML006",
        "file-too-large",
        _E,
        "The file is larger than the configured bound",
        _doc(
            "Reports files over `limits.max-file-size` (10 MiB by default) without parsing them.",
            "Manifests of that size are generated bundles or mistakes, and parsing them slows every pre-commit run.",
            "# a 50 MB file\n",
            "# split it, or raise limits.max-file-size\n",
        ),
    ),
    _r(
        "YML007",
        "invalid-encoding",
        _E,
        "The file is not UTF-8 text",
        _doc(
            "Reports binary content, UTF-16 files and invalid UTF-8 byte sequences, at the first bad byte.",
            "The API server and kubectl read manifests as UTF-8.",
            "name: caf\\xe9   # Latin-1 byte\n",
            "name: cafe\n",
        ),
    ),
    _r(
        "YML008",
        "not-a-kubernetes-object",
        _I,
        "A document is not a Kubernetes object",
        _doc(
            "Reports documents that are not mappings or lack `apiVersion` or `kind`.",
            "`kubectl apply` rejects them; in a folder of manifests they are usually a leftover "
            "or a values file in the wrong place. They are skipped by every other rule.",
            "replicas: 3\n",
            "apiVersion: apps/v1\nkind: Deployment\n",
        ),
    ),
    _r(
        "YML009",
        "unreadable-file",
        _E,
        "The file cannot be read",
        _doc(
            "Reports paths that cannot be opened: permissions, a FIFO or device, a broken link.",
            "A file the linter cannot read is a file nobody checked.",
            "# a FIFO named manifest.yaml\n",
            "# a regular, readable file\n",
        ),
    ),
    _r(
        "YML010",
        "too-many-documents",
        _E,
        "A file has more documents than the configured bound",
        _doc(
            "Reports a file with more than `limits.max-documents` (5,000) documents.",
            "Such streams are generated or hostile; the rest of the file is skipped.",
            "---\n---\n# ... 10,000 times\n",
            "# fewer documents per file\n",
        ),
    ),
    _r(
        "YML011",
        "scalar-too-long",
        _E,
        "A scalar is longer than the configured bound",
        _doc(
            "Reports a string value longer than `limits.max-scalar-length` (1 MiB).",
            "Kubernetes limits annotations to 256 KiB and ConfigMaps to 1 MiB; longer scalars "
            "are mistakes or attacks on parsers.",
            'data: "<2 MB of text>"\n',
            'data: "..."\n',
        ),
    ),
    _r(
        "YML012",
        "invalid-key",
        _E,
        "A mapping key is not a string",
        _doc(
            "Reports mapping keys that are themselves mappings or lists.",
            "Kubernetes objects are JSON: every key is a string. A complex key is usually an "
            "unquoted `{{ }}` template or a stray `?`.",
            "? [a, b]\n: value\n",
            "a: value\n",
        ),
    ),
    _r(
        "AIL001",
        "unused-suppression",
        _W,
        "A suppression comment or annotation matches no finding",
        _doc(
            "Reports `# ailint: ignore[...]` comments and `ailint.io/ignore` annotations that "
            "suppressed nothing in this run (only for rules that ran).",
            "Stale suppressions hide the next real finding on that line.",
            "image: vllm/vllm-openai:v0.9.2  # ailint: ignore[SRV002] pinned elsewhere\n",
            "image: vllm/vllm-openai:v0.9.2\n",
            "Safe: delete the comment.",
        ),
    ),
    _r(
        "AIL002",
        "unknown-suppression-code",
        _W,
        "A suppression names a code that does not exist",
        _doc(
            "Reports suppressions that name no known rule code, prefix or name.",
            "A typo in a suppression suppresses nothing and hides the intent.",
            "# ailint: ignore[GPU0001]\n",
            "# ailint: ignore[GPU001]\n",
        ),
    ),
    _r(
        "AIL003",
        "rule-crashed",
        _E,
        "A rule failed on an object (a bug in ailint)",
        _doc(
            "Reports an internal error of one rule on one object. The rest of the run goes on.",
            "It means ailint could not check this object for that rule; please report it with "
            "the file (or `--debug` output).",
            "# any object\n",
            "# any object\n",
        ),
    ),
]

ENGINE = {rule.code: rule for rule, _ in ENGINE_RULES}
