"""Schema validation (SCH): the CRD schema generator, its freshness, the compiled fast
checker against jsonschema, and the rate and content of SCH findings on the corpus."""

from __future__ import annotations

import json
import pathlib
import shutil
import subprocess
import sys

import pytest
from ailint.engine.config import Settings
from ailint.engine.run import lint
from ailint.schema import validate as sch
from ailint.schemas import generate as gen
from conftest import CORPUS, CRDS, ROOT, needs_shared

DATA = pathlib.Path(__file__).resolve().parent / "data"
SCH_CODES = {f"SCH00{i}" for i in range(1, 9)}


def _settings(**kw) -> Settings:
    s = Settings(root=str(ROOT))
    s.select = ["SCH"]
    for k, v in kw.items():
        setattr(s, k, v)
    return s


def _lint_text(tmp_path: pathlib.Path, text: str, **kw):
    f = tmp_path / "case.yaml"
    f.write_text(text, encoding="utf-8")
    return [x for x in lint([str(f)], _settings(**kw)).findings if x.code.startswith("SCH")]


# -- the generator ---------------------------------------------------------------------------
def test_generator_on_small_crd(tmp_path):
    crds = tmp_path / "crds"
    crds.mkdir()
    shutil.copy(DATA / "crd_small.yaml", crds / "example.com_widgets.yaml")
    (tmp_path / "SOURCES.tsv").write_text(
        "repo\tcommit\tpath\tcopy\nexample/widgets\tabc123\tconfig/crd/widgets.yaml\t"
        "ref/crds/example.com_widgets.yaml\n",
        encoding="utf-8",
    )
    files = gen.generate(str(crds))
    # one file per served version; v1alpha1 is not served
    assert set(files) == {"example.com_v1_Widget.json", "example.com_v1beta1_Widget.json", "index.json", "README.md"}
    text = files["example.com_v1_Widget.json"]
    assert "description" not in text and "x-kubernetes-validations" not in text
    s = json.loads(text)
    spec = s["properties"]["spec"]
    assert s["additionalProperties"] is False and spec["additionalProperties"] is False
    assert spec["required"] == ["mode", "size"]
    assert spec["properties"]["mode"]["enum"] == ["Fast", "Slow"]
    assert spec["properties"]["size"] == {"type": "integer", "default": 1, "minimum": 1, "exclusiveMaximum": 100}
    assert spec["properties"]["memory"] == {"type": ["integer", "string"], "format": "quantity"}
    assert spec["properties"]["port"] == {"type": ["integer", "string"]}
    assert "additionalProperties" not in spec["properties"]["config"]  # preserve-unknown-fields
    assert spec["properties"]["labels"]["additionalProperties"] == {"type": "string"}
    assert set(spec["properties"]["template"]["properties"]) == {"apiVersion", "kind", "metadata"}
    # identical subtrees (descriptions dropped) are stored once
    assert spec["properties"]["primary"] == spec["properties"]["secondary"]
    assert spec["properties"]["primary"]["$ref"].startswith("#/$defs/")
    assert s["properties"]["metadata"] == {"$ref": "#/$defs/ObjectMeta"}
    index = json.loads(files["index.json"])
    assert index["example.com"]["Widget"]["versions"] == ["v1", "v1beta1"]  # storage version first
    assert index["example.com"]["Widget"]["deprecated"] == ["v1beta1"]
    readme = files["README.md"]
    assert "https://github.com/example/widgets" in readme and "abc123" in readme and "Apache-2.0" in readme
    # the generated schema validates as intended, and the fast checker agrees with jsonschema
    import jsonschema

    v = jsonschema.Draft202012Validator(s, format_checker=sch._format_checker())
    check = sch.Compiler(s).compile(s)
    good = {
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "metadata": {"name": "w", "labels": {"a": "b"}},
        "spec": {
            "mode": "Fast",
            "size": 3,
            "memory": "2Gi",
            "port": "http",
            "config": {"any": 1},
            "template": {"apiVersion": "v1", "kind": "Pod", "spec": {"x": 1}},
            "primary": {"host": "a", "port": 80},
        },
    }
    assert not list(v.iter_errors(good)) and check(good)
    bad = json.loads(json.dumps(good))
    bad["spec"].update(mode="fast", size=100, memory="2 GB", nmae="x")
    bad["spec"]["primary"]["hots"] = "a"
    kinds = sorted(e.validator for e in v.iter_errors(bad))
    assert kinds == ["additionalProperties", "additionalProperties", "enum", "exclusiveMaximum", "format"]
    assert not check(bad)


def test_generator_check_mode_reports_stale(tmp_path):
    crds = tmp_path / "crds"
    crds.mkdir()
    shutil.copy(DATA / "crd_small.yaml", crds / "example.com_widgets.yaml")
    out = tmp_path / "out"
    assert gen.main(["--crds", str(crds), "--out", str(out)]) == 0
    assert gen.main(["--crds", str(crds), "--out", str(out), "--check"]) == 0
    (out / "example.com_v1_Widget.json").write_text("{}", encoding="utf-8")
    assert gen.main(["--crds", str(crds), "--out", str(out), "--check"]) == 1


@pytest.mark.skipif(not CRDS.is_dir(), reason="../shared/ref/crds is absent")
def test_committed_crd_schemas_are_fresh():
    files = gen.generate(str(CRDS))
    stale = gen.stale(str(ROOT / "schemas" / "crds"), files)
    assert not stale, f"schemas/crds is stale ({stale}); run `python schemas/generate.py` and commit the result"


def test_crd_schemas_ship_as_package_data():
    from importlib import resources

    base = resources.files("ailint.schemas").joinpath("crds")
    index = json.loads(base.joinpath("index.json").read_text("utf-8"))
    for group, kinds in index.items():
        for kind, entry in kinds.items():
            for version, fname in entry["files"].items():
                data = json.loads(base.joinpath(fname).read_text("utf-8"))
                assert data["x-kubernetes-group-version-kind"] == {"group": group, "version": version, "kind": kind}
    for must in (
        "karpenter.sh",
        "karpenter.k8s.aws",
        "ray.io",
        "leaderworkerset.x-k8s.io",
        "jobset.x-k8s.io",
        "trainer.kubeflow.org",
        "inference.networking.k8s.io",
        "kueue.x-k8s.io",
    ):
        assert must in index


# -- behaviour -----------------------------------------------------------------------------------
HPA = """apiVersion: autoscaling/v2beta2
kind: HorizontalPodAutoscaler
metadata: {name: x}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: x}
  maxReplicas: 2
"""


def test_kube_version_selects_the_schemas(tmp_path):
    assert [f.code for f in _lint_text(tmp_path, HPA)] == ["SCH006"]
    assert _lint_text(tmp_path, HPA, kube_version="1.25") == []  # still served in 1.25
    assert [f.code for f in _lint_text(tmp_path, HPA, kube_version="v1.40.1")] == ["SCH006"]  # newest shipped


def test_no_schema_turns_the_family_off(tmp_path):
    text = "apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec:\n  containers:\n    - image: busybox\n"
    assert [f.code for f in _lint_text(tmp_path, text)] == ["SCH004"]
    assert _lint_text(tmp_path, text, schema=False) == []


def test_odd_shapes_never_crash(tmp_path):
    text = "\n---\n".join(
        [
            "apiVersion: apps/v1\nkind: Deployment\nmetadata: []\nspec: 3",
            "apiVersion: karpenter.sh/v1\nkind: NodePool\nspec:\n  template:\n    spec:\n      requirements: {a: 1}",
            "apiVersion: karpenter.k8s.aws/v1\nkind: EC2NodeClass\nspec:\n  amiSelectorTerms: [1, null, {alias: 3}]",
            "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ResourceFlavor\nspec:\n  tolerations: [x, {operator: null}]",
            "apiVersion: ray.io/v1\nkind: RayCluster\nspec: null",
            "apiVersion: v1\nkind: ConfigMap\ndata: {1: 2}",
        ]
    )
    f = tmp_path / "odd.yaml"
    f.write_text(text, encoding="utf-8")
    s = _settings()
    s.select = ["SCH", "AIL003"]
    found = lint([str(f)], s).findings
    assert not [x for x in found if x.code == "AIL003"]
    assert {x.code for x in found} <= SCH_CODES | {"YML008"}


def test_importing_the_module_loads_no_validator():
    code = "import sys, ailint.schema.validate; assert 'jsonschema' not in sys.modules and 'referencing' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)


def _all_findings(paths, force_slow: bool):
    """SCH findings with the compiled checker (and `ailint.schema.errors`), or with jsonschema
    on every object."""
    if force_slow:
        saved = sch.Compiler.compile, sch._Judge.iter_errors
        sch.Compiler.compile = lambda self, node: sch._never_unless_null  # type: ignore[assignment]
        sch._Judge.iter_errors = lambda self, data: self.make().iter_errors(data)  # type: ignore[method-assign]
        sch._CORE.clear()
        sch._CRDS = None
    try:
        res = lint([str(p) for p in paths], _settings())
        return sorted((f.file, f.span.line, f.code, f.message) for f in res.findings if f.code.startswith("SCH"))
    finally:
        if force_slow:
            sch.Compiler.compile, sch._Judge.iter_errors = saved  # type: ignore[method-assign]
            sch._CORE.clear()
            sch._CRDS = None


def test_fast_checker_hides_no_error():
    """Sending every object to jsonschema gives the same findings as the compiled pre-check."""
    paths = sorted((ROOT / "fixtures").glob("SCH00*/*.yaml"))
    if CORPUS.is_dir():
        paths += sorted(CORPUS.glob("ray-project__kuberay/plain/ray-operator__config__samples__*.yaml"))[:40]
        paths += sorted(CORPUS.glob("aws__karpenter-provider-aws/plain/examples__*.yaml"))
    assert _all_findings(paths, force_slow=False) == _all_findings(paths, force_slow=True)


# -- the corpus ---------------------------------------------------------------------------------
# Every SCH finding on ../shared/corpus/*/plain, read and judged: the file is wrong in each.
REVIEWED = {
    # Custom-resource versions removed upstream (the CRDs in ../shared/ref serve only the newer one):
    # MPIJob kubeflow.org/v1alpha2 (served: v2beta1), KServe InferenceService v1alpha2 (served: v1beta1)
    ("Container-Root__eks__deployment__kubeflow__mpi-operator__test__nccl-tests-efa.yaml", "SCH006"),
    ("docs__samples__explanation__aif__germancredit__bias-v1alpha1.yaml", "SCH006"),
    ("docs__samples__storage__pvc__mnist-pvc.yaml", "SCH006"),
    ("test__benchmark__tf_flowers.yaml", "SCH006"),
    ("test__benchmark__tf_flowers_hpa.yaml", "SCH006"),
    # llmaz Service sample written for an older schema (multiModelsClaims, workloadTemplate.replicas)
    ("config__samples__inference_v1alpha1_service.yaml", "SCH001"),
    ("config__samples__inference_v1alpha1_service.yaml", "SCH004"),
    # KServe samples of removed features: the alibi explainer (gone from the v1beta1 CRD) and
    # `transformer.custom` (the v1alpha2 shape); `cpu: 0.1` as a YAML number where the CRD's
    # int-or-string schema takes an integer or a string; `nodeName` at spec level (it belongs in a component)
    ("docs__samples__explanation__alibi__cifar10__cifar10.yaml", "SCH001"),
    ("docs__samples__explanation__alibi__cifar10__cifar10.yaml", "SCH002"),
    ("docs__samples__explanation__alibi__income__income.yaml", "SCH001"),
    ("docs__samples__explanation__alibi__income__income.yaml", "SCH002"),
    ("docs__samples__explanation__alibi__moviesentiment__moviesentiment.yaml", "SCH001"),
    ("docs__samples__explanation__alibi__moviesentiment__moviesentiment.yaml", "SCH002"),
    ("docs__samples__explanation__alibi__moviesentiment__moviesentiment2.yaml", "SCH001"),
    ("docs__samples__explanation__alibi__moviesentiment__moviesentiment2.yaml", "SCH002"),
    ("docs__samples__rollout-strategy__rollout-strategy-example.yaml", "SCH001"),
    ("docs__samples__v1beta1__torchserve__v1__bloom__bloom-560m.yaml", "SCH001"),
    # removed core APIs
    ("Container-Root__eks__deployment__aws-load-balancer-controller__v2_1_3_template.yaml", "SCH006"),
    ("Container-Root__eks__deployment__kubernetes-dashboard__eks-admin-service-account.yaml", "SCH006"),
    ("Container-Root__eks__ops__templates__hpa.yaml", "SCH006"),
    ("docs__samples__multimodelserving__triton__minio.yaml", "SCH006"),
    ("example__kubecon-2019-china__task-priority__high-priority.yaml", "SCH006"),
    ("example__kubecon-2019-china__task-priority__normal-priority.yaml", "SCH006"),
    # Karpenter v1alpha5 Provisioner / v1alpha1 AWSNodeTemplate
    ("Container-Root__eks__deployment__karpenter__provisioner-efa.yaml", "SCH006"),
    # `nodeClassRef.group: karpenter.k8s.aws/v1` (a version in the group)
    ("examples__v1__windows-custom-userdata.yaml", "SCH008"),
    # `allowPrivilegedEscalation` typo in Karpenter's example workloads
    ("examples__workloads__arm64.yaml", "SCH001"),
    ("examples__workloads__disruption-budget.yaml", "SCH001"),
    ("examples__workloads__gpu-amd.yaml", "SCH001"),
    ("examples__workloads__gpu-nvidia.yaml", "SCH001"),
    # RayService: schedulerName on the pod template instead of its spec; v1alpha1 serveConfig
    ("blueprints__inference__llama2-13b-chat-rayserve-inf2__ray-service-llama2.yaml", "SCH001"),
    ("infra__jark-stack__src__service__ray-service.yaml", "SCH001"),
    # NodePool v1 with the v1beta1 `kubelet` block
    ("infra__terraform__manifests__karpenter__nodepool-local-provisioner.yaml", "SCH001"),
    # PersistentVolume `volumeID: {volume-id}` (an unfilled placeholder parsed as a mapping)
    ("docs__samples__v1beta1__custom__torchserve__pv.yaml", "SCH002"),
}


@needs_shared
def test_corpus_sch_rate_and_every_finding_reviewed():
    res = lint(sorted(str(p) for p in CORPUS.glob("*/plain")), _settings())
    sch_findings = [f for f in res.findings if f.code.startswith("SCH")]
    objects = {(f.file, f.object_ref.document if f.object_ref else None) for f in sch_findings}
    assert len(objects) <= 0.02 * res.object_count, f"{len(objects)} of {res.object_count} objects"
    unreviewed = sorted({(pathlib.Path(f.file).name, f.code) for f in sch_findings} - REVIEWED)
    assert not unreviewed, f"new SCH findings on the corpus: read them and judge file or schema: {unreviewed}"


def test_sch_suppressions_are_not_unused_under_no_schema(tmp_path):
    text = (
        "apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec:\n  containers:\n    - name: a\n"
        "      image: busybox\n      resource: {}  # ailint: ignore[SCH001] typo kept on purpose\n"
    )
    f = tmp_path / "case.yaml"
    f.write_text(text, encoding="utf-8")
    for on in (True, False):
        s = _settings(schema=on)
        s.select = ["SCH", "AIL"]
        res = lint([str(f)], s)
        assert [x.code for x in res.findings] == []
        assert [x.code for x in res.suppressed] == (["SCH001"] if on else [])


def _shipped_definitions() -> list[pathlib.Path]:
    import kubernetes_validate

    root = pathlib.Path(kubernetes_validate.__file__).parent / "kubernetes-json-schema"
    return sorted(root.glob("*-local-strict/_definitions.json"))


@pytest.mark.parametrize("path", _shipped_definitions(), ids=lambda p: p.parent.name)
def test_lazy_definitions_read_what_a_whole_decode_reads(path):
    """Each definition decoded alone, and the group/version/kind index read without
    decoding them, equal the whole file decoded at once (every shipped version)."""
    from ailint.schema.lazydefs import LazyDefinitions, load_definitions

    whole = json.loads(path.read_text(encoding="utf-8"))
    lazy = load_definitions(str(path))
    assert isinstance(lazy["$defs"], LazyDefinitions), "the shipped layout is the one the index reads"
    assert list(lazy["$defs"]) == list(whole["$defs"])
    assert {k: v for k, v in lazy.items() if k != "$defs"} == {k: v for k, v in whole.items() if k != "$defs"}
    assert dict(lazy["$defs"].gvk_entries()) == {
        n: d["x-kubernetes-group-version-kind"]
        for n, d in whole["$defs"].items()
        if "x-kubernetes-group-version-kind" in d
    }
    assert sch._gvk_index(lazy) == sch._gvk_index(whole)
    assert dict(lazy["$defs"].items()) == whole["$defs"]


@pytest.mark.parametrize("path", _shipped_definitions()[-2:], ids=lambda p: p.parent.name)
def test_a_kept_scan_reads_what_a_whole_decode_reads(path, tmp_path, monkeypatch):
    """The scan kept in the cache folder gives the same definitions, group/version/kind
    entries and top-level keys as the whole file decoded; the second load uses it."""
    from ailint.schema.lazydefs import load_definitions

    monkeypatch.setenv("AILINT_CACHE_DIR", str(tmp_path / "c"))
    monkeypatch.delenv("AILINT_NO_CACHE", raising=False)
    whole = json.loads(path.read_text(encoding="utf-8"))
    first = load_definitions(str(path))
    assert first["$defs"]._gvk is None, "nothing kept yet: scanned"
    assert [n for n in (tmp_path / "c").iterdir() if n.name.startswith("defs-")]
    kept = load_definitions(str(path))
    assert kept["$defs"]._gvk is not None, "the kept scan was used"
    assert list(kept["$defs"]) == list(whole["$defs"])
    assert {k: v for k, v in kept.items() if k != "$defs"} == {k: v for k, v in whole.items() if k != "$defs"}
    assert dict(kept["$defs"].gvk_entries()) == dict(first["$defs"].gvk_entries())
    assert sch._gvk_index(kept) == sch._gvk_index(whole)
    assert dict(kept["$defs"].items()) == whole["$defs"]


def test_a_kept_scan_is_not_used_when_a_definition_in_the_middle_moved(tmp_path, monkeypatch):
    """The kept scan is checked at a sample of its names (the first, every 16th and the
    last): a definition renamed in the middle of the file, with another one shortened so
    that the size is the same, moves the names after it, and a sampled one sees it."""
    import os

    from ailint.schema.lazydefs import load_definitions

    monkeypatch.setenv("AILINT_CACHE_DIR", str(tmp_path / "c"))
    monkeypatch.delenv("AILINT_NO_CACHE", raising=False)
    f = tmp_path / "d.json"
    old = {"$defs": {f"d{i:02d}": {"type": "object", "description": "x" * 8} for i in range(40)}, "$id": "x"}
    new = {"$defs": dict(old["$defs"]), "$id": "x"}
    new["$defs"] = {("d005" if k == "d05" else k): v for k, v in old["$defs"].items()}
    new["$defs"]["d30"] = {"type": "object", "description": "x" * 7}  # one character less
    f.write_text(json.dumps(old, indent=2))
    stamp = f.stat()
    load_definitions(str(f))
    assert load_definitions(str(f))["$defs"]._gvk is not None, "kept and used"
    f.write_text(json.dumps(new, indent=2))
    assert f.stat().st_size == stamp.st_size
    os.utime(f, ns=(stamp.st_atime_ns, stamp.st_mtime_ns))
    got = load_definitions(str(f))
    assert got["$defs"]._gvk is None and dict(got["$defs"].items()) == new["$defs"]


def test_a_kept_scan_that_no_longer_fits_its_file_is_not_used(tmp_path, monkeypatch):
    """A file changed in place with the same size and mtime (its names moved), a kept scan
    cut short or written under another folder's key: the file is scanned again, and what is
    read is the file as it is now. `AILINT_NO_CACHE=1` keeps nothing."""
    import os

    from ailint.schema.lazydefs import load_definitions

    cache = tmp_path / "c"
    monkeypatch.setenv("AILINT_CACHE_DIR", str(cache))
    monkeypatch.delenv("AILINT_NO_CACHE", raising=False)
    f = tmp_path / "d.json"
    old = {"$defs": {"a.Bb": {"type": "object"}, "c.D": {"type": "string"}}, "$id": "x"}
    new = {"$defs": {"a.B": {"type": "objects"}, "c.D": {"type": "string"}}, "$id": "x"}
    f.write_text(json.dumps(old, indent=2))
    stamp = f.stat()
    load_definitions(str(f))
    assert load_definitions(str(f))["$defs"]._gvk is not None
    f.write_text(json.dumps(new, indent=2))
    assert f.stat().st_size == stamp.st_size
    os.utime(f, ns=(stamp.st_atime_ns, stamp.st_mtime_ns))
    got = load_definitions(str(f))
    assert got["$defs"]._gvk is None and dict(got["$defs"].items()) == new["$defs"]
    f.write_text(json.dumps(old, indent=2))
    os.utime(f, ns=(stamp.st_atime_ns, stamp.st_mtime_ns))
    kept = next(p for p in cache.iterdir() if p.name.startswith("defs-"))
    other = tmp_path / "other"
    monkeypatch.setenv("AILINT_CACHE_DIR", str(other))
    load_definitions(str(f))
    foreign = next(p for p in other.iterdir() if p.name.startswith("defs-")).read_bytes()
    monkeypatch.setenv("AILINT_CACHE_DIR", str(cache))
    for bad in (kept.read_bytes()[:20], foreign, b""):
        kept.write_bytes(bad)
        got = load_definitions(str(f))
        assert got["$defs"]._gvk is None and dict(got["$defs"].items()) == old["$defs"]
    monkeypatch.setenv("AILINT_NO_CACHE", "1")
    monkeypatch.setenv("AILINT_CACHE_DIR", str(tmp_path / "none"))
    assert dict(load_definitions(str(f))["$defs"].items()) == old["$defs"]
    assert not (tmp_path / "none").exists()


def test_definitions_of_another_layout_are_decoded_whole(tmp_path):
    from ailint.schema.lazydefs import LazyDefinitions, load_definitions

    doc = {"$defs": {"a.B": {"type": "object", "x-kubernetes-group-version-kind": [{"kind": "B"}]}}, "$id": "x"}
    for text in (json.dumps(doc), json.dumps(doc, indent=4)):
        (tmp_path / "d.json").write_text(text)
        got = load_definitions(str(tmp_path / "d.json"))
        assert not isinstance(got["$defs"], LazyDefinitions) and got == doc
    (tmp_path / "d.json").write_text(json.dumps(doc, indent=2))
    got = load_definitions(str(tmp_path / "d.json"))
    assert (
        isinstance(got["$defs"], LazyDefinitions) and got["$id"] == "x" and got["$defs"]["a.B"] == doc["$defs"]["a.B"]
    )


def test_reporting_a_field_a_later_version_adds_decodes_only_the_definitions_it_reaches(tmp_path):
    """A failing object is reported through jsonschema and the "Kubernetes 1.34 added it"
    hint, and neither decodes every core definition (they are 700, most never reached)."""
    pod = tmp_path / "pod.yaml"
    pod.write_text(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: x}\n"
        "spec:\n  hostnameOverride: h\n  containers:\n    - {name: c, image: busybox}\n",
        encoding="utf-8",
    )
    code = f"""
import sys
from ailint.engine.config import Settings
from ailint.engine.run import lint
from ailint.schema import validate
found = [f for f in lint([{str(pod)!r}], Settings(kube_version="1.33")).findings if f.code == "SCH001"]
assert len(found) == 1 and "Kubernetes 1.34 added it" in found[0].message, found
defs = validate.core_store("1.33").defs["$defs"]
print(len(defs._decoded), len(defs))
"""
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout.split()
    decoded, total = int(out[0]), int(out[1])
    assert total > 500 and decoded < total // 4, (decoded, total)
