"""`ailint check --fix / --unsafe-fixes / --diff` end to end, the fixer's safety checks,
atomic writes, and properties of `--fix` over generated documents and corpus files:
every comment line survives, unchanged lines stay byte-identical, the YAML still parses,
and the fixed findings are gone.
"""

from __future__ import annotations

import dataclasses
import difflib
import os
import pathlib
import random
import signal
import subprocess
import sys
import textwrap
import time

import ailint.fix.apply as fixmod
import pytest
from ailint.core.model import Applicability, Edit, Fix
from ailint.doors.cli import cli
from ailint.engine.config import Settings
from ailint.engine.run import lint
from ailint.fix import edits
from ailint.fix.apply import _documents, run_fixes
from click.testing import CliRunner
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from test_edits import CORPUS, SCALE, Emitter, comment_lines, objs

ROOT = pathlib.Path(__file__).resolve().parent.parent
PY = sys.executable


def run(args, input=None):
    return CliRunner().invoke(cli, ["check", "--no-config", "--no-schema", *args], input=input, catch_exceptions=False)


def write(tmp_path, name, text, newline=""):
    p = tmp_path / name
    with open(p, "w", encoding="utf-8", newline=newline) as fh:
        fh.write(text)
    return p


def read(p):
    with open(p, encoding="utf-8", newline="") as fh:
        return fh.read()


SEVERAL = """\
# GPU workloads
apiVersion: v1
kind: Pod
metadata:
  name: p
spec:
  initContainers:
    - name: init
      image: busybox:1.36
      resources:
        requests:
          vpc.amazonaws.com/efa: 1  # EFA for NCCL
  containers:
    - name: a
      image: vllm/vllm-openai:v0.9.2
      resources:
        requests:
          nvidia.com/gpu: 2
        limits:  # keep in sync
          nvidia.com/gpu: 1
    - name: b
      image: vllm/vllm-openai:v0.9.2
      resources:
        # one GPU
        requests:
          nvidia.com/gpu: 1
          hugepages-2Mi: 1Gi
---
# second document
apiVersion: batch/v1
kind: Job
metadata:
  name: j
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
        - name: c
          image: python:3.12
          resources:
            requests: {nvidia.com/gpu: 4}
            limits: {cpu: 1}
"""

SEVERAL_FIXED = """\
# GPU workloads
apiVersion: v1
kind: Pod
metadata:
  name: p
spec:
  initContainers:
    - name: init
      image: busybox:1.36
      resources:
        requests:
          vpc.amazonaws.com/efa: 1  # EFA for NCCL
        limits:
          vpc.amazonaws.com/efa: 1
  containers:
    - name: a
      image: vllm/vllm-openai:v0.9.2
      resources:
        requests:
          nvidia.com/gpu: 1
        limits:  # keep in sync
          nvidia.com/gpu: 1
    - name: b
      image: vllm/vllm-openai:v0.9.2
      resources:
        # one GPU
        requests:
          nvidia.com/gpu: 1
          hugepages-2Mi: 1Gi
        limits:
          nvidia.com/gpu: 1
          hugepages-2Mi: "1Gi"
---
# second document
apiVersion: batch/v1
kind: Job
metadata:
  name: j
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
        - name: c
          image: python:3.12
          resources:
            requests: {nvidia.com/gpu: 4}
            limits: {cpu: 1, nvidia.com/gpu: 4}
"""


def test_fix_several_findings_and_overlapping_fixes(tmp_path):
    """Container b needs two limits that both create `limits:` at one point: the second
    waits for the next pass and lands in the new block."""
    p = write(tmp_path, "several.yaml", SEVERAL)
    r = run(["--select", "GPU002", "--fix", str(p)])
    assert read(p) == SEVERAL_FIXED
    assert r.exit_code == 0, r.output
    assert "Fixed 5 findings (1 file); 0 remain" in r.stderr
    again = run(["--select", "GPU002", "--fix", str(p)])
    assert read(p) == SEVERAL_FIXED
    assert "Nothing to fix; 0 findings remain" in again.stderr


def test_diff_prints_a_patch_and_writes_nothing(tmp_path):
    p = write(tmp_path, "several.yaml", SEVERAL)
    r = run(["--select", "GPU002", "--diff", str(p)])
    assert read(p) == SEVERAL
    display = r.stdout.split("--- a/", 1)[1].split("\n", 1)[0]
    expected = "".join(
        difflib.unified_diff(SEVERAL.splitlines(True), SEVERAL_FIXED.splitlines(True), f"a/{display}", f"b/{display}")
    )
    assert expected.rstrip("\n") in r.stdout
    assert "Would fix 5 findings (1 file); 0 would remain" in r.stderr
    assert r.exit_code == 0
    if subprocess.run(["git", "--version"], capture_output=True).returncode == 0:
        patch = tmp_path / "p.diff"
        patch.write_text(r.stdout[r.stdout.index("--- a/") :].split("\nAll clear")[0].rstrip("\n") + "\n")
        work = tmp_path / "w"
        work.mkdir()
        target = work / display
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(SEVERAL)
        res = subprocess.run(["git", "apply", "--unsafe-paths", str(patch)], cwd=work, capture_output=True, text=True)
        assert res.returncode == 0, res.stderr
        assert read(target) == SEVERAL_FIXED


def test_remaining_findings_decide_the_exit_code(tmp_path):
    text = SEVERAL.replace("nvidia.com/gpu: 4}", "nvidia.com/gpu: 0.5}")
    p = write(tmp_path, "frac.yaml", text)
    r = run(["--select", "GPU002", "--fix", "--format", "json", str(p)])
    assert r.exit_code == 1
    import json

    doc = json.loads(r.stdout)
    assert [f["message"].split(":")[0] for f in doc["findings"]] == ["nvidia.com/gpu is 0.5"]
    assert "; 1 remains" in r.stderr


LAYOUT = """\
apiVersion: v1
kind: Pod
spec:
    containers:
    -   name: a
        image: x
        resources:
            requests:
                nvidia.com/gpu: 1
"""


@pytest.mark.parametrize("crlf", [False, True])
@pytest.mark.parametrize("final_newline", [True, False])
def test_layouts_four_spaces_unindented_crlf_final_newline(tmp_path, crlf, final_newline):
    text, fixed = LAYOUT, LAYOUT + "            limits:\n                nvidia.com/gpu: 1\n"
    if not final_newline:
        text, fixed = text.rstrip("\n"), fixed.rstrip("\n")
    if crlf:
        text, fixed = text.replace("\n", "\r\n"), fixed.replace("\n", "\r\n")
    p = write(tmp_path, "layout.yaml", text)
    r = run(["--select", "GPU002", "--fix", str(p)])
    assert read(p) == fixed
    assert r.exit_code == 0


def test_indented_sequences_two_spaces(tmp_path):
    text = "apiVersion: v1\nkind: Pod\nspec:\n  containers:\n    - name: a\n      resources:\n        requests:\n          nvidia.com/gpu: 1\n"
    p = write(tmp_path, "two.yaml", text)
    run(["--select", "GPU002", "--fix", str(p)])
    assert read(p) == text + "        limits:\n          nvidia.com/gpu: 1\n"


def test_empty_limits_is_filled(tmp_path):
    text = "apiVersion: v1\nkind: Pod\nspec:\n  containers:\n    - name: a\n      resources:\n        requests:\n          nvidia.com/gpu: 1\n        limits:\n"
    p = write(tmp_path, "null_limits.yaml", text)
    assert run(["--select", "GPU002", "--fix", str(p)]).exit_code == 0
    new = read(p)
    assert new.startswith(text[:-1])
    assert _documents(new)[0].data["spec"]["containers"][0]["resources"]["limits"] == {"nvidia.com/gpu": 1}


def test_flow_style_resources(tmp_path):
    text = (
        "apiVersion: v1\nkind: Pod\nspec:\n  containers:\n  - {name: a, resources: {requests: {nvidia.com/gpu: 1}}}\n"
    )
    p = write(tmp_path, "flow.yaml", text)
    r = run(["--select", "GPU002", "--fix", str(p)])
    assert read(p) == (
        "apiVersion: v1\nkind: Pod\nspec:\n  containers:\n"
        "  - {name: a, resources: {requests: {nvidia.com/gpu: 1}, limits: {nvidia.com/gpu: 1}}}\n"
    )
    assert r.exit_code == 0


def test_json_manifest_stays_json(tmp_path):
    import json

    text = (
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "spec": {"containers": [{"name": "a", "resources": {"requests": {"nvidia.com/gpu": 1}}}]},
            },
            indent=2,
        )
        + "\n"
    )
    p = write(tmp_path, "pod.json", text)
    run(["--select", "GPU002", "--fix", str(p)])
    assert json.loads(read(p))["spec"]["containers"][0]["resources"]["limits"] == {"nvidia.com/gpu": 1}


BAD = "apiVersion: v1\nkind: Pod\nspec:\n  containers:\n    - name: a\n      resources:\n        requests:\n          nvidia.com/gpu: 1\n"


def test_stdin_is_never_written():
    r = run(["--select", "GPU002", "--fix", "-"], input=BAD)
    assert "standard input is never rewritten" in r.stderr
    assert "fix: copy the request into limits" in r.stdout  # still offered in the report
    assert r.exit_code == 1
    d = run(["--select", "GPU002", "--diff", "--stdin-filename", "pod.yaml", "-"], input=BAD)
    assert "+        limits:\n+          nvidia.com/gpu: 1" in d.stdout
    # the summary does not send the user to --fix, which would not write it
    plain = run(["--select", "GPU002", "-"], input=BAD)
    assert "1 fixable with --diff (standard input is not rewritten)" in plain.stdout
    assert "with --fix" not in plain.stdout


def test_helm_rendered_output_is_never_written(tmp_path):
    text = "---\n# Source: chart/templates/pod.yaml\n" + BAD
    p = write(tmp_path, "rendered.yaml", text)
    r = run(["--select", "GPU002", "--fix", str(p)])
    assert read(p) == text
    assert "Helm-rendered output" in r.stderr and "not fixed" in r.stderr
    assert r.exit_code == 1
    d = run(["--select", "GPU002", "--diff", str(p)])
    assert "+        limits:" in d.stdout
    assert read(p) == text
    # the summary says where the fixes go, not that --fix applies them
    assert "1 fixable in Helm's output, which --fix does not rewrite (fix the chart)" in r.stdout
    assert "with --fix)" not in r.stdout and "fixable with --fix" not in r.stdout
    # with a file --fix does write beside it, only that one counts for --fix
    q = write(tmp_path, "plain.yaml", BAD)
    both = run(["--select", "GPU002", str(p), str(q)])
    assert "; 1 fixable with --fix; 1 fixable in Helm's output" in both.stdout


def test_unsafe_fixes_need_the_flag(tmp_path):
    p = write(tmp_path, "bad.yaml", BAD)
    settings_ = Settings(root=str(tmp_path))
    settings_.select, settings_.schema = ["GPU002"], False
    result = lint([str(p)], settings_)
    result.findings = [
        dataclasses.replace(f, fix=dataclasses.replace(f.fix, applicability=Applicability.UNSAFE))
        for f in result.findings
    ]
    final, msgs = run_fixes(
        result, settings_, unsafe=False, diff_only=False, lint_again=lambda: lint([str(p)], settings_)
    )
    assert read(p) == BAD
    assert any("(1 fixable with --unsafe-fixes)" in m for m in msgs)
    final, msgs = run_fixes(
        result, settings_, unsafe=True, diff_only=False, lint_again=lambda: lint([str(p)], settings_)
    )
    assert "limits:" in read(p) and final.findings == []


def _lint(p, select=("GPU002",)):
    s = Settings(root=str(p.parent))
    s.select, s.schema = list(select), False
    return s, lint([str(p)], s)


@pytest.mark.parametrize(
    "before, content, why",
    [
        (False, "          x: [1\n", "would not parse"),
        (False, "        requests: {}\n", "duplicate key"),
        (True, "        extra:\n", "outside the edited lines"),  # re-parents the GPU request
    ],
)
def test_bad_fixes_are_refused(tmp_path, before, content, why):
    p = write(tmp_path, "bad.yaml", BAD)
    s, result = _lint(p)
    f = result.findings[0]
    src = result.sources[f.file].text
    at = src.index("          nvidia.com/gpu: 1\n")
    if not before:
        at += len("          nvidia.com/gpu: 1\n")
    result.findings = [dataclasses.replace(f, fix=Fix("broken", (Edit(at, at, content),)))]
    _final, msgs = run_fixes(result, s, unsafe=False, diff_only=False, lint_again=lambda: lint([str(p)], s))
    assert read(p) == BAD
    assert any(why in m and "skipped the GPU002 fix (broken)" in m for m in msgs), msgs


def test_comment_loss_is_refused(tmp_path):
    text = BAD.replace("        requests:\n", "        # keep me\n        requests:\n")
    p = write(tmp_path, "c.yaml", text)
    s, result = _lint(p)
    f = result.findings[0]
    src = result.sources[f.file].text
    start = src.index("        # keep me\n")
    result.findings = [dataclasses.replace(f, fix=Fix("eats a comment", (Edit(start, start + 18, ""),)))]
    _final, msgs = run_fixes(result, s, unsafe=False, diff_only=False, lint_again=lambda: lint([str(p)], s))
    assert read(p) == text and any("comment line `# keep me` would be lost" in m for m in msgs)


def test_file_changed_on_disk_meanwhile_is_not_overwritten(tmp_path):
    p = write(tmp_path, "bad.yaml", BAD)
    s, result = _lint(p)
    p.write_text(BAD + "# edited by the user\n")
    _final, msgs = run_fixes(result, s, unsafe=False, diff_only=False, lint_again=lambda: lint([str(p)], s))
    assert read(p) == BAD + "# edited by the user\n"
    assert any("changed on disk" in m for m in msgs)


def test_mode_and_bom_are_kept_and_links_never_written_through(tmp_path):
    real = tmp_path / "real.yaml"
    real.write_bytes(b"\xef\xbb\xbf" + BAD.encode())
    os.chmod(real, 0o640)
    link = tmp_path / "link.yaml"
    link.symlink_to(real)
    # a link is not written through (issue 19: a pull request's link must not make --fix
    # rewrite its target), even when its target is in the same folder
    r = run(["--select", "GPU002", "--fix", str(link)])
    assert r.exit_code == 1 and "not fixed: it is a symbolic link" in r.stderr
    assert link.is_symlink() and real.read_bytes() == b"\xef\xbb\xbf" + BAD.encode()
    r = run(["--select", "GPU002", "--fix", str(real)])
    assert r.exit_code == 0
    assert link.is_symlink()
    assert real.read_bytes().startswith(b"\xef\xbb\xbf") and b"limits:" in real.read_bytes()
    assert oct(os.stat(real).st_mode & 0o777) == oct(0o640)
    assert [x.name for x in tmp_path.iterdir() if "ailint-tmp" in x.name] == []


def test_failed_write_leaves_the_file_and_no_temporary(tmp_path, monkeypatch):
    p = write(tmp_path, "bad.yaml", BAD)

    def boom(a, b):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(fixmod.os, "replace", boom)
    r = run(["--select", "GPU002", "--fix", str(p)])
    assert read(p) == BAD
    assert "cannot write: No space left on device" in r.stderr
    assert sorted(x.name for x in tmp_path.iterdir()) == ["bad.yaml"]


KILLER = textwrap.dedent("""
    import os, signal, sys
    import ailint.fix.apply as fixmod
    real = os.replace
    when = sys.argv[1]

    def replace(a, b):
        if when == "before":
            os.kill(os.getpid(), signal.SIGKILL)
        real(a, b)
        if when == "after":
            os.kill(os.getpid(), signal.SIGKILL)

    fixmod.os = type("os", (), {n: getattr(os, n) for n in dir(os) if not n.startswith("__")})
    fixmod.os.replace = staticmethod(replace)
    fixmod.os.path = os.path
    from ailint.doors.cli import main
    sys.argv = ["ailint", "check", "--no-config", "--no-schema", "--select", "GPU002", "--fix", sys.argv[2]]
    main()
""")


@pytest.mark.parametrize("when, expect_new", [("before", False), ("after", True)])
def test_kill_during_write_leaves_old_or_new(tmp_path, when, expect_new):
    p = write(tmp_path, "bad.yaml", BAD)
    res = subprocess.run([PY, "-c", KILLER, when, str(p)], capture_output=True, text=True, timeout=60)
    assert res.returncode == -signal.SIGKILL, res.stderr
    content = read(p)
    assert ("limits:" in content) == expect_new
    assert content in (BAD, BAD + "        limits:\n          nvidia.com/gpu: 1\n")


def test_random_kills_leave_old_or_new_content(tmp_path):
    """Kill `ailint check --fix` at random moments: the file is always whole, old or new."""
    doc = BAD.replace("name: a", "name: a{i}")
    big = "---\n".join(doc.replace("{i}", str(i)) for i in range(150))
    fixed_doc = doc + "        limits:\n          nvidia.com/gpu: 1\n"
    fixed = "---\n".join(fixed_doc.replace("{i}", str(i)) for i in range(150))
    rnd = random.Random(3)
    seen = set()
    deadline = time.monotonic() + 8
    tries = 0
    while time.monotonic() < deadline and tries < 6:
        tries += 1
        p = write(tmp_path, "big.yaml", big)
        proc = subprocess.Popen(
            [PY, "-m", "ailint", "check", "--no-config", "--no-schema", "--select", "GPU002", "--fix", str(p)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        time.sleep(rnd.uniform(0.2, 1.5))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        content = read(p)
        assert content in (big, fixed)
        seen.add(content == fixed)
    assert seen


# -- properties -----------------------------------------------------------------------------
GPU = "nvidia.com/gpu"


@st.composite
def gpu_pods(draw):
    """A Deployment with 1-3 containers in one of the GPU002 situations, in a random layout."""
    containers = []
    for i in range(draw(st.integers(1, 3))):
        n = draw(st.integers(1, 8))
        variant = draw(st.sampled_from(["requests", "differs", "flow", "empty", "null", "two", "ok", "no-resources"]))
        res: dict = {"requests": {GPU: n}}
        if variant == "differs":
            res["limits"] = {GPU: n + 1, "memory": "1Gi"}
        elif variant == "flow":
            res["limits"] = {"cpu": 1}
        elif variant == "empty":
            res["limits"] = {}
        elif variant == "null":
            res["limits"] = None
        elif variant == "two":
            res["requests"] = {"vpc.amazonaws.com/efa": 1, GPU: n}
        elif variant == "ok":
            res["limits"] = {GPU: n}
        c = {"name": f"c{i}", "image": "vllm/vllm-openai:v0.9.2"}
        if variant != "no-resources":
            c["resources"] = res
        containers.append(c)
    data = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "d"},
        "spec": {"template": {"spec": {"containers": containers}}},
    }
    rnd = random.Random(draw(st.integers(0, 2**32 - 1)))  # layout choices: fast, reproducible
    unit = draw(st.sampled_from([2, 4]))
    em = Emitter(rnd, unit, draw(st.booleans()), 3 if unit == 4 and draw(st.booleans()) else 1, draw(st.booleans()))
    lines: list[str] = []
    em.mapping(data, 0, lines)
    text = "\n".join(lines)
    if draw(st.booleans()):
        text += "\n"
    if draw(st.booleans()):
        text = text.replace("\n", "\r\n")
    return text


def fix_and_check(p: pathlib.Path, select, unsafe: bool, monkeypatch) -> tuple[str, str, list]:
    """Run the fixer on `p` and check the properties; return (old, new, remaining findings)."""
    old = read(p)
    applied: list[Edit] = []
    real = fixmod.apply_to_text

    def spy(text, fixes):
        new, done = real(text, fixes)
        applied.extend(e for f in done for e in f.edits)
        return new, done

    monkeypatch.setattr(fixmod, "apply_to_text", spy)
    s, result = _lint(p, select)
    final, msgs = run_fixes(result, s, unsafe=unsafe, diff_only=False, lint_again=lambda: lint([str(p)], s))
    monkeypatch.setattr(fixmod, "apply_to_text", real)
    new = read(p)
    # the YAML still parses, with as many documents
    assert len(_documents(new)) == len(_documents(old))
    # every comment line survives
    assert not (set(comment_lines(old)) - set(comment_lines(new)))
    # untouched lines are byte-identical: a changed line keeps its `key:` and its comment,
    # and lines go away only where a fix deletes
    deletes = any(e.end > e.start and not e.content for e in applied)
    old_lines, new_lines = old.splitlines(True), new.splitlines(True)
    sm = difflib.SequenceMatcher(a=old_lines, b=new_lines, autojunk=False)
    for op, i1, i2, j1, j2 in sm.get_opcodes():
        if op in ("delete", "replace"):
            j = j1
            for line in old_lines[i1:i2]:
                key = line.split(":", 1)[0] if ":" in line else line.rstrip("\r\n")
                comment = (
                    line[line.index(" #") :].rstrip("\r\n")
                    if " #" in line and "'" not in line and '"' not in line
                    else ""
                )
                ending = line[len(line.rstrip("\r\n")) :]
                while (
                    op == "replace"
                    and j < j2
                    and not (
                        new_lines[j].startswith(key)
                        and comment in new_lines[j]
                        and (new_lines[j].endswith(ending) if ending else True)
                    )
                ):
                    j += 1  # lines inserted before the changed one
                if op == "replace" and j < j2:
                    j += 1  # the same line with its value changed: key, comment and line ending kept
                else:
                    assert deletes, (line, old, new)
    # the fixed findings are gone: nothing fixable is left except what the fixer reported
    still = [f for f in final.findings if f.fix is not None and (unsafe or f.fix.applicability == Applicability.SAFE)]
    notes = "\n".join(msgs)
    for f in still:
        assert f.code in notes or "not fixed" in notes, (f, msgs)
    return old, new, final.findings


@settings(
    max_examples=80 * SCALE,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(text=gpu_pods())
def test_fix_properties_on_generated_documents(tmp_path, monkeypatch, text):
    p = write(tmp_path, "gen.yaml", text)
    old, new, remaining = fix_and_check(p, ["GPU002"], False, monkeypatch)
    assert not [f for f in remaining if f.code == "GPU002"], (old, new)
    # a second run changes nothing
    fix_and_check(p, ["GPU002"], False, monkeypatch)
    assert read(p) == new


def _corpus_files() -> list[pathlib.Path]:
    if not CORPUS.is_dir():
        return []
    files = sorted(p for p in CORPUS.glob("*/plain/*") if p.suffix in (".yaml", ".yml") and p.stat().st_size < 30_000)
    return random.Random(11).sample(files, min(200, len(files)))


CORPUS_FILES = _corpus_files()


@pytest.mark.skipif(not CORPUS_FILES, reason="../shared/corpus is absent")
@settings(
    max_examples=40 * SCALE,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture, HealthCheck.filter_too_much],
)
@given(data=st.data())
def test_fix_properties_on_corpus_files(tmp_path, monkeypatch, data):
    """A corpus file, sometimes with a GPU request added to a container (so GPU002 has to add
    limits in that file's own layout), fixed with every rule and --unsafe-fixes."""
    src = data.draw(st.sampled_from(CORPUS_FILES), label="file")
    text = src.read_text(encoding="utf-8")
    try:
        _documents(text)
    except Exception:
        assume(False)
    if data.draw(st.booleans(), label="add a GPU request"):
        from ailint.domain.extract import all_containers

        cands = [(o, c) for o in objs(text, src.name) for c in all_containers(o)]
        if cands:
            o, c = data.draw(st.sampled_from(cands), label="container")
            e = edits.set_value(o, c.path_of("resources", "requests", GPU), 1)
            if e is not None:
                text = text[: e.start] + e.content + text[e.end :]
    p = write(tmp_path, src.name, text)
    fix_and_check(p, ["ALL"], True, monkeypatch)


def test_file_that_does_not_parse_as_a_whole_is_not_fixed(tmp_path):
    text = BAD + "---\napiVersion: v1\nkind: Pod\nspec: [unclosed\n"
    p = write(tmp_path, "half.yaml", text)
    r = run(["--select", "GPU002", "--fix", str(p)])
    assert read(p) == text
    assert "does not parse as a whole" in r.stderr
