"""The GitHub Action's one run: lint once, write SARIF, annotate, summarise, set outputs.

Called by `action.yml` as `python -m ailint.doors.github_action`; inputs arrive as environment
variables (`AILINT_PATHS`, `AILINT_CONFIG`, `AILINT_FAIL_ON`, `AILINT_SARIF_FILE`,
`AILINT_ANNOTATIONS`, `AILINT_SUMMARY`). GitHub shows at most 10 annotations of each type
per step, so the most severe findings are annotated and a notice says how many more
there are; the SARIF upload carries all of them.
"""

from __future__ import annotations

import os
import shlex
import sys
from collections import Counter

from ailint.engine.run import exit_code, lint
from ailint.report import github as github_report
from ailint.report import sarif as sarif_report

ANNOTATIONS_PER_TYPE = 10
_ORDER = {"error": 0, "warning": 1, "info": 2}


def _truthy(v: str | None, default: bool = True) -> bool:
    if v is None or v == "":
        return default
    return v.strip().lower() in ("1", "true", "yes", "on")


def _set_output(name: str, value: str) -> None:
    path = os.environ.get("GITHUB_OUTPUT")
    if path:
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(f"{name}={value}\n")


def annotations(result) -> list[str]:
    """Workflow commands for at most 10 findings per level, most severe first."""

    class _Sub:
        files = result.files
        sources = result.sources
        findings: list = []

    out: list[str] = []
    by_level: dict[str, list] = {"error": [], "warning": [], "info": []}
    for f in sorted(result.findings, key=lambda f: (_ORDER[f.severity.value], f.file, f.span.line)):
        by_level[f.severity.value].append(f)
    hidden = 0
    for level, items in by_level.items():
        _Sub.findings = items[:ANNOTATIONS_PER_TYPE]
        out.extend(github_report.render(_Sub).splitlines())
        hidden += max(0, len(items) - ANNOTATIONS_PER_TYPE)
    if hidden:
        out.append(
            f"::notice title=ailint::{hidden} more findings are not annotated here "
            "(GitHub shows 10 per type); see the job summary and the code scanning alerts"
        )
    return out


def summary(result, sarif_file: str) -> str:
    sev = Counter(f.severity.value for f in result.findings)
    fam = Counter(f.code[:3] for f in result.findings)
    server = os.environ.get("GITHUB_SERVER_URL", "https://github.com")
    repo = os.environ.get("GITHUB_REPOSITORY", "")
    sha = os.environ.get("GITHUB_SHA", "")
    lines = ["## ailint", ""]
    if not result.findings:
        lines.append(f"No findings in {len(result.files)} files ({result.object_count} objects).")
        return "\n".join(lines) + "\n"
    lines += [
        f"{len(result.findings)} findings in {len(result.files)} files "
        f"({result.object_count} objects). SARIF: `{sarif_file}`.",
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
        msg = f.message.replace("|", "\\|")
        lines.append(f"| {f.severity.value} | `{f.code}` {f.name} | {where} | {msg} |")
    if len(result.findings) > len(top):
        lines.append(f"\n…and {len(result.findings) - len(top)} more.")
    return "\n".join(lines) + "\n"


def main() -> int:
    from ailint.engine.config import ConfigError, load_settings

    paths = shlex.split(os.environ.get("AILINT_PATHS") or ".")
    config = os.environ.get("AILINT_CONFIG") or None
    fail_on = os.environ.get("AILINT_FAIL_ON") or None
    sarif_file = os.environ.get("AILINT_SARIF_FILE") or os.path.join(os.environ.get("RUNNER_TEMP", "."), "ailint.sarif")
    try:
        settings = load_settings(config, no_config=False)
    except ConfigError as exc:
        print(f"::error title=ailint config::{exc}")
        return 2
    if fail_on:
        settings.fail_on = fail_on
    result = lint(paths, settings, jobs=os.cpu_count() or 1)
    os.makedirs(os.path.dirname(os.path.abspath(sarif_file)), exist_ok=True)
    with open(sarif_file, "w", encoding="utf-8") as fh:
        fh.write(sarif_report.render(result))
    if _truthy(os.environ.get("AILINT_ANNOTATIONS")):
        for line in annotations(result):
            print(line)
    if _truthy(os.environ.get("AILINT_SUMMARY")) and os.environ.get("GITHUB_STEP_SUMMARY"):
        with open(os.environ["GITHUB_STEP_SUMMARY"], "a", encoding="utf-8") as fh:
            fh.write(summary(result, sarif_file))
    errors = sum(1 for f in result.findings if f.severity.value == "error")
    _set_output("sarif-file", sarif_file)
    _set_output("findings", str(len(result.findings)))
    _set_output("errors", str(errors))
    code = exit_code(result.findings, settings.fail_on)
    print(
        f"ailint: {len(result.findings)} findings ({errors} errors) in {len(result.files)} files; "
        f"fail-on {settings.fail_on}: exit {code}"
    )
    return code


if __name__ == "__main__":
    sys.exit(main())
