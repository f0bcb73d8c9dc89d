"""The project boundary: which files a run may read, and which `--fix` may write.

A repository under review is not trusted: a pull request can add `creds.yaml ->
../../.git-credentials`, a FIFO named like a manifest, or a link into `/proc`. The rule:

- The **project roots** are the git toplevel (the nearest folder above with a `.git`)
  of each path given on the command line, and the config file's folder. With neither,
  a given folder is its own root, and a given file's folder is the root of that file.
- A file met in a folder walk is read only when its real path (links resolved) lies
  inside a project root or inside a folder given on the command line. A link that
  resolves elsewhere is reported once, on the link (YML013), and not read; a linked
  folder that resolves elsewhere is not walked. `--follow-external-symlinks` (config
  `follow-external-symlinks: true`) reads them anyway.
- A path named on the command line is the user's choice and is read wherever it is,
  unless it is itself a symbolic link: then its target must lie inside a project root,
  as for a link met in a walk. (CI scripts name files with `git ls-files`, which lists a
  committed link like any file; the name alone does not mean the user chose its target.)
- Entries of `/proc`, `/sys` and `/dev`, FIFOs, sockets and devices are never read,
  whatever the flags (`open_regular` also opens with `O_NONBLOCK` and checks the opened
  file, so a file swapped for a FIFO after discovery cannot hang the run).
- `--fix` writes a file only when the path is not a link, is a regular file, and its
  real path lies inside a project root or is a file or folder given on the command line
  (never a target reached by following an external link).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable
from dataclasses import dataclass

from ailint.core.paths import repository_root

SPECIAL_TREES = ("/proc", "/sys", "/dev")


def _under(real: str, root: str) -> bool:
    return real == root or real.startswith(root.rstrip(os.sep) + os.sep)


def special_tree(real: str) -> bool:
    """A path inside /proc, /sys or /dev (pseudo-files: environments, memory, devices)."""
    return any(_under(real, t) for t in SPECIAL_TREES)


_INSIDE: dict[tuple[str, ...], dict[str, bool]] = {}  # roots -> folder -> inside them


@dataclass(frozen=True)
class Boundary:
    """What a run may read and a fix may write: the projects and the paths given on the command line."""

    projects: tuple[str, ...]  # project roots (git toplevels, config root), real paths
    named_dirs: tuple[str, ...] = ()  # folders given on the command line (not links), real paths
    named_files: frozenset[str] = frozenset()  # files given on the command line (not links), real paths
    follow_external: bool = False

    @classmethod
    def for_paths(cls, paths: Iterable[str], config_root: str | None = None, follow_external: bool = False) -> Boundary:
        projects: list[str] = []
        named_dirs: list[str] = []
        named_files: set[str] = set()

        def add(root: str | None) -> None:
            if root and root not in projects:
                projects.append(root)

        if config_root:
            add(os.path.realpath(config_root))
        for given in paths:
            if given == "-":
                continue
            absolute = os.path.abspath(given)
            is_link = os.path.islink(absolute)
            is_dir = os.path.isdir(absolute) and not is_link
            # the repository the path is in, looked up from where the path itself lives
            where = absolute if is_dir else os.path.dirname(absolute)
            top = repository_root(where, real=True)
            add(top)
            if top is None and not config_root:
                add(os.path.realpath(where))
            if is_link:
                continue
            if is_dir:
                named_dirs.append(os.path.realpath(absolute))
            else:
                named_files.add(os.path.realpath(absolute))
        return cls(tuple(projects), tuple(named_dirs), frozenset(named_files), follow_external)

    def inside(self, real: str) -> bool:
        """Is this real path inside a project root or a folder given on the command line?
        Answered once per folder: a path is inside when its folder is, or when it is a root."""
        roots = self.projects + self.named_dirs
        if real in roots:
            return True
        folder = os.path.dirname(real)
        memo = _INSIDE.setdefault(roots, {})
        known = memo.get(folder)
        if known is None:
            known = memo[folder] = any(_under(folder, r) for r in roots)
        return known

    def reads_entries_of(self, real_dir: str) -> bool:
        """Whether every entry of the folder `real_dir` (a real path) that is no link may be
        read: such an entry's real path is `real_dir/name`, so `refuse_read` would answer the
        same for each of them. A folder walk asks this once per folder instead of asking
        `refuse_read` once per file (a third of a rerun's folder walk). False for `/` (an
        entry of it may be `/proc`) and wherever the answer may differ: ask per entry then."""
        if real_dir == os.sep or not os.path.isabs(real_dir) or special_tree(real_dir):
            return False
        return self.follow_external or self.inside(os.path.join(real_dir, ""))

    def refuse_read(self, path: str, real: str | None = None, named: bool = False) -> tuple[str, str] | None:
        """(code, why) when `path` must not be read, else None. `named`: given on the command line."""
        real = real or os.path.realpath(path)
        if special_tree(real):
            return "YML009", "a /proc, /sys or /dev entry; never read"
        if named and not os.path.islink(path):
            return None
        if self.follow_external or self.inside(real):
            return None
        try:
            target = os.readlink(path)
        except OSError:
            target = real  # a link in a folder above it: show where it ends up
        kind = "folder" if os.path.isdir(real) else "file"
        return (
            "YML013",
            f"symbolic link to {target}, a {kind} outside the project; not read (--follow-external-symlinks reads it)",
        )

    def refuse_write(self, path: str) -> str | None:
        """Why `--fix` must not replace `path`, or None."""
        return refuse_write(path, self)


def refuse_write(path: str, boundary: Boundary | None = None) -> str | None:
    """Why `--fix` must not replace `path` (a link, not a regular file, a pseudo-file, or,
    given the run's boundary, outside the project), or None."""
    try:
        st = os.lstat(path)
    except OSError as exc:
        return f"cannot check it: {exc.strerror or exc}"
    if stat.S_ISLNK(st.st_mode):
        return "it is a symbolic link; ailint never writes through a link"
    if not stat.S_ISREG(st.st_mode):
        return "it is not a regular file"
    real = os.path.realpath(path)
    if special_tree(real):
        return "a /proc, /sys or /dev entry"
    if boundary is None or real in boundary.named_files:
        return None
    if any(_under(real, r) for r in boundary.projects + boundary.named_dirs):
        return None
    return "it lies outside the project (reached through a linked folder); not written"


class FileTooLarge(Exception):
    """A file over the size `open_regular` was told to refuse (its stat's size)."""

    def __init__(self, size: int) -> None:
        super().__init__(size)
        self.size = size


def open_regular(path: str, limit: int, refuse_over: int | None = None) -> bytes:
    """Read at most `limit` bytes of a regular file; OSError for anything else, and
    `FileTooLarge` when its size is over `refuse_over` (nothing is read then).

    `O_NONBLOCK` keeps a FIFO (swapped in after discovery) from blocking the open, and
    the opened descriptor is checked to be a regular file before a byte is read. The size
    is the opened file's (`fstat`): no `stat` of the path before the open.

    The first read asks for one byte more than that size: a short answer that holds the
    whole size is the end of the file, so a file is one read, not a read and an empty one
    (each of which made a buffer of a mebibyte first: 18 to 15 ms for the corpus's files).
    A file that grew since is read on to its end (or the limit)."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(path, flags)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise OSError(0, "not a regular file (FIFO, socket or device)")
        if refuse_over is not None and st.st_size > refuse_over:
            raise FileTooLarge(st.st_size)
        chunks: list[bytes] = []
        left = limit
        want = min(st.st_size + 1, 1 << 20)
        got = 0
        while left > 0:
            ask = min(left, want)
            chunk = os.read(fd, ask)
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
            got += len(chunk)
            if len(chunk) < ask and got >= st.st_size:
                break  # the size the file had when opened, and no more: its end
            want = 1 << 20
        return b"".join(chunks)
    finally:
        os.close(fd)
