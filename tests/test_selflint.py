"""The project lints itself: ruff (lint and format) and mypy as configured in pyproject.toml.

The tools come with the dev extra; each test skips when its tool is not installed.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys

import pytest
from conftest import ROOT


def _tool(name: str) -> None:
    if importlib.util.find_spec(name) is None:
        pytest.skip(f"{name} is not installed (pip install -e '.[dev]')")


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", *args], cwd=ROOT, capture_output=True, text=True, timeout=600)


def test_ruff_check_is_clean() -> None:
    _tool("ruff")
    r = _run("ruff", "check", "--no-cache", ".")
    assert r.returncode == 0, r.stdout + r.stderr


def test_ruff_format_is_clean() -> None:
    _tool("ruff")
    r = _run("ruff", "format", "--no-cache", "--check", ".")
    assert r.returncode == 0, r.stdout + r.stderr


def test_mypy_is_clean() -> None:
    _tool("mypy")
    r = subprocess.run(
        [sys.executable, str(ROOT / "tests" / "typecheck.py"), "--no-incremental"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert r.returncode == 0, r.stdout + r.stderr
