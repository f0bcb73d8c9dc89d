"""Shared machinery for fixture tests: markers, running one rule, applying fixes."""

from __future__ import annotations

import json
import pathlib
import re
from dataclasses import dataclass

from ailint.domain.extract import Profile
from ailint.engine.config import Settings
from ailint.engine.run import lint

ROOT = pathlib.Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"

_EXPECT = re.compile(r"#\s*expect(-next-line)?:\s*([A-Z]{3}\d{3}(?:\s*,\s*[A-Z]{3}\d{3})*)")
_SET = re.compile(r"^#\s*fixture-set:\s*([\w.]+)=(.*)$", re.M)


@dataclass(frozen=True)
class Case:
    code: str
    path: pathlib.Path

    @property
    def id(self) -> str:
        return f"{self.code}/{self.path.name}"

    @property
    def fixed_twin(self) -> pathlib.Path:
        return self.path.with_name(self.path.name[: -len(".yaml")] + ".fixed.yaml")

    @property
    def snapshot(self) -> pathlib.Path:
        return self.path.with_name(self.path.name[: -len(".yaml")] + ".expected")

    @property
    def is_fixed_twin(self) -> bool:
        return self.path.name.endswith(".fixed.yaml")


def all_cases() -> list[Case]:
    out = []
    if not FIXTURES.is_dir():
        return out
    for d in sorted(FIXTURES.iterdir()):
        if not d.is_dir() or not re.fullmatch(r"[A-Z]{3}\d{3}", d.name):
            continue
        for f in sorted(d.glob("*.yaml")):
            out.append(Case(d.name, f))
    return out


def expected_markers(text: str) -> list[tuple[int, str]]:
    out = []
    for i, line in enumerate(text.splitlines(), start=1):
        m = _EXPECT.search(line)
        if m:
            target = i + 1 if m.group(1) else i
            for code in re.split(r"\s*,\s*", m.group(2)):
                out.append((target, code))
    return sorted(out)


def profile_for(text: str) -> Profile:
    values = {}
    for m in _SET.finditer(text):
        raw = m.group(2).strip()
        try:
            values[m.group(1)] = json.loads(raw)
        except ValueError:
            values[m.group(1)] = raw
    return Profile(values)


_OPTION = re.compile(r"^#\s*fixture-option:\s*(\w+)=(.*)$", re.M)


def options_for(text: str) -> dict:
    """Rule options set by `# fixture-option: name=<JSON value>` lines (for the fixture's rule)."""
    out = {}
    for m in _OPTION.finditer(text):
        raw = m.group(2).strip()
        try:
            out[m.group(1)] = json.loads(raw)
        except ValueError:
            out[m.group(1)] = raw
    return out


def settings_for(code: str, text: str) -> Settings:
    s = Settings(root=str(ROOT))
    s.select = [code]
    s.profile = profile_for(text)
    opts = options_for(text)
    if opts:
        s.rule_settings = {code: opts}
    return s


def run_rule(code: str, path: pathlib.Path):
    text = path.read_text(encoding="utf-8")
    # other objects' files are named against the checkout, whatever folder pytest runs in
    return lint([str(path)], settings_for(code, text), run_root=str(ROOT))


def render_snapshot(findings) -> str:
    lines = []
    for f in findings:
        fix = ""
        if f.fix is not None:
            fix = f" [fix {f.fix.applicability.value}: {f.fix.title}]"
        lines.append(
            f"{f.span.line}:{f.span.col}-{f.span.end_line}:{f.span.end_col} {f.code} "
            f"{f.severity.value} {f.message}{fix}"
        )
    return "\n".join(lines) + "\n"
