"""The rule API: what a rule declares (`Rule`, `Option`, `Scope`) and how it builds findings and fixes.

A rule module defines `RULE = Rule(...)` and
`check(obj: K8sObject, ctx: Context, opts: Options) -> Iterator[Finding]`; the engine's
registry discovers it and hands it its `Options`, every value already coerced to the type
its `Option` declares. Nothing here knows the engine, a parser or a reporter.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum

from ailint.core.model import Applicability, Edit, Finding, Fix, FixAvailability, K8sObject, Severity, Span

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

FAMILIES = {
    "GPU": "GPU scheduling and resources",
    "SRV": "Serving and inference",
    "TRN": "Training and Ray",
    "KRP": "Karpenter and nodes",
    "NET": "Networking and IPs",
    "STO": "Storage and model caching",
    "SEC": "Security, agents and RBAC",
    "REL": "Reliability and disruption",
    "OBS": "Observability and cost",
    "YML": "Unreadable input",
    "SCH": "Schema validation",
    "AIL": "The linter itself",
    "POL": "Admission policies",
}

DOC_SECTIONS = ("What it does", "Why is this bad?", "Example", "Use instead", "Options", "Fix", "References")


class Scope(str, Enum):
    """`object` rules see one object; `bundle` rules also read other objects of the run."""

    OBJECT = "object"
    BUNDLE = "bundle"


OPTION_TYPES = ("string", "integer", "number", "boolean", "array", "object")


@dataclass(frozen=True)
class Option:
    """A rule option: its default, a description for the docs, and its JSON Schema type.

    The registry coerces every configured value to `type` (a `None` default makes the option
    nullable) and rejects what cannot be coerced, so `check` reads typed values.
    """

    default: Any
    description: str
    type: str = "string"  # JSON Schema type of the value: one of OPTION_TYPES


class Options(Mapping[str, "Any"]):
    """The option values of one rule in a run, coerced to their declared types by the registry.

    Every declared option is present (its default when not configured). The typed readers
    return the value as its type for the type checker; they never convert.
    """

    __slots__ = ("_values",)

    def __init__(self, values: Mapping[str, Any] | None = None) -> None:
        self._values: dict[str, Any] = dict(values or {})

    def __getitem__(self, key: str) -> Any:
        return self._values[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __repr__(self) -> str:
        return f"Options({self._values!r})"

    def get_str(self, key: str) -> str:
        value = self._values[key]
        assert isinstance(value, str), f"option {key} is not a string"
        return value

    def get_int(self, key: str) -> int:
        value = self._values[key]
        assert isinstance(value, int), f"option {key} is not an integer"
        return value

    def get_optional_int(self, key: str) -> int | None:
        value = self._values[key]
        assert value is None or isinstance(value, int), f"option {key} is not an integer"
        return value

    def get_float(self, key: str) -> float:
        value = self._values[key]
        assert isinstance(value, float), f"option {key} is not a number"
        return value

    def get_list(self, key: str) -> list[Any]:
        value = self._values[key]
        assert isinstance(value, list), f"option {key} is not an array"
        return value

    def get_dict(self, key: str) -> dict[str, Any]:
        value = self._values[key]
        assert isinstance(value, dict), f"option {key} is not an object"
        return value


@dataclass(frozen=True)
class Rule:
    """A rule's declaration: its code and name, what it applies to, and what reports, docs and SARIF say of it."""

    code: str
    name: str
    severity: Severity
    summary: str
    kinds: tuple[str, ...] = ("*",)  # "Kind", "group/Kind", or "*"
    scope: Scope = Scope.OBJECT
    fix: FixAvailability = FixAvailability.NEVER
    options: Mapping[str, Option] = field(default_factory=dict)
    tags: tuple[str, ...] = ()
    precision: str = "high"  # SARIF precision: very-high, high, medium, low
    security_severity: float | None = None  # SARIF security-severity for SEC rules
    engine: bool = False  # produced by the engine (YML, SCH, AIL), not by a check function
    # a bundle rule that can judge one object alone (the admission webhook runs it with a
    # context of that object only): it reads other objects for detail, never for absence
    single_object: bool = False
    # in the default selection (ruff's model); False: an opt-in rule, run only when --select,
    # --extend-select or the config names its code or name (a prefix or ALL does not)
    default: bool = True
    # a rule with several conditions says which sentence of "Why is this bad?" explains each:
    # (regular expression searched in the message, the opening words of that sentence); the
    # first pair that matches picks the `why:` shown, before any word matching
    why_when: tuple[tuple[str, str], ...] = ()

    @property
    def family(self) -> str:
        return self.code[:3]

    def applies_to(self, obj: K8sObject) -> bool:
        obj_kind = obj.kind  # a property: read it once, not once per listed kind
        for target in self.kinds:
            if target == "*":
                return True
            if "/" in target:
                group, kind = target.rsplit("/", 1)
                if kind == obj_kind and obj.group == group:
                    return True
            elif target == obj_kind:
                return True
        return False

    # -- building findings ------------------------------------------------------------
    def finding(
        self,
        obj: K8sObject,
        path: Sequence[Any],
        message: str,
        *,
        severity: Severity | None = None,
        fix: Fix | None = None,
        span: Span | None = None,
        anchor: str = "field",
        severity_reason: str | None = None,
    ) -> Finding:
        """A finding of this rule on `obj` at `path` (anchored on the field by default).

        `anchor="value"` points at the value instead of `key: value`; a missing path
        points at its nearest existing parent, where the missing field belongs.
        `severity_reason` says why `severity` differs from the rule's (reports print it;
        without one they quote the condition the rule's doc states for that severity).
        """
        if span is None:
            span = obj.value_span(path) if anchor == "value" else obj.span(path)
        return Finding(
            self.code,
            self.name,
            severity or self.severity,
            message,
            obj.file,
            span,
            obj.ref,
            tuple(path),
            fix,
            severity_reason=severity_reason if severity and severity != self.severity else None,
        )


# -- small helpers for rules ---------------------------------------------------------------
class KindIndex:
    """Which of a list of rules apply to a kind and group, looked up by kind: the answer of
    `Rule.applies_to` for each rule, without asking each rule about each new kind.

    A run meets a few hundred kinds (every family's custom resources), and a pod rule lists
    about thirty; asking 60 bundle rules in turn about each new kind was 30 ms of the plain
    corpus's serial work before the bundle phase forks.
    """

    __slots__ = ("_any", "_by_kind")

    def __init__(self, rules: Sequence[Rule]) -> None:
        self._any: list[int] = []  # the positions of the rules that take every kind
        # Rules share their `kinds`: 36 of 119 list the same 48 pod-bearing kinds. Grouped by
        # that list first, the index is built from 41 lists of 424 kinds, not 2,201 (1 ms of
        # a one-file run, which builds two indexes to look up one kind).
        sharing: dict[tuple[str, ...], list[int]] = {}
        for n, rule in enumerate(rules):
            kinds = tuple(rule.kinds)
            if "*" in kinds:
                self._any.append(n)
                continue
            positions = sharing.get(kinds)
            if positions is None:
                sharing[kinds] = [n]
            else:
                positions.append(n)
        # kind -> (the positions of the rules that list it, its group; None: any group)
        self._by_kind: dict[str, list[tuple[list[int], str | None]]] = {}
        for kinds, positions in sharing.items():
            for target in kinds:
                group, slash, kind = target.rpartition("/")  # "group/Kind" as `applies_to` splits it
                self._by_kind.setdefault(kind, []).append((positions, group if slash else None))

    def matching(self, kind: str, group: str) -> list[int]:
        """The positions, in order, of the rules that apply to objects of `kind` in `group`."""
        hits = set(self._any)
        for positions, g in self._by_kind.get(kind, ()):
            if g is None or g == group:
                hits.update(positions)
        return sorted(hits)


def make_fix(title: str, edits: Iterable[Edit | None], unsafe: bool = False) -> Fix | None:
    """A Fix from edits (an edit helper that declined gives None: it is skipped), or None when
    no edit could be built (then the rule offers none)."""
    built = tuple(e for e in edits if e is not None)
    if not built:
        return None
    return Fix(title, built, Applicability.UNSAFE if unsafe else Applicability.SAFE)
