"""The GitHub Action's one run: lint once, write SARIF, annotate, summarise, set outputs.

Called by `action.yml` as `python -m ailint.doors.github_action`; inputs arrive as environment
variables (`AILINT_PATHS`, `AILINT_CONFIG`, `AILINT_FAIL_ON`, `AILINT_SARIF_FILE`,
`AILINT_ANNOTATIONS`, `AILINT_SUMMARY`, `AILINT_NEW_FINDINGS_ONLY`, `AILINT_SINCE`,
`AILINT_RESULTS_CACHE`).
GitHub shows at most 10 annotations of each type per step, so the most severe findings are
annotated and a notice says how many more there are; the SARIF upload carries all of them.

On a `pull_request` event, `new-findings-only: auto` (the default) compares with the pull
request's base commit (`pull_request.base.sha` of `GITHUB_EVENT_PATH`, or `since`): the
annotations, the job summary, the outputs and the exit code cover what the pull request
introduces, while the SARIF file keeps every finding (code scanning tracks them itself).
Bad inputs end in one `::error` line and exit 2; the `sarif-file` output is set even then
(an empty, valid SARIF log that records the failure), so an upload step does not fail on a
missing file.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
from collections import Counter

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

ANNOTATIONS_PER_TYPE = 10
_ORDER = {"error": 0, "warning": 1, "info": 2}
FAIL_ON = ("error", "warning", "info", "never")
_BOOLS = {"1": True, "true": True, "yes": True, "on": True, "0": False, "false": False, "no": False, "off": False}
PR_EVENTS = ("pull_request", "pull_request_target")


class InputError(Exception):
    """An input the action cannot use: reported as one `::error` line."""


def _bool_input(name: str, default: bool) -> bool:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    v = _BOOLS.get(raw.strip().lower())
    if v is None:
        raise InputError(f"{_input_name(name)}: expected true or false, got {raw!r}")
    return v


def _input_name(env: str) -> str:
    return env.removeprefix("AILINT_").lower().replace("_", "-")


def _failed_sarif(message: str) -> str:
    """A SARIF log with no results that says the run failed (for the upload step)."""
    from ailint import __version__

    log = {
        "version": "2.1.0",
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "runs": [
            {
                "tool": {"driver": {"name": "ailint", "version": __version__, "informationUri": "https://ailint.io"}},
                "invocations": [
                    {
                        "executionSuccessful": False,
                        "toolExecutionNotifications": [{"level": "error", "message": {"text": message}}],
                    }
                ],
                "results": [],
            }
        ],
    }
    return json.dumps(log, indent=2) + "\n"


def pull_request_base() -> str | None:
    """The base commit of the pull request this run is for, or None (not a pull request)."""
    if os.environ.get("GITHUB_EVENT_NAME") not in PR_EVENTS:
        return None
    path = os.environ.get("GITHUB_EVENT_PATH")
    if not path:
        return None
    try:
        with open(path, encoding="utf-8") as fh:
            event = json.load(fh)
        sha = event["pull_request"]["base"]["sha"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return sha if isinstance(sha, str) and sha else None


def _ensure_commit(ref: str) -> None:
    """A shallow checkout (actions/checkout's default) lacks the base commit: fetch it.

    `ref` may come from the `since` input: one that starts with `-` would be read as a git
    option (`--upload-pack=<command>` runs a command), so it is never passed to git."""
    if not ref or ref.startswith("-") or any(c.isspace() or ord(c) < 32 for c in ref):
        return
    have = subprocess.run(["git", "cat-file", "-e", f"{ref}^{{commit}}"], capture_output=True, check=False)
    if have.returncode != 0:
        subprocess.run(
            ["git", "fetch", "--no-tags", "--quiet", "--depth=1", "--end-of-options", "origin", ref],
            capture_output=True,
            check=False,
        )


def _set_output(name: str, value: str) -> None:
    path = os.environ.get("GITHUB_OUTPUT")
    if path:
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(f"{name}={value}\n")


def annotation_lines(result: Any) -> list[str]:
    """Workflow commands for at most 10 findings per level, most severe first."""
    from types import SimpleNamespace

    from ailint.report import github as github_report

    out: list[str] = []
    by_level: dict[str, list[Any]] = {"error": [], "warning": [], "info": []}
    for f in sorted(result.findings, key=lambda f: (_ORDER[f.severity.value], f.file, f.span.line)):
        by_level[f.severity.value].append(f)
    hidden = 0
    for items in by_level.values():
        part = SimpleNamespace(files=result.files, sources=result.sources, findings=items[:ANNOTATIONS_PER_TYPE])
        out.extend(github_report.render(part).splitlines())
        hidden += max(0, len(items) - ANNOTATIONS_PER_TYPE)
    if hidden:
        out.append(
            f"::notice title=ailint::{hidden} more findings are not annotated here "
            "(GitHub shows 10 per type); see the job summary and the code scanning alerts"
        )
    return out


def summary(result: Any, sarif_file: str, scope: str = "findings", total: int | None = None) -> str:
    from ailint.report.common import redact_text

    sev = Counter(f.severity.value for f in result.findings)
    fam = Counter(f.code[:3] for f in result.findings)
    server = os.environ.get("GITHUB_SERVER_URL", "https://github.com")
    repo = os.environ.get("GITHUB_REPOSITORY", "")
    sha = os.environ.get("GITHUB_SHA", "")
    lines = ["## ailint", ""]
    every = "" if total is None or total == len(result.findings) else f" ({total} findings in all, in the SARIF report)"
    if not result.findings:
        lines.append(f"No {scope} in {len(result.files)} files ({result.object_count} objects){every}.")
        return "\n".join(lines) + "\n"
    lines += [
        f"{len(result.findings)} {scope} in {len(result.files)} files "
        f"({result.object_count} objects){every}. SARIF: `{sarif_file}`.",
        "",
        "| severity | count |",
        "|---|---|",
    ]
    lines += [f"| {s} | {sev.get(s, 0)} |" for s in ("error", "warning", "info")]
    lines += ["", "| family | count |", "|---|---|"]
    lines += [f"| {k} | {v} |" for k, v in sorted(fam.items())]
    lines += ["", "### Top findings", "", "| | rule | where | message |", "|---|---|---|---|"]
    top = sorted(result.findings, key=lambda f: (_ORDER[f.severity.value], f.file, f.span.line))[:25]
    for f in top:
        where = f"{f.file}:{f.span.line}"
        if repo and sha:
            where = f"[{where}]({server}/{repo}/blob/{sha}/{f.file}#L{f.span.line})"
        msg = redact_text(f.message).replace("|", "\\|")
        lines.append(f"| {f.severity.value} | `{f.code}` {f.name} | {where} | {msg} |")
    if len(result.findings) > len(top):
        lines.append(f"\n…and {len(result.findings) - len(top)} more.")
    return "\n".join(lines) + "\n"


def _write(path: str, text: str) -> None:
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text)


def main() -> int:
    sarif_file = os.environ.get("AILINT_SARIF_FILE") or os.path.join(os.environ.get("RUNNER_TEMP", "."), "ailint.sarif")
    try:
        return _run(sarif_file)
    except InputError as exc:
        print(f"::error title=ailint::{exc}")
        try:
            _write(sarif_file, _failed_sarif(str(exc)))
            _set_output("sarif-file", sarif_file)
        except OSError as err:
            print(f"::error title=ailint::cannot write {sarif_file}: {err.strerror or err}")
        return 2


def _run(sarif_file: str) -> int:
    from ailint.engine.config import ConfigError, load_settings
    from ailint.engine.run import exit_code, lint
    from ailint.report import sarif as sarif_report

    try:
        paths = shlex.split(os.environ.get("AILINT_PATHS") or ".")
    except ValueError as exc:
        raise InputError(f"paths: {exc}") from None
    config = os.environ.get("AILINT_CONFIG") or None
    fail_on = (os.environ.get("AILINT_FAIL_ON") or "").strip().lower() or None
    if fail_on is not None and fail_on not in FAIL_ON:
        raise InputError(f"fail-on: expected one of {', '.join(FAIL_ON)}, got {fail_on!r}")
    want_annotations = _bool_input("AILINT_ANNOTATIONS", True)
    want_summary = _bool_input("AILINT_SUMMARY", True)
    results_cache = _bool_input("AILINT_RESULTS_CACHE", False)
    mode = (os.environ.get("AILINT_NEW_FINDINGS_ONLY") or "auto").strip().lower()
    if mode not in ("auto", *_BOOLS):
        raise InputError(f"new-findings-only: expected auto, true or false, got {mode!r}")
    since_ref = (os.environ.get("AILINT_SINCE") or "").strip() or None
    base = since_ref or pull_request_base()
    compare = base is not None and (mode == "auto" or _BOOLS.get(mode, False))
    if mode not in ("auto",) and _BOOLS.get(mode) and base is None:
        raise InputError("new-findings-only: true needs a pull_request event or the `since` input")
    if config is not None and not os.path.isfile(config):
        raise InputError(f"config: {config}: file not found")
    try:
        settings = load_settings(config, no_config=False)
    except ConfigError as exc:
        raise InputError(f"config: {exc}") from None
    if fail_on:
        settings.fail_on = fail_on
    jobs = os.cpu_count() or 1
    # `results-cache`: through the results cache, as `ailint check` runs, for a workflow that
    # restores the cache folder from an earlier job (the README's `actions/cache` step): the
    # files it holds are not parsed or judged again. Off by default: a runner starts with an
    # empty folder, which the run would only fill (a third more time on a large repository)
    result = lint(paths, settings, jobs=jobs, cache=results_cache, keep_parsed=compare)
    _write(sarif_file, sarif_report.render(result, root=settings.root if settings.config_path else None))
    _set_output("sarif-file", sarif_file)
    total = len(result.findings)
    scope = "findings"
    if compare and base is not None:
        from ailint.engine import since

        shown_root = settings.root if settings.config_path else os.getcwd()
        try:
            _ensure_commit(base)
            old = since.findings_at(
                base,
                paths,
                settings,
                shown_root,
                jobs=jobs,
                head=result,
            )
        except since.GitError as exc:
            print(f"::warning title=ailint::cannot compare with {base} ({exc}); reporting every finding")
        else:
            result.findings, _known = since.new_findings(result.findings, old)
            scope = f"new findings since {base[:12]}"
    errors = sum(1 for f in result.findings if f.severity.value == "error")
    if want_annotations:
        for line in annotation_lines(result):
            print(line)
    if want_summary and os.environ.get("GITHUB_STEP_SUMMARY"):
        with open(os.environ["GITHUB_STEP_SUMMARY"], "a", encoding="utf-8") as fh:
            fh.write(summary(result, sarif_file, scope=scope, total=total))
    _set_output("findings", str(len(result.findings)))
    _set_output("errors", str(errors))
    _set_output("total-findings", str(total))
    code = exit_code(result.findings, settings.fail_on)
    print(
        f"ailint: {len(result.findings)} {scope} ({errors} errors; {total} in all) in {len(result.files)} files; "
        f"fail-on {settings.fail_on}: exit {code}"
    )
    return code


if __name__ == "__main__":
    # one run in a process of its own, started and ended as `ailint check` is: the start-up
    # code table, no cyclic collector, the run's objects kept until `os._exit` (the corpus
    # copy through this door: 1.68 to 1.86 s before, against 1.14 s for `ailint check
    # --format sarif`)
    from ailint.doors import lean

    lean.prepare(one_run=True)
    from ailint.engine.run import hold_until_exit

    hold_until_exit()
    lean.fast_exit(main())
