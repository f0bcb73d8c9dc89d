"""`--since REF` and `--only-changed-lines`: what a change introduces, judged with git.

`--since REF` lints REF's tree as well and keeps the findings whose fingerprints
(`ailint.engine.baseline.fingerprints`, unique per finding and blind to line numbers) it
does not have. REF's tree is read with `git ls-tree` and `git cat-file --batch` into a
temporary folder: the user's work tree, index and HEAD are never touched. The same
settings (the config of the work tree) lint both sides, so a finding is new because the
manifests changed, not because the config did.

`--only-changed-lines` keeps the findings whose span touches a line that differs from the
revision (`git diff -U0 --no-renames REF`, work tree against REF; a file REF does not have
counts as changed throughout).
"""

from __future__ import annotations

import dataclasses
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Sequence

from ailint.core.model import Finding
from ailint.engine.sources import EXTENSIONS

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


class GitError(Exception):
    """git is missing, the folder is not a repository, or the revision is unknown."""


def _git(args: list[str], cwd: str, data: bytes | None = None) -> bytes:
    try:
        proc = subprocess.run(
            ["git", "-c", "core.quotePath=false", *args], cwd=cwd, input=data, capture_output=True, check=False
        )
    except FileNotFoundError:
        raise GitError("git is not installed") from None
    if proc.returncode != 0:
        msg = proc.stderr.decode("utf-8", "replace").strip().splitlines()
        raise GitError(msg[-1] if msg else f"git {' '.join(args)} failed")
    return proc.stdout


def repo_top(cwd: str) -> str:
    return os.path.realpath(_git(["rev-parse", "--show-toplevel"], cwd).decode().strip())


def resolve(ref: str, top: str) -> str:
    """The commit REF names (`GitError` when there is none)."""
    try:
        return _git(["rev-parse", "--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}"], top).decode().strip()
    except GitError:
        raise GitError(f"unknown git revision {ref!r} in {top}") from None


def write_tree(commit: str, top: str, dest: str, wanted: Callable[[str], bool]) -> int:
    """Write the blobs of `commit` whose repo-relative path `wanted` accepts under `dest`
    (plus every `.gitignore`, which discovery honours); returns how many were written."""
    listing = _git(["ls-tree", "-r", "-z", "--full-tree", commit], top)
    entries: list[tuple[str, str]] = []
    for item in listing.split(b"\0"):
        if not item:
            continue
        meta, _, name = item.partition(b"\t")
        mode, kind, sha = meta.decode().split()
        path = name.decode("utf-8", "surrogateescape")
        if kind != "blob" or mode == "120000":  # submodules and symlinks are not followed
            continue
        if os.path.basename(path) == ".gitignore" or wanted(path):
            entries.append((sha, path))
    os.makedirs(os.path.join(dest, ".git"), exist_ok=True)  # marks the top for .gitignore lookups
    if not entries:
        return 0
    out = _git(["cat-file", "--batch"], top, "".join(f"{sha}\n" for sha, _ in entries).encode())
    pos = 0
    for _sha, path in entries:
        header_end = out.index(b"\n", pos)
        size = int(out[pos:header_end].split()[2])
        body = out[header_end + 1 : header_end + 1 + size]
        pos = header_end + 1 + size + 1
        target = os.path.join(dest, *path.split("/"))
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with open(target, "wb") as fh:
            fh.write(body)
    return len(entries)


def unchanged_since(commit: str, top: str, read: Callable[[str], bool], with_ignored: bool = False) -> bool:
    """Whether the work tree holds what `commit` holds for every repo-relative path that a
    run reads (`read`, and every `.gitignore`, which discovery honours): none of them
    changed, added or removed since (`git diff`, the work tree against the commit), none
    untracked (`git ls-files --others`; ignored ones too when `with_ignored`, for a run
    that does not honour `.gitignore`), no symlink among them and no submodule at all in the
    index (`write_tree` writes neither, while the work tree's run reads them), and none
    that git is told not to look at (`--assume-unchanged`, `--skip-worktree`: `git diff`
    would not see their edits)."""

    def counts(name: bytes) -> bool:
        path = name.decode("utf-8", "surrogateescape")
        return read(path) or os.path.basename(path) == ".gitignore"

    changed = _git(["diff", "--name-only", "-z", "--no-renames", "--no-ext-diff", commit, "--"], top)
    if any(counts(name) for name in changed.split(b"\0") if name):
        return False
    others = _git(["ls-files", "-z", "--others", *([] if with_ignored else ["--exclude-standard"])], top)
    if any(counts(name) for name in others.split(b"\0") if name):
        return False
    for item in _git(["ls-files", "-z", "-v", "--stage"], top).split(b"\0"):
        meta, _, name = item.partition(b"\t")
        tag, mode = (meta.split(b" ", 2) + [b"", b""])[:2]
        if mode == b"160000" or (counts(name) and (mode == b"120000" or tag != b"H")):
            return False  # (a tag other than H: a file git is told not to look at, or a conflict)
    return True


def _inside(path: str, top: str) -> str | None:
    """`path` relative to `top` (forward slashes), or None when outside."""
    rel = os.path.relpath(os.path.realpath(path), top)
    if rel == os.curdir:
        return ""
    if rel.startswith(os.pardir):
        return None
    return rel.replace(os.sep, "/")


def findings_at(
    ref: str,
    paths: Sequence[str],
    settings: object,
    shown_root: str,
    context: Sequence[str] = (),
    jobs: int = 1,
    head: Any = None,
    reuse: dict[tuple[str, bool], Any] | None = None,
) -> list[Finding]:
    """The findings the same run would have reported on REF's tree (same paths, settings
    and report paths).

    `head`: this run's result on the work tree (`RunResult`). When it rendered no chart or
    overlay (whose sources need not be manifests) and no file it reads differs from REF's
    (`unchanged_since`), REF's findings are its findings: the same files, linted with the
    same settings. A pull request that changes no manifest then costs one run, not two (on
    the corpus in one repository, `--since HEAD` linted REF's tree in 1.9 to 2.8 s, a second
    cold run).

    `reuse` (by default `head.parsed`): the files a run parsed (`RunResult.parsed`). REF's
    run takes each whose text is the same in REF's tree instead of parsing it and running
    its object rules again (`run.reused`); its cross-resource rules and passes run over the
    whole tree as ever."""
    from ailint.engine.run import bundle_root, lint

    current = head.findings if head is not None and head.render is None else None
    if reuse is None and head is not None:
        reuse = head.parsed

    top = repo_top(shown_root)
    commit = resolve(ref, top)
    root_rel = _inside(shown_root, top)
    if root_rel is None:
        raise GitError(f"{shown_root} is outside the repository {top}")
    named = {r for p in paths if (r := _inside(p, top)) is not None and os.path.isfile(p)}

    def wanted(rel: str) -> bool:
        return rel.lower().endswith(EXTENSIONS) or rel in named

    if (
        current is not None
        and all(_inside(p, top) is not None for p in [*paths, *context])  # (REF's run skips the others)
        and unchanged_since(commit, top, wanted, with_ignored=not getattr(settings, "respect_gitignore", True))
    ):
        return list(current)
    tmp = tempfile.mkdtemp(prefix="ailint-since-")
    try:
        write_tree(commit, top, tmp, wanted)

        def there(p: str) -> str | None:
            rel = _inside(p, top)
            return None if rel is None else os.path.join(tmp, *rel.split("/")) if rel else tmp

        old_paths = [q for p in paths if (q := there(p)) is not None and os.path.exists(q)]
        if not old_paths:
            return []
        old_root = os.path.join(tmp, *root_rel.split("/")) if root_rel else tmp
        old_settings = dataclasses.replace(settings, root=old_root)  # type: ignore[type-var]
        old_context = [q for p in context if (q := there(p)) is not None]
        # other objects' files are named as in the current run: against the same run root in REF's tree
        old_run_root = there(bundle_root(settings))  # type: ignore[arg-type]
        result = lint(
            old_paths,
            old_settings,  # type: ignore[arg-type]
            jobs=jobs,
            context=old_context,
            root=old_root,
            run_root=old_run_root,
            reuse=reuse,
        )
        return result.findings
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def new_findings(current: list[Finding], old: list[Finding]) -> tuple[list[Finding], list[Finding]]:
    """(new, known): the current findings whose fingerprints `old` lacks, and the rest."""
    from ailint.engine.baseline import fingerprints

    before = set(fingerprints(old))
    new: list[Finding] = []
    known: list[Finding] = []
    for f, fp in zip(current, fingerprints(current)):
        (known if fp in before else new).append(f)
    return new, known


_HUNK = re.compile(rb"^@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@")


def changed_lines(ref: str, top: str) -> tuple[dict[str, set[int]], set[str]]:
    """Per repo-relative path, the work tree's lines that differ from REF; and the paths
    REF has (a path it lacks is new: every line changed)."""
    commit = resolve(ref, top)
    diff = _git(["diff", "-U0", "--no-renames", "--no-color", "--no-ext-diff", commit, "--"], top)
    lines: dict[str, set[int]] = {}
    current: set[int] | None = None
    for raw in diff.split(b"\n"):
        if raw.startswith(b"+++ "):
            name = raw[4:].decode("utf-8", "surrogateescape")
            if name.startswith('"') and name.endswith('"'):
                name = name[1:-1]
            current = (
                None if name == "/dev/null" else lines.setdefault(name[2:] if name.startswith("b/") else name, set())
            )
        elif raw.startswith(b"@@") and current is not None:
            m = _HUNK.match(raw)
            if m:
                start, count = int(m.group(1)), int(m.group(2) or b"1")
                if count == 0:  # lines removed after `start`: the lines around the cut changed
                    current.update((max(start, 1), start + 1))
                else:
                    current.update(range(start, start + count))
    listing = _git(["ls-tree", "-r", "-z", "--name-only", "--full-tree", commit], top)
    present = {p.decode("utf-8", "surrogateescape") for p in listing.split(b"\0") if p}
    return lines, present


def on_changed_lines(findings: list[Finding], ref: str, shown_root: str) -> tuple[list[Finding], list[Finding]]:
    """(kept, dropped): the findings whose lines differ from REF."""
    top = repo_top(shown_root)
    lines, present = changed_lines(ref, top)
    kept: list[Finding] = []
    dropped: list[Finding] = []
    for f in findings:
        full = f.file if os.path.isabs(f.file) else os.path.join(shown_root, f.file)
        rel = _inside(full, top)
        if rel is None or f.file == "-":
            kept.append(f)  # not in the repository (standard input, a file elsewhere): nothing to compare
            continue
        if rel not in present:
            kept.append(f)
            continue
        touched = lines.get(rel, set())
        span = range(f.span.line, max(f.span.end_line, f.span.line) + 1)
        (kept if any(n in touched for n in span) else dropped).append(f)
    return kept, dropped
