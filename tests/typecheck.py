"""Type-check ailint as it is imported (`ailint`), not as it is laid out (`linter/`, `rules/`).

The package is installed from three folders (pyproject `package-dir`), a mapping mypy cannot
follow, so this links the tree under its import name in a temporary folder and runs
`mypy -p ailint` there with the configuration in pyproject.toml. The self-lint test and the
pre-commit hook run it: `python tests/typecheck.py`.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def link_package(into: Path) -> Path:
    """`into/ailint` with the entries of linter/ plus `rules` and `schemas`, as installed."""
    pkg = into / "ailint"
    pkg.mkdir()
    for entry in (ROOT / "linter").iterdir():
        if entry.name != "__pycache__":
            (pkg / entry.name).symlink_to(entry)
    (pkg / "rules").symlink_to(ROOT / "rules")
    (pkg / "schemas").symlink_to(ROOT / "schemas")
    return pkg


def main(argv: list[str] | None = None) -> int:
    with tempfile.TemporaryDirectory(prefix="ailint-mypy-") as tmp:
        link_package(Path(tmp))
        env = dict(os.environ, MYPYPATH=tmp)
        cmd = [sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml"), "-p", "ailint"]
        cmd += list(argv or [])
        return subprocess.run(cmd, cwd=tmp, env=env).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
