"""Helpers every reporter shares: JSON Pointer paths and edit positions."""

from __future__ import annotations

import os
from typing import Any

from ailint.core.model import Edit, SourceFile


def json_pointer(path: tuple[Any, ...]) -> str:
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in path)


def edit_region(edit: Edit, source: SourceFile | None) -> dict[str, int]:
    """1-based line/column of an edit's start and (exclusive) end."""
    if source is None:
        return {"line": 1, "column": 1, "end_line": 1, "end_column": 1}
    line, col = source.position(edit.start)
    end_line, end_col = source.position(edit.end)
    return {"line": line, "column": col, "end_line": end_line, "end_column": end_col}


def umask_mode() -> int:
    """The mode a newly created file gets here (0o666 less the umask): report files and
    baselines are written through a temporary file (mode 0600), then given this mode."""
    old = os.umask(0o022)
    os.umask(old)
    return 0o666 & ~old
