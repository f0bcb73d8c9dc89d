"""Import boundaries of the house (CONTRIBUTING.md, docs/architecture.md), checked on the source.

- rules import only ailint.core, ailint.domain, ailint.fix.edits and their own family's
  helper modules (`rules/<family>/_*.py`);
- the domain imports only the core, the package data and other domain modules, plus the
  public edit helpers (`ailint.fix.edits`, a leaf over the core) for the fixes it builds;
- nothing under core, engine, schema, fix, report or domain imports click, rich (the text
  reporter's lazy import of rich aside) or a door;
- no import circle among modules at module level, and no private name used across modules
  (`from m import _x` or `m._x`).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

from conftest import ROOT

TREES = ((ROOT / "linter", "ailint"), (ROOT / "rules", "ailint.rules"))


def _modules() -> dict[str, Path]:
    out: dict[str, Path] = {}
    for base, pkg in TREES:
        for p in sorted(base.rglob("*.py")):
            parts = [x for x in p.relative_to(base).with_suffix("").parts if x != "__init__"]
            out[".".join([pkg, *parts])] = p
    return out


MODULES = _modules()


def _imports(path: Path, module_level_only: bool = False) -> Iterator[tuple[int, str, list[str], bool]]:
    """(line, imported module, names, at module level) of every absolute import."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    top: set[int] = set()
    for node in tree.body:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            continue
        for sub in ast.walk(node) if isinstance(node, (ast.If, ast.Try)) else [node]:
            top.add(id(sub))
    for node in ast.walk(tree):
        level = id(node) in top
        if module_level_only and not level:
            continue
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.lineno, node.module, [a.name for a in node.names], level
        elif isinstance(node, ast.Import):
            for a in node.names:
                yield node.lineno, a.name, [], level


def _targets(module: str, names: list[str]) -> list[str]:
    """The ailint modules an import statement reaches (`from ailint.fix import edits` is edits)."""
    subs = [f"{module}.{n}" for n in names if f"{module}.{n}" in MODULES]
    return subs or [module]


def _violations(prefix: str, allowed: tuple[str, ...]) -> list[str]:
    bad = []
    for name, path in MODULES.items():
        if not name.startswith(prefix):
            continue
        own = ".".join(name.split(".")[:3]) + "." if prefix == "ailint.rules." else prefix
        for line, mod, names, _ in _imports(path):
            for t in _targets(mod, names):
                if t.startswith("ailint.") and not t.startswith(allowed) and not t.startswith(own):
                    bad.append(f"{path.relative_to(ROOT)}:{line}: imports {t}")
    return bad


def test_rules_import_only_the_core_the_domain_and_the_edit_helpers() -> None:
    assert not _violations("ailint.rules.", ("ailint.core", "ailint.domain", "ailint.fix.edits"))


def test_domain_imports_only_the_core_the_data_and_the_edit_helpers() -> None:
    assert not _violations("ailint.domain", ("ailint.core", "ailint.data", "ailint.fix.edits"))


def test_no_engine_layer_imports_a_door_or_a_terminal_library() -> None:
    layers = ("ailint.core", "ailint.engine", "ailint.schema", "ailint.fix", "ailint.report", "ailint.domain")
    bad = []
    for name, path in MODULES.items():
        if not name.startswith(layers):
            continue
        for line, mod, _, top in _imports(path):
            root = mod.split(".")[0]
            if name == "ailint.report.text" and root == "rich" and not top:
                continue  # the text reporter imports rich lazily, for colour only
            if root in ("click", "rich") or mod.startswith("ailint.doors"):
                bad.append(f"{path.relative_to(ROOT)}:{line}: imports {mod}")
    assert not bad


def test_no_import_circle_at_module_level() -> None:
    graph: dict[str, set[str]] = {}
    for name, path in MODULES.items():
        deps: set[str] = set()
        for _, mod, names, _ in _imports(path, module_level_only=True):
            deps.update(t for t in _targets(mod, names) if t in MODULES and t != name)
        graph[name] = deps
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    cycles: list[list[str]] = []

    def visit(v: str) -> None:  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                cycles.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    assert not cycles


def test_no_private_name_imported_across_modules() -> None:
    bad = []
    for name, path in MODULES.items():
        for line, mod, names, _ in _imports(path):
            if not mod.startswith("ailint"):
                continue
            for n in names:
                if not n.startswith("_") or n.startswith("__"):
                    continue
                # a rule family's own helper module (rules/trn/_training.py) is the family's
                if name.startswith("ailint.rules.") and mod == ".".join(name.split(".")[:3]):
                    continue
                bad.append(f"{path.relative_to(ROOT)}:{line}: from {mod} import {n}")
        bad.extend(_private_attributes(name, path))
    assert not bad


def _private_attributes(name: str, path: Path) -> list[str]:
    """`module._name` reads where `module` is an imported ailint module (not its own family's)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    aliases: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("ailint") and node.level == 0:
            for a in node.names:
                if f"{node.module}.{a.name}" in MODULES:
                    aliases[a.asname or a.name] = f"{node.module}.{a.name}"
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.startswith("ailint") and a.asname:
                    aliases[a.asname] = a.name
    out = []
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id in aliases
            and node.attr.startswith("_")
            and not node.attr.startswith("__")
        ):
            target = aliases[node.value.id]
            if name.startswith("ailint.rules.") and target.startswith(".".join(name.split(".")[:3]) + "."):
                continue  # the family's own helper module
            out.append(f"{path.relative_to(ROOT)}:{node.lineno}: {node.value.id}.{node.attr} ({target})")
    return out


def test_linter_top_level_stays_small() -> None:
    top = [p.name for p in (ROOT / "linter").iterdir() if p.suffix == ".py" or (p / "__init__.py").exists()]
    assert len(top) <= 12, sorted(top)


def test_every_dataclass_says_what_it_holds() -> None:
    """Every dataclass has a docstring: one without makes `dataclasses` call
    `inspect.signature`, which loads `inspect` (with ast, dis and tokenize) into every run
    (`ailint.doors.lean.defer_import`)."""
    missing = []
    for name, path in MODULES.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.ClassDef)
                and any("dataclass" in ast.unparse(d) for d in node.decorator_list)
                and ast.get_docstring(node) is None
            ):
                missing.append(f"{name}.{node.name} ({path.relative_to(ROOT)}:{node.lineno})")
    assert not missing, missing


def test_no_module_imports_typing_or_decimal_when_it_is_imported() -> None:
    """`typing` (2.8 ms) and `decimal` (1.7 ms) are for the type checker (`if TYPE_CHECKING:`)
    and never a module-level import: a run imports the rule and domain modules of the kinds
    it meets, and test_lean's one-file run covers only a Deployment's."""
    bad = [
        f"{path.relative_to(ROOT)}:{line}: imports {mod}"
        for path in MODULES.values()
        for line, mod, _, _ in _imports(path, module_level_only=True)
        if mod.split(".")[0] in ("typing", "decimal")
    ]
    assert not bad, "\n".join(bad)
