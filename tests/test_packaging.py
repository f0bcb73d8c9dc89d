"""The installed layout: every package folder is listed in pyproject.toml.

setuptools' `package-dir` mapping (linter/ -> ailint, rules/ -> ailint.rules) needs an explicit
`packages` list; a folder missing from it installs nowhere, and a clean `pip install .` then
fails with an ImportError that an editable development install hides.
"""

from __future__ import annotations

import pathlib
import tomllib

ROOT = pathlib.Path(__file__).resolve().parent.parent


def _folders() -> set[str]:
    mapping = {"linter": "ailint", "rules": "ailint.rules", "schemas": "ailint.schemas"}
    found = set()
    for top, name in mapping.items():
        for init in (ROOT / top).rglob("__init__.py"):
            rel = init.parent.relative_to(ROOT / top)
            if "__pycache__" in rel.parts:
                continue
            found.add(".".join([name, *rel.parts]) if rel.parts else name)
    return found


def test_every_package_folder_is_listed():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    listed = set(config["tool"]["setuptools"]["packages"])
    assert _folders() - listed == set(), "add these to [tool.setuptools] packages in pyproject.toml"
    assert listed - _folders() == set(), "these listed packages have no folder with __init__.py"
