"""Issue 16, "the first hour": the rough edges a new user hits, each pinned by a test."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from ailint.doors.cli import cli
from click.testing import CliRunner

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "fixtures" / "demo"

POD = """apiVersion: v1
kind: Pod
metadata:
  name: p
spec:
  containers:
    - name: c
      image: vllm/vllm-openai:v0.9.2
      resources:
        requests:
          nvidia.com/gpu: 1
"""


def run(args: list[str], cwd: Path | None = None, input: str | None = None):  # type: ignore[no-untyped-def]
    old = os.getcwd()
    try:
        if cwd is not None:
            os.chdir(cwd)
        return CliRunner().invoke(cli, args, input=input, catch_exceptions=False)
    finally:
        os.chdir(old)


@pytest.fixture
def pod(tmp_path: Path) -> Path:
    p = tmp_path / "pod.yaml"
    p.write_text(POD)
    return p


# -- 1. a typo'd code in the config is a config error, with file, line and nearest code --
@pytest.mark.parametrize(
    ("config", "line", "where", "hint"),
    [
        ("select: [GPU999]\n", 1, "`select[0]`", "did you mean GPU"),
        ("fail-on: error\nextend-select:\n  - SRV001\n  - SRVV\n", 4, "`extend-select[1]`", "did you mean SRV?"),
        ("ignore: GPU001,gpu-reqest-without-limit\n", 1, "`ignore[1]`", "did you mean gpu-request-without-limit?"),
        ('per-file-ignores:\n  "legacy/**":\n    - GPU0002\n', 3, "`per-file-ignores.legacy/**[0]`", "GPU002"),
        ("rules:\n  GPU002: {severity: info}\n  GPU0002:\n    severity: info\n", 3, "`rules.GPU0002`", "GPU002"),
    ],
)
def test_unknown_selector_in_config_is_an_error(
    tmp_path: Path, pod: Path, config: str, line: int, where: str, hint: str
) -> None:
    cfg = tmp_path / ".ailint.yaml"
    cfg.write_text(config)
    r = run(["check", str(pod)], cwd=tmp_path)
    assert r.exit_code == 2, r.output
    assert f"{cfg}:{line}: {where}" in r.output and hint in r.output


def test_unknown_selector_in_pyproject(tmp_path: Path, pod: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.ailint]\nselect = [\n  "GPU002",\n  "GPU999",\n]\n')
    r = run(["check", str(pod)], cwd=tmp_path)
    assert r.exit_code == 2 and "pyproject.toml:4: `select[1]`" in r.output


@pytest.mark.parametrize("pair", ["extendedResourceToleration=maybe", "gpuNodeTaints=notjson", "db.maxConnections=0"])
def test_set_values_are_validated(pod: Path, pair: str) -> None:
    r = run(["check", "--no-config", "--set", pair, str(pod)])
    assert r.exit_code == 2 and f"--set {pair}" in r.output


def test_valid_set_values_still_work(pod: Path) -> None:
    r = run(
        ["check", "--no-config", "--select", "GPU002", "--set", "gpuNodeTaints=nvidia.com/gpu:NoSchedule", str(pod)]
    )
    assert r.exit_code == 1


# -- 4. a standalone suppression covers the node that follows and everything under it ----
def test_standalone_comment_covers_the_list_item(tmp_path: Path) -> None:
    text = (DEMO / "vllm.yaml").read_text()
    assert "            - name: HF_TOKEN\n" in text
    p = tmp_path / "vllm.yaml"
    p.write_text(
        text.replace(
            "            - name: HF_TOKEN\n",
            "            # ailint: ignore[SEC007] test token\n            - name: HF_TOKEN\n",
        )
    )
    r = run(["check", "--no-config", "--select", "SEC007,AIL", "--format", "json", str(p)])
    codes = [f["code"] for f in json.loads(r.output)["findings"]]
    assert codes == [], codes


def test_standalone_comment_covers_a_block_but_not_its_siblings(tmp_path: Path) -> None:
    p = tmp_path / "pod.yaml"
    # two containers, the first under a standalone comment
    second = POD.split("  containers:\n")[1].replace("name: c", "name: d")
    p.write_text(POD.replace("    - name: c\n", "    # ailint: ignore[GPU002]\n    - name: c\n") + second)
    r = run(["check", "--no-config", "--select", "GPU002,AIL", "--format", "json", str(p)])
    found = [(f["code"], f["line"]) for f in json.loads(r.output)["findings"]]
    # the first container (under the comment) is covered, the second list item is not
    assert found == [("GPU002", 17)], found


# -- 5. SARIF URIs relative to the repository root, originalUriBaseIds, Pascal rule names ----
def _git_init(path: Path) -> None:
    import subprocess

    subprocess.run(["git", "init", "-q", str(path)], check=True)


def test_sarif_uris_are_relative_to_the_repository_root(tmp_path: Path) -> None:
    _git_init(tmp_path)
    (tmp_path / "k8s").mkdir()
    (tmp_path / "k8s" / "pod.yaml").write_text(POD)
    sub = tmp_path / "tools"
    sub.mkdir()
    r = run(["check", "--no-config", "--select", "GPU002", "--format", "sarif", "../k8s/pod.yaml"], cwd=sub)
    run_ = json.loads(r.output)["runs"][0]
    (res,) = run_["results"]
    loc = res["locations"][0]["physicalLocation"]["artifactLocation"]
    assert loc == {"uri": "k8s/pod.yaml", "uriBaseId": "%SRCROOT%"}
    assert run_["originalUriBaseIds"] == {"%SRCROOT%": {"uri": tmp_path.resolve().as_uri() + "/"}}
    change = res["fixes"][0]["artifactChanges"][0]["artifactLocation"]
    assert change == loc


def test_sarif_uris_fall_back_to_the_config_root(tmp_path: Path) -> None:
    if any((p / ".git").exists() for p in [tmp_path, *tmp_path.parents]):
        pytest.skip("the temporary folder is inside a git work tree")
    (tmp_path / ".ailint.yaml").write_text("select: [GPU002]\n")
    (tmp_path / "k8s").mkdir()
    (tmp_path / "k8s" / "pod.yaml").write_text(POD)
    r = run(["check", "--format", "sarif", "pod.yaml"], cwd=tmp_path / "k8s")
    run_ = json.loads(r.output)["runs"][0]
    assert run_["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "k8s/pod.yaml"
    assert run_["originalUriBaseIds"]["%SRCROOT%"]["uri"] == tmp_path.resolve().as_uri() + "/"


def test_sarif_rule_names_are_pascal_identifiers(pod: Path) -> None:
    import re

    # the SARIF validator's rule SARIF2012 (ProvideRuleProperties): `^(\p{Lu}[\p{Ll}\p{Nd}]+)*$`
    pascal = re.compile(r"^([A-Z][a-z0-9]+)*$")
    r = run(["check", "--no-config", "--format", "sarif", str(pod)])
    rules = json.loads(r.output)["runs"][0]["tool"]["driver"]["rules"]
    names = [x["name"] for x in rules]
    assert all(pascal.match(n) for n in names), [n for n in names if not pascal.match(n)]
    assert len(set(names)) == len(names)
    assert dict(zip([x["id"] for x in rules], names))["GPU002"] == "GpuRequestWithoutLimit"


# -- 8. the SARIF schema ships with the repository, so a fresh clone runs the schema tests ---
def test_sarif_schema_ships_with_the_tests() -> None:
    from conftest import SARIF_SCHEMA

    assert SARIF_SCHEMA.is_relative_to(ROOT), SARIF_SCHEMA
    schema = json.loads(SARIF_SCHEMA.read_text())
    assert schema["id"].startswith("https://docs.oasis-open.org/sarif/sarif/v2.1.0/")
    notice = (SARIF_SCHEMA.parent / "NOTICE.md").read_text()
    assert "Copyright © OASIS Open" in notice
    shared = ROOT.parent / "shared" / "ref" / "sarif" / "sarif-schema-2.1.0.json"
    if shared.exists():  # the copy is the reference, unmodified
        assert shared.read_bytes() == SARIF_SCHEMA.read_bytes()


# -- 6. counts and exits that agree -------------------------------------------------------
def test_diff_summary_agrees_with_its_report(tmp_path: Path) -> None:
    import re
    import shutil
    import subprocess
    import sys

    shutil.copytree(DEMO, tmp_path / "demo")
    exe = [sys.executable, "-m", "ailint"]
    p = subprocess.run([*exe, "check", "--no-config", "--diff", "demo"], cwd=tmp_path, capture_output=True, text=True)
    said = re.search(r"would remain \((\d+) fixable with --unsafe-fixes\)", p.stdout + p.stderr)
    shown = re.search(r"in \d+ files?; (\d+) fixable with --unsafe-fixes\.", p.stderr)
    assert said and shown, p.stderr[-600:]
    assert said.group(1) == shown.group(1)


def test_write_baseline_writes_summarises_and_exits_zero(tmp_path: Path, pod: Path) -> None:
    base = tmp_path / "baseline.json"
    r = run(["check", "--no-config", "--write-baseline", str(base), str(pod)])
    assert r.exit_code == 0, r.output
    r2 = run(["check", "--no-config", "--select", "GPU002", "--write-baseline", str(base), str(pod)])
    assert r2.exit_code == 0
    assert r2.output.strip().splitlines() == [f"ailint: wrote 1 fingerprint (1 finding) to {base}"]
    assert json.loads(base.read_text())["fingerprints"]
    assert run(["check", "--no-config", "--select", "GPU002", "--baseline", str(base), str(pod)]).exit_code == 0


def test_report_and_baseline_files_honour_the_umask(tmp_path: Path, pod: Path) -> None:
    old = os.umask(0o022)
    try:
        out, base = tmp_path / "report.json", tmp_path / "base.json"
        run(["check", "--no-config", "--format", "json", "-o", str(out), str(pod)])
        run(["check", "--no-config", "--write-baseline", str(base), str(pod)])
    finally:
        os.umask(old)
    assert out.stat().st_mode & 0o777 == 0o644
    assert base.stat().st_mode & 0o777 == 0o644


def test_no_files_says_nothing_was_linted(tmp_path: Path) -> None:
    import subprocess
    import sys

    (tmp_path / "README.md").write_text("no manifests here\n")
    p = subprocess.run(
        [sys.executable, "-m", "ailint", "check", "--no-config", str(tmp_path)], capture_output=True, text=True
    )
    assert p.returncode == 0  # as ruff: a warning, not an error
    assert "nothing was linted" in p.stderr
    assert "All clear" not in p.stdout


# -- 2. a severity other than the documented one says why, in text, JSON and SARIF ----------
def _documented() -> dict[str, str]:
    r = run(["rules", "--format", "json"])
    return {x["code"]: x["severity"] for x in json.loads(r.output)}


def test_demo_severities_agree_with_the_docs_or_say_why() -> None:
    doc = _documented()
    r = run(["check", "--no-config", "--format", "json", str(DEMO)])
    findings = json.loads(r.output)["findings"]
    changed = [f for f in findings if f["severity"] != doc[f["code"]]]
    assert changed, "the demo raises and lowers severities by context"
    for f in findings:
        if f["severity"] == doc[f["code"]]:
            assert f["severity_reason"] is None, f
        else:
            assert f["severity_reason"], f
    text = run(["check", "--no-config", str(DEMO)]).output
    srv001 = next(f for f in changed if f["code"] == "SRV001")
    assert f"SRV001 [error ({srv001['severity_reason']})]" in text
    assert "under 300 seconds" in srv001["severity_reason"]
    sarif = json.loads(run(["check", "--no-config", "--format", "sarif", str(DEMO)]).output)
    reasons = [x.get("properties", {}).get("severityReason") for x in sarif["runs"][0]["results"]]
    assert sum(1 for x in reasons if x) == len(changed)


def test_every_context_severity_is_documented_by_its_rule() -> None:
    """Over every fixture: a finding printed at another severity than its rule's states why,
    from the condition its rule's doc gives for that severity (a `Severity:` paragraph)."""
    from ailint.engine.config import Settings
    from ailint.engine.registry import all_rules
    from ailint.engine.run import lint
    from ailint.report.explain import severity_reason

    result = lint([str(ROOT / "fixtures")], Settings(root=str(ROOT)), jobs=1)
    missing = set()
    for f in result.findings:
        reg = all_rules().get(f.code)
        if reg is not None and reg.rule.severity != f.severity and not severity_reason(f):
            missing.add((f.code, f.severity.value))
    assert not missing, sorted(missing)


# -- 3. why lines: whole sentences, the condition that fired, --verbose for all of it -------
def test_why_lines_are_whole_sentences(tmp_path: Path) -> None:
    r = run(["check", "--no-config", str(DEMO), str(ROOT / "fixtures" / "TRN003"), str(ROOT / "fixtures" / "KRP005")])
    whys = [line.strip()[5:] for line in r.output.splitlines() if line.strip().startswith("why: ")]
    assert whys
    for w in whys:
        assert not w.endswith("…"), w
        assert w.rstrip(")\"'").endswith((".", "!", "?")), w


def test_the_why_explains_the_condition_that_fired() -> None:
    r = run(["check", "--no-config", "--select", "TRN003", "--format", "text", str(DEMO / "training.yaml")])
    blocks = r.output.split("\n\n")
    deadline = next(b for b in blocks if "activeDeadlineSeconds nor preRunningDeadlineSeconds" in b)
    shutdown = next(b for b in blocks if "shutdownAfterJobFinishes is unset" in b)
    assert "why: With no deadline" in deadline, deadline
    assert "why: Without shutdownAfterJobFinishes" in shutdown, shutdown


def test_verbose_shows_the_whole_why() -> None:
    short = run(["check", "--no-config", "--select", "KRP004", str(DEMO / "karpenter.yaml")]).output
    full = run(["check", "--no-config", "--select", "KRP004", "-v", str(DEMO / "karpenter.yaml")]).output
    (s,) = [x for x in short.splitlines() if "why:" in x]
    (v,) = [x for x in full.splitlines() if "why:" in x]
    assert len(v) > len(s) and v.strip().startswith(s.strip()[: len(s.strip()) - 1][:40])
    assert "consolidateAfter" in v


# -- 7. a message naming an object of another file names the file (relative) and the object -
def test_cross_file_message_names_the_path_and_the_object(tmp_path: Path) -> None:
    (tmp_path / "policies").mkdir()
    (tmp_path / "apps").mkdir()
    (tmp_path / "policies" / "descheduler.yaml").write_text(
        "apiVersion: descheduler/v1alpha2\nkind: DeschedulerPolicy\nprofiles:\n  - name: default\n"
        "    pluginConfig:\n      - name: DefaultEvictor\n      - name: RemoveDuplicates\n"
        "    plugins:\n      balance:\n        enabled: [RemoveDuplicates]\n"
    )
    (tmp_path / "apps" / "web.yaml").write_text(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, namespace: ai}\nspec:\n  replicas: 3\n"
        "  selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: {app: web}}\n"
        "    spec:\n      containers:\n        - name: web\n          image: nginx:1.27\n"
    )
    r = run(["check", "--no-config", "--select", "REL003", "--format", "json", "."], cwd=tmp_path)
    msgs = [f["message"] for f in json.loads(r.output)["findings"]]
    assert msgs, r.output
    assert any("the DeschedulerPolicy in policies/descheduler.yaml" in m for m in msgs), msgs


NODEPOOL = """apiVersion: karpenter.sh/v1
kind: NodePool
metadata:
  name: gpu
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements:
        - {key: karpenter.k8s.aws/instance-family, operator: In, values: [g5]}
      taints:
        - {key: dedicated, value: gpu, effect: NoSchedule}
"""
SERVE = """apiVersion: apps/v1
kind: Deployment
metadata: {name: serve, namespace: ai}
spec:
  replicas: 3
  selector: {matchLabels: {app: serve}}
  template:
    metadata: {labels: {app: serve}}
    spec:
      containers:
        - name: vllm
          image: vllm/vllm-openai:v0.9.2
          resources:
            limits: {nvidia.com/gpu: 1}
"""


@pytest.mark.parametrize("marker", ["git", "config"])
def test_cross_file_message_names_the_object_and_its_path_from_the_run_root(tmp_path: Path, marker: str) -> None:
    """Run from a subfolder, a message about another file's object names it as `Kind
    namespace/name` with its path relative to the run root (the git work tree, else the
    config's folder; SARIF's base), never `../x.yaml` or a bare file name."""
    for d in ("karpenter", "policies", "apps"):
        (tmp_path / d).mkdir()
    (tmp_path / "karpenter" / "nodepools.yaml").write_text(NODEPOOL)
    (tmp_path / "policies" / "descheduler.yaml").write_text(
        "apiVersion: descheduler/v1alpha2\nkind: DeschedulerPolicy\nprofiles:\n  - name: default\n"
        "    pluginConfig:\n      - name: DefaultEvictor\n      - name: RemoveDuplicates\n"
        "    plugins:\n      balance:\n        enabled: [RemoveDuplicates]\n"
    )
    (tmp_path / "apps" / "serve.yaml").write_text(SERVE)
    if marker == "git":
        subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
        args = ["check", "--no-config"]
    else:
        (tmp_path / ".ailint.yaml").write_text("select: [GPU001, REL003]\n")
        args = ["check", "--config", str(tmp_path / ".ailint.yaml")]
    r = run(
        [*args, "--select", "GPU001,REL003", "--format", "json", ".", "../karpenter", "../policies"],
        cwd=tmp_path / "apps",
    )
    found = {f["code"]: f["message"] for f in json.loads(r.output)["findings"]}
    assert "NodePool gpu (karpenter/nodepools.yaml)" in found["GPU001"], found
    assert "DeschedulerPolicy in policies/descheduler.yaml" in found["REL003"], found
    assert "../" not in found["GPU001"] + found["REL003"]


def test_describe_names_kind_namespace_name_and_root_relative_path(tmp_path: Path) -> None:
    from ailint.core.model import K8sObject, SourceFile
    from ailint.domain.context import Context, describe

    f = tmp_path / "k8s" / "x.yaml"
    f.parent.mkdir()
    f.write_text("")
    src = SourceFile(str(f), "k8s/x.yaml", "")
    pdb = K8sObject(src, 0, {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "p"}}, {})
    pool = K8sObject(src, 0, {"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": "gpu"}}, {})
    stray = K8sObject(
        src, 0, {"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": "b", "namespace": "x"}}, {}
    )
    ctx = Context(root=str(tmp_path))
    assert ctx.describe(stray) == "NodePool b (k8s/x.yaml)"  # cluster-scoped: a stray namespace is not shown
    assert ctx.describe(pdb) == "PodDisruptionBudget default/p (k8s/x.yaml)"
    assert ctx.describe(pool) == "NodePool gpu (k8s/x.yaml)"
    assert describe(pool, str(tmp_path / "elsewhere")) == "NodePool gpu (k8s/x.yaml)"  # outside: as the run shows it


# -- the flags users reach for --------------------------------------------------------------
def test_statistics_counts_per_code_with_fixable(pod: Path) -> None:
    r = run(["check", "--no-config", "--statistics", str(DEMO)])
    lines = r.output.strip().splitlines()
    assert r.exit_code == 1
    assert not [x for x in lines if " OBS002 " in x]  # opt-in: not in the default selection
    assert any(" GPU002 " in x and "(1 fixable with --fix)" in x for x in lines)
    assert lines[-1].startswith("25 findings of ")
    doc = json.loads(run(["check", "--no-config", "--statistics", "--format", "json", str(DEMO)]).output)
    assert sum(x["count"] for x in doc) == 25 and {"code", "name", "count", "fixable"} <= set(doc[0])
    opted = run(["check", "--no-config", "--statistics", "--extend-select", "OBS002", str(DEMO)]).output
    row = next(x for x in opted.strip().splitlines() if " OBS002 " in x)
    assert row.split()[0] == "3" and "crash-logs-not-retained" in row


def test_exit_zero(pod: Path) -> None:
    assert run(["check", "--no-config", str(pod)]).exit_code == 1
    assert run(["check", "--no-config", "--exit-zero", str(pod)]).exit_code == 0
    assert run(["check", "--no-config", "--exit-zero", "--select", "NOPE999", str(pod)]).exit_code == 2


def test_quiet_prints_findings_and_nothing_else(pod: Path, tmp_path: Path) -> None:
    r = run(["check", "--no-config", "--select", "GPU002", "-q", str(pod)])
    assert "GPU002" in r.output and "Found 1 finding" not in r.output
    empty = tmp_path / "empty"
    empty.mkdir()
    assert run(["check", "--no-config", "-q", str(empty)]).output == ""


def test_exclude_and_extend_exclude(tmp_path: Path) -> None:
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "pod.yaml").write_text(POD)
    (tmp_path / ".ailint.yaml").write_text("select: [GPU002]\nexclude: [a/]\n")

    def files(*extra: str) -> list[str]:
        r = run(["check", "--format", "json", *extra, "."], cwd=tmp_path)
        return sorted(x["path"] for x in json.loads(r.stdout)["files"])

    assert files() == ["b/pod.yaml"]
    assert files("--exclude", "b/") == ["a/pod.yaml"]  # replaces the config's list
    assert files("--extend-exclude", "b/") == []  # adds to it


def test_show_fixes_prints_the_edit(pod: Path) -> None:
    plain = run(["check", "--no-config", "--select", "GPU002", str(pod)]).output
    shown = run(["check", "--no-config", "--select", "GPU002", "--show-fixes", str(pod)]).output
    assert "      + " not in plain
    assert any(x.startswith("      + ") and "limits:" in x for x in shown.splitlines()), shown


def test_output_format_is_an_alias_of_format(pod: Path) -> None:
    a = json.loads(run(["check", "--no-config", "--output-format", "json", str(pod)]).output)
    b = json.loads(run(["check", "--no-config", "--format", "json", str(pod)]).output)
    assert a == b


def test_explain_shows_the_rule() -> None:
    r = run(["check", "--explain", "GPU002"])
    assert r.exit_code == 0 and "## Why is this bad?" in r.output and r.output == run(["rule", "GPU002"]).output
    assert run(["check", "--explain", "GPU999"]).exit_code == 2


def test_every_flag_is_in_help_readme_and_docs() -> None:
    help_text = run(["check", "--help"]).output
    readme = (ROOT / "README.md").read_text()
    cli_doc = (ROOT / "docs" / "cli.md").read_text()
    for flag in (
        "--statistics",
        "--exit-zero",
        "--quiet",
        "--verbose",
        "--exclude",
        "--extend-exclude",
        "--show-fixes",
        "--output-format",
        "--explain",
    ):
        assert flag in help_text, flag
        assert flag in readme, flag
        assert flag in cli_doc, flag
    assert "html" in help_text
    for text in (readme, cli_doc):
        assert "ailint init" in text and "--format html" in text


def test_progress_line_over_a_terminal_only(tmp_path: Path) -> None:
    """Over a terminal (a real pty) the line shows the elapsed time and the files read and
    checked of all; never without a terminal, under -q or with CI set."""
    import pty
    import re
    import shutil
    import sys

    tree = tmp_path / "tree"
    for i in range(12):
        (tree / f"copy{i}").mkdir(parents=True)
        for f in DEMO.glob("*.yaml"):
            shutil.copy(f, tree / f"copy{i}" / f.name)
    total = len(list(tree.rglob("*.yaml")))

    def stderr_of(env_extra: dict[str, str], tty: bool, *args: str) -> str:
        env = {k: v for k, v in os.environ.items() if k != "CI"} | {"AILINT_PROGRESS_AFTER": "0"} | env_extra
        cmd = [sys.executable, "-m", "ailint", "check", "--no-config", "--no-color", "--no-cache", *args, str(tree)]
        if not tty:
            p = subprocess.run(cmd, env=env, capture_output=True, text=True)
            return p.stderr
        master, slave = pty.openpty()
        p2 = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=slave)
        os.close(slave)
        chunks = []
        while True:
            try:
                data = os.read(master, 4096)
            except OSError:
                break
            if not data:
                break
            chunks.append(data)
        p2.wait()
        os.close(master)
        return b"".join(chunks).decode("utf-8", "replace")

    shown = stderr_of({}, True)
    assert "ailint: linting" in shown
    counts = [(int(a), int(b)) for a, b in re.findall(r"… (\d+)/(\d+) files \d+s", shown)]
    assert counts, shown
    assert {b for _, b in counts} == {total}
    assert all(0 < a <= total for a, _ in counts) and counts == sorted(counts)
    assert shown.endswith("\r\x1b[2K")  # erased before the report
    for env_extra, tty, args in (({}, False, ()), ({"CI": "true"}, True, ()), ({}, True, ("-q",))):
        out = stderr_of(env_extra, tty, *args)
        assert "ailint: linting" not in out and " files " not in out, out


# -- ailint init ----------------------------------------------------------------------------
CLUSTER = """apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: gpu}
spec:
  template:
    spec:
      nodeClassRef: {group: eks.amazonaws.com, kind: NodeClass, name: gpu}
      requirements:
        - {key: eks.amazonaws.com/instance-gpu-manufacturer, operator: In, values: [nvidia]}
      taints:
        - {key: nvidia.com/gpu, value: "true", effect: NoSchedule}
---
apiVersion: eks.amazonaws.com/v1
kind: NodeClass
metadata: {name: gpu}
spec:
  role: node-role
---
apiVersion: v1
kind: ConfigMap
metadata: {name: descheduler, namespace: kube-system}
data:
  policy.yaml: |
    apiVersion: "descheduler/v1alpha2"
    kind: "DeschedulerPolicy"
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: karpenter, namespace: kube-system}
spec:
  selector: {matchLabels: {app: karpenter}}
  template:
    metadata: {labels: {app: karpenter}}
    spec:
      containers:
        - name: controller
          image: public.ecr.aws/karpenter/controller:1.6.3@sha256:0123456789abcdef
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: llm, namespace: ai}
spec:
  selector: {matchLabels: {app: llm}}
  template:
    metadata: {labels: {app: llm}}
    spec:
      containers:
        - name: vllm
          image: vllm/vllm-openai:v0.10.1
"""


def test_init_writes_a_starter_config_from_what_it_sees(tmp_path: Path) -> None:
    import yaml

    (tmp_path / "k8s").mkdir()
    (tmp_path / "k8s" / "cluster.yaml").write_text(CLUSTER)
    r = run(["init", "k8s"], cwd=tmp_path)
    assert r.exit_code == 0, r.output
    text = (tmp_path / ".ailint.yaml").read_text()
    profile = yaml.safe_load(text)["profile"]
    assert profile == {
        "gpuNodeTaints": ["nvidia.com/gpu=true:NoSchedule"],
        "autoMode": True,
        "deschedulerInstalled": True,
        "karpenterVersion": "1.6.3",
        "vllmVersion": "0.10.1",
    }
    from ailint.domain.extract import Profile

    for key in Profile.DEFAULTS:  # every key is there, set or commented
        assert f"  {key}: " in text or f"  # {key}: " in text, key
    assert "extendedResourceToleration: not known from these files" in r.output
    # the file it wrote is a valid config
    assert run(["check", "--format", "json", "k8s"], cwd=tmp_path).exit_code in (0, 1)
    # and it does not overwrite without --force
    assert run(["init", "k8s"], cwd=tmp_path).exit_code == 2
    assert run(["init", "--force", "k8s"], cwd=tmp_path).exit_code == 0
