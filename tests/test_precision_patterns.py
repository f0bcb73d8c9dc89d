"""Precision patterns that fixtures cannot show: spans inside block scalars, controller labels,
and references among alternatives of one object kept in several files (blueprints)."""

from __future__ import annotations

from pathlib import Path

import pytest
from ailint.core.model import SourceFile
from ailint.domain.extract import pod_templates
from ailint.domain.pod_labels import controller_labels, may_select
from ailint.engine.config import Settings
from ailint.engine.load import load_text
from ailint.engine.run import lint

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"

SCRIPT = """apiVersion: v1
kind: ConfigMap
metadata:
  name: env
data:
  app.env: |
    OPENAI_API_KEY=sk-proj-Zq8vR3kLmN7pX2wT9yB4cD6fG1hJ5sA0
    BACKUP_OPENAI_API_KEY=sk-proj-Zq8vR3kLmN7pX2wT9yB4cD6fG1hJ5sA0
"""

OBJECTS = """apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata: {name: pretrain}
spec:
  replicatedJobs:
    - name: workers
      replicas: 2
      template:
        spec:
          template:
            spec:
              containers: [{name: t, image: x}]
---
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: ft}
spec:
  pytorchReplicaSpecs:
    Worker:
      template:
        spec:
          containers: [{name: pytorch, image: x}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  template:
    metadata:
      labels: {app: web}
    spec:
      containers: [{name: w, image: x}]
"""


def test_secret_written_twice_in_a_script_is_reported_at_each_line(tmp_path: Path) -> None:
    f = tmp_path / "cm.yaml"
    f.write_text(SCRIPT, encoding="utf-8")
    result = lint([str(f)], Settings(select=["SEC007"]))
    lines = sorted(x.span.line for x in result.findings if x.code == "SEC007")
    assert lines == [7, 8]


def test_controller_labels_select_the_pods(tmp_path: Path) -> None:
    src = SourceFile(str(tmp_path / "o.yaml"), "o.yaml", OBJECTS)
    pods = {o.kind: next(pod_templates(o)) for o in load_text(src).objects}
    js, pt, dep = pods["JobSet"], pods["PyTorchJob"], pods["Deployment"]
    assert controller_labels(js)["jobset.sigs.k8s.io/replicatedjob-name"] == "workers"
    assert may_select({"jobset.sigs.k8s.io/jobset-name": "pretrain", "jobset.sigs.k8s.io/job-index": "0"}, js)
    assert not may_select({"jobset.sigs.k8s.io/jobset-name": "other"}, js)
    assert may_select({"training.kubeflow.org/job-name": "ft", "training.kubeflow.org/replica-type": "worker"}, pt)
    assert not may_select({"training.kubeflow.org/replica-type": "master"}, pt)
    assert may_select({"matchLabels": {"app": "web", "pod-template-hash": "7d4b9c"}}, dep)
    assert not may_select({"matchExpressions": [{"key": "pod-template-hash", "operator": "DoesNotExist"}]}, dep)


VARIANT = """apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: model-cache}
spec:
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 100Gi}}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: NAME}
spec:
  replicas: 1
  selector: {matchLabels: {app: llm}}
  template:
    metadata: {labels: {app: llm}}
    spec:
      containers:
        - name: vllm
          image: vllm/vllm-openai:v0.9.2
          args: ["--model", "/models/VARIANT"]
          volumeMounts: [{name: cache, mountPath: /models}]
      volumes:
        - name: cache
          persistentVolumeClaim: {claimName: model-cache}
"""


def _sto002(tmp_path: Path, first: str, second: str) -> int:
    for i, name in enumerate((first, second)):
        d = tmp_path / f"variant{i}"
        d.mkdir(parents=True)
        text = VARIANT.replace("NAME", name).replace("VARIANT", str(i))
        if i:  # the claim is defined once, beside the first variant
            text = text.split("---\n", 1)[1]
        (d / "deploy.yaml").write_text(text, encoding="utf-8")
    return sum(1 for f in lint([str(tmp_path)], Settings(select=["STO002"])).findings if f.code == "STO002")


def test_alternative_versions_of_one_object_are_not_two_workloads(tmp_path: Path) -> None:
    assert _sto002(tmp_path / "same", "llm", "llm") == 0  # tutorial variants of one Deployment
    assert _sto002(tmp_path / "two", "llm-a", "llm-b") == 2  # two workloads share the RWO claim


def test_a_config_text_the_key_prefilter_skips_has_no_secret_line() -> None:
    """`scan_config_text` skips a text when no value shape and no secret-ish key word is in
    it (`may_name_a_secret`): for every text it skips, no line would have been a hit. The
    texts mix every secret name, suffix, config word and URL name of the data with other
    keys, in `key: value`, `KEY=value`, `export` and quoted forms."""
    import random

    from ailint.core.pkgdata import load_json
    from ailint.domain import agents

    d = load_json("ailint.data", "secrets.json")
    secretish = [*d["names"], *d["url_names"], *d["config_keys"], *(f"DB{s}" for s in d["name_suffixes"])]
    plain = ["name", "replicas", "max_tokens", "log_level", "model", "port", "tok", "pass", "url", "api"]
    values = ["s3cr3t-Value-9f8e7d", "postgres://u:pw@db:5432/x", "hf_" + "a" * 34, "8080", "true", "x y"]
    rng = random.Random(11)
    skipped = hits_seen = 0
    for _ in range(3000):
        lines = []
        for _ in range(rng.randint(1, 6)):
            key = rng.choice(secretish if rng.random() < 0.3 else plain)
            key = key.lower() if rng.random() < 0.5 else key
            form = rng.choice(["{k}: {v}", "{k}={v}", "export {k}={v}", '"{k}": "{v}",', "  - {k}: '{v}'"])
            lines.append(form.format(k=key, v=rng.choice(values)))
        text = "\n".join(lines)
        hits = [h for line in text.splitlines() if (h := agents._config_line_hit(line)) is not None]
        hits_seen += bool(hits)
        if not agents._compiled()["any_shape"].search(text) and not agents.may_name_a_secret(text):
            skipped += 1
            assert hits == [], (text, hits)
            assert list(agents.scan_config_text(text)) == []
    assert skipped > 500 and hits_seen > 500  # both kinds of text were tried


def test_secret_kind_passes_over_only_entries_that_cannot_hit() -> None:
    """`secret_kind` returns early for an entry whose name is no secret or URL name and
    whose value holds no shape: its answers are those of the full sequence of checks, for
    names and values of every kind (shapes, references, placeholders, URL passwords)."""
    import random
    import re

    from ailint.core.pkgdata import load_json
    from ailint.domain import agents

    def full(name: str, value: object) -> agents.SecretHit | None:  # the checks, none skipped
        if value is None or isinstance(value, (bool, dict, list)):
            return None
        v = str(value)
        if not v.strip():
            return None
        if agents.is_reference(v) and not re.match(r"^\$\{", v.strip()):
            return None
        shape = agents.value_shape(v)
        if shape:
            return agents.SecretHit(f"the value looks like {shape}", agents.is_placeholder(v))
        c = agents._compiled()
        n = name.strip().upper()
        if n in c["url_names"]:
            m = c["url_pw"].search(v)
            if not m:
                return None
            return agents.SecretHit(
                "the URL embeds a password", agents.is_placeholder(m.group(1)) or m.group(1).startswith("$")
            )
        c_name = n and not c["not_secret"].search(n) and (n in c["names"] or n.endswith(c["suffixes"]))
        if not c_name and n not in c["url_names"]:
            return None
        if agents._not_a_secret_value(v) and not re.match(r"^\$\{", v.strip()):
            return None
        return agents.SecretHit("matched by its name", agents.is_placeholder(v))

    d = load_json("ailint.data", "secrets.json")
    names = [*d["names"], *d["url_names"], *(f"DB{s}" for s in d["name_suffixes"]), "PAD_TOKEN", "LOG_LEVEL", "x", ""]
    values = [
        "s3cr3t-Value-9f8e7d",
        "postgres://u:pw@db:5432/x",
        "redis://:${PASS}@r:6379",
        "hf_" + "a" * 34,
        "sk-proj-" + "b" * 24,
        "${TOKEN}",
        "$(cat /run/token)",
        "changeme",
        "8080",
        "true",
        "x y",
        "",
        None,
        7,
    ]
    rng = random.Random(5)
    hits = 0
    for _ in range(4000):
        name, value = rng.choice(names), rng.choice(values)
        name = name.lower() if rng.random() < 0.3 else name
        assert agents.secret_kind(name, value) == full(name, value), (name, value)
        hits += agents.secret_kind(name, value) is not None
    assert hits > 400


def _blueprints(root: Path, fixture: str, *, one_folder: bool = False) -> dict[str, Path]:
    """Two alternatives of one blueprint (a fixture's objects, the same kinds, namespaces and
    names), each in a folder of its own (or both in one folder): {variant: its file}."""
    text = (FIXTURES / fixture).read_text(encoding="utf-8")
    files = {}
    for variant in ("blue", "green"):
        d = root if one_folder else root / variant
        d.mkdir(parents=True, exist_ok=True)
        f = d / f"{variant}-{Path(fixture).name}"
        f.write_text(text, encoding="utf-8")
        files[variant] = f
    return files


def test_nearest_prefers_the_file_then_the_folder_of_the_reference() -> None:
    """Of several copies of one object (kind, namespace, name), a reference reaches the copy
    in its own file, else those in its folder, else all of them; objects of other names are
    kept as they are (a selector may reach them all), in run order (`context.nearest`)."""
    from types import SimpleNamespace

    from ailint.domain.context import nearest

    def obj(file: str, name: str = "sd") -> SimpleNamespace:
        return SimpleNamespace(file=file, kind="Service", group="", namespace_or_default="ml", name=name)

    a1, a2, b1 = obj("bp/a/x.yaml"), obj("bp/a/y.yaml"), obj("bp/b/x.yaml")
    assert nearest(a1, [b1, a2, a1]) == [a1]  # its own file
    assert nearest(obj("bp/a/z.yaml"), [b1, a2, a1]) == [a2, a1]  # its folder, in run order
    assert nearest(obj("bp/d/z.yaml"), [b1, a2]) == [b1, a2]  # no copy near: all of them
    assert nearest(obj("c.yaml"), [a1]) == [a1]  # one candidate: that one, wherever it is
    other = obj("bp/b/w.yaml", name="other")  # another object: never an alternative
    assert nearest(a1, [other, b1, a1]) == [other, a1]
    assert nearest(a1, [other, b1]) == [other, b1]
    beside = obj("bp\\a\\w.yaml")  # (Windows separators: the same folder)
    assert nearest(obj("bp\\a\\z.yaml"), [obj("bp\\b\\x.yaml"), beside]) == [beside]
    wrapped = [(b1, "b"), (a2, "a")]
    assert nearest(obj("bp/a/z.yaml"), wrapped, lambda w: w[0]) == [(a2, "a")]


def test_a_route_names_the_ray_cluster_of_its_own_blueprint(tmp_path: Path) -> None:
    """Two blueprints each define RayCluster default/raycluster-ingress and an Ingress to its
    dashboard: each Ingress's finding names the RayCluster beside it, not the other
    blueprint's copy (which sorted first, and which the message named before)."""
    for one_folder in (False, True):
        files = _blueprints(tmp_path / f"one-{one_folder}", "SEC008/separate_ingress.yaml", one_folder=one_folder)
        found = lint([str(f) for f in files.values()], Settings(select=["SEC008"])).findings
        routes = {Path(f.file).name: f.message for f in found if f.message.startswith("Ingress")}
        assert sorted(routes) == sorted(f.name for f in files.values())
        for mine, message in routes.items():
            assert f"{mine})" in message and message.count(".yaml)") == 1


def test_a_workload_is_judged_behind_the_service_of_its_own_blueprint(tmp_path: Path) -> None:
    """Two blueprints each define Deployment llm/vllm and Service llm/vllm: each workload's
    SRV007 finding names the one Service beside it (not both), and the stopgap fix on that
    Service is offered again (it is withheld when several Services are named)."""
    files = _blueprints(tmp_path, "SRV007/replicas_behind_service.yaml")
    found = [f for f in lint([str(tmp_path)], Settings(select=["SRV007"])).findings if f.code == "SRV007"]
    assert sorted(Path(f.file).name for f in found) == sorted(f.name for f in files.values())
    for f in found:
        assert f.message.count("Service llm/vllm") == 1 and f"{Path(f.file).name})" in f.message
        assert f.fix is not None and "sessionAffinity" in f.fix.title
    # the one Service beside it sets ClientIP: nothing to report, whatever the other blueprint's does
    blue = files["blue"]
    blue.write_text(
        blue.read_text().replace("  ports:\n    - port: 80", "  sessionAffinity: ClientIP\n  ports:\n    - port: 80")
    )
    found = [f for f in lint([str(tmp_path)], Settings(select=["SRV007"])).findings if f.code == "SRV007"]
    assert [Path(f.file).name for f in found] == [files["green"].name]


def test_named_reaches_the_nearest_copy_and_notes_the_read(tmp_path: Path) -> None:
    """`Context.named` resolves a by-name reference (a nodeClassRef, a configMapKeyRef, a
    VPA's targetRef) to the copy beside the referrer, in the namespace and group asked, and
    a tracking context (the results cache's) notes the kind it read."""
    from ailint.domain.context import Context
    from ailint.engine.tracking import TrackingContext

    def objects(rel: str, text: str) -> list:
        return load_text(SourceFile(str(tmp_path / rel), rel, text)).objects

    cm = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: env, namespace: NS}\ndata: {k: FILE}\n"
    pod = "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: ml}\nspec: {containers: [{name: c, image: x}]}\n"
    a_cm, a_pod = objects("a/x.yaml", cm.replace("NS", "ml").replace("FILE", "a") + "---\n" + pod)
    (b_cm,) = objects("b/y.yaml", cm.replace("NS", "ml").replace("FILE", "b"))
    (other_ns,) = objects("b/z.yaml", cm.replace("NS", "other").replace("FILE", "z"))
    (b_pod,) = objects("b/p.yaml", pod)
    (c_pod,) = objects("c/p.yaml", pod)
    for ctx in (
        Context(objects=[b_cm, other_ns, a_cm, a_pod, b_pod, c_pod]),
        TrackingContext(objects=[b_cm, other_ns, a_cm, a_pod, b_pod, c_pod]),
    ):
        assert ctx.named("ConfigMap", "env", namespace="ml", near=a_pod) is a_cm  # its file
        assert ctx.named("ConfigMap", "env", namespace="ml", near=b_pod) is b_cm  # its folder
        assert ctx.named("ConfigMap", "env", namespace="ml", near=c_pod) is b_cm  # none near: run order
        assert ctx.named("ConfigMap", "env", namespace="other", near=a_pod) is other_ns
        assert ctx.named("ConfigMap", "env", namespace="ml", group="apps", near=a_pod) is None
        assert ctx.named("ConfigMap", "missing", near=a_pod) is None
        assert ctx.named("ConfigMap", None, near=a_pod) is None
    frame = ctx.track()
    ctx.named("ConfigMap", "env", namespace="ml", near=a_pod)
    ctx.untrack()
    assert frame, "the read is noted for the results cache"


# Two copies of a fixture (blueprints "blue" and "green"), one changed so that its own copy
# of the object a reference reaches gives another verdict: each blueprint is judged by the
# copy beside it (`Context.named`, `context.nearest`), not the other's.
ONE_COPY_CHANGED = [
    # fixture, the copy changed, the change, findings in (blue, green)
    pytest.param(
        "REL009/auto_mode_on_vllm.yaml",
        "green",
        ("              nvidia.com/gpu: 1", "              cpu: 2"),
        (1, 0),
        id="REL009: a VPA's target Deployment (CPU only in green)",
    ),
    pytest.param(
        "TRN002/raycluster_configmap_local_path.yaml",
        "blue",
        ('storage_path="/home/ray/results"', 'storage_path="s3://ckpt/results"'),
        (0, 1),
        id="TRN002: the Ray Train script's ConfigMap (S3 in blue)",
    ),
    pytest.param(
        "SEC002/fsx_pvc_sys_admin_host_network.yaml",
        "blue",
        ("  storageClassName: fsx-lustre", "  storageClassName: gp3"),
        (0, 2),
        id="SEC002: the claim a pod mounts (EBS in blue)",
    ),
    pytest.param(
        "STO001/local_pv.yaml",
        "blue",
        ("  capacity:\n    storage: 100Gi", "  capacity:\n    storage: 500Gi"),
        (0, 1),
        id="STO001: the local volume a claim binds (500Gi in blue)",
    ),
    pytest.param(
        "SEC006/aws_static_keys.yaml",
        "blue",
        ("  AWS_ACCESS_KEY_ID: AKIAFAKE000000000000\n  AWS_SECRET_ACCESS_KEY: fake\n", "  REGION: us-east-1\n"),
        (1, 2),
        id="SEC006: the Secret an agent takes its keys from (a region only in blue)",
    ),
]


@pytest.mark.parametrize(("fixture", "changed", "edit", "counts"), ONE_COPY_CHANGED)
def test_a_verdict_follows_the_copy_beside_the_reference(
    tmp_path: Path, fixture: str, changed: str, edit: tuple[str, str], counts: tuple[int, int]
) -> None:
    """A repository that keeps two blueprints of one object is judged blueprint by blueprint:
    a reference reaches the copy in its own blueprint, whose verdict differs from the other's."""
    files = _blueprints(tmp_path, fixture)
    text = files[changed].read_text()
    assert edit[0] in text, "the change applies to the fixture"
    files[changed].write_text(text.replace(*edit))
    code = fixture.split("/")[0]
    found = [f for f in lint([str(tmp_path)], Settings(select=[code])).findings if f.code == code]
    got = tuple(sum(1 for f in found if Path(f.file).name == files[v].name) for v in ("blue", "green"))
    assert got == counts
