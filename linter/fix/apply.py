"""Applying fixes: non-overlapping text edits against the original bytes.

`apply_to_text` is the core every path shares (the CLI's `--fix`/`--diff`, the fixture
twins, the property tests): edits of one fix apply together or not at all, a fix that
overlaps an already accepted one waits for the next pass.

`run_fixes` is `ailint check --fix / --unsafe-fixes / --diff`: per pass it applies the
non-overlapping fixes of every file in memory, checks each result (`verify`: it parses, the
documents differ from the old ones only where the edits are, no comment line is lost,
no duplicate key appears), re-lints the whole run in memory (bundle rules see the fixed
objects) and repeats until nothing changes (at most `MAX_PASSES`). Only then are files
written, each atomically (a temporary file in the same folder, then `os.replace`), so an
interrupted run leaves every file either old or new. Standard input and Helm-rendered
output (`# Source:` markers) are never written: their fixes stay in the report.
"""

from __future__ import annotations

import difflib
import math
import os
import stat
import tempfile
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

import yaml
from ailint.core.model import Applicability, Edit, FileResult, Finding, Fix, Pos, SourceFile
from ailint.fix.edits import DocumentEdit

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

MAX_PASSES = 5


def _own_edits(fix: Fix) -> list[Edit] | None:
    """A fix's edits in order, insertions at one point joined in the fix's order; None when
    two of its edits overlap otherwise (the fix is then never applied)."""
    out: list[Edit] = []
    for e in sorted(fix.edits, key=lambda e: e.start):  # stable: equal points keep their order
        if out and e.start == e.end == out[-1].start == out[-1].end:
            out[-1] = Edit(e.start, e.end, out[-1].content + e.content)
            continue
        if out and _overlaps(out[-1], e):
            return None
        out.append(e)
    return out


def apply_to_text(text: str, fixes: Iterable[Fix]) -> tuple[str, list[Fix]]:
    """Apply every fix whose edits overlap no earlier accepted edit; return (text, applied).

    Several insertions at one point inside one fix are applied in the fix's order.
    """
    accepted: list[Edit] = []
    applied: list[Fix] = []
    seen: set[tuple[int, int, str]] = set()
    for fix in sorted((f for f in fixes if f.edits), key=lambda f: min(e.start for e in f.edits)):
        own = _own_edits(fix)
        if own is None:
            continue
        edits = [e for e in own if (e.start, e.end, e.content) not in seen]
        if not edits:
            applied.append(fix)  # identical to edits already accepted
            continue
        if any(_overlaps(e, a) for e in edits for a in accepted):
            continue
        if any(not 0 <= e.start <= e.end <= len(text) for e in edits):
            continue  # stale offsets: never apply an edit outside the text
        accepted.extend(edits)
        seen.update((e.start, e.end, e.content) for e in edits)
        applied.append(fix)
    out = text
    # back to front; at one point the later accepted first, so appended documents keep fix order
    for _, e in sorted(enumerate(accepted), key=lambda p: (p[1].start, p[1].end, p[0]), reverse=True):
        out = out[: e.start] + e.content + out[e.end :]
    return out, applied


def _overlaps(a: Edit, b: Edit) -> bool:
    if a.start == a.end and b.start == b.end:
        # two inserts at one point: order would be ambiguous (whole appended documents excepted)
        return a.start == b.start and not (isinstance(a, DocumentEdit) and isinstance(b, DocumentEdit))
    return (
        (a.start < b.end and b.start < a.end)
        or (a.start == a.end and b.start < a.start < b.end)
        or (b.start == b.end and a.start < b.start < a.end)
    )


# -- checking a result --------------------------------------------------------------------
@dataclass
class _Doc:
    """A fixed document parsed again to check the fix, with any problems the parse found."""

    data: Any
    positions: dict[tuple[Any, ...], Pos]
    problems: int  # duplicate keys and other YML findings inside the document


def _documents(text: str) -> list[_Doc]:
    """Every document of `text` as plain data with positions (raises yaml.YAMLError)."""
    from ailint.core.yamldata import Converter, LimitExceeded, Limits, compose_all

    out = []
    for node in compose_all(text):
        if node is None:
            out.append(_Doc(None, {}, 0))
            continue
        conv = Converter(Limits())
        try:
            data, _ = conv.convert(node, (), None, 0)
        except LimitExceeded as exc:
            raise yaml.YAMLError(exc.message) from None
        out.append(_Doc(data, conv.positions, len(conv.findings)))
    return out


def _same(a: Any, b: Any) -> bool:
    if type(a) is not type(b):
        return False
    if isinstance(a, float) and math.isnan(a) and math.isnan(b):
        return True
    return bool(a == b)


def _canon(v: Any) -> str:
    return repr(v) if not isinstance(v, (dict, list)) else repr(_freeze(v))


def _freeze(v: Any) -> Any:
    if isinstance(v, dict):
        return tuple((type(k).__name__, k, _freeze(x)) for k, x in v.items())
    if isinstance(v, list):
        return ("list", tuple(_freeze(x) for x in v))
    return (type(v).__name__, v)


def data_changes(old: Any, new: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[str, tuple[Any, ...]]]:
    """The minimal differences between two parsed values: ("add"|"remove"|"change", path)."""
    if isinstance(old, dict) and isinstance(new, dict):
        for k in old:
            if k not in new:
                yield "remove", path + (k,)
        for k in new:
            if k not in old:
                yield "add", path + (k,)
            else:
                yield from data_changes(old[k], new[k], path + (k,))
        return
    if isinstance(old, list) and isinstance(new, list):
        if len(old) == len(new):
            for i, (a, b) in enumerate(zip(old, new)):
                yield from data_changes(a, b, path + (i,))
            return
        sm = difflib.SequenceMatcher(a=[_canon(x) for x in old], b=[_canon(x) for x in new], autojunk=False)
        for op, i1, i2, j1, j2 in sm.get_opcodes():
            if op == "equal":
                continue
            if op == "replace" and i2 - i1 == j2 - j1:
                for a, b in zip(range(i1, i2), range(j1, j2)):
                    yield from data_changes(old[a], new[b], path + (a,))
                continue
            for a in range(i1, i2):
                yield "remove", path + (a,)
            for b in range(j1, j2):
                yield "add", path + (b,)
        return
    if not _same(old, new):
        yield "change", path


def _line_end(text: str, offset: int) -> int:
    nl = text.find("\n", offset)
    return len(text) if nl == -1 else nl


def verify(old: str, new: str, edits: Iterable[Edit]) -> str | None:
    """Why `new` (the old text with `edits` applied) must not be written, or None when it is fine.

    The result must parse, keep the number of documents, add no duplicate key, keep every
    comment line, and differ from the old documents only inside the edited regions: a
    changed or removed value must overlap an edit, an added key or item must sit in a
    collection that contains an edit. The one way to add documents is a `DocumentEdit`
    (`edits.append_document`): the result may then have exactly the declared number more,
    each at the place of its insertion and equal (types included) to the documents its
    text parses to on its own; the old documents are then checked as above, without it.
    """
    edits = list(dict.fromkeys(edits))  # an edit shared by two fixes is applied once
    added = [e for e in edits if isinstance(e, DocumentEdit)]
    edits = [e for e in edits if not isinstance(e, DocumentEdit)]
    try:
        old_docs = _documents(old)
    except (yaml.YAMLError, RecursionError):
        return "the file does not parse as a whole; fixes are applied only to files that do"
    try:
        new_docs = _documents(new)
    except (yaml.YAMLError, RecursionError) as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or (str(exc).splitlines() or ["invalid YAML"])[0]
        return f"the result would not parse{where}: {problem}"
    if added:
        why, new_docs = _without_added(old, old_docs, new_docs, added)
        if why:
            return why
    if len(old_docs) != len(new_docs):
        return f"the result would have {len(new_docs)} documents instead of {len(old_docs)}"
    lost = comment_lines(old, old_docs) - comment_lines(new, new_docs)
    if lost:
        return f"the comment line `{next(iter(lost))}` would be lost"
    src = SourceFile("-", "-", old)
    for od, nd in zip(old_docs, new_docs):
        if nd.problems > od.problems:
            return "the result would have a duplicate key"
        for kind, path in data_changes(od.data, nd.data):
            if not _allowed(kind, path, od.positions, src, edits):
                return f"the result would {kind} {_pointer(path)} outside the edited lines"
    return None


def _document_starts(text: str) -> list[int]:
    """Offsets where the documents of `text` start (their `---`, or their first token)."""
    from ailint.core.yamldata import pyyaml_events

    src = SourceFile("-", "-", text)
    return [
        src.offset(ev.start_mark.line + 1, ev.start_mark.column + 1)
        for ev in pyyaml_events(text)
        if isinstance(ev, yaml.DocumentStartEvent)
    ]


def _without_added(
    old: str, old_docs: list[_Doc], new_docs: list[_Doc], added: list[DocumentEdit]
) -> tuple[str | None, list[_Doc]]:
    """Check the documents that `added` declare and take them out of `new_docs`:
    (why not, or None; the new documents that correspond to the old ones)."""
    declared: list[tuple[int, list[_Doc]]] = []
    for e in sorted(added, key=lambda e: e.start):  # stable: one point keeps the fixes' order
        try:
            docs = _documents(e.content)
        except (yaml.YAMLError, RecursionError):
            return "a document the fix adds does not parse", new_docs
        if e.start != e.end:
            return "a fix that adds documents may only insert text", new_docs
        if len(docs) != e.documents or any(d.data is None or d.problems for d in docs):
            return (
                f"the fix declares {e.documents} added document(s) but its text holds {len(docs)}",
                new_docs,
            )
        declared.append((e.start, docs))
    want = len(old_docs) + sum(len(d) for _, d in declared)
    if len(new_docs) != want:
        return (
            f"the result would have {len(new_docs)} documents instead of {want}",
            new_docs,
        )
    try:
        starts = _document_starts(old)
    except (yaml.YAMLError, RecursionError):
        return (
            "the file does not parse as a whole; fixes are applied only to files that do",
            new_docs,
        )
    if len(starts) != len(old_docs):
        return "the documents of the file cannot be located", new_docs
    taken: set[int] = set()
    shift = 0
    for at, docs in declared:
        i = sum(1 for s in starts if s < at) + shift
        for j, d in enumerate(docs):
            got = new_docs[i + j]
            if got.problems:
                return "the result would have a duplicate key", new_docs
            if _canon(got.data) != _canon(d.data):
                return (
                    f"document {i + j + 1} of the result would not be the document the fix adds "
                    "(the insertion does not stand on its own)"
                ), new_docs
            taken.add(i + j)
        shift += len(docs)
    return None, [d for k, d in enumerate(new_docs) if k not in taken]


def comment_lines(text: str, docs: list[_Doc] | None = None) -> Counter[str]:
    """The comment lines of `text` (stripped), without the `#` lines inside multi-line
    scalars (a shell script in a `|` block is content, not a comment)."""
    if docs is None:
        try:
            docs = _documents(text)
        except (yaml.YAMLError, RecursionError):
            docs = []
    inside: set[int] = set()
    for d in docs:
        for path, p in d.positions.items():
            if p[6] > p[4] and not isinstance(_get(d.data, path), (dict, list)):
                inside.update(range(p[4] + 1, p[6] + (1 if p[7] > 1 else 0)))
    return Counter(
        s
        for i, s in enumerate((line.strip() for line in text.splitlines()), start=1)
        if s.startswith("#") and i not in inside
    )


def _get(data: Any, path: tuple[Any, ...]) -> Any:
    for k in path:
        try:
            data = data[k]
        except (KeyError, IndexError, TypeError):
            return None
    return data


def _pointer(path: tuple[Any, ...]) -> str:
    return "/" + "/".join(str(p) for p in path) if path else "the document"


def _allowed(
    kind: str,
    path: tuple[Any, ...],
    positions: dict,
    src: SourceFile,
    edits: list[Edit],
) -> bool:
    text = src.text
    if kind == "add":
        parent = positions.get(path[:-1])
        if parent is None:
            return False
        start = src.offset(parent[4], parent[5])
        end = src.offset(parent[6], parent[7])
        end = max(end, _line_end(text, end) + 1)
        return any(start <= e.start <= end for e in edits)
    if kind == "remove" and path and isinstance(path[-1], int):
        path = path[:-1]  # equal items make the removed index ambiguous: the list must hold an edit
    p = positions.get(path)
    if p is None:
        return False
    keyed = bool(path) and isinstance(path[-1], str)
    start = src.offset(p[0], p[1]) if (kind == "remove" and keyed) else src.offset(p[4], p[5])
    end = src.offset(p[6], p[7])
    if kind == "remove":
        return any(
            (e.start < max(end, start + 1) and e.end > start) or (e.start == e.end and start <= e.start < end)
            for e in edits
            if e.end > e.start
        )
    # a changed value: an edit overlapping it, or filling it from the end of its line
    reach = _line_end(text, end) + 1
    return any((e.start <= end and e.end >= start) or (e.start == e.end and start <= e.start <= reach) for e in edits)


# -- the passes -------------------------------------------------------------------------
def _key(f: Finding) -> tuple[Any, ...]:
    ref = f.object_ref
    r = (ref.kind, ref.namespace, ref.name, ref.document) if ref is not None else None
    return (f.code, f.file, r, tuple(f.path))


@dataclass
class _File:
    """A file being fixed: its text as read and as fixed so far, and what was applied or refused."""

    source: SourceFile  # as read at the start
    text: str  # current (fixed in memory)
    refused: str | None = None  # why it is never written
    broken: bool = False  # does not parse as a whole: not even a diff (nothing can be checked)
    applied: list[tuple[tuple[Any, ...], str]] = field(default_factory=list)  # (finding key, fix title)
    rejected: set[tuple[tuple[Any, ...], str]] = field(default_factory=set)  # refused by `verify`
    notes: list[str] = field(default_factory=list)


_REFUSALS = {
    "stdin": "standard input is never rewritten; run --fix on the file, or use --diff",
    "helm": (
        "Helm-rendered output (`# Source:` markers) is not rewritten; apply the fixes "
        "to the chart's templates or values (they are in the report)"
    ),
}


def _refusal(src: SourceFile) -> str | None:
    why = src.not_rewritten()
    return _REFUSALS[why] if why is not None else None


def _not_rewritten(src: SourceFile | None) -> bool:
    return src is not None and src.not_rewritten() is not None


def _relint(base: Any, texts: dict[str, str], settings: Any) -> Any:
    """Lint the run again in memory with some files' texts replaced (bundle rules included)."""
    from ailint.domain.context import Context
    from ailint.engine.catalogue import deferred
    from ailint.engine.load import load_text
    from ailint.engine.run import Engine, RunResult, finish

    engine = Engine(settings, base.rules)
    frs: list[FileResult] = []
    earlier = base.findings + base.suppressed
    for fs in base.files:
        src = base.sources.get(fs.path)
        if src is None:  # unreadable: keep its file-level findings
            frs.append(
                FileResult(
                    path=fs.path,
                    documents=fs.documents,
                    findings=[f for f in earlier if f.file == fs.path],
                )
            )
            continue
        text = texts.get(fs.path, src.text)
        fr = load_text(SourceFile(src.path, src.display, text), settings.limits)
        ctx = Context(profile=settings.profile, bundle=False)
        for obj in fr.objects:
            if not deferred(obj):  # judged by `finish` with the run's catalogue
                fr.findings.extend(engine.check_object(obj, ctx))
        frs.append(fr)
    return finish(frs, settings, engine, RunResult(rules=base.rules))


def _fix_file(st: _File, findings: list[Finding]) -> list[tuple[Fix, Finding]]:
    """Apply this pass's fixes to one file in memory; return the (fix, finding) pairs applied."""
    pairs = []
    for f in findings:
        assert f.fix is not None
        if (_key(f), f.fix.title) in st.rejected:
            continue
        if (_key(f), f.fix.title) in st.applied:
            st.notes.append(
                f"{f.file}:{f.span.line}: the fix for {f.code} ({f.fix.title}) did not resolve it; "
                "not applied again (please report)"
            )
            continue
        pairs.append((f.fix, f))
    if not pairs:
        return []
    text = st.text
    new, applied = apply_to_text(text, [p[0] for p in pairs])
    if new == text:
        return []
    edits = [e for fx in applied for e in fx.edits]
    why = verify(text, new, edits)
    if why is None:
        return [p for p in pairs if any(p[0] is a for a in applied)]
    # isolate the culprit: keep the fixes that are fine on their own and together
    good: list[tuple[Fix, Finding]] = []
    for fx, f in pairs:
        if not any(fx is a for a in applied):
            continue
        trial = [g[0] for g in good] + [fx]
        t2, a2 = apply_to_text(text, trial)
        if len(a2) != len(trial):
            continue
        reason = verify(text, t2, [e for g in trial for e in g.edits])
        if reason is None:
            good.append((fx, f))
        else:
            st.rejected.add((_key(f), fx.title))
            st.notes.append(f"{f.file}:{f.span.line}: skipped the {f.code} fix ({fx.title}): {reason}")
    return good


def file_diff(display: str, old: str, new: str) -> str:
    lines = []
    for line in difflib.unified_diff(
        old.splitlines(keepends=True),
        new.splitlines(keepends=True),
        fromfile=f"a/{display}",
        tofile=f"b/{display}",
    ):
        if not line.endswith("\n"):
            line += "\n\\ No newline at end of file\n"
        lines.append(line)
    return "".join(lines).rstrip("\n")


def write_atomic(path: str, text: str, expected: str | None = None, boundary: Any = None) -> str | None:
    """Replace the file at `path` with `text` atomically; return why not, or None.

    The new content goes to a temporary file in the same folder (same file system), is
    flushed to disk, gets the old file's mode, then `os.replace`s the old one: a reader or
    a crash sees the old or the new file, never a mix. Nothing is written through a
    symbolic link, to anything but a regular file, or (with `boundary`, the run's
    `ailint.engine.boundary.Boundary`) outside the project, whatever the run read: a hard
    link is replaced, not written into. A UTF-8 byte-order mark is kept. When `expected`
    is given and the file no longer holds it (edited meanwhile), nothing is written.
    """
    from ailint.engine.boundary import refuse_write

    why = refuse_write(path, boundary)
    if why:
        return why
    target = os.path.realpath(path)
    try:
        with open(target, "rb") as fh:
            raw = fh.read()
        st = os.stat(target)
    except OSError as exc:
        return f"cannot read it again: {exc.strerror or exc}"
    bom = raw.startswith(b"\xef\xbb\xbf")
    if expected is not None:
        try:
            now = raw.decode("utf-8")
        except UnicodeDecodeError:
            now = None
        if now is None or (now[1:] if bom else now) != expected:
            return "it changed on disk while ailint ran; not written"
    data = (b"\xef\xbb\xbf" if bom else b"") + text.encode("utf-8", "surrogateescape")
    folder = os.path.dirname(target) or "."
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(target)}.", suffix=".ailint-tmp", dir=folder)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, stat.S_IMODE(st.st_mode))
        if hasattr(os, "chown"):
            try:
                os.chown(tmp, st.st_uid, st.st_gid)
            except OSError:
                pass
        os.replace(tmp, target)
        tmp = None
    except OSError as exc:
        return f"cannot write: {exc.strerror or exc}"
    finally:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass
    return None


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def run_fixes(
    result: Any,
    settings: Any,
    *,
    unsafe: bool,
    diff_only: bool,
    lint_again: Callable[[], Any],
) -> tuple[Any, list[str]]:
    """`--fix` / `--unsafe-fixes` / `--diff`: fix, re-lint, repeat; write (or diff) at the end.

    Returns the result to report (the final re-lint: what remains) and the messages for
    the user: unified diffs (`--diff`), files refused or skipped, and a summary such as
    "Fixed 3 findings (2 files); 5 remain".
    """
    files: dict[str, _File] = {}
    current = result
    for _ in range(MAX_PASSES):
        by_file: dict[str, list[Finding]] = {}
        for f in current.findings:
            if f.fix is not None and (unsafe or f.fix.applicability == Applicability.SAFE):
                by_file.setdefault(f.file, []).append(f)
        changed = False
        for display, findings in by_file.items():
            src = current.sources.get(display)
            if src is None:
                continue
            st = files.get(display)
            if st is None:
                st = files[display] = _File(result.sources.get(display, src), src.text)
                st.refused = _refusal(st.source)
                try:
                    _documents(src.text)
                except (yaml.YAMLError, RecursionError):
                    st.refused, st.broken = (
                        (
                            "the file does not parse as a whole (see its YML finding); "
                            "fixes are applied only to files that do"
                        ),
                        True,
                    )
            if st.text != src.text:
                continue  # not in step with this pass's findings (cannot happen; be safe)
            if st.refused and (st.broken or not diff_only):
                continue
            applied = _fix_file(st, findings)
            if not applied:
                continue
            new, _ = apply_to_text(st.text, [a[0] for a in applied])
            st.text = new
            st.applied.extend((_key(f), fx.title) for fx, f in applied)
            changed = True
        if not changed:
            break
        current = _relint(result, {d: s.text for d, s in files.items()}, settings)

    messages: list[str] = []
    changed_files = {d: s for d, s in files.items() if s.text != s.source.text}
    for s in files.values():
        messages.extend(f"ailint: {n}" for n in dict.fromkeys(s.notes))
    if diff_only:
        messages.extend(f"ailint: {d}: no diff: {s.refused}" for d, s in files.items() if s.broken)
        for d, s in changed_files.items():
            messages.append(file_diff(d, s.source.text, s.text))
        final = current
        remaining = _remaining_on_disk(result, final)
        fixed = _fixed_count(result, final)
        messages.append(_summary(fixed, len(changed_files), remaining, final, unsafe, would=True))
        return remaining, messages

    written = 0
    for d, s in files.items():
        if s.refused:
            offered = sum(
                1
                for f in result.findings
                if f.file == d and f.fix is not None and (unsafe or f.fix.applicability == Applicability.SAFE)
            )
            if offered:
                messages.append(f"ailint: {d}: not fixed: {s.refused}")
            continue
        if d not in changed_files:
            continue
        why = write_atomic(
            s.source.path,
            s.text,
            expected=s.source.text,
            boundary=getattr(result, "boundary", None),
        )
        if why:
            messages.append(f"ailint: {d}: not fixed: {why}")
        else:
            written += 1
    final = lint_again() if written else result
    fixed = _fixed_count(result, final) if written else 0
    messages.append(_summary(fixed, written, final, final, unsafe, would=False))
    return final, messages


def _fixed_count(before: Any, after: Any) -> int:
    gone = Counter(_key(f) for f in before.findings) - Counter(_key(f) for f in after.findings)
    return sum(gone.values())


def _remaining_on_disk(before: Any, after: Any) -> Any:
    """For `--diff`: the findings that fixing would leave, at their places in the files as
    they are on disk (nothing was written), plus the sources to show them."""
    from ailint.engine.run import RunResult

    left = Counter(_key(f) for f in after.findings)
    kept = []
    for f in before.findings:
        k = _key(f)
        if left[k] > 0:
            left[k] -= 1
            kept.append(f)
    out = RunResult(
        files=before.files,
        findings=kept,
        suppressed=before.suppressed,
        sources=before.sources,
        rules=before.rules,
    )
    return out


def _summary(fixed: int, nfiles: int, remaining: Any, final: Any, unsafe: bool, would: bool) -> str:
    n_left = len(remaining.findings)
    # counted over the findings the report shows, so both say the same number
    hidden = (
        0
        if unsafe
        else sum(
            1
            for f in remaining.findings
            if f.fix is not None
            and f.fix.applicability == Applicability.UNSAFE
            and not _not_rewritten(remaining.sources.get(f.file))  # --unsafe-fixes would not write it either
        )
    )
    verb = "Would fix" if would else "Fixed"
    left = f"{n_left} would remain" if would else f"{n_left} remain{'s' if n_left == 1 else ''}"
    if not fixed and not nfiles:
        msg = f"ailint: Nothing to fix; {n_left} finding{'s' if n_left != 1 else ''} remain{'s' if n_left == 1 else ''}"
    else:
        msg = f"ailint: {verb} {_plural(fixed, 'finding')} ({_plural(nfiles, 'file')}); {left}"
    if hidden:
        msg += f" ({hidden} fixable with --unsafe-fixes)"
    return msg
