"""Charts and overlays (issue 14): rendered with the real helm and kubectl, findings mapped
back to the template, values, patch or base line, fixes written to those files."""

from __future__ import annotations

import csv
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from tests_support import local_hook_config

ROOT = Path(__file__).resolve().parent.parent
CHARTS = ROOT / "fixtures" / "charts"
KUSTOMIZE = ROOT / "fixtures" / "kustomize"
SHARED_CHARTS = ROOT.parent / "shared" / "charts"


def ailint(args: list[str], tools, cwd: Path | str = ROOT, check_rc: bool = True) -> subprocess.CompletedProcess[str]:
    r = subprocess.run(
        [sys.executable, "-c", "from ailint.doors.cli import main; main()", *args],
        cwd=cwd,
        env={**tools.path_env(), "NO_COLOR": "1"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    if check_rc:
        assert r.returncode in (0, 1), r.stderr
    return r


def report(args: list[str], tools, cwd: Path | str = ROOT) -> dict:
    r = ailint(["check", "--no-config", "--format", "json", *args], tools, cwd)
    return json.loads(r.stdout)


def line_of(path: Path, line: int) -> str:
    return path.read_text(encoding="utf-8").split("\n")[line - 1]


# -- a small chart ---------------------------------------------------------------------------
def test_chart_findings_name_template_and_values_lines(render_tools):
    doc = report([str(CHARTS / "gpu-serve"), "--extend-select", "OBS002"], render_tools)  # OBS002 is opt-in
    codes = {f["code"] for f in doc["findings"]}
    assert "YML002" not in codes
    assert doc["files"] == [{"path": "fixtures/charts/gpu-serve", "documents": 2, "objects": 2}]
    by = {f["code"]: f for f in doc["findings"]}
    # an image put together from two values keys: the template line, both keys related
    srv = by["SRV002"]
    assert srv["file"] == "fixtures/charts/gpu-serve/templates/deployment.yaml"
    assert line_of(ROOT / srv["file"], srv["line"]).strip().startswith("image:")
    rel = [(r["file"], line_of(ROOT / r["file"], r["line"]).strip()) for r in srv["related"]]
    assert rel == [
        ("fixtures/charts/gpu-serve/values.yaml", "repository: vllm/vllm-openai"),
        ("fixtures/charts/gpu-serve/values.yaml", "tag: latest   # floating on purpose: SRV002 points here"),
    ]
    # a value printed straight from values: related line holds that key
    obs = by["OBS001"]
    assert "value: {{ .Values.ncclDebug | quote }}" in line_of(ROOT / obs["file"], obs["line"])
    assert line_of(ROOT / obs["related"][0]["file"], obs["related"][0]["line"]) == "ncclDebug: INFO"
    # a block filled by toYaml: the key's template line, the values block related
    gpu = by["GPU003"]
    assert line_of(ROOT / gpu["file"], gpu["line"]).strip() == "resources:"
    assert line_of(ROOT / gpu["related"][0]["file"], gpu["related"][0]["line"]) == "resources:"
    # plain template lines
    sto = by["STO007"]
    assert line_of(ROOT / sto["file"], sto["line"]).strip() == "emptyDir:"
    assert line_of(ROOT / by["OBS002"]["file"], by["OBS002"]["line"]).strip() == "- name: vllm"


def test_suppression_comment_in_a_template_covers_the_mapped_line(render_tools):
    doc = report([str(CHARTS / "gpu-serve")], render_tools)
    assert "STO008" not in {f["code"] for f in doc["findings"]}
    assert "AIL001" not in {f["code"] for f in doc["findings"]}
    out = ailint(["check", "--no-config", "--no-color", str(CHARTS / "gpu-serve")], render_tools).stdout
    assert "1 suppressed" in out


def test_text_sarif_and_github_carry_the_source_location(render_tools):
    chart = str(CHARTS / "gpu-serve")
    text = ailint(["check", "--no-config", "--no-color", chart], render_tools).stdout
    assert "fixtures/charts/gpu-serve/templates/deployment.yaml:23:11: SRV002" in text
    assert "    related: fixtures/charts/gpu-serve/values.yaml:4:3: values key `image.tag`" in text
    sarif = json.loads(ailint(["check", "--no-config", "--format", "sarif", chart], render_tools).stdout)
    res = next(r for r in sarif["runs"][0]["results"] if r["ruleId"] == "SRV002")
    loc = res["locations"][0]["physicalLocation"]
    assert loc["artifactLocation"]["uri"].endswith("fixtures/charts/gpu-serve/templates/deployment.yaml")
    assert loc["region"]["startLine"] == 23
    related = res["relatedLocations"]
    assert [r["physicalLocation"]["region"]["startLine"] for r in related] == [3, 4]
    assert all(r["physicalLocation"]["artifactLocation"]["uri"].endswith("gpu-serve/values.yaml") for r in related)
    gh = ailint(["check", "--no-config", "--format", "github", chart], render_tools).stdout
    line = next(ln for ln in gh.splitlines() if "SRV002" in ln)
    assert "file=fixtures/charts/gpu-serve/templates/deployment.yaml,line=23," in line
    assert "values.yaml%3A4" not in line.split("::", 2)[1]  # properties stay the primary location
    assert "fixtures/charts/gpu-serve/values.yaml:4" in line


def test_fix_writes_only_values_and_plain_template_lines(render_tools, tmp_path):
    chart = tmp_path / "gpu-serve"
    shutil.copytree(CHARTS / "gpu-serve", chart)
    before = {p.relative_to(chart): p.read_text() for p in chart.rglob("*") if p.is_file()}
    ailint(["check", "--no-config", "--fix", "--extend-select", "OBS002", str(chart)], render_tools)  # OBS002: opt-in
    after = {p.relative_to(chart): p.read_text() for p in chart.rglob("*") if p.is_file()}
    changed = {p for p in before if before[p] != after[p]}
    assert changed == {Path("values.yaml"), Path("templates/deployment.yaml")}
    assert "ncclDebug: WARN" in after[Path("values.yaml")]
    for p in changed:  # every comment kept
        assert [c for c in before[p].split("\n") if "#" in c and c.strip().startswith("#")] == [
            c for c in after[p].split("\n") if "#" in c and c.strip().startswith("#")
        ]
        old_lines = before[p].split("\n")
        new_lines = after[p].split("\n")
        added = [ln for ln in new_lines if ln not in old_lines]
        assert all("{{" not in ln for ln in added)  # nothing written into a directive
    assert "terminationMessagePolicy: FallbackToLogsOnError" in after[Path("templates/deployment.yaml")]
    # the chart still renders, and a second run changes nothing
    doc = report([str(chart), "--extend-select", "OBS002"], render_tools, cwd=tmp_path)
    assert not {"OBS001", "OBS002", "STO007"} & {f["code"] for f in doc["findings"]}
    ailint(["check", "--no-config", "--fix", "--extend-select", "OBS002", str(chart)], render_tools)
    assert {p.relative_to(chart): p.read_text() for p in chart.rglob("*") if p.is_file()} == after


def test_a_staged_file_stands_for_its_chart_and_a_walk_does_not_lint_templates_raw(render_tools):
    one = report([str(CHARTS / "gpu-serve" / "values.yaml")], render_tools)
    assert "SRV002" in {f["code"] for f in one["findings"]}
    walked = report([str(CHARTS)], render_tools)
    assert "YML002" not in {f["code"] for f in walked["findings"]}
    shown = {f["path"] for f in walked["files"]}
    assert {"fixtures/charts/gpu-serve", "fixtures/charts/broken/Chart.yaml"} <= shown  # failed: its Chart.yaml


# -- overlays ----------------------------------------------------------------------------------
def test_overlay_findings_name_patch_base_and_kustomization_lines(render_tools):
    doc = report([str(KUSTOMIZE / "gpu-job" / "overlays" / "prod")], render_tools)
    by = {f["code"]: f for f in doc["findings"]}
    assert by["GPU003"]["file"] == "fixtures/kustomize/gpu-job/overlays/prod/gpu-patch.yaml"
    assert line_of(ROOT / by["GPU003"]["file"], by["GPU003"]["line"]).strip() == "resources:"
    assert by["OBS001"]["file"] == "fixtures/kustomize/gpu-job/base/job.yaml"
    assert line_of(ROOT / by["OBS001"]["file"], by["OBS001"]["line"]).strip() == "value: INFO"
    assert by["SRV002"]["file"] == "fixtures/kustomize/gpu-job/overlays/prod/kustomization.yaml"
    assert line_of(ROOT / by["SRV002"]["file"], by["SRV002"]["line"]).strip() == "newTag: latest"
    # the base and the patch were not linted raw as objects of their own
    assert [f["path"] for f in doc["files"]] == ["fixtures/kustomize/gpu-job/overlays/prod"]
    assert all(f["object"] is None or f["object"]["namespace"] == "ml" for f in doc["findings"])


def test_overlay_fix_edits_the_base_file(render_tools, tmp_path):
    shutil.copytree(KUSTOMIZE / "gpu-job", tmp_path / "gpu-job")
    ailint(["check", "--no-config", "--fix", str(tmp_path / "gpu-job" / "overlays" / "prod")], render_tools)
    base = (tmp_path / "gpu-job" / "base" / "job.yaml").read_text()
    assert "value: WARN" in base and base.startswith("# A training Job")
    assert (tmp_path / "gpu-job" / "overlays" / "prod" / "gpu-patch.yaml").read_text() == (
        KUSTOMIZE / "gpu-job" / "overlays" / "prod" / "gpu-patch.yaml"
    ).read_text()


# -- bad input: one finding each, the run goes on ---------------------------------------------
def test_bad_charts_and_overlays_are_one_finding_each(render_tools):
    doc = report(
        [str(CHARTS / "broken"), str(CHARTS / "needs-dep"), str(KUSTOMIZE / "remote"), str(CHARTS / "gpu-serve")],
        render_tools,
    )
    by = {}
    for f in doc["findings"]:
        by.setdefault(f["code"], []).append(f)
    (bad,) = by["YML020"]
    assert bad["file"] == "fixtures/charts/broken/Chart.yaml"
    assert "parse error at (broken/templates/cm.yaml:5)" in bad["message"]  # helm's own words
    assert bad["related"][0]["file"] == "fixtures/charts/broken/templates/cm.yaml"
    (dep,) = by["YML024"]
    assert (dep["file"], dep["line"]) == ("fixtures/charts/needs-dep/Chart.yaml", 5)
    (remote,) = by["YML023"]
    assert (remote["file"], remote["line"]) == ("fixtures/kustomize/remote/kustomization.yaml", 2)
    assert "SRV002" in by  # the good chart was linted all the same


def test_a_failed_overlay_build_says_the_same_thing_every_run(render_tools, tmp_path):
    """kubectl logs a failed build through klog (`E1201 22:30:46.696351  4290 run.go:72]
    "command failed" err="..."`): the finding keeps the error, without the time and the
    process id that made every run's report differ, and names the overlay, not the path
    from ailint's own wrapper folder to it."""
    shutil.copytree(KUSTOMIZE / "gpu-job", tmp_path / "gpu-job")
    (tmp_path / "gpu-job" / "base" / "job.yaml").unlink()
    runs = [report(["--no-cache", str(tmp_path / "gpu-job" / "base")], render_tools) for _ in range(2)]
    assert runs[0] == runs[1]
    (bad,) = [f for f in runs[0]["findings"] if f["code"] == "YML020"]
    message = bad["message"]
    assert message.startswith("kustomize build failed: ")
    assert "job.yaml" in message and "no such file or directory" in message
    assert "run.go" not in message and "command failed" not in message and "../" not in message


def test_missing_helm_timeout_and_output_limit(render_tools, tmp_path):
    doc = report(["--helm", str(tmp_path / "no-helm"), str(CHARTS / "gpu-serve")], render_tools)
    assert [f["code"] for f in doc["findings"]] == ["YML021"]
    for key, value in (("timeout", 0.001), ("max-output-size", 100)):
        cfg = tmp_path / f"{key}.yaml"
        cfg.write_text(f"render:\n  {key}: {value}\n")
        r = ailint(["check", "--config", str(cfg), "--format", "json", str(CHARTS / "gpu-serve")], render_tools)
        got = json.loads(r.stdout)["findings"]
        assert [f["code"] for f in got] == ["YML022"], got
        assert got[0]["file"].endswith("gpu-serve/Chart.yaml")


def test_config_renders_a_chart_with_several_value_sets(render_tools, tmp_path):
    chart = tmp_path / "gpu-serve"
    shutil.copytree(CHARTS / "gpu-serve", chart)
    (chart / "pinned.yaml").write_text("image:\n  tag: v0.9.2\n  pullPolicy: IfNotPresent\n")
    (tmp_path / ".ailint.yaml").write_text(
        "charts:\n"
        "  - {path: gpu-serve, name: default}\n"
        "  - {path: gpu-serve, name: pinned, values: [gpu-serve/pinned.yaml]}\n"
    )
    r = ailint(["check", "--format", "json", "gpu-serve"], render_tools, cwd=tmp_path)
    doc = json.loads(r.stdout)
    assert sorted(f["path"] for f in doc["files"]) == ["gpu-serve [default]", "gpu-serve [pinned]"]
    srv = [f for f in doc["findings"] if f["code"] == "SRV002"]
    assert len(srv) == 1  # only the default value set floats


# -- the shared charts and overlays ----------------------------------------------------------
def _shared_items() -> list[tuple[str, list[str], list[str]]]:
    if not (SHARED_CHARTS / "SOURCES.tsv").is_file():
        return []
    out = []
    with open(SHARED_CHARTS / "SOURCES.tsv", encoding="utf-8") as fh:
        for row in csv.DictReader(fh, delimiter="\t"):
            cmd = row["render_command"].split()
            if cmd[0] == "helm":
                values = [cmd[i + 1] for i, x in enumerate(cmd) if x == "-f"]
                apis = [cmd[i + 1] for i, x in enumerate(cmd) if x == "--api-versions"]
                out.append((row["folder"], values, apis))
            else:
                out.append((cmd[2], [], []))
    return out


SHARED = _shared_items()


def _holds_key(f: dict, base: Path) -> bool:
    """The named line holds a key of the finding's path (or the list item), or it is the
    directive that prints the values key named as related location."""
    text = line_of(base / f["file"], f["line"])
    keys = [k for k in f["path"].split("/")[1:] if not k.isdigit()] if f["path"] else []
    keys = [k.replace("~1", "/").replace("~0", "~") for k in keys]
    if any(re.search(rf"(^|[\s\-\"']){re.escape(k)}[\"']?:", text) for k in keys):
        return True
    if "image" in keys and re.match(r"\s*-?\s*(newTag|newName|digest):", text):
        return True  # a kustomization `images:` entry rewrote it
    if text.lstrip().startswith("- "):
        return True  # a list item (container, volume, argument) the finding is about
    for r in f["related"]:
        rt = line_of(base / r["file"], r["line"])
        if "{{" in text and any(re.search(rf"(^|\s){re.escape(k)}:", rt) for k in keys):
            return True
        if "{{" in text and rt.lstrip().startswith("- "):
            return True  # the directive prints a values list item (an argument) the finding is about
    return False


@pytest.mark.skipif(not SHARED, reason="../shared/charts is absent")
@pytest.mark.parametrize("item", [s[0] for s in SHARED], ids=[s[0].split("__")[-1] for s in SHARED])
def test_shared_chart_or_overlay(render_tools, item, tmp_path):
    folder, values, apis = next(s for s in SHARED if s[0] == item)
    cfg = tmp_path / ".ailint.yaml"
    if values or apis:
        cfg.write_text(
            "charts:\n"
            f"  - path: {SHARED_CHARTS / folder}\n"
            f"    values: {json.dumps([str(SHARED_CHARTS / v) for v in values])}\n"
            f"    api-versions: {json.dumps(apis)}\n"
        )
    else:
        cfg.write_text("{}\n")
    r = ailint(["check", "--config", str(cfg), "--format", "json", folder], render_tools, cwd=SHARED_CHARTS)
    doc = json.loads(r.stdout)
    codes = [f["code"] for f in doc["findings"]]
    assert not [c for c in codes if c.startswith("YML02") or c == "YML002"], doc["findings"][:3]
    assert sum(f["objects"] for f in doc["files"]) > 0
    for f in doc["findings"]:
        path = SHARED_CHARTS / f["file"]
        assert path.is_file(), f["file"]
        assert not f["file"].endswith("(rendered)")
        if f["line"] == 1 and f["message"].endswith("]"):
            continue  # no line found: the file, with a note (never a wrong line)
        assert _holds_key(f, SHARED_CHARTS), (f["code"], f["file"], f["line"], f["path"], f["message"])


@pytest.mark.skipif(shutil.which("git") is None, reason="git needed")
def test_pre_commit_lints_the_chart_a_staged_values_file_belongs_to(render_tools, tmp_path):
    pre_commit = shutil.which("pre-commit") or str(Path(sys.executable).parent / "pre-commit")
    if not Path(pre_commit).exists():
        pytest.skip("pre-commit is not installed")
    repo = tmp_path / "repo"
    shutil.copytree(CHARTS / "gpu-serve", repo / "charts" / "gpu-serve")
    git = ["git", "-c", "user.email=t@example.com", "-c", "user.name=t", "-c", "init.defaultBranch=main"]
    subprocess.run([*git, "init", "-q"], cwd=repo, check=True)
    subprocess.run([*git, "add", "."], cwd=repo, check=True)
    env = {**render_tools.path_env(), "PRE_COMMIT_HOME": str(ROOT / ".pre-commit-cache"), "NO_COLOR": "1"}
    config = local_hook_config(tmp_path, ROOT)  # the hook as defined, on one staged values file
    r = subprocess.run(
        [pre_commit, "run", "--config", str(config), "ailint", "--files", "charts/gpu-serve/values.yaml"],
        cwd=repo,
        capture_output=True,
        text=True,
        env=env,
        timeout=900,
    )
    assert r.returncode == 1, r.stdout + r.stderr
    assert "charts/gpu-serve/templates/deployment.yaml:23:11: SRV002" in r.stdout
    assert "YML002" not in r.stdout


def test_action_paths_name_a_chart_and_an_overlay(render_tools, tmp_path):
    env = {
        **render_tools.path_env(),
        "AILINT_PATHS": "fixtures/charts/gpu-serve fixtures/kustomize/gpu-job/overlays/prod",
        "AILINT_SARIF_FILE": str(tmp_path / "a.sarif"),
        "GITHUB_OUTPUT": str(tmp_path / "out"),
        "GITHUB_STEP_SUMMARY": str(tmp_path / "summary.md"),
        "AILINT_NEW_FINDINGS_ONLY": "false",
    }
    r = subprocess.run(
        [sys.executable, "-m", "ailint.doors.github_action"], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert "file=fixtures/charts/gpu-serve/templates/deployment.yaml,line=23," in r.stdout, r.stdout + r.stderr
    assert "file=fixtures/kustomize/gpu-job/overlays/prod/gpu-patch.yaml," in r.stdout
    results = json.loads((tmp_path / "a.sarif").read_text())["runs"][0]["results"]
    assert any(res.get("relatedLocations") for res in results)


def test_an_unused_suppression_in_a_template_is_reported_there(render_tools, tmp_path):
    chart = tmp_path / "gpu-serve"
    shutil.copytree(CHARTS / "gpu-serve", chart)
    svc = chart / "templates" / "service.yaml"
    svc.write_text(svc.read_text().replace("\nspec:\n", "\nspec:  # ailint: ignore[GPU001] no taints here\n"))
    doc = report([str(chart)], render_tools, cwd=tmp_path)
    (ail,) = [f for f in doc["findings"] if f["code"] == "AIL001"]
    assert (ail["file"], ail["line"], ail["column"]) == ("gpu-serve/templates/service.yaml", 5, 8)


@pytest.mark.skipif(not SHARED, reason="../shared/charts is absent")
@pytest.mark.parametrize(
    "item", [s[0] for s in SHARED if "/" not in s[0]], ids=[s[0].split("__")[-1] for s in SHARED if "/" not in s[0]]
)
def test_fix_on_a_copy_of_a_shared_chart(render_tools, item, tmp_path):
    folder, values, apis = next(s for s in SHARED if s[0] == item)
    chart = tmp_path / "c"
    shutil.copytree(SHARED_CHARTS / folder, chart)
    for p in [chart, *chart.rglob("*")]:
        p.chmod(p.stat().st_mode | 0o200)
    vals = [str(chart / Path(v).relative_to(folder)) for v in values]
    (tmp_path / ".ailint.yaml").write_text(
        f"charts:\n  - path: c\n    values: {json.dumps(vals)}\n    api-versions: {json.dumps(apis)}\n"
    )
    before = {p.relative_to(chart): p.read_text(errors="replace") for p in chart.rglob("*") if p.is_file()}
    ailint(["check", "--fix", "--unsafe-fixes", "c"], render_tools, cwd=tmp_path)
    after = {p.relative_to(chart): p.read_text(errors="replace") for p in chart.rglob("*") if p.is_file()}
    for p in (p for p in before if before[p] != after[p]):
        old, new = before[p].split("\n"), after[p].split("\n")
        assert [c for c in old if c.strip().startswith("#")] == [c for c in new if c.strip().startswith("#")], p
        if p.name.startswith("values") or p.name.endswith("values.yaml"):
            continue
        assert p.parts[0] == "templates", p
        assert [ln for ln in old if ln not in new] == [], p  # template lines are only added
        assert all("{{" not in ln for ln in new if ln not in old), p
    doc = json.loads(ailint(["check", "--format", "json", "c"], render_tools, cwd=tmp_path).stdout)
    assert not [f for f in doc["findings"] if f["code"].startswith("YML02")]  # still renders
    ailint(["check", "--fix", "--unsafe-fixes", "c"], render_tools, cwd=tmp_path)
    assert {p.relative_to(chart): p.read_text(errors="replace") for p in chart.rglob("*") if p.is_file()} == after


@pytest.mark.skipif(not SHARED, reason="../shared/charts is absent")
@pytest.mark.parametrize(
    "item", [s[0] for s in SHARED if "/" not in s[0]], ids=[s[0].split("__")[-1] for s in SHARED if "/" not in s[0]]
)
def test_every_key_of_every_rendered_object_maps_to_a_line_holding_it(render_tools, item, monkeypatch):
    """Not only the keys findings happen to name: every key path of every object the chart
    renders is mapped; the line named holds that key, or is the directive that prints it
    (then a related values line holds the key); never another line."""
    from ailint.engine.config import load_settings
    from ailint.engine.render import sourcemap
    from ailint.engine.run import lint

    folder, values, apis = next(s for s in SHARED if s[0] == item)
    monkeypatch.setenv("PATH", render_tools.path_env()["PATH"])
    monkeypatch.chdir(SHARED_CHARTS)
    settings = load_settings(None, True)
    settings.render = {"charts": [{"path": folder, "values": values, "api-versions": apis}]}
    plan = lint([folder], settings).render
    (rendered,) = plan.rendered.values()
    cm = sourcemap.ChartMap(rendered.unit.root, "", list(rendered.unit.values))
    found = 0
    for obj in next(iter(plan.objects.values())):
        for path in obj.positions:
            if not path or not isinstance(path[-1], str):
                continue
            loc = sourcemap.locate_chart(cm, obj.template, obj.kind, obj.data, obj.positions, path)
            if loc is None or (loc.line == 1 and loc.note):
                continue  # reported at line 1 with a note
            found += 1
            key = re.escape(path[-1])
            text = Path(loc.file).read_text().split("\n")[loc.line - 1]
            if re.search(rf"(^|[\s\-\"']){key}[\"']?:", text):
                continue
            assert "{{" in text, (obj.template, path, loc.line, text)
            for r in loc.related:
                rt = Path(r.file).read_text().split("\n")[r.line - 1]
                assert re.search(rf"(^|[\s\-\"']){key}[\"']?:", rt), (path, r, rt)
    assert found > 0
