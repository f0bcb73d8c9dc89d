"""The one registry of rules: metadata, discovery, documentation and selection.

A rule is a module under `rules/<family>/` that defines `RULE = Rule(...)` and a
`check(obj, ctx, opts)` generator; the module docstring is its documentation, in the
sections What it does / Why is this bad? / Example / Use instead / Options / Fix /
References. The CLI listing, `ailint rule CODE`, `docs/rules/`, SARIF `rules[]` and the
config schema are all generated from here; the engine knows no rule by name.
"""

from __future__ import annotations

import importlib
import math
import os
import re
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass

from ailint.core.model import Finding, FixAvailability, Severity
from ailint.core.rule import DOC_SECTIONS, FAMILIES, Option, Options, Rule, Scope, make_fix

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "DOC_SECTIONS",
    "FAMILIES",
    "Option",
    "OptionError",
    "Options",
    "RegisteredRule",
    "Rule",
    "Scope",
    "coerce_option",
    "engine_rule",
    "make_fix",
    "options_for",
    "selector_matches",
    "specificity",
]


@dataclass(frozen=True, eq=False)
class RegisteredRule:
    """A rule as the registry holds it: its declaration, its check, and its docs read on first use."""

    rule: Rule
    check: Callable[..., Iterator[Finding]] | None
    _doc: str | None  # None: read from the module on first use (see `doc`)
    module: str
    # what the doc says of each severity ("an error when ..."), as the rule index kept it
    # (`ailint.report.explain.clause_in_doc`); None: not kept, found in the doc when asked
    clauses: Mapping[str, str] | None = None

    def __getattr__(self, item: str) -> Any:  # RegisteredRule.code etc.
        return getattr(self.rule, item)

    @property
    def doc(self) -> str:
        """The module docstring: from the module when the run imported it (its rule ran),
        else from the docs kept beside the rule index (`_kept_docs`: no import), else read
        from the module, imported now."""
        d = self._doc
        if d is None:
            loaded = sys.modules.get(self.module)
            d = _dedent(loaded.__doc__) if loaded is not None else _kept_docs().get(self.module)
            if not isinstance(d, str):
                d = _dedent(importlib.import_module(self.module).__doc__)
            object.__setattr__(self, "_doc", d)
        return d

    @property
    def sections(self) -> dict[str, str]:
        return parse_sections(self.doc)


def parse_sections(doc: str) -> dict[str, str]:
    """Split a docstring into its `## Section` blocks."""
    out: dict[str, str] = {}
    current = None
    buf: list[str] = []
    for line in (doc or "").splitlines():
        m = re.match(r"^##\s+(.*?)\s*$", line)
        if m:
            if current is not None:
                out[current] = "\n".join(buf).strip()
            current, buf = m.group(1), []
        elif current is not None:
            buf.append(line)
    if current is not None:
        out[current] = "\n".join(buf).strip()
    return out


def _dedent(doc: str | None) -> str:
    """`inspect.cleandoc(doc)`, without importing `inspect` (with `ast`, `dis` and
    `tokenize`) into a run that prints one rule's doc: the first line stripped, the common
    indentation of the others removed, blank lines at either end dropped. A test compares
    it with `inspect.cleandoc` on every rule's doc."""
    lines = (doc or "").expandtabs().split("\n")
    rest = [ln for ln in lines[1:] if ln.lstrip()]
    margin = min((len(ln) - len(ln.lstrip()) for ln in rest), default=0)
    out = [lines[0].lstrip()] + [ln[margin:] for ln in lines[1:]]
    while out and not out[-1]:
        out.pop()
    while out and not out[0]:
        out.pop(0)
    return "\n".join(out)


_REGISTRY: dict[str, RegisteredRule] | None = None


class _LazyCheck:
    """A rule's `check`, imported from its module on first call.

    With the rule index (below), a run imports only the rule modules whose kinds it meets.
    """

    __slots__ = ("_fn", "module")

    def __init__(self, module: str) -> None:
        self.module = module
        self._fn: Callable[..., Iterator[Finding]] | None = None

    def __call__(self, obj: Any, ctx: Any, opts: Any) -> Iterator[Finding]:
        # (the engine calls `resolve()`'s function itself: `Engine.run_rule`)
        return self.resolve()(obj, ctx, opts)

    def __reduce__(self) -> tuple[Any, ...]:
        return (_LazyCheck, (self.module,))

    def resolve(self) -> Callable[..., Iterator[Finding]]:
        """The rule module's `check`, imported now if it was not yet."""
        fn = self._fn
        if fn is None:
            fn = self._fn = importlib.import_module(self.module).check
        return fn


def check_function(reg: RegisteredRule) -> Callable[..., Iterator[Finding]]:
    """The function that checks for `reg`: its module's `check` (imported now, for a rule of
    the index), or the function it was registered with."""
    check = reg.check
    if isinstance(check, _LazyCheck):
        return check.resolve()
    assert check is not None
    return check


# -- the rule index: rule metadata without importing 80 rule modules ------------------------
# Discovery imports every rule module (and the helper modules and regexes they pull in): a
# third of a one-file run. Its result is kept in the user cache directory (`_load_index`), keyed by
# the installed code (`ailint.core.sourcekey`: a wheel's RECORD, else every source file's size
# and mtime), so it is never stale: a reinstall or an edit makes a new key and the next run
# discovers again (AILINT_NO_CACHE=1 turns the cache off).
_INDEX_VERSION = 4  # 4: marshalled rows, not JSON


def _index_file() -> str | None:
    from ailint.core.sourcekey import code_index_file

    return code_index_file("rules", _INDEX_VERSION, ".bin")


# The rules' docs beside the index, in a file of their own (the index is read by every run,
# the docs only by the runs that print them): a SARIF report describes every rule, and
# reading each docstring from its module imported all 110 rule modules and what they import
# (a third of a SARIF rerun); the text report's `why:` lines read the docs of the rules that
# found something. Keyed by the installed code like the index, so never stale.
_DOCS: dict[str, Any] | None = None


def _docs_file() -> str | None:
    from ailint.core.sourcekey import code_index_file

    return code_index_file("docs", _INDEX_VERSION)


def _kept_docs() -> dict[str, Any]:
    """module -> docstring (dedented) of every built-in rule, as discovery read them; empty
    when the file is missing or unreadable (each doc is then read from its module)."""
    global _DOCS
    if _DOCS is None:
        _DOCS = {}
        path = _docs_file()
        if path is not None:
            import json

            try:
                with open(path, encoding="utf-8") as fh:
                    got = json.load(fh)
                if isinstance(got, dict):
                    _DOCS = got
            except (OSError, ValueError):
                pass
    return _DOCS


def _rule_to_row(r: Rule) -> tuple[Any, ...]:
    """A rule's metadata as plain values (its enums by value): a row of the index."""
    return (
        r.code,
        r.name,
        r.severity.value,
        r.summary,
        tuple(r.kinds),
        r.scope.value,
        r.fix.value,
        tuple((k, o.default, o.description, o.type) for k, o in r.options.items()),
        tuple(r.tags),
        r.precision,
        r.security_severity,
        r.engine,
        # any further plain field of Rule (a flag added later) travels by name; the index is
        # written only when the round trip gives the same Rule back (`_write_index`)
        tuple(
            (f.name, getattr(r, f.name))
            for f in _rule_fields()
            if f.name not in _INDEXED and _plain(getattr(r, f.name))
        ),
    )


def _plain(v: Any) -> bool:
    """A value the index carries back as it is: a scalar, or tuples, lists and string-keyed
    dicts of them (`why_when`, an option's default)."""
    if isinstance(v, tuple | list):
        return all(_plain(x) for x in v)
    if isinstance(v, dict):
        return all(isinstance(k, str) and _plain(x) for k, x in v.items())
    return isinstance(v, _SCALARS)


_SCALARS = (bool, int, float, str, type(None))


_INDEXED = frozenset(
    {
        "code",
        "name",
        "severity",
        "summary",
        "kinds",
        "scope",
        "fix",
        "options",
        "tags",
        "precision",
        "security_severity",
        "engine",
    }
)
_ROW_LENGTH = len(_INDEXED) + 1  # (`_rule_to_row`: the indexed fields, then the others by name)


def _rule_fields() -> tuple[Any, ...]:
    import dataclasses

    return dataclasses.fields(Rule)


def _members(enum: Any) -> dict[Any, Any]:
    """An enum's members by value: a dict lookup, where calling the enum costs 1.5 us (the
    index builds 120 rules, three enums each)."""
    return {m.value: m for m in enum}


_ENUM_VALUES: dict[str, dict[Any, Any]] = {}


def _rule_from_row(row: tuple[Any, ...]) -> Rule:
    values = _ENUM_VALUES
    if not values:
        values.update(severity=_members(Severity), scope=_members(Scope), fix=_members(FixAvailability))
    code, name, severity, summary, kinds, scope, fix, options, tags, precision, security, engine, more = row
    return Rule(
        code,
        name,
        values["severity"][severity],
        summary,
        kinds,
        values["scope"][scope],
        values["fix"][fix],
        {k: Option(d, desc, t) for k, d, desc, t in options},
        tags,
        precision,
        security,
        engine,
        **dict(more),
    )


# The index file: the CRC-32 of the rows (4 bytes, big-endian), then the rows marshalled,
# one per rule: (module, has a check, the rule's row, what its doc says of each severity).
# marshal, not JSON: a run reads it whole, and `json.load` of the 108 KB it was, with the
# dicts it made turned into rules, took 3 ms of an 80 ms one-file run; the marshalled rows
# take 0.7 ms. It is read only when its CRC matches, and only as rows of the shape
# `_write_index` writes (`_rows`).
def _load_index(path: str | None) -> dict[str, RegisteredRule] | None:
    if path is None:
        return None
    import marshal
    from binascii import crc32

    try:
        with open(path, "rb") as fh:
            data = fh.read()
        if len(data) < 4 or int.from_bytes(data[:4], "big") != crc32(memoryview(data)[4:]):
            return None
        found: dict[str, RegisteredRule] = {}
        for module, check, row, clauses in _rows(marshal.loads(memoryview(data)[4:])):
            rule = _rule_from_row(row)
            found[rule.code] = RegisteredRule(rule, _LazyCheck(module) if check else None, None, module, dict(clauses))
        return dict(sorted(found.items()))
    except (OSError, ValueError, EOFError, KeyError, TypeError):
        return None


def _rows(entries: Any) -> Any:
    """The index's entries, each of the shape `_write_index` writes (TypeError else). Their
    values are not walked: the CRC matched, so they are the bytes a run of this code wrote
    (the file is keyed by the code and lives in the owner's private folder), and a value of
    the wrong type fails `_rule_from_row` or the `Rule` it makes, or never reaches it:
    marshal makes values, it runs nothing."""
    if type(entries) is not tuple or not all(
        type(e) is tuple
        and len(e) == 4
        and type(e[0]) is str
        and type(e[2]) is tuple
        and len(e[2]) == _ROW_LENGTH
        and type(e[3]) is tuple
        for e in entries
    ):
        raise TypeError("not the index's rows")
    return entries


def _write_index(path: str | None, found: dict[str, RegisteredRule]) -> None:
    if path is None:
        return
    import json
    import marshal
    from binascii import crc32

    from ailint.report.explain import clauses_in_doc

    entries = []
    severities = [sev.value for sev in Severity]
    for reg in found.values():
        row = _rule_to_row(reg.rule)
        if not _plain(row) or _rule_from_row(marshal.loads(marshal.dumps(row))) != reg.rule:
            return  # metadata the index cannot carry exactly: no index, always discover
        # what the doc says of each severity, found once here: a report asks it of every
        # finding printed at another severity than the rule's, and finding it in the doc
        # took 10 M instructions (3%) of a one-file run with five such findings
        clauses = tuple(clauses_in_doc(reg.doc, severities).items())
        entries.append((reg.module, reg.check is not None, row, clauses))
    from ailint.core.cachedir import keep
    from ailint.core.sourcekey import KEPT_INDEXES

    docs = _docs_file()
    if docs is not None:  # first: an index found always has its docs beside it (or none at all)
        text = {reg.module: reg._doc for reg in found.values() if reg._doc is not None}
        keep(docs, [json.dumps(text).encode("utf-8")], older=KEPT_INDEXES)
    rows = marshal.dumps(tuple(entries))
    keep(path, [crc32(rows).to_bytes(4, "big"), rows], older=KEPT_INDEXES)  # owner-only (issue 19)


def _discover() -> dict[str, RegisteredRule]:
    import ailint.rules as rules_pkg  # the installed `rules/` folder

    found: dict[str, RegisteredRule] = {}
    names: dict[str, str] = {}

    def add(reg: RegisteredRule) -> None:
        code, name = reg.rule.code, reg.rule.name
        if code in found:
            raise RuntimeError(f"duplicate rule code {code} in {reg.module} and {found[code].module}")
        if name in names:
            raise RuntimeError(f"duplicate rule name {name} ({code} and {names[name]})")
        found[code] = reg
        names[name] = code

    import pkgutil  # discovery only (a cached rule index needs none)

    for info in pkgutil.walk_packages(rules_pkg.__path__, rules_pkg.__name__ + "."):
        if info.ispkg or info.name.rsplit(".", 1)[-1].startswith("_"):
            continue
        mod = importlib.import_module(info.name)
        rule = getattr(mod, "RULE", None)
        if not isinstance(rule, Rule):
            continue
        check = getattr(mod, "check", None)
        add(RegisteredRule(rule, check, _dedent(mod.__doc__), info.name))
    return dict(sorted(found.items()))


# -- options: configured values coerced to their declared types ------------------------
class OptionError(ValueError):
    """A configured option value that its declared type cannot hold."""


def coerce_option(name: str, option: Option, value: Any) -> Any:
    """`value` as the type `option` declares; OptionError when it cannot be one.

    Integers accept integral floats and numeric strings, numbers accept integers and
    numeric strings (and become floats), strings accept numbers (`1` for `"1"`), booleans
    accept `true`/`false` strings; arrays and objects must be lists and mappings. `None`
    is accepted only when the default is `None` (an option that may stay unset).
    """
    if value is None:
        if option.default is None:
            return None
        raise OptionError(f"option `{name}`: expected {option.type}, got null")
    t = option.type
    got: Any = _NOT_COERCED
    if t == "integer" and not isinstance(value, bool):
        if isinstance(value, int):
            got = value
        elif (isinstance(value, float) and value.is_integer()) or (
            isinstance(value, str) and re.fullmatch(r"\s*[-+]?\d+\s*", value)
        ):
            got = int(value)
    elif t == "number" and not isinstance(value, bool):
        if isinstance(value, int | float):
            got = float(value)
        elif isinstance(value, str):
            try:
                got = float(value)
            except ValueError:
                pass
        if isinstance(got, float) and not math.isfinite(got):
            got = _NOT_COERCED
    elif t == "string":
        if isinstance(value, str):
            got = value
        elif isinstance(value, int | float) and not isinstance(value, bool):
            got = str(value)
    elif t == "boolean":
        if isinstance(value, bool):
            got = value
        elif isinstance(value, str) and value.strip().lower() in ("true", "false"):
            got = value.strip().lower() == "true"
    elif t == "array":
        if isinstance(value, list | tuple):
            got = list(value)
    elif t == "object":
        if isinstance(value, dict):
            got = {str(k): v for k, v in value.items()}
    else:
        raise OptionError(f"option `{name}`: unknown declared type {t!r}")
    if got is _NOT_COERCED:
        raise OptionError(f"option `{name}`: expected {t}, got {type(value).__name__} {value!r}")
    return got


_NOT_COERCED = object()


def options_for(rule: Rule, configured: Mapping[str, Any] | None = None) -> Options:
    """The rule's Options: every declared option, its configured value (coerced) or its default.

    `configured` may carry `severity` (not an option); an undeclared key is an OptionError.
    """
    values: dict[str, Any] = {}
    for name, option in rule.options.items():
        values[name] = coerce_option(name, option, option.default) if option.default is not None else None
    for name, value in (configured or {}).items():
        if name == "severity":
            continue
        declared = rule.options.get(name)
        if declared is None:
            raise OptionError(f"{rule.code} has no option `{name}`")
        values[name] = coerce_option(name, declared, value)
    return Options(values)


def all_rules() -> dict[str, RegisteredRule]:
    """Every rule: built-in, from `ailint.rules` entry points, and from providers (config)."""
    global _ALL
    got = _ALL
    if got is None:
        builtin = _builtin_rules()
        extra = {**_entry_point_rules(builtin), **_CONFIG_RULES}
        got = _ALL = dict(sorted({**builtin, **extra}.items())) if extra else builtin
    return got


def _builtin_rules() -> dict[str, RegisteredRule]:
    global _REGISTRY
    if _REGISTRY is None:
        path = _index_file()  # None: the cache is off, or the code cannot be read
        found = _load_index(path)
        if found is None:
            found = _discover()
            _write_index(path, found)
        _REGISTRY = found
    return _REGISTRY


def find_rule(code_or_name: str) -> RegisteredRule | None:
    rules = all_rules()
    key = code_or_name.strip()
    if key.upper() in rules:
        return rules[key.upper()]
    for reg in rules.values():
        if reg.rule.name == key:
            return reg
    return None


def engine_rule(code: str) -> Rule:
    """The metadata of a finding the engine itself produces (YML, SCH, AIL: `engine=True`
    modules under `rules/yml`, `rules/sch`, `rules/ail`, declared like every other rule)."""
    return all_rules()[code].rule


# -- selection -------------------------------------------------------------------------
def specificity(selector: str, reg: RegisteredRule) -> int:
    """How specifically `selector` names the rule: 0 = not at all; a name counts as a code."""
    sel = selector.strip()
    if not sel:
        return 0
    if sel.upper() == "ALL":
        return 1
    if sel == reg.rule.name or sel.upper() == reg.rule.code:
        return 100
    if reg.rule.code.startswith(sel.upper()):
        return 1 + len(sel)
    return 0


def selector_matches(selector: str, finding: Finding) -> bool:
    """Whether `selector` (a code, prefix, name or ALL) names the rule of `finding`."""
    reg = all_rules().get(finding.code)
    if reg is None:
        return selector.upper() == finding.code
    return specificity(selector, reg) > 0


def is_known_selector(selector: str) -> bool:
    sel = selector.strip()
    return any(specificity(sel, reg) for reg in all_rules().values())


def select(
    select: Iterable[str] | None, ignore: Iterable[str] = (), extend_select: Iterable[str] = ()
) -> list[RegisteredRule]:
    """Rules enabled by select/ignore: the most specific selector wins (ruff's model).

    With no `select`, every rule in the default selection is on. `--select GPU --ignore GPU003`
    keeps GPU001 and drops GPU003; `--ignore GPU --select GPU003` keeps only GPU003 of the
    family. An opt-in rule (`Rule.default` False) runs only when a selector names its code or
    name: `ALL` and prefixes (`OBS`, `OBS0`) pass it over, like ruff's preview rules with
    `explicit-preview-rules`.
    """
    sel = list(select) if select else ["ALL"]
    sel += list(extend_select)
    ign = list(ignore)
    out = []
    for reg in all_rules().values():
        s = max((specificity(x, reg) for x in sel), default=0)
        if not reg.rule.default and s < 100:
            s = 0  # opt-in: only an explicit code or name selects it
        i = max((specificity(x, reg) for x in ign), default=0)
        if s and s > i:
            out.append(reg)
        elif s and s == i:
            pass  # equal specificity: ignore wins
    return out


# -- extra rules: entry points and providers --------------------------------------------------
# A Python package adds rules with the built-in API (a module with `RULE` and `check`, or a
# package of such modules) through the `ailint.rules` entry-point group. A *provider*
# (entry-point group `ailint.providers`) turns configuration into rules and may add a pass
# over the whole run: `configure(data, path) -> list[RegisteredRule]` when the config is read,
# `begin_run()` before a run, and `run_pass(objects, settings, enabled_codes) -> findings`
# after the bundle rules. The engine knows providers only through this interface.
RULES_GROUP = "ailint.rules"
PROVIDERS_GROUP = "ailint.providers"
RESERVED_FAMILIES = frozenset(FAMILIES)

_ALL: dict[str, RegisteredRule] | None = None
_CONFIG_RULES: dict[str, RegisteredRule] = {}
_ENTRY_RULES: dict[str, RegisteredRule] | None = None
_PROVIDERS: list[Any] | None = None
_EP_CACHE: dict[str, list[tuple[str, str]]] | None = None


def entry_points(group: str) -> list[tuple[str, str]]:
    """(name, value) of the installed entry points of `group`.

    Reads the `entry_points.txt` of each installed distribution directly: importing
    `importlib.metadata` costs about 20 ms, a third of a one-file run. What it read is kept
    (`_kept_entry_points`) and read again only when a folder or file it read has changed:
    the reading took 0.9 ms with 23 distributions and 5 ms with 300, as an ML team's
    environment has.
    """
    global _EP_CACHE
    if _EP_CACHE is None:
        where = _entry_points_file()
        kept = _kept_entry_points(where)
        if kept is None:
            found, stamps = _scan_entry_points()
            _keep_entry_points(where, found, stamps)
            kept = found
        _EP_CACHE = kept
    return list(_EP_CACHE.get(group, []))


_EP_MAGIC = b"AILE1\n"  # the kept entry points (`_kept_entry_points`)

# what a reading of the entry points depends on, each as `_stamp` gives it: every folder of
# `sys.path` (a distribution installed or removed changes its mtime), every entry_points.txt
# read (edited in place: its own mtime and size) and every other distribution folder met
# (an entry_points.txt added to it changes the folder's mtime)
Stamp = tuple[str, int | None, int | None]


def _stamp(path: str) -> Stamp:
    try:
        st = os.stat(path)
    except OSError:
        return (path, None, None)
    return (path, st.st_mtime_ns, st.st_size)


def _scan_entry_points() -> tuple[dict[str, list[tuple[str, str]]], list[Stamp]]:
    """The entry points of ailint's groups in every distribution on `sys.path` (the first
    distribution of a name with an entry_points.txt counts), and the stamps of what was read."""
    found: dict[str, list[tuple[str, str]]] = {}
    stamps: list[Stamp] = []
    seen: set[str] = set()
    for folder in _search_path():
        stamps.append(_stamp(folder))
        try:
            names = os.listdir(folder)
        except OSError:
            continue
        for d in names:
            if not d.endswith((".dist-info", ".egg-info")):
                continue
            dist = d.rsplit(".", 1)[0].split("-", 1)[0].lower().replace("_", "-")
            if dist in seen:
                continue
            path = os.path.join(folder, d, "entry_points.txt")
            try:
                with open(path, encoding="utf-8") as fh:
                    st = os.fstat(fh.fileno())
                    text = fh.read()
            except OSError:
                stamps.append(_stamp(os.path.join(folder, d)))
                continue
            stamps.append((path, st.st_mtime_ns, st.st_size))
            seen.add(dist)
            section = ""
            for line in text.splitlines():
                line = line.strip()
                if line.startswith("[") and line.endswith("]"):
                    section = line[1:-1].strip()
                elif "=" in line and section in (RULES_GROUP, PROVIDERS_GROUP) and not line.startswith("#"):
                    k, v = line.split("=", 1)
                    entry = (k.strip(), v.strip())
                    if entry not in found.setdefault(section, []):
                        found[section].append(entry)
    return found, stamps


def _search_path() -> list[str]:
    """`sys.path` with each folder absolute (`""` is the current folder): what a reading
    depends on, whatever the folder a run starts in."""
    return [os.path.abspath(base or ".") for base in sys.path]


def _entry_points_file() -> tuple[str, bytes] | None:
    key = "\0".join([sys.version, *_search_path()]).encode("utf-8", "surrogateescape")
    from ailint.core.cachedir import kept_file

    path = kept_file("entrypoints", key, ".bin")
    return None if path is None else (path, key)


def _kept_entry_points(where: tuple[str, bytes] | None) -> dict[str, list[tuple[str, str]]] | None:
    """What an earlier run read of the entry points of this `sys.path` (kept in the file
    `_entry_points_file` names), when nothing it read has changed since; None otherwise (no
    cache, not kept, torn, changed)."""
    if where is None:
        return None
    import marshal

    from ailint.core.cachedir import read_sealed

    payload = read_sealed(where[0], _EP_MAGIC, where[1])
    if payload is None:
        return None
    try:
        stamps, found = marshal.loads(payload)
        if not all(_stamp(stamp[0]) == stamp for stamp in stamps):
            return None
    except (OSError, ValueError, EOFError, TypeError, IndexError):
        return None
    return found if isinstance(found, dict) else None


def _keep_entry_points(
    where: tuple[str, bytes] | None, found: dict[str, list[tuple[str, str]]], stamps: list[Stamp]
) -> None:
    if where is not None:
        import marshal

        from ailint.core.cachedir import write_sealed

        write_sealed(where[0], _EP_MAGIC, marshal.dumps((stamps, found)), where[1], older=7)


def _load_entry(value: str) -> Any:
    mod_name, _, attr = value.partition(":")
    obj: Any = importlib.import_module(mod_name.strip())
    for part in attr.strip().split(".") if attr.strip() else []:
        obj = getattr(obj, part)
    return obj


def check_extra_code(code: str, name: str, known: dict[str, RegisteredRule], where: str) -> None:
    """ValueError unless an extra rule's code and name are well formed and free."""
    if not re.fullmatch(r"[A-Z]{3}\d{3}", code):
        raise ValueError(f"{where}: rule code {code!r} must be 3 capital letters and 3 digits (ORG001)")
    if code[:3] in RESERVED_FAMILIES:
        raise ValueError(
            f"{where}: rule code {code} uses the built-in family {code[:3]} "
            f"(reserved: {', '.join(sorted(RESERVED_FAMILIES))}); pick another prefix"
        )
    if code in known:
        raise ValueError(f"{where}: rule code {code} is already defined by {known[code].module}")
    if not re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", name):
        raise ValueError(f"{where}: rule name {name!r} must be kebab-case")
    for reg in known.values():
        if reg.rule.name == name:
            raise ValueError(f"{where}: rule name {name} is already used by {reg.rule.code}")


def _entry_point_rules(builtin: dict[str, RegisteredRule]) -> dict[str, RegisteredRule]:
    """Rules of installed packages (entry-point group `ailint.rules`); a broken one is an error."""
    global _ENTRY_RULES
    if _ENTRY_RULES is None:
        found: dict[str, RegisteredRule] = {}
        for ep_name, value in entry_points(RULES_GROUP):
            where = f"entry point {ep_name} = {value}"
            try:
                target = _load_entry(value)
            except Exception as exc:
                raise RuntimeError(f"{where}: cannot import: {type(exc).__name__}: {exc}") from None
            modules = [target]
            if hasattr(target, "__path__"):
                import pkgutil

                modules = [
                    importlib.import_module(info.name)
                    for info in pkgutil.walk_packages(target.__path__, target.__name__ + ".")
                    if not info.ispkg and not info.name.rsplit(".", 1)[-1].startswith("_")
                ]
            for mod in modules:
                rule = getattr(mod, "RULE", None)
                if not isinstance(rule, Rule):
                    continue
                try:
                    check_extra_code(rule.code, rule.name, {**builtin, **found}, where)
                except ValueError as exc:
                    raise RuntimeError(str(exc)) from None
                found[rule.code] = RegisteredRule(rule, getattr(mod, "check", None), _dedent(mod.__doc__), mod.__name__)
        _ENTRY_RULES = found
    return _ENTRY_RULES


def providers() -> list[Any]:
    """The installed providers (entry-point group `ailint.providers`), loaded once."""
    global _PROVIDERS
    if _PROVIDERS is None:
        loaded = []
        for ep_name, value in entry_points(PROVIDERS_GROUP):
            try:
                loaded.append(_load_entry(value))
            except Exception as exc:
                raise RuntimeError(
                    f"provider {ep_name} = {value}: cannot import: {type(exc).__name__}: {exc}"
                ) from None
        _PROVIDERS = loaded
    return _PROVIDERS


def set_config_rules(regs: Iterable[RegisteredRule]) -> None:
    """The rules that providers made from the current configuration (replacing earlier ones)."""
    global _ALL
    _CONFIG_RULES.clear()
    for reg in regs:
        _CONFIG_RULES[reg.rule.code] = reg
    _ALL = None
