"""A key for what ailint's installed code is: indexes derived from the code (the registry's
rule index, the workload families' index) are kept in the cache folder under it, so an index
is never read by code other than the code that wrote it.

- An installed ailint (a wheel: `site-packages/ailint` beside `ailint-<version>.dist-info`)
  is keyed by its `RECORD`, which pip writes with every install, reinstall and upgrade and
  which lists the hash of every file: one `stat` instead of 380.
- Any other layout (an editable install, a source tree on `sys.path`) is keyed by the
  path, size and mtime of every `.py` file of the `ailint` and `ailint.rules` packages, so
  an edit makes a new key.

Computed once per process.
"""

from __future__ import annotations

import functools
import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence


@functools.cache
def source_key() -> str:
    """The key of the running ailint's code (OSError when its files cannot be read)."""
    import ailint
    import ailint.rules

    roots = list(dict.fromkeys([*ailint.__path__, *ailint.rules.__path__]))
    head = f"{ailint.__version__}:{sys.version}"
    record = installed_record(roots, ailint.__version__)
    if record is not None:
        st = os.stat(record)
        return f"{head}\ninstalled {record}:{st.st_size}:{st.st_mtime_ns}"
    parts = [head]
    for root in roots:
        source_stamps(root, parts)
    return "\n".join(parts)


def code_index_file(prefix: str, version: int, suffix: str = ".json") -> str | None:
    """The kept index (`<prefix>-…<suffix>`) of this code at `version` of its format: the rule
    index, the family index. None when the cache is off or the code cannot be read."""
    from ailint.core.cachedir import kept_file

    try:
        key = f"{version}:{source_key()}".encode("utf-8", "surrogateescape")
    except OSError:
        return None
    return kept_file(prefix, key, suffix)


KEPT_INDEXES = 7  # indexes of older code kept beside the current one (checkouts sharing the folder)


def installed_record(roots: Sequence[str], version: str) -> str | None:
    """The `RECORD` of a wheel install holding `roots` (the package folder and its
    subpackages), or None: an editable install, a source tree, a zip."""
    package = os.path.realpath(roots[0])
    site = os.path.dirname(package)
    if os.path.basename(package) != "ailint":
        return None
    if not all(os.path.realpath(r) == package or os.path.realpath(r).startswith(package + os.sep) for r in roots):
        return None
    record = os.path.join(site, f"ailint-{version}.dist-info", "RECORD")
    return record if os.path.isfile(record) else None


def source_stamps(folder: str, out: list[str]) -> None:
    """`path:size:mtime` of every `.py` file under `folder`, a folder's files before its
    subfolders, each in name order (`os.scandir`: a third less than `os.walk` and `os.stat`)."""
    with os.scandir(folder) as it:
        entries = sorted(it, key=lambda e: e.name)
    subfolders = []
    for e in entries:
        if e.name.endswith(".py") and e.is_file():
            st = e.stat()
            out.append(f"{folder}/{e.name}:{st.st_size}:{st.st_mtime_ns}")
        elif e.name != "__pycache__" and e.is_dir():
            subfolders.append(e.path)
    for sub in subfolders:
        source_stamps(sub, out)
