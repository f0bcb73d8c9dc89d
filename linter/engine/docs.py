"""Generate `docs/rules/<CODE>.md`, the rules index and the README's rule table from the
registry: `python -m ailint.engine.docs [REPO_ROOT]`. A test fails when the checked-in files are
stale, so the docs can never drift from the rules.
"""

from __future__ import annotations

import os
import re
import sys

from ailint.engine.registry import FAMILIES, RegisteredRule, all_rules

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

README_START = "<!-- rules:start -->"
README_END = "<!-- rules:end -->"


def kinds_text(kinds: tuple[str, ...], code: bool = True) -> str:
    """A rule's kinds as its page and `ailint rule` show them: a rule of every pod workload
    (most rules about pods) names the built-in kinds and counts the custom ones, which
    docs/families.md lists by family, instead of a wall of names; any other list is whole."""
    from ailint.domain.extract import POD_KINDS
    from ailint.domain.workloads.core import FAMILY as CORE

    def fmt(k: str) -> str:
        return f"`{k}`" if code else k

    if kinds == ("*",):
        return "any"
    if not set(POD_KINDS) <= set(kinds):
        return ", ".join(fmt(k) for k in kinds)
    builtin = [kind for _, kind in CORE.kinds]
    core = ", ".join(fmt(k) for k in builtin)
    custom = len([k for k in POD_KINDS if k not in builtin])
    extra = [k for k in kinds if k not in POD_KINDS]
    where = "[families.md](../families.md)" if code else "docs/families.md"
    text = f"every pod workload: {core} and the {custom} custom kinds of {where}"
    return text + (", plus " + ", ".join(fmt(k) for k in extra) if extra else "")


def rule_page(reg: RegisteredRule) -> str:
    r = reg.rule
    kinds = kinds_text(r.kinds)
    head = [
        f"# {r.code} `{r.name}`",
        "",
        f"{r.summary}.",
        "",
        "| severity | fix | scope | family | kinds |",
        "|---|---|---|---|---|",
        f"| {r.severity.value} | {r.fix.value} | {r.scope.value} | {r.family} ({FAMILIES[r.family]}) | {kinds} |",
        "",
    ]
    if not r.default:
        head += [
            f"**Opt-in**: not in the default selection; runs only when selected by its code or name "
            f"(`--extend-select {r.code}`, or `extend-select: [{r.code}]` in the config). `ALL` and "
            f"prefixes such as `{r.family}` do not select it.",
            "",
        ]
    body = re.sub(r"^## ", "## ", reg.doc, flags=re.M)
    return "\n".join(head) + body.rstrip() + "\n"


def index_table(link_prefix: str = "") -> str:
    lines = ["| Code | Name | Severity | Fix | Summary |", "|---|---|---|---|---|"]
    for reg in all_rules().values():
        r = reg.rule
        lines.append(
            f"| [{r.code}]({link_prefix}{r.code}.md) | `{r.name}`{'' if r.default else ' (opt-in)'} "
            f"| {r.severity.value} | {r.fix.value} | {r.summary} |"
        )
    return "\n".join(lines) + "\n"


def index_page() -> str:
    n = len(all_rules())
    return (
        f"# ailint rules\n\n{n} rules, generated from the registry by `python -m ailint.engine.docs`.\n"
        "`ailint rule CODE` prints the same documentation.\n\n" + index_table()
    )


def expected_files(root: str) -> dict[str, str]:
    import json

    out: dict[str, str] = {}
    schema_path = os.path.join(root, "schemas", "config.schema.json")
    if os.path.exists(schema_path):
        with open(schema_path, encoding="utf-8") as fh:
            out[schema_path] = json.dumps(config_schema(json.load(fh)), indent=2) + "\n"
    out |= {os.path.join(root, "docs", "rules", f"{reg.rule.code}.md"): rule_page(reg) for reg in all_rules().values()}
    out[os.path.join(root, "docs", "rules", "README.md")] = index_page()
    return out


def readme_with_table(readme: str) -> str:
    table = index_table("docs/rules/")
    if README_START not in readme or README_END not in readme:
        return readme
    before, rest = readme.split(README_START, 1)
    _, after = rest.split(README_END, 1)
    return f"{before}{README_START}\n{table}{README_END}{after}"


def config_schema(base: dict) -> dict:
    """The config schema with one entry per rule code and name, typed from its options."""
    import copy

    schema = copy.deepcopy(base)
    props = {}
    for reg in all_rules().values():
        r = reg.rule
        entry: dict[str, Any] = {
            "type": "object",
            "additionalProperties": False,
            "description": f"{r.code} {r.name}: {r.summary}",
            "properties": {"severity": {"$ref": "#/$defs/severity"}},
        }
        for name, opt in r.options.items():
            entry["properties"][name] = {"type": opt.type, "description": opt.description}
        props[r.code] = entry
        props[r.name] = {"$ref": f"#/properties/rules/properties/{r.code}"}
    schema["properties"]["rules"] = {
        "type": "object",
        "additionalProperties": False,
        "description": "Per-rule settings keyed by code or name: severity and the rule's options.",
        "properties": props,
        # the codes of custom rules (`custom-rules`, entry points): checked when the config is read
        "patternProperties": {"^[A-Z]{3}[0-9]{3}$": {"type": "object"}},
    }
    return schema


def _read(path: str) -> str:
    with open(path, encoding="utf-8") as fh:
        return fh.read()


def write_all(root: str) -> list[str]:
    changed = []
    import json

    schema_path = os.path.join(root, "schemas", "config.schema.json")
    if os.path.exists(schema_path):
        with open(schema_path, encoding="utf-8") as fh:
            old = fh.read()
        new = json.dumps(config_schema(json.loads(old)), indent=2) + "\n"
        if new != old:
            with open(schema_path, "w", encoding="utf-8") as fh:
                fh.write(new)
            changed.append(schema_path)
    docs_dir = os.path.join(root, "docs", "rules")
    os.makedirs(docs_dir, exist_ok=True)
    expected = expected_files(root)
    for path, content in expected.items():
        if path.endswith(".json"):
            continue
        current = _read(path) if os.path.exists(path) else None
        if current != content:
            with open(path, "w", encoding="utf-8") as fh:
                fh.write(content)
            changed.append(path)
    for name in os.listdir(docs_dir):
        p = os.path.join(docs_dir, name)
        if name.endswith(".md") and p not in expected:
            os.remove(p)
            changed.append(p)
    readme = os.path.join(root, "README.md")
    if os.path.exists(readme):
        old = _read(readme)
        new = readme_with_table(old)
        if new != old:
            with open(readme, "w", encoding="utf-8") as fh:
                fh.write(new)
            changed.append(readme)
    return changed


if __name__ == "__main__":
    root = sys.argv[1] if len(sys.argv) > 1 else "."
    for p in write_all(root):
        print(f"wrote {p}")
