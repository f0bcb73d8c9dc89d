"""The options users reach for first (ruff, kube-linter and Polaris set the habits).

`--statistics`, `--exit-zero`, `-q/--quiet`, `-v/--verbose`, `--exclude`/`--extend-exclude`,
`--show-fixes`, `--output-format` (an alias of `--format`) and `--explain CODE`, plus the
progress line a long run over a terminal shows on standard error. `ailint check` takes them
as one group (`UX_OPTIONS`), so they live here, beside the command, not inside it.
"""

from __future__ import annotations

import os
import sys
import time
from collections import Counter
from collections.abc import Callable

import click

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

PROGRESS_AFTER = 2.0  # seconds before a run over a terminal shows a progress line


def _explain(ctx: click.Context, _param: click.Parameter, value: str | None) -> None:
    """`ailint check --explain CODE`: the rule's documentation (as `ailint rule CODE`), then exit."""
    if not value or ctx.resilient_parsing:
        return
    from ailint.doors.cli import rule_cmd

    ctx.invoke(rule_cmd, code=value)
    ctx.exit(0)


def _option_list(formats: tuple[str, ...]) -> list[Callable[[Any], Any]]:
    return [
        click.option(
            "--output-format",
            "output_format",
            type=click.Choice(formats),
            default=None,
            help="Alias of --format.",
        ),
        click.option(
            "--statistics",
            is_flag=True,
            help="Print the number of findings per rule (and how many are fixable) instead of the findings.",
        ),
        click.option("--exit-zero", is_flag=True, help="Exit 0 even when findings are reported (2 stays 2)."),
        click.option(
            "-q", "--quiet", is_flag=True, help="Print the findings and nothing else: no summary, progress or warnings."
        ),
        click.option(
            "-v", "--verbose", is_flag=True, help="Explain each finding with its rule's whole 'why' (text and HTML)."
        ),
        click.option(
            "--exclude",
            "exclude",
            multiple=True,
            metavar="PATTERNS",
            help="Paths to skip (comma-separated gitignore-style patterns); replaces the config's exclude.",
        ),
        click.option(
            "--extend-exclude",
            "extend_exclude",
            multiple=True,
            metavar="PATTERNS",
            help="Paths to skip in addition to the config's exclude.",
        ),
        click.option("--show-fixes", is_flag=True, help="Show the lines each fix removes and adds (text output)."),
        click.option(
            "--explain",
            metavar="CODE",
            callback=_explain,
            expose_value=False,
            is_eager=True,
            help="Show the documentation of rule CODE (or NAME) and exit, as `ailint rule CODE`.",
        ),
    ]


def ux_options(formats: tuple[str, ...]) -> Callable[[Any], Any]:
    """Decorator adding the group to a click command (the values arrive as keyword arguments)."""

    def apply(fn: Any) -> Any:
        for opt in reversed(_option_list(formats)):
            fn = opt(fn)
        return fn

    return apply


def csv(values: Any) -> list[str]:
    out: list[str] = []
    for v in values or ():
        out.extend(x.strip() for x in str(v).split(",") if x.strip())
    return out


def apply_excludes(settings: Any, ux: dict[str, Any]) -> None:
    """`--exclude` replaces the configured patterns, `--extend-exclude` adds to them."""
    if ux.get("exclude"):
        settings.exclude = csv(ux["exclude"])
    if ux.get("extend_exclude"):
        settings.exclude = list(settings.exclude) + csv(ux["extend_exclude"])


def statistics(result: Any, fmt: str) -> str:
    """`--statistics`: one row per rule, most findings first, with the fixable counts."""
    counts: Counter[str] = Counter(f.code for f in result.findings)
    fixable: Counter[str] = Counter(f.code for f in result.findings if f.fix is not None)
    safe: Counter[str] = Counter(
        f.code for f in result.findings if f.fix is not None and f.fix.applicability.value == "safe"
    )
    names = {f.code: f.name for f in result.findings}
    rows = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    if fmt == "json":
        import json

        doc = [
            {"code": c, "name": names[c], "count": n, "fixable": fixable[c], "fixable_safe": safe[c]} for c, n in rows
        ]
        return json.dumps(doc, indent=2) + "\n"
    if not rows:
        return "No findings.\n"
    width = max(len(str(n)) for _, n in rows)
    lines = []
    for code, n in rows:
        fx = fixable[code]
        note = ""
        if fx:
            note = f"  ({fx} fixable" + (f", {safe[code]} with --fix)" if safe[code] != fx else " with --fix)")
            if not safe[code]:
                note = f"  ({fx} fixable with --unsafe-fixes)"
        lines.append(f"{n:>{width}}  {code}  {names[code]}{note}")
    total = sum(counts.values())
    lines.append(f"{total} finding{'s' if total != 1 else ''} of {len(rows)} rule{'s' if len(rows) != 1 else ''}.")
    return "\n".join(lines) + "\n"


class Progress:
    """`ailint: linting k8s… 120/480 files 3s` on standard error while a run over a terminal
    lasts more than about two seconds; off when standard error is not a terminal, under
    `--quiet`, and in CI (`CI` set). The line is erased when the run ends, so the report
    starts clean. `files` is the run's `on_files` hook (files read and checked, of all)."""

    def __init__(self, what: str, after: float | None = None) -> None:
        import threading  # only a run on a terminal shows progress

        self.what = what
        env = os.environ.get("AILINT_PROGRESS_AFTER")  # tests shorten the wait
        self.after = after if after is not None else (float(env) if env else PROGRESS_AFTER)
        self._stop = threading.Event()
        self._shown = False
        self._start = time.monotonic()
        self._files: tuple[int, int] | None = None
        self._every = 0.5 if self.after >= 0.5 else max(self.after, 0.05)  # refresh interval
        self._thread = threading.Thread(target=self._run, name="ailint-progress", daemon=True)

    @staticmethod
    def wanted(quiet: bool) -> bool:
        if quiet or os.environ.get("CI"):
            return False
        try:
            return sys.stderr.isatty()
        except (AttributeError, ValueError):
            return False

    def files(self, done: int, total: int) -> None:
        self._files = (done, total)  # one tuple: the thread reads both at once

    def line(self) -> str:
        spent = time.monotonic() - self._start
        counts = f" {self._files[0]}/{self._files[1]} files" if self._files else ""
        return f"ailint: linting {self.what}…{counts} {spent:.0f}s"

    def start(self) -> Progress:
        self._thread.start()
        return self

    def _run(self) -> None:
        if self._stop.wait(self.after):
            return
        while not self._stop.is_set():
            sys.stderr.write(f"\r\x1b[2K{self.line()}")
            sys.stderr.flush()
            self._shown = True
            self._stop.wait(self._every)

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(1.0)
        if self._shown:
            sys.stderr.write("\r\x1b[2K")
            sys.stderr.flush()


def progress(paths: tuple[str, ...], quiet: bool) -> Progress | None:
    if not Progress.wanted(quiet):
        return None
    what = ", ".join(paths[:2]) + (f" and {len(paths) - 2} more" if len(paths) > 2 else "") if paths else "."
    return Progress(what).start()
