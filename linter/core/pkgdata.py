"""Package data files (`ailint.data`, `ailint.schemas`) read straight from the package folder.

`importlib.resources` pulls in tempfile, shutil, random and pathlib: about 10 ms of every
run, for a handful of small JSON files that always live on disk next to the modules.
"""

from __future__ import annotations

import importlib
import json
import os
from typing import Any


def path(package: str, *parts: str) -> str:
    """The file `parts` inside `package` (a regular package folder)."""
    mod = importlib.import_module(package)
    return os.path.join(next(iter(mod.__path__)), *parts)


def read_text(package: str, *parts: str) -> str:
    with open(path(package, *parts), encoding="utf-8") as fh:
        return fh.read()


def load_json(package: str, *parts: str) -> Any:
    with open(path(package, *parts), encoding="utf-8") as fh:
        return json.load(fh)
