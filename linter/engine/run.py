"""The flow, in one place: sources -> load -> objects -> context -> rules -> suppress.

`lint()` takes settings and paths and returns a `RunResult` (findings, per-file counts and
the sources, which fixes and the text reporter need). It never prints and never exits;
the CLI and the webhook decide what to do with the result.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from ailint.core.model import FileChangedError, FileResult, Finding, Foreign, K8sObject, SourceFile, Span
from ailint.core.paths import run_root
from ailint.core.rule import KindIndex, Options
from ailint.engine import registry, suppress
from ailint.engine.boundary import Boundary, FileTooLarge, open_regular
from ailint.engine.config import Settings, severity_override
from ailint.engine.load import decode, load_text, yml_finding
from ailint.engine.registry import RegisteredRule, Scope
from ailint.engine.sources import Candidate, discover, matches_any

TYPE_CHECKING = False
if TYPE_CHECKING:  # the domain is imported where objects are checked: a cached run needs none of it
    from typing import Any, ParamSpec, TypeVar

    from ailint.domain.context import Context

    C = TypeVar("C")
    P = ParamSpec("P")
    R = TypeVar("R")


@dataclass
class FileSummary:
    """A linted file as reports list it: how many documents and objects it held."""

    path: str
    documents: int
    objects: int


@dataclass
class RunResult:
    """All a run found and read, for the reporters and the fixer."""

    files: list[FileSummary] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    suppressed: list[Finding] = field(default_factory=list)
    sources: dict[str, SourceFile] = field(default_factory=dict)
    rules: list[RegisteredRule] = field(default_factory=list)
    skipped: dict[str, int] = field(default_factory=dict)  # files a folder walk passed over, by reason
    context_files: int = 0  # files loaded as context only (not reported)
    render: Any = None  # the charts and overlays rendered (ailint.engine.render.stage.Plan)
    boundary: Boundary | None = None  # what the run may read and --fix may write (ailint.engine.boundary)
    cache: Any = None  # the results cache the run used (ailint.engine.cache.RunCache), if any
    restored_from: bytes | None = None  # the run entry a cached run was restored from, whole
    # the files the run parsed, by (report path, context file?), when it was asked to keep
    # them (`lint(keep_parsed=True)`): a second run over another tree takes those whose text is
    # the same (`lint(reuse=...)`, `--since`)
    parsed: dict[tuple[str, bool], FileResult] | None = None

    @property
    def object_count(self) -> int:
        return sum(f.objects for f in self.files)


@dataclass
class Engine:
    """Rules selected for a run, with their options and severities resolved once."""

    settings: Settings
    rules: list[RegisteredRule]
    debug: bool = False
    only_object_rules: bool = False
    bounded: bool = False  # spill position tables and texts after object rules (ailint.engine.bounded)
    jobs: int = 1  # processes for the bundle rules and schema validation (ailint.engine.parallel)
    pack: bool = False  # a --jobs worker: marshal position tables for the trip to the parent
    context_only: frozenset[str] = frozenset()  # display paths of context files: joined, not reported
    cache: Any = None  # the run's results cache (ailint.engine.cache.RunCache), when on
    run_root: str = ""  # what bundle messages name other files against ("": `bundle_root(settings)`)
    scope_paths: tuple[str, ...] = ()  # the paths given to the run: `repo` scope's last resort (ailint.engine.scope)
    progress: Callable[[int], None] | None = None  # told how many more files are read and checked
    keep_parsed: bool = False  # the run's result keeps its parsed files (`RunResult.parsed`)
    reuse: dict[tuple[str, bool], FileResult] | None = None  # another run's parsed files (`reused`)
    _options: dict[str, Options] = field(default_factory=dict)
    _dispatch: dict[tuple[str, str, bool], list[RegisteredRule]] = field(default_factory=dict)
    _kind_index: dict[bool, KindIndex] = field(default_factory=dict)  # per pool (bundle or not)
    _projects: Any = None  # `projects()`
    # per rule (hashed by identity, held here: no id is reused): its check function itself
    # (a lazy one resolved on first call) and its options, so that each of the 46,000 calls
    # of a corpus run is one call
    _calls: dict[RegisteredRule, tuple[Callable[..., Any], Options]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for reg in self.rules:
            self._options[reg.rule.code] = registry.options_for(
                reg.rule, self.settings.rule_settings.get(reg.rule.code)
            )
        self.object_rules = [r for r in self.rules if r.check and r.rule.scope == Scope.OBJECT]
        self.bundle_rules = (
            [] if self.only_object_rules else [r for r in self.rules if r.check and r.rule.scope == Scope.BUNDLE]
        )

    def projects(self) -> Any:
        """The run's projects (`ailint.engine.scope.Projects`): each folder's key, worked out
        once for the run (the results cache asks them too)."""
        got = self._projects
        if got is None:
            from ailint.engine.scope import Projects

            s = self.settings
            got = self._projects = Projects(s.scope, self.scope_paths, s.root if s.config_path else None)
        return got

    def rules_for(self, obj: K8sObject, bundle: bool = False) -> list[RegisteredRule]:
        """The object (or bundle) rules whose `kinds` match `obj`, resolved once per kind and group."""
        return self.rules_for_kind(obj.kind, obj.group, bundle)

    def rules_for_kind(self, kind: str, group: str, bundle: bool = False) -> list[RegisteredRule]:
        """The object (or bundle) rules whose `kinds` match objects of `kind` in `group`."""
        key = (kind, group, bundle)
        got = self._dispatch.get(key)
        if got is None:
            pool = self.bundle_rules if bundle else self.object_rules
            index = self._kind_index.get(bundle)
            if index is None:
                index = self._kind_index[bundle] = KindIndex([r.rule for r in pool])
            got = self._dispatch[key] = [pool[n] for n in index.matching(key[0], key[1])]
        return got

    def check_object(self, obj: K8sObject, ctx: Context) -> list[Finding]:
        """The pipeline step every door shares (the run, the fixer's re-lint, the webhook):
        each selected single-object rule whose kinds match `obj`, in rule order."""
        out: list[Finding] = []
        for reg in self.rules_for(obj):
            out.extend(self.run_rule(reg, obj, ctx))
        return out

    def check(self, reg: RegisteredRule, obj: K8sObject, ctx: Context) -> list[Finding]:
        """`reg` on `obj` when its kinds match `obj` (else nothing)."""
        if not reg.rule.applies_to(obj):
            return []
        return self.run_rule(reg, obj, ctx)

    def run_rule(self, reg: RegisteredRule, obj: K8sObject, ctx: Context) -> list[Finding]:
        """`reg` on `obj`, which `rules_for` matched already (the dispatch table: kinds are
        not asked again per call); a crash is an AIL003 finding."""
        try:
            call = self._calls.get(reg)
            if call is None:
                call = self._calls[reg] = (registry.check_function(reg), self._options[reg.rule.code])
            found = list(call[0](obj, ctx, call[1]))
        except Exception as exc:
            if self.debug or isinstance(exc, FileChangedError):  # an input edited during the run
                raise
            import traceback

            r = registry.engine_rule("AIL003")
            where = traceback.extract_tb(exc.__traceback__)[-1]
            return [
                Finding(
                    r.code,
                    r.name,
                    r.severity,
                    f"{reg.rule.code} crashed on this object ({type(exc).__name__}: {exc} at "
                    f"{os.path.basename(where.filename)}:{where.lineno}); please report it",
                    obj.file,
                    obj.span(()),
                    obj.ref,
                )
            ]
        if not found:
            return found  # (most calls)
        sev = severity_override(self.settings, reg.rule.code)
        if sev is not None:
            found = [
                Finding(f.code, f.name, sev, f.message, f.file, f.span, f.object_ref, f.path, f.fix) for f in found
            ]
        # a field a merged pod took from another object (a runtime): at that object's line
        if not any(f.path and type(f.path[0]) is Foreign for f in found):
            return found
        from ailint.domain.workloads import relocate

        return [relocate(f, obj, self.context_only) if f.path and type(f.path[0]) is Foreign else f for f in found]


def _unread(display: str, code: str, message: str) -> FileResult:
    """A file that is not parsed, with the YML finding (at its first line) that says why."""
    return FileResult(path=display, findings=[yml_finding(code, display, Span(1, 1, 1, 2), message)])


def read_candidate(c: Candidate, settings: Settings, stdin_text: str | None = None) -> FileResult:
    """Read, decode and parse one input; every failure is a YML finding on it."""
    if c.problem:
        return _unread(c.display, c.code, c.problem)
    if c.path == "-":
        text = stdin_text or ""
        if len(text.encode("utf-8", "surrogateescape")) > settings.limits.max_file_bytes:
            return _unread(
                c.display,
                "YML006",
                f"standard input is larger than the limit of {settings.limits.max_file_bytes} bytes",
            )
        source = SourceFile("-", c.display, text)
        return load_text(source, settings.limits)
    raw, early = read_raw(c, settings)
    if early is not None or raw is None:
        return early or FileResult(path=c.display)
    return parse_raw(c, raw, settings)


def read_raw(c: Candidate, settings: Settings) -> tuple[bytes | None, FileResult | None]:
    """The bytes of a file candidate, or the YML finding that says why there are none."""
    if c.problem:
        return None, _unread(c.display, c.code, c.problem)
    limit = settings.limits.max_file_bytes
    try:
        return open_regular(c.path, limit + 1, refuse_over=limit), None  # never a FIFO or device
    except FileTooLarge as big:
        message = f"{big.size} bytes is over the limit of {limit} (limits.max-file-size); not parsed"
        return None, _unread(c.display, "YML006", message)
    except OSError as exc:
        return None, _unread(c.display, "YML009", f"cannot read: {exc.strerror or exc}")


def parse_raw(c: Candidate, raw: bytes, settings: Settings) -> FileResult:
    text, problem = decode(raw, c.display)
    if problem is not None:
        return FileResult(path=c.display, findings=[problem])
    return load_text(SourceFile(c.path, c.display, text or ""), settings.limits)


def _stop_sharing() -> None:
    """Parse without sharing subtrees again (a server lints on), and let the shared ones go
    (the table holds them alive: 5 MiB on the 100 MB tree, held by every pass forked below).
    A run that parsed nothing never imported the converter (or yaml)."""
    converter = sys.modules.get("ailint.core.yamldata")
    if converter is not None:
        converter.share_subtrees(False)


def _sharing_ends_with_the_run(run: Callable[P, R]) -> Callable[P, R]:
    """`run`, after which subtrees are no longer shared, however it ended."""

    @functools.wraps(run)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return run(*args, **kwargs)
        finally:
            _stop_sharing()

    return wrapper


@_sharing_ends_with_the_run
def lint(
    paths: Sequence[str],
    settings: Settings,
    *,
    stdin_text: str | None = None,
    stdin_filename: str | None = None,
    debug: bool = False,
    jobs: int = 1,
    rules: list[RegisteredRule] | None = None,
    bounded: bool | None = None,
    context: Sequence[str] = (),
    root: str | None = None,
    cache: bool = False,
    run_root: str | None = None,
    on_files: Callable[[int, int], None] | None = None,
    keep_parsed: bool = False,
    reuse: dict[tuple[str, bool], FileResult] | None = None,
) -> RunResult:
    """Lint `paths`; `context` (and the config's `context` globs) are loaded for the bundle
    rules only. `root` overrides the folder report paths are relative to, `run_root` the one
    messages name other objects' files against (`ailint.core.paths.run_root` by default).
    `on_files(done, total)` hears how many files are read and checked (a progress line).
    `keep_parsed`: the result keeps the parsed files (`RunResult.parsed`); `reuse`: another
    run's, taken where a file's text is the same (`reused`)."""
    if rules is None:
        rules = registry.select(settings.select, settings.ignore, settings.extend_select)
    engine = Engine(
        settings,
        rules,
        debug,
        run_root=run_root or "",
        scope_paths=tuple(paths or ["."]),
        keep_parsed=keep_parsed,
        reuse=reuse,
    )
    for provider in registry.providers():
        provider.begin_run()
    shown_root = root or (settings.root if settings.config_path else os.getcwd())
    skipped: dict[str, int] = {}
    boundary = Boundary.for_paths(
        paths or ["."], settings.root if settings.config_path else None, settings.follow_external_symlinks
    )
    candidates = list(
        discover(
            paths or ["."],
            shown_root,
            settings.exclude,
            settings.respect_gitignore,
            skipped=skipped,
            boundary=boundary,
        )
    )
    if stdin_filename:
        candidates = [Candidate("-", stdin_filename) if c.path == "-" else c for c in candidates]
    from ailint.engine.render.probe import may_render

    render_plan: Any = None
    if may_render(paths or ["."]):  # a file outside charts and overlays never imports the stage
        from ailint.engine.render import stage as render_stage  # charts and overlays (issue 14)

        render_plan, candidates = render_stage.plan(paths or ["."], candidates, settings, shown_root)
    cache = cache and not (render_plan and render_plan.units)
    extra = context_candidates(context, settings, shown_root, candidates)
    engine.context_only = frozenset(c.display for c in extra)
    candidates += extra
    engine.bounded = bounded if bounded is not None else _bounded_by_default(candidates, jobs)
    if engine.bounded:  # memory is the limit: equal subtrees are kept once (7% of the parse)
        from ailint.core.yamldata import share_subtrees

        share_subtrees(True)
    engine.jobs = jobs
    if on_files is not None:
        engine.progress = _counter(on_files, len(candidates))
    result = RunResult(rules=rules, skipped=skipped, context_files=len(extra), boundary=boundary)
    if cache and stdin_text is None and candidates and all(c.path != "-" for c in candidates):
        # the results cache (`--no-cache` turns it off): unchanged files are not parsed again
        from ailint.engine.cache import lint_cached, open_run_cache

        engine.cache = open_run_cache(
            settings, [r.rule.code for r in rules], [*(paths or ["."]), "\0", *context], engine.only_object_rules
        )
        if engine.cache is not None:
            # (the list is taken over: emptied once the files are looked up, see `_parsed_now`)
            return lint_cached(engine.cache, candidates, settings, engine, result)  # type: ignore[no-any-return]
    file_results: list[FileResult]
    if jobs > 1 and len(candidates) > 1:
        from ailint.engine.parallel import run_parallel

        file_results = run_parallel(candidates, settings, engine, jobs)
    else:
        file_results = process_files(candidates, settings, engine, stdin_text)
    # the candidates are read: what the joining and the reports need is in the file results
    # (on the 100 MB tree, 11 MiB of paths, names and stats the passes would carry along)
    del candidates
    if render_plan is None or not render_plan.units:
        return finish(file_results, settings, engine, result)
    file_results += render_stage.render(render_plan, settings, engine)
    result = finish(file_results, settings, engine, result)
    result.render = render_plan
    render_stage.remap(result, render_plan, settings)
    return result


def context_candidates(
    given: Sequence[str], settings: Settings, shown_root: str, linted: list[Candidate]
) -> list[Candidate]:
    """The context files of a run: `given` paths and the config's `context` globs (relative
    to the config's folder), minus the files linted anyway. Missing paths and files that are
    not manifests are passed over silently: a context glob names a part of a repository."""
    named = list(given)
    if not named and not settings.context:
        return []  # (most runs: nothing to glob, not even `glob` to import)
    import glob as globmod

    for pattern in settings.context:
        full = os.path.join(settings.root, pattern)
        named.extend(sorted(globmod.glob(full, recursive=True)) if globmod.has_magic(pattern) else [full])
    if not named:
        return []
    taken = {os.path.realpath(c.path) for c in linted if c.path != "-"}
    out: list[Candidate] = []
    for c in discover(named, shown_root, settings.exclude, settings.respect_gitignore, walked=True):
        if c.problem is None and os.path.realpath(c.path) not in taken:
            taken.add(os.path.realpath(c.path))
            out.append(Candidate(c.path, c.display, None, context=True))
    return out


def process_file(c: Candidate, settings: Settings, engine: Engine, stdin_text: str | None = None) -> FileResult:
    """Parse one file and run the single-object rules on its objects (none on a context file)."""
    key = None
    taken = None
    if (engine.reuse is not None or engine.cache is not None) and c.path != "-" and not c.problem:
        raw, early = read_raw(c, settings)  # (read once: for another run's file, the cache key, the parse)
        if early is not None or raw is None:
            return early or FileResult(path=c.display)
        if engine.reuse is not None:
            taken = reused(c, raw, engine.reuse)
        if taken is not None:
            fr = taken
        else:
            if engine.cache is not None:
                key = engine.cache.file_key(c.display, raw, c.context)
            fr = parse_raw(c, raw, settings)
    else:
        fr = read_candidate(c, settings, stdin_text)
    from ailint.domain.context import Context
    from ailint.engine.catalogue import deferred, members_of, settled

    ctx = Context(profile=settings.profile, bundle=False)
    if taken is None:
        fr.catalogue = members_of(fr.objects)
    if not c.context and taken is None:
        waiting = []
        for n, obj in enumerate(fr.objects):
            if deferred(obj):  # its pods depend on other files: judged in `finish`
                waiting.append(n)
            else:
                fr.findings.extend(engine.check_object(obj, ctx))
        fr.deferred = tuple(waiting)
    if (engine.jobs > 1 or key is not None) and engine.bundle_rules and not engine.bounded:
        # the facts of its pods that the bundle rules read, worked out here once: shared by
        # every process of the bundle phase (`roles.prime`, `extract.carry_facts`), and kept
        # in the file's cache entry for the reruns that do not parse it (`cache._pod_facts`);
        # not with bounded memory, where the parent would hold them for every pod of a large input
        from ailint.domain.roles import prime

        for _, obj in settled(fr):
            prime(obj)
        if fr.source is not None and fr.suppressions is None and not c.context:
            fr.suppressions = suppress.comment_suppressions(fr.source)  # read here, in parallel, not in `finish`
    if key is not None:
        fr.cache_key = key
        # not the pods' facts with bounded memory (as above): on the 100 MB tree they were
        # 9.5 MiB held until the pack's segments are written, and a rerun's objects carry them
        engine.cache.store_file(key, fr, facts=not engine.bounded)
    if engine.bounded and fr.source is not None and not fr.source.is_stdin:
        from ailint.engine.bounded import spill

        fr.suppressions = suppress.comment_suppressions(fr.source)
        spill(fr, settings.limits)
    elif engine.pack:
        from ailint.engine.bounded import pack

        pack(fr)
    return fr


def reused(c: Candidate, raw: bytes, parsed: dict[tuple[str, bool], FileResult]) -> FileResult | None:
    """What another run (`RunResult.parsed`) made of a file of the same report path, role
    (linted or context) and text (`raw`, as read), as this run would make it: the same
    objects with none of the facts that run worked out (`memo`, `carried`: a merged pod may
    hold another file's fields) and the file's own findings, or None when there is no such
    file.

    The objects' data and position tables are shared, as parsed data is never mutated. On a
    pull request that changes a few manifests, the base revision's run (`--since`) parses
    only those."""
    prior = parsed.get((c.display, c.context))
    if prior is None or prior.source is None or prior.source.__class__ is not SourceFile:
        return None  # (a spilled text is not held: parsed again)
    text, problem = decode(raw, c.display)
    if problem is not None or text != prior.source.text:
        return None
    source = SourceFile(c.path, c.display, text)
    source.template_paths = dict(prior.source.template_paths)
    objects = [dataclasses.replace(o, source=source, memo=None, carried=None) for o in prior.objects]
    return FileResult(
        path=prior.path,
        documents=prior.documents,
        objects=objects,
        findings=list(prior.findings),
        source=source,
        suppressions=prior.suppressions,
        deferred=prior.deferred,
        catalogue=prior.catalogue,
    )


BOUNDED_BYTES = 32 * 1024 * 1024  # above this much input, spill (see ailint.engine.bounded)

_held: list[Any] | None = None  # the last run's parsed files, once `hold_until_exit` was called


def hold_until_exit() -> None:
    """This process ends with `os._exit` once its run is reported (the console entry points:
    `lean.main`, `cli.main`): from now on the last run's parsed files and bundle contexts are
    kept until that exit, not freed object by object when `lint` returns (but for a run with
    bounded memory, whose next run, `--since`'s, may be as large). Freeing the corpus's
    2,280 files took 13 to 14 ms of a cold run's serial tail, after every other part of the run.
    A program that lints on (the webhook, the test suite's in-process runs) never calls it."""
    global _held
    if _held is None:
        _held = []


def _hold(*parts: Any) -> None:
    """Keep `parts` until the process ends, in place of what the run before kept (`--since`
    lints the base revision after the head: the head's files are freed when the base's run
    holds its own), when `hold_until_exit` was called."""
    if _held is not None:
        _held[:] = parts


def _bounded_by_default(candidates: list[Candidate], jobs: int) -> bool:
    """Spill when the input is large (`AILINT_BOUNDED=1`/`0` forces it on or off)."""
    forced = os.environ.get("AILINT_BOUNDED")
    if forced in ("0", "1"):
        return forced == "1"
    total = 0
    for c in candidates:
        if c.path != "-" and not c.problem:
            if c.signature is not None:  # discovery's stat: its size first
                total += c.signature[0]
            else:
                try:
                    total += os.path.getsize(c.path)
                except OSError:
                    pass
            if total > BOUNDED_BYTES:
                return True
    return False


def _counter(on_files: Callable[[int, int], None], total: int) -> Callable[[int], None]:
    done = 0

    def advance(n: int) -> None:
        nonlocal done
        done += n
        on_files(done, total)

    return advance


def process_files(
    candidates: Sequence[Candidate], settings: Settings, engine: Engine, stdin_text: str | None = None
) -> list[FileResult]:
    """`process_file` over the candidates in order, telling `engine.progress` after each."""
    tick = engine.progress
    if tick is None:
        return [process_file(c, settings, engine, stdin_text) for c in candidates]
    out = []
    for c in candidates:
        out.append(process_file(c, settings, engine, stdin_text))
        tick(1)
    return out


def bundle_root(settings: Settings) -> str:
    """The run root the bundle rules name other objects' files against (SARIF's too)."""
    return run_root(settings.root if settings.config_path else None)


def finish(file_results: list[FileResult], settings: Settings, engine: Engine, result: RunResult) -> RunResult:
    """Join the files: bundle rules over the whole run, then suppressions."""
    from ailint.domain.context import Context
    from ailint.engine.catalogue import catalogue_pass, unique

    _stop_sharing()  # the parse is over
    objects: list[K8sObject] = [o for fr in file_results for o in fr.objects]
    if not engine.bounded:  # (a bounded run frees what it can: its next run may be as large)
        _hold(file_results)
        if engine.keep_parsed:  # (a spilled text cannot be compared: nothing to keep then)
            result.parsed = {(fr.path, fr.path in engine.context_only): fr for fr in file_results}
    hidden = engine.context_only
    findings: list[Finding] = [f for fr in file_results if fr.path not in hidden for f in fr.findings]
    memo = engine.cache.pass_memo("catalogue") if engine.cache is not None else None
    # per object, whether it waits for the catalogue, when its file's object rules said
    waiting = [None if fr.deferred is None else n in fr.deferred for fr in file_results for n in range(len(fr.objects))]
    members = [
        None if fr.catalogue is None else n in fr.catalogue for fr in file_results for n in range(len(fr.objects))
    ]
    # merged with the run's runtimes, claims
    findings += catalogue_pass(objects, settings, engine, findings, memo, waiting, members)
    if memo is not None:
        memo.save()
    root = engine.run_root or bundle_root(settings)
    sch = [r for r in engine.rules if r.rule.code.startswith("SCH")]
    # context objects are joined (ctx), never judged: the rules and the schema skip them
    judged = [i for i, o in enumerate(objects) if o.file not in hidden] if hidden else range(len(objects))
    schema = bool(settings.schema and sch and judged)
    enabled = {r.rule.code for r in engine.rules}
    passes: list[Finding] | None = None  # the providers' passes, when a forked process ran them
    if engine.cache is not None:  # bundle rules again only where an edit can change them
        from ailint.engine.tracking import bundle_phase

        chunks, which, passes = bundle_phase(
            engine.cache,
            file_results,
            objects,
            settings,
            engine,
            sch,
            schema,
            lambda which: provider_passes(objects, which, settings, engine, enabled),
        )
    else:
        which, ctxs, _ = project_contexts(
            objects,
            settings,
            engine,
            lambda objs: Context(objects=objs, profile=settings.profile, bundle=True, root=root),
        )
        if not engine.bounded:
            _hold(file_results, ctxs)
        ctx = ctxs[0]
        scoped = (which, ctxs) if len(ctxs) > 1 else None
        forked = (
            _bundle_forked(
                objects,
                ctx,
                settings,
                engine,
                sch,
                schema,
                scoped,
                lambda: provider_passes(objects, which, settings, engine, enabled),
            )
            if engine.jobs > 1 and len(objects) > 1
            else None
        )
        if forked is None:
            chunks = [bundle_chunk(judged, objects, ctx, settings, engine, sch, scoped)]
            if schema:
                chunks.append(bundle_chunk(None, objects, ctx, settings, engine, sch))
        else:
            chunks, passes = forked
    for part in chunks:
        findings.extend(f for f in part if f.file not in hidden)
    findings = unique(findings, objects)  # one runtime line judged for itself and for a workload merged with it
    if passes is None:
        passes = _provider_passes_apart(objects, which, settings, engine, enabled)
    findings.extend(passes)
    for fr in file_results:
        if fr.path in hidden:
            continue
        result.files.append(FileSummary(fr.path, fr.documents, len(fr.objects)))
        if fr.source is not None:
            result.sources[fr.path] = fr.source
    # per-file ignores from config
    if settings.per_file_ignores:
        kept: list[Finding] = []
        for f in findings:
            drop = False
            for pattern, codes in settings.per_file_ignores.items():
                if matches_any(f.file, [pattern]) and any(registry.selector_matches(c, f) for c in codes):
                    drop = True
                    break
            (result.suppressed if drop else kept).append(f)
        findings = kept
    sups: list[suppress.Suppression] = []
    for fr in file_results:
        if fr.path in hidden:
            continue
        if fr.suppressions is not None:
            sups.extend(fr.suppressions)
        elif fr.source is not None:
            sups.extend(suppress.comment_suppressions(fr.source))
        marked = fr.annotated  # (known for a file from the cache's pack: no other object's data is read)
        for n, obj in enumerate(fr.objects):
            if marked is None or n in marked:
                sups.extend(suppress.annotation_suppressions(obj))
    ran_codes = {r.rule.code for r in engine.rules if r.check or r.rule.engine}
    if not settings.schema:  # --no-schema: SCH did not run, so SCH suppressions are not "unused"
        ran_codes = {c for c in ran_codes if not c.startswith("SCH")}

    def ran(selector: str) -> bool:
        named = [r for r in registry.all_rules().values() if registry.specificity(selector, r)]
        return bool(named) and all(r.rule.code in ran_codes for r in named)

    res = suppress.apply(findings, sups, registry.selector_matches, registry.is_known_selector, ran)
    ail_enabled = {r.rule.code for r in engine.rules}
    result.findings = sorted(res.kept + [f for f in res.meta if f.code in ail_enabled], key=Finding.sort_key)
    result.suppressed.extend(res.suppressed)
    return result


def provider_passes(
    objects: list[K8sObject], which: list[int], settings: Settings, engine: Engine, enabled: set[str]
) -> list[Finding]:
    """The providers' passes over the run (admission policies), once per scope project like
    the bundle rules: a policy of one repository never judges another's objects, and a
    context file's objects (the cluster's policies, bindings, namespaces) join every
    project, as they join every bundle context (`ailint.engine.scope.partition`)."""
    from ailint.engine.catalogue import unique

    hidden = engine.context_only
    projects: dict[int, list[K8sObject]] = {}
    for o, w in zip(objects, which, strict=True):
        if o.file not in hidden:
            projects.setdefault(w, [])  # (in the order the projects come, as `partition`'s)
    for o, w in zip(objects, which, strict=True):
        if o.file not in hidden:
            projects[w].append(o)
        else:
            for members in projects.values():
                members.append(o)
    out: list[Finding] = []
    for n, provider in enumerate(registry.providers()):
        # a provider that says so keeps what it may reuse next run in the results cache
        memo = (
            engine.cache.pass_memo(n) if engine.cache is not None and getattr(provider, "takes_memo", False) else None
        )
        for members in projects.values() if len(projects) > 1 else [objects]:
            if memo is None:
                out.extend(provider.run_pass(members, settings, enabled, hidden))
            else:
                out.extend(provider.run_pass(members, settings, enabled, hidden, memo=memo))
        if memo is not None:
            memo.save()
    # a finding of the shared objects themselves (a context policy not evaluated) comes once
    return unique(out) if len(projects) > 1 else out


def _provider_passes_apart(
    objects: list[K8sObject], which: list[int], settings: Settings, engine: Engine, enabled: set[str]
) -> list[Finding]:
    """`provider_passes`, in a forked child when memory is bounded: the CEL runtime and the
    policies' state die with it instead of growing the process that holds every object."""
    if engine.bounded and engine.jobs > 1 and registry.providers():
        from ailint.engine.parallel import run_beside

        waiters = run_beside(lambda: provider_passes(objects, which, settings, engine, enabled))
        if waiters is not None:
            found: list[Finding] = waiters[0]()
            return found
    return provider_passes(objects, which, settings, engine, enabled)


def project_contexts(
    objects: list[K8sObject], settings: Settings, engine: Engine, make: Callable[[list[K8sObject]], C]
) -> tuple[list[int], list[C], list[str]]:
    """Per object the index of its project's context; the bundle contexts of the run, one per
    project (`settings.scope`, ailint.engine.scope); and each project's key."""
    from ailint.engine.scope import partition, scope_keys

    keys = scope_keys(
        objects,
        settings.scope,
        engine.scope_paths,
        settings.root if settings.config_path else None,
        engine.context_only,
        engine.projects(),
    )
    if keys is None:
        return [0] * len(objects), [make(objects)], [""]
    return partition(objects, keys, make)


def _bundle_forked(
    objects: list[K8sObject],
    ctx: Context,
    settings: Settings,
    engine: Engine,
    sch: list[RegisteredRule],
    schema: bool,
    scoped: tuple[list[int], list[Context]] | None = None,
    passes: Callable[[], list[Finding]] | None = None,
) -> tuple[list[list[Finding]], list[Finding] | None] | None:
    """The bundle rules (a task each), the schema pass and the providers' passes (`passes`)
    shared by forked processes: the findings in the serial order (by object, then by rule)
    and those of the passes. None when forking is not possible."""
    from ailint.engine.parallel import run_forked

    rules = engine.bundle_rules
    for c in scoped[1] if scoped else [ctx]:
        c.build_indexes()
    position = {id(reg): t for t, reg in enumerate(rules)}
    targets: list[list[int]] = [[] for _ in rules]  # per rule, the objects its kinds match, in order
    hidden = engine.context_only
    of_kind: dict[tuple[str, str], list[int]] = {}  # (asked once per kind, not per object)
    for i, obj in enumerate(objects):
        if not hidden or obj.file not in hidden:  # (a context object is joined, not judged)
            of_kind.setdefault((obj.kind, obj.group), []).append(i)
    for (kind, group), members in of_kind.items():
        for reg in engine.rules_for_kind(kind, group, bundle=True):
            targets[position[id(reg)]] += members
    for t in targets:
        t.sort()

    def work(t: int) -> list[Any]:
        if t == _SCHEMA_PASS:  # the longest task: first in the queue
            return bundle_chunk(None, objects, ctx, settings, engine, sch)
        if t == _PROVIDER_PASSES:
            return passes() if passes is not None else []
        reg = rules[t]
        out: list[tuple[int, list[Finding]]] = []
        for i in targets[t]:
            found = engine.run_rule(reg, objects[i], scoped[1][scoped[0][i]] if scoped else ctx)
            if found:
                out.append((i, found))
        return out

    first = ([_SCHEMA_PASS] if schema else []) + ([_PROVIDER_PASSES] if passes is not None else [])
    # bounded memory: the passes' stores (schemas, the CEL runtime) die with the child that
    # loaded them, and the parent, which holds every object, runs no task
    apart = frozenset(first) if engine.bounded else None
    results = run_forked(work, first + list(range(len(rules))), engine.jobs, apart)
    if results is None:
        return None
    merged = sorted(((i, t, found) for t in range(len(rules)) for i, found in results[t]), key=lambda x: x[:2])
    parts = [[f for _, _, found in merged for f in found]]
    if schema:
        parts.append(results[_SCHEMA_PASS])
    return parts, results.get(_PROVIDER_PASSES) if passes is not None else None


_SCHEMA_PASS, _PROVIDER_PASSES = -1, -2  # the forked tasks that are not a bundle rule


def bundle_chunk(
    indexes: Iterable[int] | None,
    objects: list[K8sObject],
    ctx: Context,
    settings: Settings,
    engine: Engine,
    sch: list[RegisteredRule],
    scoped: tuple[list[int], list[Context]] | None = None,
) -> list[Finding]:
    """Bundle-rule findings of `objects[i]` for i in `indexes`, in order; `None`: the schema pass.
    `scoped`: per object the index of its project's context, and the contexts (`--scope`)."""
    out: list[Finding] = []
    if indexes is None:
        # schema validation is an engine pass of its own (SCH), when installed and enabled
        try:
            from ailint.schema.validate import validate_objects
        except ImportError:
            return out
        if engine.context_only:
            objects = [o for o in objects if o.file not in engine.context_only]
        return list(validate_objects(objects, settings, {r.rule.code for r in sch}))
    for i in indexes:
        obj = objects[i]
        c = scoped[1][scoped[0][i]] if scoped else ctx
        for reg in engine.rules_for(obj, bundle=True):
            out.extend(engine.run_rule(reg, obj, c))
    return out


def exit_code(findings: Iterable[Finding], fail_on: str) -> int:
    if fail_on == "never":
        return 0
    from ailint.core.model import Severity

    threshold = Severity.parse(fail_on).rank
    return 1 if any(f.severity.rank >= threshold for f in findings) else 0
