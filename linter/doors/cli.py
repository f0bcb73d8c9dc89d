"""The command line: `ailint check`, `rules`, `rule`, `webhook serve` (spec/cli.md).

Exit codes: 0 clean, 1 findings at or above `--fail-on`, 2 usage, config or internal
error (one line; the traceback only with `--debug`).
"""

from __future__ import annotations

import os
import sys

import click
from ailint import __version__
from ailint.doors.ux import ux_options

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator
    from typing import Any

FORMATS = ("text", "json", "sarif", "github", "html")


def _fail(message: str, code: int = 2) -> None:
    click.echo(f"ailint: error: {message}", err=True)
    sys.exit(code)


_POLICY_PATHS: list[str] = []  # --policies (a callback keeps them out of the long signatures)


def _remember_policies(ctx: click.Context, param: click.Parameter, value: tuple[str, ...]) -> None:
    _POLICY_PATHS[:] = [os.path.abspath(p) for p in value or ()]


def _with_cli_policies(settings: Any) -> None:
    """`--policies` paths join the config's `policies:` (read by the policy provider)."""
    if _POLICY_PATHS:
        given = settings.extra.get("policies") or []
        settings.extra = {
            **settings.extra,
            "policies": [*([given] if isinstance(given, str) else given), *_POLICY_PATHS],
        }


def _config_rules(config_file: str | None, no_config: bool) -> None:
    """Read the config so that its custom rules are listed and documented too."""
    from ailint.engine.config import ConfigError, load_settings

    try:
        load_settings(config_file, no_config)
    except ConfigError as exc:
        _fail(str(exc))


def _csv(values: tuple[str, ...]) -> list[str]:
    out: list[str] = []
    for v in values:
        out.extend(x.strip() for x in v.split(",") if x.strip())
    return out


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", prog_name="ailint", message="%(prog)s %(version)s")
def cli() -> None:
    """ailint: lint the Kubernetes, Karpenter and Ray YAML that runs AI workloads."""


@cli.command()
@click.argument("paths", nargs=-1, type=click.Path(allow_dash=True))
@click.option(
    "-f",
    "--format",
    "fmt",
    type=click.Choice(FORMATS),
    default=None,
    help="Output format (default: text; github when GITHUB_ACTIONS=true).",
)
@click.option("-o", "--output", type=click.Path(dir_okay=False, allow_dash=True), help="Write the report to FILE.")
@click.option("--select", multiple=True, help="Codes, prefixes or names to enable (comma-separated).")
@click.option("--ignore", multiple=True, help="Codes, prefixes or names to disable (comma-separated).")
@click.option("--extend-select", multiple=True, help="Add to the configured selection.")
@click.option(
    "--fail-on",
    type=click.Choice(["error", "warning", "info", "never"]),
    default=None,
    help="Lowest severity that makes the exit code 1 (default: warning).",
)
@click.option("--fix", is_flag=True, help="Apply safe fixes in place.")
@click.option("--unsafe-fixes", is_flag=True, help="Also apply unsafe fixes (implies --fix unless --diff).")
@click.option("--diff", is_flag=True, help="Print fixes as a unified diff; change nothing.")
@click.option("--config", "config_file", type=click.Path(dir_okay=False), help="Config file to use.")
@click.option("--no-config", is_flag=True, help="Ignore config files.")
@click.option("--baseline", type=click.Path(dir_okay=False), help="Report only findings not in this baseline.")
@click.option("--write-baseline", type=click.Path(dir_okay=False), help="Write current findings as a baseline.")
@click.option(
    "--context",
    "context_paths",
    multiple=True,
    type=click.Path(),
    help="File or folder loaded for cross-resource rules only; its own findings are not reported (repeatable).",
)
@click.option("--since", "since_ref", metavar="REF", help="Report only findings that are new since git revision REF.")
@click.option(
    "--only-changed-lines",
    is_flag=True,
    help="Report only findings on lines that differ from the --since revision (default HEAD).",
)
@click.option("--set", "set_pairs", multiple=True, metavar="KEY=VALUE", help="Cluster-profile setting.")
@click.option("--jobs", type=click.IntRange(min=1), default=None, help="Worker processes (default: cores).")
@click.option("--stdin-filename", help="File name to report for standard input.")
@click.option("--kube-version", default=None, help="Kubernetes version for schema validation (default 1.33).")
@click.option("--no-schema", is_flag=True, help="Skip schema validation (SCH).")
@click.option("--no-cache", is_flag=True, help="Neither read nor write the results cache.")
@click.option(
    "--scope",
    type=click.Choice(["run", "repo", "dir"]),
    default=None,
    help="What cross-resource rules join: one git repository (repo, default), one folder (dir), the whole run (run).",
)
@click.option(
    "--follow-external-symlinks",
    is_flag=True,
    help="Read symbolic links that lead out of the project (default: YML013, not read).",
)
@click.option("--color/--no-color", default=None, help="Force colour on or off in text output.")
@click.option("--helm", "helm_bin", metavar="PATH", help="helm binary for charts (default: helm on PATH).")
@click.option("--kubectl", "kubectl_bin", metavar="PATH", help="kubectl binary for overlays (`kubectl kustomize`).")
@click.option("--kustomize", "kustomize_bin", metavar="PATH", help="kustomize binary for overlays (`kustomize build`).")
@click.option("--values", "values_files", multiple=True, metavar="FILE", help="Helm values file for every chart.")
@click.option("--helm-set", "helm_sets", multiple=True, metavar="KEY=VALUE", help="Helm --set for every chart.")
@click.option("--release", metavar="NAME", help="Helm release name for charts (default: release).")
@click.option("--namespace", metavar="NS", help="Namespace to render charts into (default: default).")
@click.option(
    "--policies",
    multiple=True,
    type=click.Path(exists=True),
    expose_value=False,
    callback=_remember_policies,
    help="File or folder of ValidatingAdmissionPolicy objects (and their bindings, params, namespaces) "
    "evaluated against the linted objects; not linted itself (repeatable).",
)
@click.option("--debug", is_flag=True, help="Show tracebacks of internal errors.")
@ux_options(FORMATS)
def check(**options: Any) -> None:
    """Lint files and folders (recursive *.yaml, *.yml, *.json); `-` reads standard input."""
    # `_check` declares and types every option; what the first-hour options add (`ux_options`)
    # travels as one `ux` mapping. Its parameter names come from its code object: `inspect`
    # would cost start-up time that the lean entry point saves.
    params = _check.__code__.co_varnames[: _check.__code__.co_argcount]
    ux = {k: v for k, v in options.items() if k not in params}
    debug = bool(options.get("debug"))
    try:
        code = _check(**{k: v for k, v in options.items() if k in params}, ux=ux)
    except SystemExit:
        raise
    except KeyboardInterrupt:
        click.echo("ailint: interrupted", err=True)
        code = 130
    except Exception as exc:
        if debug:
            raise
        from ailint.core.model import FileChangedError

        if isinstance(exc, FileChangedError):  # a file read back (spilled, or cached) was edited meanwhile
            click.echo(f"ailint: {exc}", err=True)
            sys.exit(2)
        click.echo(
            f"ailint: internal error: {type(exc).__name__}: {exc}\n"
            "This is a bug; please report it with the input (rerun with --debug for the traceback).",
            err=True,
        )
        code = 2
    sys.exit(code)


def _check(
    paths: tuple[str, ...],
    fmt: str | None,
    output: str | None,
    select: tuple[str, ...],
    ignore: tuple[str, ...],
    extend_select: tuple[str, ...],
    fail_on: str | None,
    fix: bool,
    unsafe_fixes: bool,
    diff: bool,
    config_file: str | None,
    no_config: bool,
    baseline: str | None,
    write_baseline: str | None,
    context_paths: tuple[str, ...],
    since_ref: str | None,
    only_changed_lines: bool,
    set_pairs: tuple[str, ...],
    jobs: int | None,
    stdin_filename: str | None,
    kube_version: str | None,
    no_schema: bool,
    no_cache: bool,
    follow_external_symlinks: bool,
    scope: str | None,
    color: bool | None,
    helm_bin: str | None,
    kubectl_bin: str | None,
    kustomize_bin: str | None,
    values_files: tuple[str, ...],
    helm_sets: tuple[str, ...],
    release: str | None,
    namespace: str | None,
    debug: bool,
    ux: dict[str, Any] | None = None,
) -> int:
    import gc

    from ailint.doors import ux as first_hour

    ux = ux or {}

    from ailint.engine import registry
    from ailint.engine.config import ConfigError, load_settings, parse_set, unknown_selector_message
    from ailint.engine.run import exit_code, hold_until_exit, lint

    # A run allocates millions of small, long-lived, acyclic objects: collecting every 700
    # allocations is wasted work (about 5% of a corpus run).
    gc.set_threshold(10_000, 10, 10)

    try:
        settings = load_settings(config_file, no_config)
        settings.profile = parse_set(set_pairs, settings.profile)
        _with_cli_policies(settings)
    except ConfigError as exc:
        _fail(str(exc))
    sel = _csv(select)
    ign = _csv(ignore)
    ext = _csv(extend_select)
    for s in sel + ign + ext:
        if s.upper() != "ALL" and not registry.is_known_selector(s):
            _fail(unknown_selector_message(s))
    if sel:
        settings.select = sel
    settings.ignore = settings.ignore + ign
    settings.extend_select = settings.extend_select + ext
    if fail_on:
        settings.fail_on = fail_on
    if kube_version:
        settings.kube_version = kube_version
    if no_schema:
        settings.schema = False
    settings.render_cli = {  # charts and overlays (ailint.engine.render)
        "helm": helm_bin,
        "kubectl": kubectl_bin,
        "kustomize": kustomize_bin,
        "values": list(values_files),
        "sets": list(helm_sets),
        "release": release,
        "namespace": namespace,
    }
    if follow_external_symlinks:
        settings.follow_external_symlinks = True
    if scope:
        settings.scope = scope
    first_hour.apply_excludes(settings, ux)
    fmt = fmt or ux.get("output_format")
    if fmt is None:
        fmt = "github" if os.environ.get("GITHUB_ACTIONS") == "true" else "text"
    stdin_text = None
    if "-" in paths:
        data = sys.stdin.buffer.read()
        from ailint.engine.load import decode

        text, problem = decode(data, stdin_filename or "-")
        stdin_text = text if problem is None else ""
    files = [p for p in paths if p != "-"]
    if jobs is None:
        jobs = 1 if len(paths) == 1 and os.path.isfile(paths[0]) else (os.cpu_count() or 1)
    fixing = fix or unsafe_fixes or diff  # fixes rewrite files: keep every text in memory
    progress = first_hour.progress(paths, bool(ux.get("quiet")))  # over a terminal, after ~2 s
    if (since_ref or only_changed_lines) and "-" in paths:
        _fail("--since and --only-changed-lines compare files with git: standard input cannot be compared")
    if _ends_with_exit and not fixing:  # the run's objects go with the process, not one by one
        hold_until_exit()  # (a fix's second run would hold them beside its own)
    result = lint(
        list(paths) or ["."],
        settings,
        stdin_text=stdin_text,
        stdin_filename=stdin_filename,
        debug=debug,
        jobs=jobs,
        bounded=False if fixing else None,
        cache=not (no_cache or fixing),  # fixes rewrite files: always from a fresh parse
        context=context_paths,
        on_files=progress.files if progress is not None else None,
        keep_parsed=bool(since_ref) and not fixing,  # REF's run takes the files whose text is the same
    )
    del files
    if fix or unsafe_fixes or diff:
        from ailint.fix.apply import run_fixes
        from ailint.report.common import redact_text

        def relint() -> Any:
            """The run again after fixes were written: always from a fresh, unbounded parse."""
            return lint(
                list(paths) or ["."],
                settings,
                stdin_text=stdin_text,
                stdin_filename=stdin_filename,
                debug=debug,
                jobs=jobs,
                bounded=False,
                context=context_paths,
                cache=False,
            )

        chart_messages: list[str] = []
        if getattr(result, "render", None) is not None:  # charts and overlays: fix their sources
            from ailint.engine.render import fixes as render_fixes

            result, chart_messages, _ = render_fixes.apply_source_fixes(
                result,
                unsafe_fixes,
                diff,
                relint,
            )
            render_fixes.strip(result)
        result, fix_messages = run_fixes(
            result,
            settings,
            unsafe=unsafe_fixes,
            diff_only=diff,
            lint_again=relint,
        )
        for msg in chart_messages + fix_messages:
            # a diff quotes the file's lines: secrets in them are masked like in every report
            click.echo(redact_text(msg), err=not diff or msg.startswith("ailint:"))
    if baseline:
        from ailint.engine import baseline as bl

        try:
            known = bl.read(baseline)
        except (OSError, ValueError) as exc:
            _fail(f"{baseline}: cannot read baseline: {exc}")
        fps = bl.fingerprints(result.findings)
        kept = [f for f, fp in zip(result.findings, fps) if fp not in known]
        result.suppressed.extend(f for f, fp in zip(result.findings, fps) if fp in known)
        result.findings = kept
    if since_ref or only_changed_lines:
        from ailint.engine import since

        shown_root = settings.root if settings.config_path else os.getcwd()
        try:
            if since_ref:
                old = since.findings_at(
                    since_ref,
                    list(paths) or ["."],
                    settings,
                    shown_root,
                    context_paths,
                    jobs,
                    head=result,
                )
                result.findings, known_before = since.new_findings(result.findings, old)
                result.suppressed.extend(known_before)
            if only_changed_lines:
                result.findings, elsewhere = since.on_changed_lines(result.findings, since_ref or "HEAD", shown_root)
                result.suppressed.extend(elsewhere)
        except since.GitError as exc:
            _fail(f"--since/--only-changed-lines: {exc}")
    if progress is not None:
        progress.stop()
    if write_baseline:
        from ailint.engine import baseline as bl

        n = bl.write(write_baseline, result.findings)
        # the baseline is the output: one summary line, exit 0 (the findings are accepted)
        click.echo(
            f"ailint: wrote {n} fingerprint{'s' if n != 1 else ''} ({len(result.findings)} "
            f"finding{'s' if len(result.findings) != 1 else ''}) to {write_baseline}",
            err=True,
        )
        return 0
    if not result.files and not ux.get("quiet"):
        # as ruff does ("No Python files found under the given path(s)"): a warning, exit 0
        click.echo("ailint: warning: no YAML or JSON files found under the given path(s); nothing was linted", err=True)
    rendered: str | Iterable[str]
    if ux.get("statistics"):
        rendered, is_rich = first_hour.statistics(result, fmt), False
    else:
        render_opts: dict[str, Any] = {
            "root": settings.root if settings.config_path else None,
            "verbose": bool(ux.get("verbose")),
            "quiet": bool(ux.get("quiet")),
            "show_fix_edits": bool(ux.get("show_fixes")),
        }
        # an unchanged rerun prints the report the last one printed (`cache.report_key`), when
        # nothing after the run changed its findings
        as_run = not (fix or unsafe_fixes or diff or baseline or since_ref or only_changed_lines)
        kept_key = _kept_report_key(result, fmt, render_opts) if as_run else None
        kept_report = result.cache.load_report(kept_key) if kept_key is not None else None
        if kept_report is not None:
            rendered, is_rich = kept_report, False
        else:
            rendered, is_rich = _render(result, fmt, color if not diff else False, output, **render_opts)
            if kept_key is not None:
                rendered = _keeping(rendered, lambda text: result.cache.store_report(kept_key, text))
    # with --diff, standard output carries the patch alone (pipe it to `git apply`);
    # the report goes to --output, or to standard error
    _emit(rendered, output, is_rich, to_stderr=diff)
    if getattr(result, "cache", None) is not None:  # the files the code frames found clean
        result.cache.remember_clean_sources()
    return 0 if ux.get("exit_zero") else exit_code(result.findings, settings.fail_on)


def _render(
    result: Any, fmt: str, color: bool | None, output: str | None, **opts: Any
) -> tuple[str | Iterable[str], bool]:
    """The report as text, or as pieces to write in turn (JSON: never held whole); `opts`
    go to the reporter (each ignores what it does not use)."""
    rep = _reporter(fmt)
    name = rep.__name__.rpartition(".")[2]
    if name == "text":
        use_color = (
            color
            if color is not None
            else (output in (None, "-") and sys.stdout.isatty() and not os.environ.get("NO_COLOR"))
        )
        return rep.render(result, color=bool(use_color), **opts), bool(use_color)
    if name == "json":
        return rep.render_chunks(result, **opts), False
    return rep.render(result, **opts), False


def _reporter(fmt: str) -> Any:
    """The module of `fmt`'s reporter (only the chosen one is imported: a one-file run must
    start fast)."""
    import importlib

    return importlib.import_module(f"ailint.report.{fmt if fmt in ('json', 'sarif', 'github', 'html') else 'text'}")


def _kept_report_key(result: Any, fmt: str, opts: dict[str, Any]) -> bytes | None:
    """Where the report of a run restored whole from the results cache is kept, for a
    reporter whose output is a function of the result and its options alone (`KEPT`)."""
    if getattr(result, "cache", None) is None or not getattr(_reporter(fmt), "KEPT", False):
        return None
    from ailint.engine.cache import report_key

    return report_key(result, fmt, opts)


KEPT_REPORT_CHARS = 8 * 1024 * 1024  # a larger report is written as it is made, never held whole


def _keeping(rendered: str | Iterable[str], keep: Callable[[str], None]) -> str | Iterable[str]:
    """`rendered`, handing the whole text to `keep` once all of it has been written (a piece
    at a time, as before; a report that grows past `KEPT_REPORT_CHARS` is not kept)."""
    if isinstance(rendered, str):
        keep(rendered)
        return rendered

    def pieces() -> Iterator[str]:
        held: list[str] | None = []
        size = 0
        for piece in rendered:
            yield piece
            if held is not None:
                size += len(piece)
                if size > KEPT_REPORT_CHARS:
                    held = None
                else:
                    held.append(piece)
        if held is not None:
            keep("".join(held))

    return pieces()


def _emit(text: str | Iterable[str], output: str | None, is_rich: bool, to_stderr: bool = False) -> None:
    """Write the report: to `output` through a temporary file renamed into place (never a
    half-written report), else to standard output (or error)."""
    pieces = [text] if isinstance(text, str) else text
    if output and output != "-":
        import tempfile

        d = os.path.dirname(os.path.abspath(output))
        try:
            from ailint.report.common import umask_mode

            fd, tmp = tempfile.mkstemp(prefix=".ailint-", dir=d)
            os.fchmod(fd, umask_mode())  # as any new file here (mkstemp makes it 0600)
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as fh:
                    for piece in pieces:
                        fh.write(piece)
                os.replace(tmp, output)
            except BaseException:  # an error mid-report: no stray temporary file
                try:
                    os.unlink(tmp)
                except OSError:
                    pass
                raise
        except OSError as exc:
            _fail(f"cannot write {output}: {exc.strerror or exc}")
        return
    if is_rich and not to_stderr and isinstance(text, str):
        from ailint.report.text import print_rich

        print_rich(text)
        return
    stream = sys.stderr if to_stderr else sys.stdout
    try:
        for piece in pieces:
            stream.write(piece)
        stream.flush()
    except BrokenPipeError:  # `ailint check . | head`: the reader left; the run ends as it would
        from ailint.doors.lean import reader_left

        reader_left(stream)


@cli.command("init")
@click.argument("paths", nargs=-1, type=click.Path())
@click.option(
    "-o", "--output", default=".ailint.yaml", show_default=True, help="Where to write it (`-` for standard output)."
)
@click.option("--force", is_flag=True, help="Overwrite an existing file.")
def init_cmd(paths: tuple[str, ...], output: str, force: bool) -> None:
    """Write a starter .ailint.yaml, filled from what PATHS show (default: the current folder).

    Every profile key is there, commented; the GPU taints of accelerator NodePools, Auto Mode
    NodeClasses, a descheduler policy and the Karpenter, vLLM and External Secrets versions
    of container images are filled in when the files show them. It says what it could not know.
    """
    from ailint.doors import init as starter
    from ailint.engine.config import Settings

    if output != "-" and os.path.exists(output) and not force:
        _fail(f"{output} exists (use --force to overwrite it)")
    seen = starter.survey(starter.collect(list(paths), Settings(root=os.getcwd())))
    text = starter.render(seen, list(paths))
    if output == "-":
        click.echo(text, nl=False)
    else:
        try:
            with open(output, "w", encoding="utf-8") as fh:
                fh.write(text)
        except OSError as exc:
            _fail(f"cannot write {output}: {exc.strerror or exc}")
    for key in seen.values:
        click.echo(f"ailint: {key}: {seen.values[key]!r} (from {seen.sources[key]})", err=True)
    for key, why in seen.unknown.items():
        click.echo(f"ailint: {key}: not known from these files ({why}); left commented", err=True)
    if output != "-":
        click.echo(f"ailint: wrote {output}", err=True)


@cli.command("rules")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text")
@click.option(
    "--config", "config_file", type=click.Path(dir_okay=False), help="Config file (its custom rules are listed)."
)
@click.option("--no-config", is_flag=True, help="Ignore config files.")
def rules_cmd(fmt: str, config_file: str | None = None, no_config: bool = False) -> None:
    """List every rule."""
    from ailint.engine.registry import all_rules

    _config_rules(config_file, no_config)

    rows: list[dict[str, Any]] = []
    for reg in all_rules().values():
        r = reg.rule
        rows.append(
            {
                "code": r.code,
                "name": r.name,
                "family": r.family,
                "severity": r.severity.value,
                "fix": r.fix.value,
                "summary": r.summary,
                "default": r.default,
            }
        )
    if fmt == "json":
        import json

        click.echo(json.dumps(rows, indent=2))
        return
    w = max((len(row["name"]) for row in rows), default=10)
    for row in rows:
        fixmark = {"always": "fix", "sometimes": "fix?", "never": ""}[row["fix"]]
        optmark = "" if row["default"] else "opt-in"  # runs only when selected by code or name
        click.echo(
            f"{row['code']}  {row['name']:<{w}}  {row['severity']:<7}  {fixmark:<4}  {optmark:<6}  {row['summary']}"
        )


@cli.command("rule")
@click.argument("code")
@click.option("--config", "config_file", type=click.Path(dir_okay=False), help="Config file (for custom rules).")
@click.option("--no-config", is_flag=True, help="Ignore config files.")
def rule_cmd(code: str, config_file: str | None = None, no_config: bool = False) -> None:
    """Show a rule's full documentation (by code or name)."""
    from ailint.engine.registry import find_rule

    _config_rules(config_file, no_config)

    reg = find_rule(code)
    if reg is None:
        _fail(f"no rule {code!r} (see `ailint rules`)")
        return
    r = reg.rule
    opt = "" if r.default else f"; opt-in: runs only with --extend-select {r.code}"
    click.echo(f"{r.code} {r.name} ({r.severity.value}; fix: {r.fix.value}; scope: {r.scope.value}{opt})\n")
    click.echo(r.summary + "\n")
    if r.kinds and r.kinds != ("*",):
        from ailint.engine.docs import kinds_text

        click.echo("Kinds: " + kinds_text(r.kinds, code=False) + "\n")
    click.echo(reg.doc)


@cli.command("inventory")
@click.argument("paths", nargs=-1, type=click.Path())
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option("-o", "--output", type=click.Path(dir_okay=False), help="Write the inventory to a file.")
@click.option("--config", "config_file", type=click.Path(dir_okay=False), help="Config file to use.")
@click.option("--no-config", is_flag=True, help="Ignore config files.")
def inventory_cmd(
    paths: tuple[str, ...], fmt: str, output: str | None, config_file: str | None, no_config: bool
) -> None:
    """List what ailint understood in PATHS: one entry per workload object (roles, engine,
    model, accelerators per replica, replicas, pod templates), and the custom resources it
    does not read (`unrecognized`). The JSON shape is schemas/inventory.schema.json."""
    from ailint.engine import inventory
    from ailint.engine.config import ConfigError, load_settings

    try:
        settings = load_settings(config_file, no_config)
    except ConfigError as exc:
        _fail(str(exc))
        return
    problems: list[str] = []
    inv = inventory.build(list(paths), settings, problems)
    for line in problems:  # unreadable or unparsable input: said, never silently empty
        click.echo(f"ailint: {line}", err=True)
    if fmt == "json":
        import json

        text = json.dumps(inv, indent=2) + "\n"
    else:
        text = inventory.render_text(inv)
    if output:
        try:
            with open(output, "w", encoding="utf-8") as fh:
                fh.write(text)
        except OSError as exc:
            _fail(f"cannot write {output}: {exc.strerror or exc}")
    else:
        click.echo(text, nl=False)


@cli.command("clean")
@click.option("--config", "config_file", type=click.Path(dir_okay=False), help="Config file to use.")
@click.option("--no-config", is_flag=True, help="Ignore config files.")
def clean_cmd(config_file: str | None, no_config: bool) -> None:
    """Remove the results cache (`cache-dir`, AILINT_CACHE_DIR or the user cache folder)."""
    from ailint.engine.cache import clean, default_dir
    from ailint.engine.config import ConfigError, load_settings

    try:
        settings = load_settings(config_file, no_config)
    except ConfigError as exc:
        _fail(str(exc))
        return
    where, existed = clean(settings.cache_dir or default_dir())
    click.echo(f"ailint: removed the cache in {where}" if existed else f"ailint: no cache in {where}", err=True)


@cli.group()
def webhook() -> None:
    """The dry-run admission webhook."""


@webhook.command("serve")
@click.option("--host", default="0.0.0.0", show_default=True)
@click.option("--port", default=8443, show_default=True, type=int)
@click.option("--tls-cert", type=click.Path(exists=True, dir_okay=False))
@click.option("--tls-key", type=click.Path(exists=True, dir_okay=False))
@click.option("--insecure-http", is_flag=True, help="Serve plain HTTP (local tests only).")
@click.option("--enforce", is_flag=True, help="Deny requests with error findings (default: warn only).")
@click.option("--config", "config_file", type=click.Path(dir_okay=False))
@click.option(
    "--workers",
    default=1,
    show_default=True,
    type=click.IntRange(min=0),
    help="Worker processes sharing the port (pre-fork); 0 = one per usable CPU.",
)
def webhook_serve(
    host: str,
    port: int,
    tls_cert: str | None,
    tls_key: str | None,
    insecure_http: bool,
    enforce: bool,
    config_file: str | None,
    workers: int,
) -> None:
    """Serve POST /validate for admission.k8s.io/v1 AdmissionReview requests."""
    from ailint.doors.webhook import serve

    if not insecure_http and not (tls_cert and tls_key):
        _fail("--tls-cert and --tls-key are required (or --insecure-http for local tests)")
    sys.exit(
        serve(
            host=host,
            port=port,
            tls_cert=tls_cert,
            tls_key=tls_key,
            insecure_http=insecure_http,
            enforce=enforce,
            config_file=config_file,
            workers=workers,
        )
    )


_ends_with_exit = False  # the process ends with `fast_exit` after the command (`ends_with_exit`)


def ends_with_exit() -> None:
    """The command this process runs is its last: it ends with `fast_exit` (the console entry
    points), so a check keeps its run's objects until then (`run.hold_until_exit`)."""
    global _ends_with_exit
    _ends_with_exit = True


def main() -> None:
    """The console entry point: run the command, then leave without tearing the heap down
    (`lean.fast_exit`)."""
    from ailint.doors.lean import fast_exit

    ends_with_exit()
    try:
        cli(prog_name="ailint")
        code: Any = 0
    except SystemExit as stop:
        code = stop.code
    fast_exit(code)


if __name__ == "__main__":
    main()
