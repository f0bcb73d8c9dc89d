"""Helpers every reporter shares: JSON Pointer paths, edit positions, file modes, redaction."""

from __future__ import annotations

import copy
import dataclasses
import os
import re

from ailint.core.model import Edit, Finding, SourceFile

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


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


def redact_text(text: str) -> str:
    """Text shown in a report (code frames, messages, fix texts, HTML, webhook answers) with
    every secret value masked by `*`, one character for one (lines and columns unchanged).

    The detector is SEC007's (`ailint.domain.agents.redact`, shapes in data/secrets.json),
    applied to any text, manifest or not."""
    if not text or text in _CLEAN:
        return text
    digest = _digest(text) if len(text) > LONG_TEXT else None
    if digest is not None:
        _USED_LONG.add(digest)
        if digest in _CLEAN_LONG:
            return text
    from ailint.domain.agents import redact

    masked = redact(text)
    if masked == text:
        if digest is None:
            _CLEAN.add(text)
        else:
            _CLEAN_LONG.add(digest)
    return masked


# Texts the detector found no secret in, this process and (through the results cache)
# earlier runs of the same ailint: a rerun's report does not scan its messages, nor the
# files its code frames quote, again. A long text (a whole file) is known by its digest.
_CLEAN: set[str] = set()
_CLEAN_LONG: set[bytes] = set()
_USED_LONG: set[bytes] = set()  # the long texts this process asked about
LONG_TEXT = 512


def _digest(text: str) -> bytes:
    from ailint.core.digest import blake2b

    return blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


def clean_texts() -> set[str]:
    """The texts known to hold no secret (a copy, for the results cache)."""
    return set(_CLEAN)


def clean_digests() -> set[bytes]:
    """The digests of this process's long texts known to hold no secret (for the cache:
    what the next run of the same paths will ask about)."""
    return _CLEAN_LONG & _USED_LONG


def learn_clean(texts: Any) -> None:
    """Texts (and digests of long ones) an earlier run of this same ailint found no secret
    in (the cache's entry, MAC'd and keyed by the package: the detector is part of the key)."""
    if isinstance(texts, (list, set, frozenset, tuple)):
        _CLEAN.update(t for t in texts if isinstance(t, str))
        _CLEAN_LONG.update(t for t in texts if isinstance(t, bytes))


def redact_finding(f: Finding) -> Finding:
    """`f` with its message, fix title and fix contents masked (a copy; `f` is unchanged)."""
    fix = f.fix
    if fix is not None:
        masked = [redact_text(e.content) for e in fix.edits]
        title = redact_text(fix.title)
        if title != fix.title or any(m != e.content for m, e in zip(masked, fix.edits, strict=True)):
            edits = tuple(
                e if m == e.content else dataclasses.replace(e, content=m)
                for m, e in zip(masked, fix.edits, strict=True)
            )
            fix = dataclasses.replace(fix, title=title, edits=edits)
    message = redact_text(f.message)
    if message == f.message and fix is f.fix:
        return f
    return dataclasses.replace(f, message=message, fix=fix)


def redact_result(result: Any) -> Any:
    """What a reporter may show of a run: a shallow copy with the findings masked
    (`redact_finding`); code frames come from `frame_source`. The sources stay as they are
    (positions of fix edits, SARIF locations)."""
    out = copy.copy(result)
    out.findings = [redact_finding(f) for f in result.findings]
    out.frame_cache = {}
    out.frame_files = {fs.path for fs in getattr(result, "files", ()) if getattr(fs, "objects", 0)}
    return out


_MANIFEST_HINT = re.compile(r"^(?:apiVersion|kind)\s*:", re.M)


def frame_source(result: Any, file: str) -> SourceFile | None:
    """The source a code frame (text, HTML) may quote for `file`: masked by `redact_text`,
    and None for a file that holds no Kubernetes object and does not read like a manifest
    (a values file, a credentials file behind a followed link: no frame at all)."""
    cache = getattr(result, "frame_cache", None)
    if cache is not None and file in cache:
        return cache[file]  # type: ignore[no-any-return]
    src = result.sources.get(file)
    got: SourceFile | None = None
    if src is not None:
        holding = getattr(result, "frame_files", None)
        if holding is None:
            holding = {fs.path for fs in getattr(result, "files", ()) if getattr(fs, "objects", 0)}
        holds = file in holding
        if holds or len(_MANIFEST_HINT.findall(src.text, 0, 1 << 16)) >= 2:
            masked = redact_text(src.text)
            got = src
            if masked != src.text:
                got = SourceFile(src.path, src.display, masked)
                got.template_paths = src.template_paths
    if cache is not None:
        cache[file] = got
    return got
