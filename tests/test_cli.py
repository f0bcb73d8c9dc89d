"""The command-line contract (spec/cli.md): exit codes, stdin, formats, config errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from ailint.doors.cli import cli
from click.testing import CliRunner

BAD = """apiVersion: v1
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
GOOD = BAD.replace("requests:", "limits:")


def run(args, input=None, cwd=None):
    runner = CliRunner()
    old = os.getcwd()
    try:
        if cwd:
            os.chdir(cwd)
        return runner.invoke(cli, args, input=input, catch_exceptions=False)
    finally:
        os.chdir(old)


@pytest.fixture
def bad(tmp_path):
    p = tmp_path / "bad.yaml"
    p.write_text(BAD)
    return p


def test_exit_codes(tmp_path, bad):
    good = tmp_path / "good.yaml"
    good.write_text(GOOD)
    assert run(["check", "--no-config", "--select", "GPU002", str(good)]).exit_code == 0
    assert run(["check", "--no-config", "--select", "GPU002", str(bad)]).exit_code == 1
    assert run(["check", "--no-config", "--select", "GPU002", "--fail-on", "never", str(bad)]).exit_code == 0
    assert run(["check", "--no-config", "--select", "NOPE999", str(bad)]).exit_code == 2


def test_stdin_with_filename():
    r = run(
        ["check", "--no-config", "--select", "GPU002", "--format", "json", "--stdin-filename", "k8s/pod.yaml", "-"],
        input=BAD,
    )
    doc = json.loads(r.output)
    assert doc["files"] == [{"path": "k8s/pod.yaml", "documents": 1, "objects": 1}]
    (f,) = doc["findings"]
    assert (f["file"], f["line"], f["column"]) == ("k8s/pod.yaml", 11, 11)
    assert f["path"] == "/spec/containers/0/resources/requests/nvidia.com~1gpu"
    assert f["object"] == {"apiVersion": "v1", "kind": "Pod", "namespace": None, "name": "p", "document": 0}
    assert f["fix"]["applicability"] == "safe" and f["fix"]["edits"][0]["line"] == 12


def test_json_report_matches_schema(bad):
    import jsonschema
    from tests_support import report_schema

    r = run(["check", "--no-config", "--format", "json", str(bad)])
    jsonschema.validate(json.loads(r.output), report_schema())


def test_text_output_has_caret_why_and_summary(bad):
    r = run(["check", "--no-config", "--select", "GPU002", str(bad)])
    out = r.output
    assert "bad.yaml:11:11: GPU002 [error]" in out
    assert "^^^" in out and "why:" in out and "fix: copy the request into limits" in out
    assert "Found 1 finding (1 error)" in out


def test_github_format_and_escaping(tmp_path):
    p = tmp_path / "a,b:c.yaml"
    p.write_text(BAD)
    r = run(["check", "--no-config", "--select", "GPU002", "--format", "github", str(p)])
    line = r.output.strip()
    assert line.startswith("::error file=") and "a%2Cb%3Ac.yaml" in line and ",line=11,col=11," in line


def test_github_is_default_under_actions(bad, monkeypatch):
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    r = run(["check", "--no-config", "--select", "GPU002", str(bad)])
    assert r.output.startswith("::error ")


def test_output_file(tmp_path, bad):
    out = tmp_path / "report.json"
    r = run(["check", "--no-config", "--format", "json", "-o", str(out), str(bad)])
    assert r.output == "" and json.loads(out.read_text())["summary"]["findings"] >= 1


def test_config_errors_name_the_key(tmp_path, bad):
    (tmp_path / ".ailint.yaml").write_text("selct: [GPU]\n")
    r = CliRunner().invoke(cli, ["check", "--config", str(tmp_path / ".ailint.yaml"), str(bad)])
    assert r.exit_code == 2 and "selct" in r.output
    (tmp_path / ".ailint.yaml").write_text("rules:\n  GPU002: {severty: info}\n")
    r = CliRunner().invoke(cli, ["check", "--config", str(tmp_path / ".ailint.yaml"), str(bad)])
    assert r.exit_code == 2 and "severty" in r.output
    (tmp_path / ".ailint.yaml").write_text("fail-on: sometimes\n")
    r = CliRunner().invoke(cli, ["check", "--config", str(tmp_path / ".ailint.yaml"), str(bad)])
    assert r.exit_code == 2 and "fail-on" in r.output


def test_config_is_discovered_and_applied(tmp_path, bad):
    (tmp_path / ".ailint.yaml").write_text("select: [GPU002]\nrules:\n  gpu-request-without-limit: {severity: info}\n")
    r = run(["check", "--format", "json", str(bad)], cwd=tmp_path)
    doc = json.loads(r.output)
    assert r.exit_code == 0  # info is below the default fail-on
    assert [f["severity"] for f in doc["findings"]] == ["info"]


def test_pyproject_config(tmp_path, bad):
    (tmp_path / "pyproject.toml").write_text('[tool.ailint]\nignore = ["GPU002"]\n')
    r = run(["check", "--format", "json", str(bad)], cwd=tmp_path)
    assert not [f for f in json.loads(r.output)["findings"] if f["code"] == "GPU002"]


def test_set_profile_and_errors(bad):
    assert run(["check", "--no-config", "--set", "nope=1", str(bad)]).exit_code == 2
    assert run(["check", "--no-config", "--select", "GPU002", "--set", "autoMode=true", str(bad)]).exit_code == 1


def test_suppressions_comment_annotation_unused(tmp_path):
    p = tmp_path / "s.yaml"
    p.write_text(
        BAD.replace("nvidia.com/gpu: 1", "nvidia.com/gpu: 1  # ailint: ignore[GPU002] reviewed")
        + "---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: q\n  annotations:\n"
        '    ailint.io/ignore: "GPU002: reviewed"\nspec:\n  containers:\n    - name: c\n      image: x:1\n'
        "      resources:\n        requests: {nvidia.com/gpu: 1}\n"
        "---\n# ailint: ignore[GPU002]\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n"
        "# ailint: ignore[GPU9999]\n"
    )
    r = run(["check", "--no-config", "--select", "GPU002,AIL", "--format", "json", str(p)])
    found = [(f["code"], f["line"]) for f in json.loads(r.output)["findings"]]
    assert ("GPU002", 11) not in found
    assert not [c for c, _ in found if c == "GPU002"]
    assert ("AIL001", 26) in found and ("AIL002", 30) in found


def test_per_file_ignores(tmp_path, bad):
    (tmp_path / ".ailint.yaml").write_text('per-file-ignores:\n  "*.yaml": [GPU]\n')
    r = run(["check", "--format", "json", "bad.yaml"], cwd=tmp_path)
    assert not [f for f in json.loads(r.output)["findings"] if f["code"].startswith("GPU")]


def test_baseline_roundtrip(tmp_path, bad):
    base = tmp_path / "base.json"
    r = run(["check", "--no-config", "--write-baseline", str(base), str(bad)])
    assert r.exit_code == 0 and base.exists()  # writing the baseline accepts the findings
    r = run(["check", "--no-config", "--baseline", str(base), str(bad)])
    assert r.exit_code == 0


def test_rules_listing_and_rule_doc():
    r = run(["rules", "--format", "json"])
    rows = json.loads(r.output)
    assert {"code", "name", "family", "severity", "fix", "summary"} <= set(rows[0])
    assert any(x["code"] == "GPU002" and x["fix"] == "sometimes" for x in rows)
    r = run(["rule", "gpu-request-without-limit"])
    assert "## Why is this bad?" in r.output and "GPU002" in r.output
    assert run(["rule", "XYZ123"]).exit_code == 2


def test_internal_error_is_one_line(monkeypatch, bad):
    import ailint.engine.run as run_mod

    def boom(*a, **k):
        raise RuntimeError("kaput")

    monkeypatch.setattr(run_mod, "lint", boom)
    r = CliRunner().invoke(cli, ["check", "--no-config", str(bad)])
    assert r.exit_code == 2 and "internal error: RuntimeError: kaput" in r.output and "Traceback" not in r.output


def test_python_dash_m_and_version():
    out = subprocess.run([sys.executable, "-m", "ailint", "--version"], capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.startswith("ailint ")


def test_jobs_give_identical_results(tmp_path):
    for i in range(6):
        (tmp_path / f"f{i}.yaml").write_text(BAD.replace("name: p", f"name: p{i}"))
    a = run(["check", "--no-config", "--format", "json", "--jobs", "1", str(tmp_path)])
    b = run(["check", "--no-config", "--format", "json", "--jobs", "2", str(tmp_path)])
    assert json.loads(a.output) == json.loads(b.output)


def test_diff_stdout_is_only_the_patch(tmp_path, bad):
    runner = CliRunner()
    r = runner.invoke(cli, ["check", "--no-config", "--select", "GPU002", "--diff", "--format", "json", str(bad)])
    out = r.stdout
    assert out.startswith("--- ") and "+++ " in out and "+          nvidia.com/gpu: 1" in out
    assert '"findings"' not in out  # the report went to stderr
    assert bad.read_text() == BAD  # nothing written


def _ailint(*args, **kw):
    """The real entry point in a process of its own: `main()` leaves through `os._exit`."""
    return subprocess.run([sys.executable, "-m", "ailint", *args], capture_output=True, text=True, timeout=120, **kw)


def test_entry_point_exit_codes_and_output(tmp_path, bad):
    clean = tmp_path / "clean.yaml"
    clean.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  a: b\n")
    found = _ailint("check", "--no-config", "--format", "json", str(bad))
    assert found.returncode == 1 and json.loads(found.stdout)["findings"], found.stderr
    assert _ailint("check", "--no-config", str(clean)).returncode == 0
    usage = _ailint("check", "--no-such-option")
    assert usage.returncode == 2 and "No such option" in usage.stderr
    out = tmp_path / "report.sarif"
    written = _ailint("check", "--no-config", "--format", "sarif", "-o", str(out), str(bad))
    assert written.returncode == 1 and json.loads(out.read_text())["version"] == "2.1.0"  # flushed and closed


def test_a_reader_that_leaves_early_gets_no_traceback(tmp_path):
    many = tmp_path / "many.yaml"  # a report far larger than a pipe's buffer
    many.write_text("---\n".join(BAD.replace("name: p", f"name: p{i}") for i in range(400)))
    proc = subprocess.Popen(
        [sys.executable, "-m", "ailint", "check", "--no-config", "--format", "json", str(many)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    proc.stdout.read(1)
    proc.stdout.close()  # `ailint check ... | head -c 1`
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 1
    assert "Traceback" not in err and "Exception ignored" not in err, err


def test_json_report_is_written_in_pieces_with_one_row_a_line(tmp_path, monkeypatch):
    """The JSON report is encoded and written a batch of rows at a time: with more findings
    than one batch, it is still one document, each file and finding on a line of its own."""
    from ailint.report import json as rep

    monkeypatch.setattr(rep, "_BATCH", 3)
    many = "\n---\n".join(BAD.replace("name: p", f"name: p{i}") for i in range(8))
    (tmp_path / "many.yaml").write_text(many)
    r = run(["check", "--no-config", "--select", "GPU002", "--format", "json", str(tmp_path / "many.yaml")])
    doc = json.loads(r.output)
    assert len(doc["findings"]) == 8
    rows = [ln for ln in r.output.splitlines() if ln.startswith('    {"code": ')]
    assert [json.loads(ln.rstrip(","))["object"]["name"] for ln in rows] == [f"p{i}" for i in range(8)]
    assert r.output == rep.dumps({**doc, "findings": doc["findings"]})  # the whole-string form agrees


def test_report_failing_midway_leaves_the_output_file_as_it_was(tmp_path, monkeypatch, bad):
    from ailint.report import json as rep

    out = tmp_path / "report.json"
    out.write_text("the previous report\n")

    def broken(*args):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(rep, "finding_dict", broken)
    r = CliRunner().invoke(cli, ["check", "--no-config", "--format", "json", "-o", str(out), str(bad)])
    assert r.exit_code == 2 and "cannot write" in r.output
    assert out.read_text() == "the previous report\n"
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".ailint-")] == []


def test_an_in_process_check_leaves_the_cyclic_collector_on(bad):
    """Only the `ailint check` process turns the collector off (it exits at its end); a
    program that calls the command in-process keeps it."""
    import gc

    assert gc.isenabled()
    run(["check", "--no-config", str(bad)])
    assert gc.isenabled()


def test_a_check_that_ends_its_process_keeps_the_run_objects_until_then(monkeypatch, tmp_path):
    """A console run (`cli.main`, the lean path) ends with `os._exit`: its objects are held
    for it (`run.hold_until_exit`), the last run's only; any other caller's are freed."""
    from ailint.doors import cli as cli_module
    from ailint.engine import run as run_module

    first = tmp_path / "a.yaml"
    first.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n", encoding="utf-8")
    second = tmp_path / "b.yaml"
    second.write_text("apiVersion: v1\nkind: Service\nmetadata:\n  name: b\n", encoding="utf-8")
    monkeypatch.setattr(run_module, "_held", None)
    monkeypatch.setattr(cli_module, "_ends_with_exit", False)
    args = ["check", "--no-config", "--no-cache", "--format", "json"]
    assert CliRunner().invoke(cli, [*args, str(first)]).exit_code == 0
    assert run_module._held is None, "an in-process caller lints on: nothing is held"
    monkeypatch.setattr(cli_module, "_ends_with_exit", True)
    assert CliRunner().invoke(cli, [*args, str(first)]).exit_code == 0
    held = run_module._held
    assert held and [o.name for fr in held[0] for o in fr.objects] == ["a"]
    assert CliRunner().invoke(cli, [*args, str(second)]).exit_code == 0
    assert [o.name for fr in run_module._held[0] for o in fr.objects] == ["b"], "the last run's only"
    monkeypatch.setattr(run_module, "_held", None)
    fixing = CliRunner().invoke(cli, ["check", "--no-config", "--fix", "--format", "json", str(first)])
    assert fixing.exit_code == 0 and run_module._held is None, "a fix runs twice: nothing is held beside it"
    monkeypatch.setenv("AILINT_BOUNDED", "1")
    assert CliRunner().invoke(cli, [*args, str(first)]).exit_code == 0
    assert not run_module._held, "a run with bounded memory frees what it can"
