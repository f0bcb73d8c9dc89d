"""Turn the paths on the command line into the list of files to lint.

Folders are walked recursively for `*.yaml`, `*.yml` and `*.json`, skipping `.git` and
other VCS folders, paths matched by `.gitignore` files and the config's `exclude`
patterns, and never following a symlinked folder twice (no loops). Files named explicitly
are always linted, whatever their extension. Anything that is not a regular file (a FIFO,
a device, a folder named like a YAML file) is reported, never opened.

A walk also skips, silently, the YAML and JSON files that are known not to be Kubernetes
manifests (`not_a_manifest`): GitHub workflows, pre-commit files, ailint's own config and
baseline, Compose files, Helm `values*.yaml` and `Chart.yaml`, and JSON that is not an
object with `apiVersion` and `kind`. The same files named explicitly are linted (and
reported as YML008 when they hold no object). `discover(..., skipped=counter)` counts what
was skipped, by reason, for the JSON report.
"""

from __future__ import annotations

import fnmatch
import operator
import os
import re
import stat
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from ailint.engine.boundary import Boundary

EXTENSIONS = (".yaml", ".yml", ".json")
_PRE_COMMIT = {".pre-commit-config.yaml", ".pre-commit-config.yml", ".pre-commit-hooks.yaml", ".pre-commit-hooks.yml"}
_AILINT_CONFIG = {".ailint.yaml", ".ailint.yml"}
_HELM = {"chart.yaml", "chart.yml", "chart.lock", "requirements.yaml"}
_COMPOSE = re.compile(r"^(?:docker-)?compose(?:[.-][\w.-]*)?\.ya?ml$", re.IGNORECASE)
_VALUES = re.compile(r"^values(?:[.-][\w.-]*)?\.ya?ml$", re.IGNORECASE)
_JSON_PEEK = 1024 * 1024  # a JSON file over this size is linted, not sniffed


def not_a_manifest(path: str, shown: str) -> str | None:
    """Why a file met in a folder walk is not a Kubernetes manifest, or None (lint it).

    Names first (no read); JSON is sniffed: it must parse to an object with `apiVersion`
    and `kind` (a `List` is one); JSON that does not parse is linted, so YML reports it."""
    name = shown.rpartition("/")[2]
    low = name.lower()
    if ("/" + shown).endswith("/.github/workflows/" + name):
        return "GitHub workflow"
    if name in _PRE_COMMIT:
        return "pre-commit file"
    if name in _AILINT_CONFIG:
        return "ailint config"
    if low in _HELM:
        return "Helm chart file"
    if low.startswith("values") and _VALUES.match(name):  # (the name is tested before the pattern)
        return "Helm values file"
    if low.startswith(("compose", "docker-compose")) and _COMPOSE.match(name):
        return "Compose file"
    if low.endswith(".json"):
        return _json_not_manifest(path)
    return None


def _json_not_manifest(path: str) -> str | None:
    import json

    try:
        if os.path.getsize(path) > _JSON_PEEK:
            return None
        with open(path, "rb") as fh:
            data = json.loads(fh.read())
    except (OSError, ValueError):
        return None
    if isinstance(data, dict) and data.get("tool") == "ailint" and isinstance(data.get("fingerprints"), list):
        return "ailint baseline"
    if isinstance(data, dict) and isinstance(data.get("apiVersion"), str) and isinstance(data.get("kind"), str):
        return None
    return "JSON without apiVersion and kind"


_BY_NAME = operator.attrgetter("name")  # a folder's entries in name order (no Python call per entry)
SKIP_DIRS = {".git", ".hg", ".svn", "node_modules", ".venv", "venv", "__pycache__", ".tox", ".mypy_cache"}


@dataclass(frozen=True, slots=True)
class Candidate:
    """A file to lint: its path, what reports call it, and why it cannot be read, if so."""

    path: str  # filesystem path ("-" for stdin)
    display: str  # what reports call it
    problem: str | None = None  # why it cannot be read (then it becomes a YML009 finding)
    context: bool = False  # loaded for the bundle rules only; its own findings are not reported
    code: str = "YML009"  # the finding `problem` becomes (YML013: a link out of the project)
    # the stat discovery took (`ailint.engine.cache.signature`): the cache trusts it for the bytes
    signature: tuple[int, ...] | None = field(default=None, compare=False)


def signature(st: os.stat_result) -> tuple[int, ...]:
    """What a file's stat says of its bytes: size, mtime, ctime, inode and device. The
    results cache trusts a file key recorded under the same signature instead of reading and
    hashing the file again (git's index does the same; ruff keys on the mtime). No program
    can set the ctime back (`touch -d` moves the mtime and changes the ctime), so a write
    that keeps size and mtime still changes the signature."""
    return (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev)


def display_path(path: str, root: str) -> str:
    """Repository-relative, forward-slash path when the file is under `root`."""
    try:
        rel = os.path.relpath(path, root)
    except ValueError:
        rel = path
    if rel.startswith(".."):
        rel = os.path.abspath(path) if os.path.isabs(path) else path
    return rel.replace(os.sep, "/")


class _GitIgnore:
    """A small `.gitignore` matcher: enough for the usual patterns (not a full git clone)."""

    def __init__(self) -> None:
        self.rules: list[tuple[str, re.Pattern[str], bool, bool]] = []  # base, regex, negate, dir_only

    def add_file(self, base: str, path: str) -> None:
        try:
            with open(path, encoding="utf-8", errors="replace") as fh:
                lines = fh.read().splitlines()
        except OSError:
            return
        for line in lines:
            line = line.rstrip()
            if not line or line.startswith("#"):
                continue
            negate = line.startswith("!")
            if negate:
                line = line[1:]
            dir_only = line.endswith("/")
            line = line.rstrip("/")
            anchored = "/" in line
            line = line.lstrip("/")
            pat = _glob_to_regex(line)
            if not anchored:
                pat = r"(?:.*/)?" + pat
            self.rules.append((base, re.compile(pat + r"$"), negate, dir_only))

    def ignored(self, path: str, is_dir: bool) -> bool:
        result = False
        for base, regex, negate, dir_only in self.rules:
            if dir_only and not is_dir:
                continue
            rel = os.path.relpath(path, base).replace(os.sep, "/")
            if rel.startswith(".."):
                continue
            if regex.match(rel):
                result = not negate
        return result


def _glob_to_regex(glob: str) -> str:
    out = []
    i = 0
    while i < len(glob):
        c = glob[i]
        if glob.startswith("**/", i):
            out.append(r"(?:.*/)?")
            i += 3
            continue
        if glob.startswith("**", i):
            out.append(r".*")
            i += 2
            continue
        if c == "*":
            out.append(r"[^/]*")
        elif c == "?":
            out.append(r"[^/]")
        else:
            out.append(re.escape(c))
        i += 1
    return "".join(out)


def matches_any(display: str, patterns: Iterable[str]) -> bool:
    """Config-style glob match against a repo-relative path (`**` spans folders)."""
    return any(fnmatch.fnmatch(display, pat) or re.match(_glob_to_regex(pat) + "$", display) for pat in patterns)


def discover(
    paths: Iterable[str],
    root: str,
    exclude: Iterable[str] = (),
    respect_gitignore: bool = True,
    *,
    skipped: dict[str, int] | None = None,
    walked: bool = False,
    boundary: Boundary | None = None,
) -> Iterator[Candidate]:
    """The files to lint under `paths`; `walked=True` treats named files as met in a walk
    (context files: non-manifests skipped silently, missing ones ignored)."""
    exclude = list(exclude)
    paths = list(paths)
    if boundary is None:  # the project boundary (ailint.engine.boundary) of these paths
        boundary = Boundary.for_paths(paths)
    if skipped is None:
        skipped = {}
    seen_dirs: set[tuple[int, int]] = set()
    seen_files: set[str] = set()
    for given in paths:
        if given == "-":
            yield Candidate("-", "-")
            continue
        try:
            st = os.stat(given)
        except OSError as exc:
            if not walked:
                yield Candidate(given, display_path(given, root), f"cannot read: {exc.strerror or exc}")
            continue
        refused = boundary.refuse_read(given, named=not walked)
        if refused:
            yield Candidate(given, display_path(given, root), refused[1], code=refused[0])
            continue
        if stat.S_ISDIR(st.st_mode):
            yield from _walk(given, root, exclude, respect_gitignore, seen_dirs, seen_files, skipped, boundary)
        elif stat.S_ISREG(st.st_mode):
            real = os.path.realpath(given)
            if walked:
                shown = display_path(given, root)
                why = None if given.lower().endswith(EXTENSIONS) else "not YAML or JSON"
                why = why or not_a_manifest(given, shown)
                if why:
                    skipped[why] = skipped.get(why, 0) + 1
                    continue
            if real not in seen_files:
                seen_files.add(real)
                yield Candidate(given, display_path(given, root), signature=signature(st))
        else:
            yield Candidate(given, display_path(given, root), "not a regular file (FIFO, socket or device); skipped")


def _walk(
    top: str,
    root: str,
    exclude: list[str],
    respect_gitignore: bool,
    seen_dirs: set[tuple[int, int]],
    seen_files: set[str],
    skipped: dict[str, int],
    boundary: Boundary,
) -> Iterator[Candidate]:
    ignore = _GitIgnore()
    if respect_gitignore:
        # .gitignore files from the repository root down to `top` apply too.
        parts: list[str] = []
        cur = os.path.abspath(top)
        while True:
            parts.append(cur)
            if os.path.isdir(os.path.join(cur, ".git")):
                break
            parent = os.path.dirname(cur)
            if parent == cur:
                parts = [os.path.abspath(top)]
                break
            cur = parent
        for d in reversed(parts[1:]):
            ignore.add_file(d, os.path.join(d, ".gitignore"))
    stack = [os.path.abspath(top)]
    while stack:
        d = stack.pop()
        try:
            st = os.stat(d)
        except OSError:
            continue
        key = (st.st_dev, st.st_ino)
        if key in seen_dirs:
            continue  # a symlink loop or a folder reached twice
        seen_dirs.add(key)
        real_dir = os.path.realpath(d)  # once per folder: an entry that is no link is real_dir/name
        readable = boundary.reads_entries_of(real_dir)  # the same answer for each such entry
        real_prefix = os.path.join(real_dir, "")  # (`os.path.join` per entry: a tenth of the walk)
        if respect_gitignore:
            ignore.add_file(d, os.path.join(d, ".gitignore"))
        try:
            entries = sorted(os.scandir(d), key=_BY_NAME)
        except OSError as exc:
            yield Candidate(d, display_path(d, root), f"cannot list folder: {exc.strerror or exc}")
            continue
        subdirs = []
        shown_dir = display_path(d, root)  # an entry's is the folder's plus its name
        prefix = "" if shown_dir == "." else shown_dir.rstrip("/") + "/"
        for entry in entries:
            full = entry.path
            shown = prefix + entry.name
            try:
                is_dir = entry.is_dir()
            except OSError:
                is_dir = False
            if is_dir:
                if entry.name in SKIP_DIRS or (respect_gitignore and ignore.ignored(full, True)):
                    continue
                if (exclude and matches_any(shown + "/", exclude)) or matches_any(shown, exclude):
                    continue
                refused = boundary.refuse_read(full) if entry.is_symlink() else None
                if refused:  # a linked folder that leads out of the project: not walked
                    yield Candidate(full, shown, refused[1], code=refused[0])
                    continue
                subdirs.append(full)
                continue
            if not entry.name.lower().endswith(EXTENSIONS):
                continue
            if respect_gitignore and ignore.ignored(full, False):
                continue
            if exclude and matches_any(shown, exclude):
                continue
            try:
                linked = entry.is_symlink()
            except OSError:
                linked = True
            real = os.path.realpath(full) if linked else real_prefix + entry.name
            refused = None if readable and not linked else boundary.refuse_read(full, real)
            if refused:  # checked before any stat or sniff of the target
                yield Candidate(full, shown, refused[1], code=refused[0])
                continue
            try:
                st2 = os.stat(full)
            except OSError as exc:
                yield Candidate(full, shown, f"cannot read: {exc.strerror or exc}")
                continue
            if not stat.S_ISREG(st2.st_mode):
                yield Candidate(full, shown, "not a regular file (FIFO, socket or device); skipped")
                continue
            if real in seen_files:
                continue
            why = not_a_manifest(full, shown)
            if why:
                skipped[why] = skipped.get(why, 0) + 1
                continue
            seen_files.add(real)
            yield Candidate(full, shown, signature=signature(st2))
        stack.extend(reversed(subdirs))
