"""Issue 13: selectors against pods. The labels controllers add (`domain.pod_labels`), pods of an
owner ailint cannot read (`domain.selectors.unknown_owner`), and authentication in front of a
workload (`domain.ingress_auth`)."""

from __future__ import annotations

from ailint.core.model import K8sObject, SourceFile
from ailint.domain.context import Context
from ailint.domain.extract import PodTemplate, pod_templates
from ailint.domain.ingress_auth import gateway_authentication, mesh_authentication
from ailint.domain.pod_labels import controller_labels, may_select, pod_labels, varying_labels
from ailint.domain.selectors import may_own_pods, points_at, required_labels, selected, unknown_owner
from ailint.engine.load import load_text


def _objects(text: str) -> list[K8sObject]:
    return load_text(SourceFile("t.yaml", "t.yaml", text)).objects


def _pods(text: str) -> dict[str, PodTemplate]:
    return {f"{o.kind}/{p.role or o.name}": p for o in _objects(text) for p in pod_templates(o)}


RAY = """apiVersion: ray.io/v1
kind: RayCluster
metadata: {name: rc}
spec:
  headGroupSpec:
    template:
      metadata:
        labels: {app.kubernetes.io/name: my-app}
      spec:
        containers: [{name: head, image: rayproject/ray:2.40.0}]
  workerGroupSpecs:
    - groupName: gpu
      replicas: 2
      template:
        spec:
          containers: [{name: w, image: rayproject/ray:2.40.0}]
---
apiVersion: ray.io/v1
kind: RayService
metadata: {name: rs}
spec:
  rayClusterConfig:
    headGroupSpec:
      template:
        spec:
          containers: [{name: head, image: rayproject/ray:2.40.0}]
"""


def test_kuberay_labels_head_group_identifier_and_overridable_defaults() -> None:
    pods = _pods(RAY)
    head, worker = pods["RayCluster/head"], pods["RayCluster/gpu"]
    assert controller_labels(head)["ray.io/group"] == "headgroup"  # RayNodeHeadGroupLabelValue
    assert controller_labels(worker)["ray.io/group"] == "gpu"
    assert pod_labels(head)["ray.io/identifier"] == "rc-head"
    assert pod_labels(head)["app.kubernetes.io/name"] == "my-app"  # the template's label wins
    assert pod_labels(worker)["app.kubernetes.io/name"] == "kuberay"
    assert may_select({"ray.io/cluster": "rc", "ray.io/node-type": "worker"}, worker)
    assert not may_select({"ray.io/cluster": "rc", "ray.io/node-type": "worker"}, head)
    assert not may_select({"ray.io/group": "gpu"}, head)
    svc_head = next(p for k, p in pods.items() if k.startswith("RayService/"))
    assert "ray.io/cluster" in varying_labels(svc_head)  # a RayService's cluster has a generated name
    assert may_select({"ray.io/cluster": "rs-raycluster-x7k2p", "ray.io/node-type": "head"}, svc_head)


LWS = """apiVersion: leaderworkerset.x-k8s.io/v1
kind: LeaderWorkerSet
metadata: {name: split}
spec:
  leaderWorkerTemplate:
    size: 2
    leaderTemplate:
      spec:
        containers: [{name: l, image: x}]
    workerTemplate:
      spec:
        containers: [{name: w, image: x}]
---
apiVersion: leaderworkerset.x-k8s.io/v1
kind: LeaderWorkerSet
metadata: {name: same}
spec:
  leaderWorkerTemplate:
    size: 2
    workerTemplate:
      spec:
        containers: [{name: w, image: x}]
"""


def test_lws_worker_index_zero_is_the_leader_only_with_a_leader_template() -> None:
    objs = _objects(LWS)
    split = {p.role: p for p in pod_templates(objs[0])}
    same = next(pod_templates(objs[1]))
    leaders = {
        "matchLabels": {"leaderworkerset.sigs.k8s.io/name": "split", "leaderworkerset.sigs.k8s.io/worker-index": "0"}
    }
    assert may_select(leaders, split["leader"])
    assert not may_select(leaders, split["worker"])
    assert not may_select(
        {"matchExpressions": [{"key": "leaderworkerset.sigs.k8s.io/worker-index", "operator": "In", "values": ["0"]}]},
        split["worker"],
    )
    # no leaderTemplate: the leader is built from the worker template, so index 0 is among its pods
    assert may_select(
        {"leaderworkerset.sigs.k8s.io/name": "same", "leaderworkerset.sigs.k8s.io/worker-index": "0"}, same
    )
    assert may_select({"leaderworkerset.sigs.k8s.io/group-index": "1"}, same)
    assert not may_select({"leaderworkerset.sigs.k8s.io/name": "split"}, same)


TRAINING = """apiVersion: trainer.kubeflow.org/v1alpha1
kind: ClusterTrainingRuntime
metadata: {name: torch-distributed}
spec:
  template:
    spec:
      replicatedJobs:
        - name: node
          template:
            spec:
              template:
                spec:
                  containers: [{name: node, image: pytorch/pytorch:2.5.1}]
---
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata: {name: pretrain}
spec:
  replicatedJobs:
    - name: workers
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
    Master:
      template:
        metadata:
          labels: {training.kubeflow.org/replica-type: Master}
        spec:
          containers: [{name: pytorch, image: x}]
"""


def test_jobset_trainer_runtime_and_training_operator_labels() -> None:
    pods = _pods(TRAINING)
    rt, js, pt = pods["ClusterTrainingRuntime/node"], pods["JobSet/workers"], pods["PyTorchJob/Master"]
    # a runtime's JobSet is named after each TrainJob: any jobset-name, a fixed replicatedjob-name
    assert may_select(
        {"jobset.sigs.k8s.io/jobset-name": "my-trainjob", "jobset.sigs.k8s.io/replicatedjob-name": "node"}, rt
    )
    assert not may_select({"jobset.sigs.k8s.io/replicatedjob-name": "launcher"}, rt)
    assert may_select({"jobset.sigs.k8s.io/jobset-name": "pretrain", "jobset.sigs.k8s.io/jobset-uid": "0b1c"}, js)
    assert not may_select({"jobset.sigs.k8s.io/jobset-name": "finetune"}, js)
    # the operator's lower-case replica type overrides what the template wrote
    assert pod_labels(pt)["training.kubeflow.org/replica-type"] == "master"
    assert may_select({"training.kubeflow.org/job-name": "ft", "training.kubeflow.org/replica-index": "0"}, pt)


UNKNOWN = """apiVersion: milvus.io/v1beta1
kind: Milvus
metadata: {name: vectors, namespace: rag}
spec:
  components:
    proxy:
      replicas: 2
---
apiVersion: kubeflow.org/v1
kind: Notebook
metadata: {name: alice, namespace: users}
spec:
  template:
    spec:
      containers: [{name: alice, image: kubeflownotebookswg/jupyter-pytorch-cuda:v1.9.0}]
---
apiVersion: example.com/v1
kind: ModelServer
metadata: {name: ms, namespace: serving, labels: {team: search}}
spec:
  podTemplate:
    metadata:
      labels: {tier: gpu-serving}
---
apiVersion: monitoring.coreos.com/v1
kind: ServiceMonitor
metadata: {name: vllm, namespace: serving, labels: {app: vllm}}
spec:
  selector:
    matchLabels: {app: vllm}
---
apiVersion: cert-manager.io/v1
kind: Certificate
metadata: {name: vllm, namespace: serving}
spec:
  secretName: vllm-tls
---
apiVersion: example.com/v1
kind: Router
metadata: {name: vllm, namespace: serving}
spec:
  selector:
    matchLabels: {app: vllm}
"""


def test_unknown_owner_of_pods_is_an_operator_cr_the_selector_points_at() -> None:
    objs = _objects(UNKNOWN)
    ctx = Context(objects=objs)
    by_kind = {o.kind: o for o in objs}
    assert [o.kind for o in objs if may_own_pods(o)] == ["Milvus", "Notebook", "ModelServer"]
    milvus = {"matchLabels": {"app.kubernetes.io/instance": "vectors", "app.kubernetes.io/component": "proxy"}}
    assert unknown_owner(milvus, ctx, "rag") is by_kind["Milvus"]
    assert unknown_owner({"app.kubernetes.io/name": "milvus"}, ctx, "rag") is by_kind["Milvus"]  # the kind
    assert unknown_owner(milvus, ctx, "serving") is None  # another namespace
    assert unknown_owner({"notebook-name": "alice"}, ctx, "users") is by_kind["Notebook"]
    assert unknown_owner({"tier": "gpu-serving"}, ctx, "serving") is by_kind["ModelServer"]  # its template labels
    assert unknown_owner({"team": "search", "app": "x"}, ctx, "serving") is by_kind["ModelServer"]  # its own labels
    # a monitor, a certificate and a selecting object named like the app own no pods
    assert unknown_owner({"app": "vllm"}, ctx, "serving") is None
    assert unknown_owner({"app": "bert"}, ctx, "rag") is None
    assert not points_at({}, by_kind["Milvus"])


def test_required_labels_and_selected_pods() -> None:
    sel = {
        "matchLabels": {"app": "web"},
        "matchExpressions": [
            {"key": "tier", "operator": "In", "values": ["gpu"]},
            {"key": "zone", "operator": "In", "values": ["a", "b"]},
            {"key": "x", "operator": "Exists"},
        ],
    }
    assert required_labels(sel) == [("app", "web"), ("tier", "gpu")]
    assert required_labels(None) == []
    ctx = Context(objects=_objects(LWS))
    assert [o.name for o, _ in selected(ctx, "default", {"leaderworkerset.sigs.k8s.io/name": "split"})] == [
        "split",
        "split",
    ]


SERVER = """apiVersion: apps/v1
kind: Deployment
metadata: {name: vllm, namespace: llm}
spec:
  selector: {matchLabels: {app: vllm}}
  template:
    metadata:
      labels: {app: vllm}
      annotations: {}
    spec:
      containers: [{name: vllm, image: vllm/vllm-openai:v0.9.2}]
"""


def _mesh(policies: str, server: str = SERVER) -> str | None:
    objs = _objects(server + "---\n" + policies)
    pod = next(pod_templates(objs[0]))
    found = mesh_authentication(Context(objects=objs), pod)
    return found.name if found is not None else None


def _policy(name: str, spec: str, ns: str = "llm") -> str:
    return (
        f"apiVersion: security.istio.io/v1\nkind: AuthorizationPolicy\nmetadata: {{name: {name}, namespace: {ns}}}\n"
        f"spec:\n{spec}\n"
    )


def test_istio_policies_that_reject_unauthenticated_requests() -> None:
    jwt = "  rules:\n    - from:\n        - source: {requestPrincipals: ['*']}"
    assert _mesh(_policy("jwt", jwt)) == "jwt"
    assert _mesh(_policy("mesh-wide", jwt, ns="istio-system")) == "mesh-wide"  # the root namespace
    assert _mesh(
        _policy("mtls", "  rules:\n    - from:\n        - source: {principals: ['cluster.local/ns/gw/sa/gw']}")
    )
    deny = "  action: DENY\n  rules:\n    - from:\n        - source: {notRequestPrincipals: ['*']}"
    assert _mesh(_policy("deny-anon", deny)) == "deny-anon"
    assert _mesh(_policy("ext", "  action: CUSTOM\n  provider: {name: oauth2-proxy}\n  rules: [{}]")) == "ext"
    # an ALLOW rule without `from` admits anyone, and ALLOW policies add up
    assert _mesh(_policy("open", "  rules:\n    - to:\n        - operation: {methods: [GET]}")) is None
    assert _mesh(_policy("jwt", jwt) + "---\n" + _policy("open", "  rules: [{}]")) is None
    # a DENY limited to some paths, a policy for other pods, one in another namespace, a waypoint's
    assert _mesh(_policy("part", deny + "\n      to:\n        - operation: {paths: [/admin]}")) is None
    assert _mesh(_policy("other", "  selector: {matchLabels: {app: sglang}}\n" + jwt)) is None
    assert _mesh(_policy("elsewhere", jwt, ns="chat")) is None
    assert _mesh(_policy("waypoint", "  targetRefs: [{kind: Service, group: '', name: vllm}]\n" + jwt)) is None
    # no sidecar to enforce it
    no_sidecar = SERVER.replace("annotations: {}", "annotations: {sidecar.istio.io/inject: 'false'}")
    assert _mesh(_policy("jwt", jwt), no_sidecar) is None


GATEWAY = """apiVersion: v1
kind: Service
metadata: {name: vllm, namespace: llm}
spec:
  type: LoadBalancer
  selector: {app: vllm}
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: chat, namespace: apps, labels: {auth: sso}}
spec:
  parentRefs: [{name: public, namespace: edge}]
  rules:
    - backendRefs: [{name: vllm, namespace: llm, port: 8000}]
"""


def _gateway(policy: str) -> str | None:
    objs = _objects(GATEWAY + "---\n" + policy)
    found = gateway_authentication(Context(objects=objs), objs[0])
    return None if found is None else f"{found.route.name}>{found.gateway_name}:{found.policy.name}:{found.methods}"


def _sp(ns: str, target: str, auth: str = "oidc: {provider: {issuer: https://idp}}") -> str:
    return (
        f"apiVersion: gateway.envoyproxy.io/v1alpha1\nkind: SecurityPolicy\nmetadata: {{name: sp, namespace: {ns}}}\n"
        f"spec:\n  {target}\n  {auth}\n"
    )


def test_envoy_gateway_security_policy_on_the_gateway_or_the_route() -> None:
    on_gw = _sp("edge", "targetRefs: [{group: gateway.networking.k8s.io, kind: Gateway, name: public}]")
    assert _gateway(on_gw) == "chat>public:sp:('oidc',)"
    on_route = _sp(
        "apps", "targetRef: {group: gateway.networking.k8s.io, kind: HTTPRoute, name: chat}", "basicAuth: {}"
    )
    assert _gateway(on_route) == "chat>public:sp:('basicAuth',)"
    by_label = _sp("apps", "targetSelectors: [{kind: HTTPRoute, matchLabels: {auth: sso}}]", "extAuth: {}")
    assert _gateway(by_label) == "chat>public:sp:('extAuth',)"
    # a policy must live in its target's namespace and must authenticate (CORS does not)
    assert _gateway(_sp("apps", "targetRefs: [{kind: Gateway, name: public}]")) is None
    assert _gateway(_sp("edge", "targetRefs: [{kind: Gateway, name: public}]", "cors: {allowOrigins: ['*']}")) is None
    assert _gateway(_sp("edge", "targetRefs: [{kind: Gateway, name: private}]")) is None


def test_the_label_index_selects_what_may_select_selects_in_order() -> None:
    """`LabelIndex.selecting` (what `selected` reads) gives the pods `may_select` keeps over
    every pod, in the same order: for every selector of the fixtures (Services, PDBs,
    NetworkPolicies, monitors, ...) and for selectors on the labels controllers set to any
    value, on values no pod carries, on expressions only, and on malformed input."""
    from ailint.domain.pod_labels import LabelIndex
    from conftest import ROOT

    objects = [
        o
        for p in sorted((ROOT / "fixtures").rglob("*.yaml"))
        for o in load_text(SourceFile(str(p), p.name, p.read_text(encoding="utf-8"))).objects
    ]
    pods = [(o, p) for o in objects for p in pod_templates(o)]
    assert len(pods) > 500
    selectors: list[object] = []
    for o in objects:
        spec = o.get("spec")
        if isinstance(spec, dict):
            selectors += [spec[k] for k in ("selector", "podSelector", "labelSelector") if k in spec]
    assert len(selectors) > 200
    for _, p in pods[::7]:  # each key a controller sets to any value, and values no pod carries
        selectors += [{k: "any"} for k in varying_labels(p)]
        selectors += [{"matchLabels": {**dict(list(pod_labels(p).items())[:2]), "absent": "x"}}]
        selectors += [{"matchLabels": dict(list(pod_labels(p).items())[1:3])}]
    selectors += [
        {},
        {"matchExpressions": [{"key": "app", "operator": "Exists"}]},
        {"matchLabels": {}, "matchExpressions": [{"key": "app", "operator": "In", "values": ["vllm"]}]},
        {"matchLabels": {"app": 1}},
        {"matchLabels": "app"},
        None,
        "app=vllm",
        ["app"],
    ]
    index = LabelIndex(pods)
    differ = [s for s in selectors if index.selecting(s) != [x for x in pods if may_select(s, x[1])]]
    assert differ == []
    assert any(index.selecting(s) for s in selectors) and any(not index.selecting(s) for s in selectors)
