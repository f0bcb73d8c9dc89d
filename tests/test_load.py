"""The loader: spans for keys and values, multi-document streams, Lists, Helm markers,
and a YML finding (never an exception) for every kind of bad input."""

from __future__ import annotations

import os

import pytest
from ailint.core.model import SourceFile, Span
from ailint.engine.config import Settings
from ailint.engine.load import Limits, decode, load_text
from ailint.engine.run import lint


@pytest.fixture(autouse=True, params=["c", "pure"])
def reading(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Every test twice: with the C reader where it is built (`ailint.core.yamlc`), and with
    the pure reading alone (`compose_all` and `Converter`), which reads what it declines."""
    from ailint.core import yamldata

    if request.param == "pure":
        monkeypatch.setattr(yamldata, "_reader", None)
    elif yamldata._reader is None:
        pytest.skip("ailint.core.yamlc is not built (tests/test_yamlc.py says why)")
    return str(request.param)


def load(text: str, name: str = "t.yaml", limits: Limits = Limits()):
    return load_text(SourceFile(name, name, text), limits)


def codes(result):
    return [(f.code, f.span.line, f.span.col) for f in result.findings]


POD = """apiVersion: v1
kind: Pod
metadata:
  name: p
spec:
  containers:
    - name: c
      image: nginx:1.27
"""


def test_spans_for_keys_values_and_missing_paths():
    r = load(POD)
    assert not r.findings
    (obj,) = r.objects
    assert obj.span(("spec", "containers", 0, "image")) == Span(8, 7, 8, 24)
    assert obj.value_span(("spec", "containers", 0, "image")) == Span(8, 14, 8, 24)
    assert obj.key_span(("spec", "containers")) == Span(6, 3, 6, 13)
    assert obj.span(("spec", "containers", 0)) == Span(7, 7, 7, 14)
    # a missing field points at its nearest existing parent
    assert obj.span(("spec", "tolerations")) == Span(5, 1, 5, 5)
    assert obj.span(("spec", "containers", 0, "resources", "limits")) == Span(7, 7, 7, 14)


def test_yaml_11_resolution_like_the_api_server():
    r = load("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndata:\n  mode: 0755\n  flag: on\n  s: '0755'\n")
    data = r.objects[0].data["data"]
    assert data == {"mode": 493, "flag": True, "s": "0755"}


SCALARS = [
    "0",
    "1",
    "42",
    "007",
    "0755",
    "08",
    "1_000",
    "+5",
    "-3",
    "-0",
    "0x1F",
    "0b101",
    "190:20:30",
    "12345678901234567890",
    "1e3",
    "1.5",
    ".5",
    "-.inf",
    ".nan",
    "yes",
    "Yes",
    "YES",
    "no",
    "No",
    "NO",
    "on",
    "On",
    "ON",
    "off",
    "Off",
    "OFF",
    "true",
    "True",
    "TRUE",
    "false",
    "False",
    "FALSE",
    "y",
    "n",
    "~",
    "null",
    "Null",
    "NULL",
    "'1'",
    '"2"',
    "2001-12-14",
    "١٢",
    "²",
]


def test_scalars_are_what_pyyaml_makes_of_them():
    """The converter's inline paths (plain decimals, booleans) give what PyYAML's own
    constructors give, for every form YAML 1.1 resolves."""
    import math

    import yaml

    text = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndata:\n" + "".join(
        f"  k{i}: {v}\n" for i, v in enumerate(SCALARS)
    )
    ours = load(text).objects[0].data["data"]
    theirs = {k: v if not hasattr(v, "isoformat") else str(v) for k, v in yaml.safe_load(text)["data"].items()}
    for k, v in theirs.items():
        got = ours[k]
        assert type(got) is type(v) and (got == v or (isinstance(v, float) and math.isnan(v) and math.isnan(got))), (
            SCALARS[int(k[1:])],
            got,
            v,
        )


def test_multi_document_stream_and_empty_documents():
    r = load(POD + "---\n---\n# only a comment\n---\n" + POD.replace("name: p", "name: q"))
    assert [o.name for o in r.objects] == ["p", "q"]
    assert r.objects[1].doc_index == 3
    assert r.objects[1].span(("metadata", "name")).line == 16


def test_list_items_are_objects_with_their_own_spans():
    text = "apiVersion: v1\nkind: List\nitems:\n  - apiVersion: v1\n    kind: Pod\n    metadata:\n      name: a\n"
    (obj,) = load(text).objects
    assert obj.kind == "Pod" and obj.name == "a"
    assert obj.span(("metadata", "name")) == Span(7, 7, 7, 14)


def test_helm_source_markers_name_the_template():
    text = "---\n# Source: chart/templates/a.yaml\n" + POD + "---\n# Source: chart/templates/b.yaml\n" + POD
    objs = load(text).objects
    assert [o.template for o in objs] == ["chart/templates/a.yaml", "chart/templates/b.yaml"]


def test_syntax_error_keeps_earlier_documents():
    r = load(POD + '---\nmetadata:\n  name: "unterminated\n')
    assert [o.name for o in r.objects] == ["p"]
    assert r.findings[0].code == "YML001"
    assert r.findings[0].span.line >= 10


def test_tab_indentation_is_named():
    r = load("apiVersion: v1\nkind: Pod\nmetadata:\n\tname: x\n")
    (f,) = r.findings
    assert f.code == "YML001" and "tab" in f.message and f.span.line == 4


def test_duplicate_key_is_reported_at_the_second_key():
    r = load("apiVersion: v1\nkind: Pod\nmetadata:\n  name: a\n  name: b\n")
    (f,) = r.findings
    assert (f.code, f.span.line, f.span.col) == ("YML003", 5, 3)
    assert "first at line 4" in f.message


def test_alias_bomb_is_refused():
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    for i in range(1, 9):
        lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]")
    r = load("\n".join(lines) + "\n")
    assert [f.code for f in r.findings] == ["YML004"]
    assert not r.objects


def test_nesting_depth_bound():
    text = "apiVersion: v1\nkind: ConfigMap\ndata: " + "[" * 300 + "]" * 300 + "\n"
    r = load(text, limits=Limits(max_depth=50))
    assert [f.code for f in r.findings] == ["YML005"]


def test_scalar_length_bound():
    r = load("apiVersion: v1\nkind: ConfigMap\ndata:\n  a: " + "x" * 200 + "\n", limits=Limits(max_scalar_chars=100))
    assert [f.code for f in r.findings] == ["YML011"]


@pytest.mark.parametrize("value", ["xxxxxxxxxxxxxxxx", "'xxxxxxxxxxxxxxxx'", "[xxxxxxxxxxxxxxxx]"])
def test_scalar_length_bound_below_the_interned_length(value):
    """A bound under 64 characters holds for short strings too, in a mapping and a list
    (the converter's inline path for short strings)."""
    r = load(f"apiVersion: v1\nkind: ConfigMap\ndata:\n  a: {value}\n", limits=Limits(max_scalar_chars=10))
    assert [f.code for f in r.findings] == ["YML011"]
    assert not load(f"apiVersion: v1\nkind: ConfigMap\ndata:\n  a: {value}\n").findings


def test_document_count_bound():
    r = load("---\na: 1\n" * 20, limits=Limits(max_documents=5))
    assert "YML010" in [f.code for f in r.findings]


def test_unrendered_template_points_at_the_first_marker():
    text = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {{ .Release.Name }}\n{{- if .Values.x }}\n"
    r = load(text)
    (f,) = r.findings
    assert (f.code, f.span.line, f.span.col) == ("YML002", 4, 9)


def test_template_like_strings_inside_quotes_are_fine():
    text = (
        "apiVersion: monitoring.coreos.com/v1\nkind: PrometheusRule\nmetadata: {name: r}\n"
        "spec:\n  groups:\n    - name: g\n      rules:\n        - alert: A\n"
        '          annotations:\n            summary: "{{ $labels.instance }} down"\n'
    )
    r = load(text)
    assert not r.findings and r.objects


def test_not_a_kubernetes_object():
    r = load("- a\n- b\n---\nreplicas: 3\n")
    assert [f.code for f in r.findings] == ["YML008", "YML008"]
    assert "no apiVersion or kind" in r.findings[1].message


def test_complex_keys_are_findings_not_crashes():
    r = load("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndata:\n  ? [a, b]\n  : c\n")
    assert [f.code for f in r.findings] == ["YML012"]


def test_unknown_tags_are_never_executed():
    r = load(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndata:\n  a: !!python/object/apply:os.system [echo hi]\n  b: !custom text\n"
    )
    assert r.objects[0].data["data"]["b"] == "text"


def test_merge_keys():
    r = load("base: &b {cpu: 1}\napiVersion: v1\nkind: X\nspec:\n  <<: *b\n  mem: 2\n")
    assert r.objects[0].data["spec"] == {"cpu": 1, "mem": 2}


@pytest.mark.parametrize(
    "raw,needle",
    [
        (b"\x00\x01\x02binary", "binary"),
        (b"\xff\xfea\x00p\x00", "UTF-16"),
        (b"apiVersion: v1\nkind: Pod\nmetadata:\n  name: caf\xe9\n", "invalid UTF-8"),
    ],
)
def test_bad_encodings(raw, needle):
    text, finding = decode(raw, "x.yaml")
    assert text is None and finding.code == "YML007" and needle in finding.message


def test_bad_utf8_position():
    _, f = decode(b"a: 1\nbb: caf\xe9\n", "x.yaml")
    assert (f.span.line, f.span.col) == (2, 8)


def test_bom_is_dropped():
    text, f = decode(b"\xef\xbb\xbfapiVersion: v1\n", "x.yaml")
    assert f is None and text.startswith("apiVersion")


def test_json_with_tabs():
    r = load('{\n\t"apiVersion": "v1",\n\t"kind": "Pod",\n\t"metadata": {"name": "j"}\n}\n', name="p.json")
    assert r.objects[0].name == "j"


def test_run_survives_unreadable_inputs(tmp_path):
    (tmp_path / "ok.yaml").write_text(POD)
    (tmp_path / "big.yaml").write_text(POD + "# " + "x" * 2000 + "\n")
    (tmp_path / "dir.yaml").mkdir()
    (tmp_path / "dir.yaml" / "inner.yml").write_text(POD)
    os.mkfifo(tmp_path / "fifo.yaml")
    (tmp_path / "loop").symlink_to(tmp_path)
    s = Settings(root=str(tmp_path))
    s.limits = Limits(max_file_bytes=1000)
    result = lint([str(tmp_path)], s)
    by_file = {f.file.rsplit("/", 1)[-1]: f.code for f in result.findings}
    assert by_file["big.yaml"] == "YML006"
    assert by_file["fifo.yaml"] == "YML009"
    names = sorted(f.path.rsplit("/", 1)[-1] for f in result.files)
    assert names == ["big.yaml", "fifo.yaml", "inner.yml", "ok.yaml"]


def test_unreadable_file(tmp_path):
    if os.geteuid() == 0:
        pytest.skip("root can read anything")
    p = tmp_path / "secret.yaml"
    p.write_text(POD)
    p.chmod(0)
    result = lint([str(p)], Settings(root=str(tmp_path)))
    assert [f.code for f in result.findings] == ["YML009"]


CRD = """apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  annotations:
    x: y
  name: widgets.example.com
spec:
  group: example.com
  names: {kind: Widget, plural: widgets}
"""


def test_crd_documents_are_counted_but_not_parsed():
    text = "# header\n---\n" + CRD + "---\n" + POD + "---\n---\n" + CRD.replace("widgets", "gadgets") + "---\n" + POD
    r = load(text)
    assert not r.findings
    got = [(o.doc_index, o.kind, o.name, o.span(("metadata", "name")).line) for o in r.objects]
    assert got == [
        (0, "CustomResourceDefinition", "widgets.example.com", 8),
        (1, "Pod", "p", 16),
        (3, "CustomResourceDefinition", "gadgets.example.com", 28),
        (4, "Pod", "p", 36),
    ]
    # same answer as parsing the whole stream
    import ailint.engine.load as L
    import yaml as _yaml

    whole = [d for d in _yaml.safe_load_all(text) if d]
    assert [d["kind"] for d in whole] == [o.kind for o in r.objects]
    assert r.documents == 4 and L._CRD_KIND_RE.search(text)


def test_syntax_error_after_a_crd_keeps_its_line():
    r = load(CRD + "---\n" + POD + '---\nmetadata:\n  name: "broken\n')
    assert [o.kind for o in r.objects] == ["CustomResourceDefinition", "Pod"]
    assert r.findings[0].code == "YML001" and r.findings[0].span.line >= 21


def test_document_starts_are_the_lines_a_multiline_regex_finds():
    """`document_starts` replaced `^---(?=[ \\t\\r\\n]|$)` (re.M) for speed: the same answer
    on every edge (start and end of text, CR line ends, `----`, `---x`, indented markers)."""
    import random
    import re

    from ailint.engine.load import document_starts

    pattern = re.compile(r"^---(?=[ \t\r\n]|$)", re.M)
    pieces = ["---", "\n", "\r\n", "-", "--", " ", "\t", "x", "---x", "----", "--- #c", "a: 1", "  ---"]
    rng = random.Random(7)
    texts = ["", "---", "--", "---\n", "\n---", "a\n---", "a\n----\n---x\n--- y\n---\t\n---\r\n"]
    texts += ["".join(rng.choice(pieces) for _ in range(rng.randint(1, 40))) for _ in range(3000)]
    for text in texts:
        assert document_starts(text) == [m.start() for m in pattern.finditer(text)], repr(text)


SHARED_SUBTREES = """apiVersion: v1
kind: Pod
metadata: {name: a}
spec:
  containers:
    - name: c
      image: vllm/vllm-openai:v0.8.5
      resources: {limits: {nvidia.com/gpu: 1}, requests: {cpu: "1"}}
---
apiVersion: v1
kind: Pod
metadata: {name: b}
spec:
  containers:
    - name: c
      image: vllm/vllm-openai:v0.8.5
      resources: {limits: {nvidia.com/gpu: 1}, requests: {cpu: 1}}
      args: [1, 1.0, true, "1", ~]
"""


@pytest.fixture
def sharing():
    """Equal subtrees kept once, as in a bounded run, for the test's parses."""
    from ailint.core import yamldata

    yamldata.share_subtrees(True)
    yield yamldata
    yamldata.share_subtrees(False)


def test_identical_subtrees_are_kept_once_and_types_stay_apart(sharing):
    """In a bounded run equal subtrees of two documents are one object (the memory of a
    large run), but a quoted "1" is not the number 1, and 1, 1.0 and true stay three values."""
    a, b = load(SHARED_SUBTREES).objects
    ra = a.data["spec"]["containers"][0]["resources"]
    rb = b.data["spec"]["containers"][0]["resources"]
    assert ra["limits"] is rb["limits"]  # {nvidia.com/gpu: 1} in both
    assert ra["requests"] is not rb["requests"] and ra["requests"] == {"cpu": "1"} and rb["requests"] == {"cpu": 1}
    args = b.data["spec"]["containers"][0]["args"]
    assert [type(x) for x in args] == [int, float, bool, str, type(None)]
    # the spans stay each object's own
    assert a.span(("spec", "containers", 0, "resources", "limits")).line == 8
    assert b.span(("spec", "containers", 0, "resources", "limits")).line == 17


def test_subtrees_are_shared_only_in_a_bounded_run():
    """Below the bounded threshold memory is no limit, and sharing would cost 7% of the parse."""
    a, b = load(SHARED_SUBTREES).objects
    assert (
        a.data["spec"]["containers"][0]["resources"]["limits"] == b.data["spec"]["containers"][0]["resources"]["limits"]
    )
    assert (
        a.data["spec"]["containers"][0]["resources"]["limits"]
        is not b.data["spec"]["containers"][0]["resources"]["limits"]
    )


@pytest.mark.skipif(not hasattr(os, "fork") or (os.cpu_count() or 1) < 2, reason="needs fork and 2 cores")
def test_a_bounded_runs_worker_files_share_the_parents_strings_and_subtrees(sharing, tmp_path, monkeypatch):
    """Unpickling makes a copy of each string and subtree per chunk a worker sends: in a
    bounded run the parent takes its files' data as its own parse shares it, so equal
    subtrees are one object whichever process parsed them (on the 100 MB tree, 113 to 93 MiB
    when the bundle phase forks), and the data stays equal, types apart."""
    from ailint.engine import parallel
    from ailint.engine.run import Engine
    from ailint.engine.sources import Candidate

    real = parallel.checked_for_parent

    def marked(*args):  # (in the worker) its objects say where they were parsed
        files = real(*args)
        for fr in files:
            for o in fr.objects:
                o.carried = "worker"
        return files

    monkeypatch.setattr(parallel, "checked_for_parent", marked)
    cands = []
    for i in range(96):
        p = tmp_path / f"m{i}.yaml"
        p.write_text(
            SHARED_SUBTREES.replace("name: a", f"name: a{i}").replace("name: b", f"name: b{i}"), encoding="utf-8"
        )
        cands.append(Candidate(str(p), p.name))
    settings = Settings(root=str(tmp_path))
    engine = Engine(settings, [], bounded=True)
    files = parallel.run_parallel(cands, settings, engine, 2)
    objs = [o for fr in files for o in fr.objects]
    assert len(objs) == 192
    assert any(o.carried == "worker" for o in objs) and any(o.carried is None for o in objs), "both parsed files"
    limits = {id(o.data["spec"]["containers"][0]["resources"]["limits"]) for o in objs}
    assert len(limits) == 1  # {nvidia.com/gpu: 1}: one object in the whole run
    kinds = {id(o.kind) for o in objs}
    assert len(kinds) == 1  # `Pod`, interned as the parent's own parse interns it
    one = [o.data for o in load(SHARED_SUBTREES).objects]
    for fr in files:
        a, b = (o.data for o in fr.objects)
        assert a["spec"] == one[0]["spec"] and b["spec"] == one[1]["spec"]
        args = b["spec"]["containers"][0]["args"]
        assert [type(x) for x in args] == [int, float, bool, str, type(None)]


def test_a_workers_cache_entry_holds_the_data_its_objects_hold_once_taken(sharing):
    """A worker makes each file's results-cache entry (`file_out`) beside its objects: once
    the parent takes the objects' data as its own, the entry must hold that data too, or the
    parent keeps the unpickled copy beside it until the pack is written (the 100 MB tree's
    first run with the cache: 228 to 206 MiB at its peak)."""
    import pickle

    from ailint.engine import cache, parallel

    fr = load(SHARED_SUBTREES)
    fr.pack_entry = cache.file_out(fr, tables=False)
    (got,) = parallel._reshared([pickle.loads(pickle.dumps(fr))])
    assert [o.data for o in got.objects] == [o.data for o in fr.objects]
    assert all(e[1] is o.data for e, o in zip(got.pack_entry[2], got.objects, strict=True))
    assert got.pack_entry[3:] == fr.pack_entry[3:] and got.pack_entry[:2] == fr.pack_entry[:2]


def test_the_table_of_shared_subtrees_is_bounded_and_forgotten_after_a_run(sharing, tmp_path, monkeypatch):
    yamldata = sharing
    monkeypatch.setattr(yamldata, "SHARED_LIMIT", 8)
    distinct = "\n---\n".join(
        f"apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: m{i}}}\ndata: {{k: v{i}}}" for i in range(20)
    )
    load(distinct)
    assert 0 < len(yamldata._SHARED) <= 8
    (tmp_path / "p.yaml").write_text(SHARED_SUBTREES, encoding="utf-8")
    result = lint([str(tmp_path)], Settings(), bounded=True)
    assert result.files and not yamldata._SHARED  # the run's objects are not held past it
    assert not yamldata._sharing  # and the next run, not bounded, shares nothing


def _shared_key(value):
    """The key `yamldata._shared` filed `value` under, computed from what it holds now."""
    pairs = value.items() if isinstance(value, dict) else enumerate(value)
    key = [value.__class__]
    for k, v in pairs:
        key += [k, v.__class__, id(v) if v.__class__ in (dict, list) else v]
    return tuple(key)


def test_nothing_in_a_run_mutates_parsed_data(monkeypatch):
    """Equal subtrees are one object (and an alias `*x` shares its value), so a rule, adapter,
    fix or pass that changed parsed data in place would change every object holding it. Every
    fixture is linted with all rules in one process, the table kept, and each shared subtree
    must still hold what it was filed under."""
    from ailint.core import yamldata
    from conftest import ROOT

    monkeypatch.setattr(yamldata, "SHARED_LIMIT", 1 << 30)
    monkeypatch.setattr(yamldata, "share_subtrees", lambda on: setattr(yamldata, "_sharing", on))
    try:
        result = lint([str(ROOT / "fixtures")], Settings(select=["ALL"]), jobs=1, cache=False, bounded=True)
        assert len(result.files) > 900 and len(yamldata._SHARED) > 10_000
        changed = [value for key, value in yamldata._SHARED.items() if _shared_key(value) != key]
        assert not changed, changed[:5]
    finally:
        yamldata._sharing = False
        yamldata._SHARED.clear()


def test_a_pod_merged_from_a_shared_subtree_writes_through_nothing(sharing):
    """A runtime's `requests` and `limits` of the same values are one dict once shared (and
    an alias `limits: *r` is one dict in any run): overriding the limits in the merged pod
    must leave its requests, and the parsed runtime, as they were."""
    from ailint.core.model import get_in
    from ailint.domain.workloads.kserve import merge_container

    (pod,) = load(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n    - name: c\n"
        "      resources:\n        requests: {nvidia.com/gpu: 4}\n        limits: {nvidia.com/gpu: 4}\n"
    ).objects
    runtime = pod.data["spec"]["containers"][0]
    assert get_in(runtime, ("resources", "requests")) is get_in(runtime, ("resources", "limits"))
    merged = merge_container(runtime, {"resources": {"limits": {"nvidia.com/gpu": 2}}})
    assert merged["resources"] == {"requests": {"nvidia.com/gpu": 4}, "limits": {"nvidia.com/gpu": 2}}
    assert runtime["resources"]["requests"] == {"nvidia.com/gpu": 4}
