"""What the bundle rules join: the run's objects split into projects (`--scope`).

`repo` (the default): the git work tree holding the object's file, else the config file's
folder when the file lies inside it, else the path given on the command line that holds
it. `dir`: the file's folder. `run`: every object of the run is one cluster. Standard input
and files under no given path join the run's first project key ("").

Context files (`--context`, the config's `context`) describe the cluster: they join every
project. Each project gets a Context of its own, so a NodePool of one repository never
hosts another repository's pods.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence

from ailint.core.model import K8sObject
from ailint.core.paths import repository_root, root_relative

SCOPES = ("run", "repo", "dir")
_POSIX = os.sep == "/" and not os.altsep
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import TypeVar

    C = TypeVar("C")


class Projects:
    """The project key of a file's path under one scope (memoised per folder)."""

    def __init__(self, scope: str, paths: Sequence[str], config_root: str | None) -> None:
        self.scope = scope
        self.given = sorted((os.path.abspath(p) for p in paths if p and p != "-"), key=len, reverse=True)
        self.config_root = config_root
        self._by_dir: dict[str, str] = {}
        self._by_path: dict[str, str] = {}  # by the folder as given (no abspath per file)

    def key(self, path: str) -> str:
        """The project of the file at `path` ("" for standard input, and under `run`)."""
        if self.scope == "run" or not path or path == "-":
            return ""
        # as given: the files of a folder share it (what precedes the last separator names one
        # folder, which `os.path.dirname` would give less the trailing slashes: a memo key)
        given_folder = path.rpartition("/")[0] if _POSIX else os.path.dirname(path)
        known = self._by_path.get(given_folder)
        if known is not None:
            return known
        folder = os.path.dirname(os.path.abspath(path))
        got = self._by_dir.get(folder)
        if got is None:
            if self.scope == "dir":
                got = folder
            else:
                got = repository_root(folder) or ""
                if not got and self.config_root and root_relative(folder, self.config_root) is not None:
                    got = self.config_root
                if not got:
                    got = next((g for g in self.given if _within(folder, g)), "")
            self._by_dir[folder] = got
        self._by_path[given_folder] = got
        return got


def _within(folder: str, root: str) -> bool:
    """Whether `folder` is `root` or lies under it (both absolute and normalised, as
    `os.path.abspath` makes them): `root_relative(folder, root) is not None`, told from the
    strings alone where paths are POSIX ones."""
    if not _POSIX:
        return root_relative(folder, root) is not None
    return folder == root or folder.startswith(root if root.endswith("/") else root + "/")


def scope_keys(
    objects: Sequence[K8sObject],
    scope: str,
    paths: Sequence[str],
    config_root: str | None,
    context_only: frozenset[str] = frozenset(),
    projects: Projects | None = None,
) -> list[str | None] | None:
    """Per object, its project key (None: a context object, in every project); None when
    every object is in one project (`run`, or one key only). `projects`: the run's
    `Projects` of the same scope, paths and config root, when the caller keeps one."""
    if scope == "run" or len(objects) < 2:
        return None
    if projects is None:
        projects = Projects(scope, paths, config_root)
    keys: list[str | None] = []
    last: tuple[object, str | None] = (None, None)  # the objects of a file come together
    for o in objects:
        src = o.source
        if src is last[0]:
            keys.append(last[1])
            continue
        if src.display in context_only:
            key: str | None = None
        elif src.is_stdin:
            key = ""
        else:
            key = projects.key(src.path)
        keys.append(key)
        last = (src, key)
    if len({k for k in keys if k is not None}) < 2:
        return None
    return keys


def partition(
    objects: list[K8sObject], keys: list[str | None], make: Callable[[list[K8sObject]], C]
) -> tuple[list[int], list[C], list[str]]:
    """Per object, the index of its project's context (0 for a context object, never
    judged); the contexts, one per project in first-seen order, each built by `make` from the
    project's objects and the context objects, in the run's order; the projects' keys."""
    order: dict[str, int] = {}
    for k in keys:
        if k is not None and k not in order:
            order[k] = len(order)
    members: list[list[K8sObject]] = [[] for _ in order]
    for o, k in zip(objects, keys, strict=True):
        if k is None:
            for m in members:
                m.append(o)
        else:
            members[order[k]].append(o)
    return [order[k] if k is not None else 0 for k in keys], [make(m) for m in members], list(order)
