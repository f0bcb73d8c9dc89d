"""Fixes that append a whole document (`edits.append_document`, REL003's PodDisruptionBudget,
SEC005's default-deny egress NetworkPolicy) and the fixer's check that accepts exactly the
declared added documents: layouts, line endings, several workloads in one file, a second
run that changes nothing, stdin and Helm output never written, SARIF replacements."""

from __future__ import annotations

import json

import pytest
import yaml
from ailint.core.model import Edit, Fix, SourceFile
from ailint.doors.cli import cli
from ailint.engine.config import Settings
from ailint.engine.load import load_text
from ailint.engine.run import lint
from ailint.fix import edits
from ailint.fix.apply import apply_to_text, verify
from ailint.report import sarif
from click.testing import CliRunner
from conftest import SARIF_SCHEMA

POOL = """\
apiVersion: karpenter.sh/v1
kind: NodePool
metadata:
  name: gpu
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: gpu}
      requirements:
        - key: karpenter.k8s.aws/instance-family
          operator: In
          values: [g6e]
  disruption:
    consolidationPolicy: WhenEmptyOrUnderutilized
"""


def deployment(name, ns="inference", replicas=2):
    return f"""\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {name}
  namespace: {ns}
spec:
  replicas: {replicas}  # scaled by hand
  selector:
    matchLabels: {{app: {name}}}
  template:
    metadata:
      labels: {{app: {name}}}
    spec:
      containers:
        - name: vllm
          image: vllm/vllm-openai:v0.9.2
"""


SEVERAL = (
    POOL
    + "---\n"
    + deployment("chat")
    + "---\n"
    + deployment("embed", replicas=3)
    + "---\n"
    + deployment("rerank", ns="search")
    + "# end of the workloads\n"
)

PDB = {
    "apiVersion": "policy/v1",
    "kind": "PodDisruptionBudget",
    "metadata": {"name": "x"},
    "spec": {"maxUnavailable": 1, "selector": {"matchLabels": {"app": "x"}}},
}


def run(args, input=None):
    return CliRunner().invoke(cli, ["check", "--no-config", "--no-schema", *args], input=input, catch_exceptions=False)


def write(tmp_path, name, text):
    p = tmp_path / name
    with open(p, "w", encoding="utf-8", newline="") as fh:
        fh.write(text)
    return p


def read(p):
    with open(p, encoding="utf-8", newline="") as fh:
        return fh.read()


def first_object(text, name="f.yaml"):
    return load_text(SourceFile(name, name, text)).objects[0]


def docs(text):
    return list(yaml.safe_load_all(text))


# -- the helper ----------------------------------------------------------------------------
def test_append_document_follows_the_layout():
    text = (
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n    name: a\n    labels:\n        x: y\ndata:\n    k:\n    - a\n"
    )
    e = edits.append_document(first_object(text), PDB)
    assert isinstance(e, edits.DocumentEdit) and e.documents == 1 and e.start == e.end == len(text)
    assert e.content == (
        "---\napiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata:\n    name: x\n"
        "spec:\n    maxUnavailable: 1\n    selector:\n        matchLabels:\n"
        "            app: x\n"
    )
    new, _ = apply_to_text(text, [Fix("t", (e,))])
    assert docs(new)[1] == PDB and verify(text, new, [e]) is None


@pytest.mark.parametrize(
    "text, tail",
    [
        ("kind: A\r\napiVersion: v1\r\nmetadata:\r\n  name: a\r\n", "      app: x\r\n"),  # CRLF stays CRLF
        ("kind: A\napiVersion: v1\nmetadata:\n  name: a", "      app: x"),  # no final newline stays so
        ("kind: A\r\napiVersion: v1\r\nmetadata:\r\n  name: a", "      app: x"),
    ],
)
def test_append_document_line_endings(text, tail):
    e = edits.append_document(first_object(text), PDB)
    new, _ = apply_to_text(text, [Fix("t", (e,))])
    assert new.startswith(text) and new.endswith(tail)
    crlf = "\r\n" in text
    assert ("\n" in new.replace("\r\n", "")) is not crlf
    assert docs(new) == [docs(text)[0], PDB] and verify(text, new, [e]) is None


@pytest.mark.parametrize("ending", ["---\n", "---", "--- # end\n\n"])
def test_append_document_before_a_closing_marker(ending):
    text = "kind: A\napiVersion: v1\nmetadata: {name: a}\n" + ending
    e = edits.append_document(first_object(text), PDB)
    new, _ = apply_to_text(text, [Fix("t", (e,))])
    assert new.endswith(ending) and new.count("---") == 2
    assert [d for d in docs(new) if d is not None][1] == PDB and verify(text, new, [e]) is None


def test_append_document_declines_json_and_odd_values():
    assert edits.append_document(first_object('{"kind": "A", "apiVersion": "v1"}\n', "a.json"), PDB) is None
    obj = first_object("kind: A\napiVersion: v1\n")
    assert edits.append_document(obj, {}) is None
    assert edits.append_document(obj, {"a": object()}) is None


# -- the fixer's check -------------------------------------------------------------------
TWO = "apiVersion: v1\nkind: A\nmetadata:\n  name: a\n---\napiVersion: v1\nkind: B\nmetadata:\n  name: b\n"


def test_verify_accepts_only_declared_documents():
    doc = "---\napiVersion: v1\nkind: C\n"
    end = len(TWO)
    assert verify(TWO, TWO + doc, [edits.DocumentEdit(end, end, doc)]) is None
    # the same text from a plain edit: refused, as before
    assert "3 documents instead of 2" in verify(TWO, TWO + doc, [Edit(end, end, doc)])
    # two documents declared as one
    two = doc + doc
    assert "declares 1 added document(s) but its text holds 2" in verify(
        TWO, TWO + two, [edits.DocumentEdit(end, end, two)]
    )
    # declared, but the text does not add a document where it stands
    bare = "extra: 1\n"
    assert verify(TWO, TWO + bare, [edits.DocumentEdit(end, end, bare)]) is not None
    # declared, but it also changes the document before it
    sneaky = "  label: x\n" + doc
    assert (
        verify(TWO, TWO.replace("  name: b\n", "  name: b\n" + sneaky), [edits.DocumentEdit(end, end, sneaky)])
        is not None
    )


def test_verify_places_documents_inserted_between_documents():
    doc = "---\napiVersion: v1\nkind: C\n"
    at = TWO.index("---")
    new = TWO[:at] + doc + TWO[at:]
    assert verify(TWO, new, [edits.DocumentEdit(at, at, doc)]) is None
    # inside the first document: `metadata` would move from the first object to the new one
    at = TWO.index("metadata")
    new = TWO[:at] + doc + TWO[at:]
    assert "would not be the document the fix adds" in verify(TWO, new, [edits.DocumentEdit(at, at, doc)])


def test_identical_appends_are_applied_once_and_distinct_ones_in_fix_order():
    doc_c, doc_d = "---\nkind: C\n", "---\nkind: D\n"
    end = len(TWO)
    c, d = edits.DocumentEdit(end, end, doc_c), edits.DocumentEdit(end, end, doc_d)
    new, applied = apply_to_text(TWO, [Fix("c", (c,)), Fix("c again", (c,)), Fix("d", (d,))])
    assert new == TWO + doc_c + doc_d and len(applied) == 3
    assert verify(TWO, new, [c, c, d]) is None
    # a plain insertion at the same point still waits for the next pass
    new, applied = apply_to_text(TWO, [Fix("c", (c,)), Fix("plain", (Edit(end, end, "x: 1\n"),))])
    assert [f.title for f in applied] == ["c"]


# -- end to end ------------------------------------------------------------------------------
def test_several_workloads_each_get_their_pdb_and_a_rerun_changes_nothing(tmp_path):
    p = write(tmp_path, "w.yaml", SEVERAL)
    r = run(["--select", "REL003", "--fix", str(p)])
    assert read(p) == SEVERAL, "REL003's fix is unsafe: --fix alone leaves the file"
    assert "(3 fixable with --unsafe-fixes)" in r.output
    r = run(["--select", "REL003", "--unsafe-fixes", "--fail-on", "never", str(p)])
    new = read(p)
    assert new.startswith(SEVERAL) and "Fixed 3 findings (1 file); 0 remain" in r.output
    pdbs = [d for d in docs(new) if d["kind"] == "PodDisruptionBudget"]
    assert [(d["metadata"]["name"], d["metadata"]["namespace"], d["spec"]) for d in pdbs] == [
        ("chat", "inference", {"maxUnavailable": 1, "selector": {"matchLabels": {"app": "chat"}}}),
        ("embed", "inference", {"maxUnavailable": 1, "selector": {"matchLabels": {"app": "embed"}}}),
        ("rerank", "search", {"maxUnavailable": 1, "selector": {"matchLabels": {"app": "rerank"}}}),
    ]
    again = run(["--select", "REL003", "--unsafe-fixes", "--fail-on", "never", str(p)])
    assert read(p) == new and "Nothing to fix; 0 findings remain" in again.output


def test_crlf_file_without_final_newline(tmp_path):
    text = (POOL + "---\n" + deployment("chat")).rstrip("\n").replace("\n", "\r\n")
    p = write(tmp_path, "w.yaml", text)
    run(["--select", "REL003", "--unsafe-fixes", str(p)])
    new = read(p)
    assert new.startswith(text + "\r\n---\r\napiVersion: policy/v1\r\n")
    assert not new.endswith("\n") and "\n" not in new.replace("\r\n", "")
    assert docs(new)[-1]["metadata"]["name"] == "chat"
    run(["--select", "REL003", "--unsafe-fixes", str(p)])
    assert read(p) == new


def test_stdin_is_never_written_but_the_fix_is_reported():
    r = run(["--select", "REL003", "--unsafe-fixes", "-"], input=SEVERAL)
    assert "standard input is never rewritten" in r.stderr
    assert "fix (unsafe): add PodDisruptionBudget chat with maxUnavailable: 1" in r.stdout
    d = run(["--select", "REL003", "--diff", "--unsafe-fixes", "--stdin-filename", "w.yaml", "-"], input=SEVERAL)
    assert "+kind: PodDisruptionBudget" in d.stdout and d.stdout.count("+kind: PodDisruptionBudget") == 3


def test_helm_rendered_output_is_never_written(tmp_path):
    text = "---\n# Source: chart/templates/all.yaml\n" + SEVERAL
    p = write(tmp_path, "rendered.yaml", text)
    r = run(["--select", "REL003", "--unsafe-fixes", str(p)])
    assert read(p) == text and "Helm-rendered output" in r.stderr
    d = run(["--select", "REL003", "--diff", "--unsafe-fixes", str(p)])
    assert "+kind: PodDisruptionBudget" in d.stdout and read(p) == text


AGENT = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: support-agent
  namespace: agents
spec:
  selector:
    matchLabels:
      app: support-agent
  template:
    metadata:
      labels:
        app: support-agent
    spec:
      containers:
        - name: agent
          image: ghcr.io/example/support-agent-langgraph:2.1.0
"""


def test_sec005_appends_a_default_deny_egress_policy(tmp_path):
    p = write(tmp_path, "agent.yaml", AGENT)
    run(["--select", "SEC005", "--fix", str(p)])
    assert read(p) == AGENT  # unsafe: changes what the agent can reach
    r = run(["--select", "SEC005", "--unsafe-fixes", "--fail-on", "never", str(p)])
    new = read(p)
    assert new.startswith(AGENT) and "Fixed 1 finding (1 file); 0 remain" in r.output
    np = docs(new)[1]
    assert np == {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {"name": "support-agent-egress", "namespace": "agents"},
        "spec": {
            "podSelector": {"matchLabels": {"app": "support-agent"}},
            "policyTypes": ["Egress"],
            "egress": [
                {
                    "to": [
                        {
                            "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "kube-system"}},
                            "podSelector": {"matchLabels": {"k8s-app": "kube-dns"}},
                        }
                    ],
                    "ports": [{"protocol": "UDP", "port": 53}, {"protocol": "TCP", "port": 53}],
                }
            ],
        },
    }
    again = run(["--select", "SEC005", "--unsafe-fixes", "--fail-on", "never", str(p)])
    assert read(p) == new and "Nothing to fix" in again.output


def test_both_rules_in_one_run_and_every_result_parses(tmp_path):
    text = POOL + "---\n" + deployment("chat") + "---\n" + AGENT
    p = write(tmp_path, "both.yaml", text)
    r = run(["--select", "REL003,SEC005", "--unsafe-fixes", "--fail-on", "never", str(p)])
    new = read(p)
    assert "Fixed 2 findings (1 file); 0 remain" in r.output
    assert [d["kind"] for d in docs(new)][-2:] == ["PodDisruptionBudget", "NetworkPolicy"]


def test_sarif_carries_the_insertion_as_a_replacement(tmp_path):
    import jsonschema

    p = write(tmp_path, "w.yaml", SEVERAL)
    s = Settings(root=str(tmp_path))
    s.select, s.schema = ["REL003"], False
    log = sarif.build(lint([str(p)], s))
    jsonschema.Draft4Validator(json.loads(SARIF_SCHEMA.read_text())).validate(log)
    results = log["runs"][0]["results"]
    assert len(results) == 3
    last_line = SEVERAL.count("\n") + 1  # the insertion point: the end of the file
    for res in results:
        (fix,) = res["fixes"]
        (change,) = fix["artifactChanges"]
        (rep,) = change["replacements"]
        region = rep["deletedRegion"]
        assert (region["startLine"], region["startColumn"], region["endLine"], region["endColumn"]) == (
            last_line,
            1,
            last_line,
            1,
        )
        text = rep["insertedContent"]["text"]
        assert text.startswith("---\napiVersion: policy/v1\nkind: PodDisruptionBudget\n")
        assert fix["description"]["text"].endswith("(unsafe)")
