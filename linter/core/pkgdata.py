"""Package data files (`ailint.data`, `ailint.schemas`) read straight from the package folder.

`importlib.resources` pulls in tempfile, shutil, random and pathlib: about 10 ms of every
run, for a handful of small JSON files that always live on disk next to the modules.
"""

from __future__ import annotations

import importlib
import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def path(package: str, *parts: str) -> str:
    """The file `parts` inside `package` (a regular package folder)."""
    mod = importlib.import_module(package)
    return os.path.join(next(iter(mod.__path__)), *parts)


def find_spec(name: str) -> Any:
    """The spec of a top-level module or package, without importing it: what
    `importlib.util.find_spec` answers, asking the finders of `sys.meta_path` as an import
    does, without `importlib.util` (which loads `contextlib`, `importlib._abc` and more: 1.2 ms
    of a one-file run). None when none can find it."""
    module = sys.modules.get(name)
    if module is not None and getattr(module, "__spec__", None) is not None:
        return module.__spec__
    for finder in sys.meta_path:
        find = getattr(finder, "find_spec", None)
        if find is not None:
            spec = find(name, None)
            if spec is not None:
                return spec
    return None


def read_text(package: str, *parts: str) -> str:
    with open(path(package, *parts), encoding="utf-8") as fh:
        return fh.read()


def load_json(package: str, *parts: str) -> Any:
    # `json` here, not at import: the entry point imports this module before the code table
    # is installed (`ailint.core.codecache`), and json's six patterns would be compiled anew
    import json

    with open(path(package, *parts), encoding="utf-8") as fh:
        return json.load(fh)


def submodules(package_path: list[str] | Any) -> list[str]:
    """The names of the modules and packages in a package's folders (`pkg.__path__`), as
    `pkgutil.iter_modules` lists them for a package on disk, without `pkgutil` (which loads
    `inspect`, with `ast`, `dis` and `tokenize`: a tenth of a one-file run)."""
    names: set[str] = set()
    for folder in package_path:
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for e in entries:
            name = e.name
            if name.endswith(".py") and e.is_file() and name != "__init__.py":
                names.add(name[:-3])
            elif "." not in name and e.is_dir() and os.path.isfile(os.path.join(e.path, "__init__.py")):
                names.add(name)
    return sorted(names)
