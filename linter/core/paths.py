"""The run root: the one folder every report path that must not depend on the current folder
is relative to (SARIF artifact URIs, and the other objects' files that messages name).

It is the git work tree holding the current folder, else the config file's folder, else the
current folder. GitHub resolves SARIF URIs against the checkout, and a message reads the
same whichever subfolder the run started in.
"""

from __future__ import annotations

import functools
import os


def repository_root(start: str, real: bool = False) -> str | None:
    """The git work tree holding `start`: the nearest folder at or above it that holds
    `.git` (a folder, or a file in a worktree or submodule), or None outside a repository.
    `real`: walked up from `start`'s real path, as the project boundary sees folders
    (`ailint.engine.boundary`); else from its absolute path, as reports name them."""
    cur = os.path.realpath(start) if real else os.path.abspath(start)
    while True:
        if os.path.lexists(os.path.join(cur, ".git")):
            return cur
        parent = os.path.dirname(cur)
        if parent == cur:
            return None
        cur = parent


def run_root(config_root: str | None = None) -> str:
    """The run root (absolute): the git work tree of the current folder, else `config_root`
    (the config file's folder, when a config was read), else the current folder."""
    cwd = os.getcwd()
    return os.path.abspath(repository_root(cwd) or config_root or cwd)


def root_relative(path: str, root: str) -> str | None:
    """`path` relative to `root` with forward slashes, or None when it lies outside `root`.
    Messages name other objects' files through it thousands of times a run: remembered per
    path, root and current folder (a relative path means another file after a `chdir`)."""
    return _root_relative(path, root, "" if os.path.isabs(path) and os.path.isabs(root) else os.getcwd())


@functools.lru_cache(maxsize=8192)
def _root_relative(path: str, root: str, cwd: str) -> str | None:
    full = os.path.abspath(path)
    try:
        rel = os.path.relpath(full, os.path.abspath(root))
    except ValueError:  # another drive
        return None
    if rel == ".." or rel.startswith(".." + os.sep) or os.path.isabs(rel):
        return None
    return rel.replace(os.sep, "/")


def user_cache_dir() -> str:
    """ailint's cache folder: `AILINT_CACHE_DIR`, else `$XDG_CACHE_HOME/ailint`, else
    `~/.cache/ailint`. The results cache and the registry's rule index both live here."""
    base = os.environ.get("AILINT_CACHE_DIR")
    if base:
        return base
    xdg = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(xdg, "ailint")
