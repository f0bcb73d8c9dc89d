"""The generated rule docs and README table are up to date with the registry."""

import pathlib

from ailint.engine.docs import expected_files, readme_with_table

ROOT = pathlib.Path(__file__).resolve().parent.parent


def test_rule_docs_are_current():
    stale = []
    for path, content in expected_files(str(ROOT)).items():
        p = pathlib.Path(path)
        if not p.exists() or p.read_text(encoding="utf-8") != content:
            stale.append(p.name)
    extra = sorted(p.name for p in (ROOT / "docs" / "rules").glob("*.md") if str(p) not in expected_files(str(ROOT)))
    assert not stale and not extra, (
        f"stale: {stale}, extra: {extra}; run `python -m ailint.engine.docs` and commit the result"
    )


def test_readme_rule_table_is_current():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert readme_with_table(readme) == readme, "run `python -m ailint.engine.docs` to refresh the README table"
