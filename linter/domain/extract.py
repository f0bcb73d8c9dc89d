"""Shared extractors: every rule reads pods, containers, resources and serving args here.

A new CRD shape is one change in `pod_templates`, never a change in many rules. Paths
returned are tuple paths inside the object, so findings point at the real field.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import lru_cache

from ailint.core.lazyre import lazy_re
from ailint.core.model import K8sObject, Path, as_dict, as_list, get_in, iter_dicts
from ailint.domain.profile import Profile as Profile  # re-exported: defined there once
from ailint.domain.quantities import parse_quantity

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

# ---------------------------------------------------------------------------------------
# Kinds
# ---------------------------------------------------------------------------------------
WORKLOAD_KINDS = ("Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job", "ReplicationController")
KSERVE_LLM_KINDS = ("LLMInferenceService", "LLMInferenceServiceConfig")  # templates in ailint.domain.kserve
KSERVE_SERVING_ROLES = ("main", "worker", "prefill", "prefill-worker")  # the pods that run vLLM
POD_KINDS: tuple[str, ...]  # every workload kind, as a rule's `kinds=` lists it (from the adapters)
SERVING_KINDS: tuple[str, ...]  # custom-resource kinds whose pods are long-running model servers
BATCH_KINDS = (
    "Job",
    "CronJob",
    "PyTorchJob",
    "MPIJob",
    "TFJob",
    "XGBoostJob",
    "PaddleJob",
    "JAXJob",
    "JobSet",
    "TrainJob",
    "RayJob",
    "TrainingRuntime",
    "ClusterTrainingRuntime",
)
ACCELERATOR_RESOURCES = (
    "nvidia.com/gpu",
    "amd.com/gpu",
    "aws.amazon.com/neuron",
    "aws.amazon.com/neuroncore",
    "aws.amazon.com/neurondevice",
    "vpc.amazonaws.com/efa",
)
GPU_RESOURCES = ("nvidia.com/gpu", "amd.com/gpu")
NEURON_RESOURCES = ("aws.amazon.com/neuron", "aws.amazon.com/neuroncore", "aws.amazon.com/neurondevice")
ROLE_ANNOTATION = "ailint.io/role"


def is_pod_kind(obj: K8sObject) -> bool:
    """A workload kind that some adapter reads (its pods may still be none)."""
    from ailint.domain import workloads

    return workloads.is_workload(obj)


_ROLES = (
    "SERVING_ENGINES",
    "serving_engine",
    "role_override",
    "serving_containers",
    "is_serving_pod",
    "is_training_pod",
    "is_agent_pod",
)


def __getattr__(name: str) -> Any:
    if name == "POD_KINDS":  # computed from the workload adapters on first use
        from ailint.domain import workloads

        value: Any = workloads.rule_kinds()
    elif name == "SERVING_KINDS":  # custom resources that run model servers (the adapters say)
        from ailint.domain import workloads

        value = workloads.serving_rule_kinds()
    elif name in _ROLES:  # moved to ailint.domain.roles; re-exported while rules move over
        from ailint.domain import roles

        value = getattr(roles, name)
    else:
        raise AttributeError(name)
    globals()[name] = value
    return value


# ---------------------------------------------------------------------------------------
# Pod templates
# ---------------------------------------------------------------------------------------
class _Memo:
    """Facts derived from an extracted piece (a pod template, a container), computed once:
    many rules ask the same piece the same question. The holder has a `_memo` slot."""

    __slots__ = ()
    _memo: dict[str, Any] | None

    def _cached(self, key: str, compute: Callable[[], Any]) -> Any:
        memo = self._memo
        if memo is None:
            # the `_memo` slot is declared by the dataclass holders (PodTemplate, Container);
            # mypy checks this against the mixin's own empty __slots__
            memo = self._memo = {}  # type: ignore[misc]
        try:
            return memo[key]
        except KeyError:
            value = memo[key] = compute()
            return value


@dataclass(slots=True)
class PodTemplate(_Memo):
    """One pod template inside an object.

    `spec_path` is the path of the PodSpec; `meta_path` that of the template metadata
    (None for a bare Pod, whose metadata is the object's). `role` names the template within
    its object (`head`, `worker`, `leader`, `submitter`, `Master`, a replicated job's name).
    `replicas` is how many pods this template runs when the manifest says (None if unknown).
    """

    obj: K8sObject
    spec_path: Path
    meta_path: Path | None
    role: str = ""
    replicas: int | None = None
    group_path: Path = ()  # the enclosing group/replica spec (RayCluster worker group, ...)
    synthetic: dict[str, Any] | None = None  # a PodSpec the controller builds (spec_path holds an Anchor)
    open: bool = False  # an input not in the run (a runtime) may add any field to the pod and its first container
    # devices of the pod's DRA resourceClaims found in the run, by claim name ({"gpu": {"nvidia.com/gpu": 2}})
    claimed: dict[str, dict[str, float]] | None = None
    _containers: list[Container] | None = field(default=None, repr=False, compare=False)  # containers_of
    _memo: dict[str, Any] | None = field(default=None, repr=False, compare=False)  # derived facts (_Memo)
    _spec: dict[str, Any] | None = field(default=None, init=False, repr=False, compare=False)  # `spec`, read once

    @property
    def spec(self) -> dict[str, Any]:
        if self.synthetic is not None:
            return self.synthetic
        found = self._spec
        if found is None:  # (18,000 reads a corpus run; the data is never mutated)
            found = self._spec = as_dict(self.obj.get(*self.spec_path))
        return found

    @property
    def metadata(self) -> dict[str, Any]:
        if self.meta_path is None:
            return self.obj.metadata
        return as_dict(self.obj.get(*self.meta_path))

    @property
    def labels(self) -> dict[str, Any]:
        return as_dict(self.metadata.get("labels"))

    @property
    def annotations(self) -> dict[str, Any]:
        return as_dict(self.metadata.get("annotations"))

    def all_annotations(self) -> dict[str, Any]:
        """Object annotations overlaid by template annotations."""
        out = dict(self.obj.annotations)
        out.update(self.annotations)
        return out

    def annotation(self, key: str, default: Any = None) -> Any:
        """`all_annotations().get(key, default)` without merging the two maps (rules ask for
        one key, of every pod, many times a run)."""
        own = self.annotations
        if key in own:
            return own[key]
        return self.obj.annotations.get(key, default)

    def path(self, *rest: Any) -> Path:
        return self.spec_path + rest

    def containers(self, include_init: bool = True) -> Iterator[Container]:
        return containers_of(self, include_init)  # (not a generator of its own: 85,000 calls a corpus run)


def pod_templates(obj: K8sObject) -> Iterator[PodTemplate]:
    """Every pod template of `obj`, from its family's workload adapter (ailint.domain.workloads),
    which keeps them in the object's memo: read there first (44,000 calls a corpus run, most
    of them for templates made already)."""
    memo = obj.memo
    if memo is not None:
        found = memo.get(TEMPLATES_MEMO)
        if found is not None:
            return iter(found)
    return (_adapters_pod_templates or _bind_adapters())(obj)


TEMPLATES_MEMO = "pod_templates"  # the key of an object's memo its pod templates are kept under


# `ailint.domain.workloads` imports this module, so it is bound on first use, not imported
# here. Once bound, a call costs no `from ... import` (44,000 calls a corpus run: 13 ms).
_adapters_pod_templates: Callable[[K8sObject], Iterator[PodTemplate]] | None = None


def _bind_adapters() -> Callable[[K8sObject], Iterator[PodTemplate]]:
    global _adapters_pod_templates
    from ailint.domain import workloads

    _adapters_pod_templates = workloads.pod_templates
    return workloads.pod_templates


# ---------------------------------------------------------------------------------------
# Containers
# ---------------------------------------------------------------------------------------
@dataclass(slots=True)
class Container(_Memo):
    """One container of a pod template (init or not), with the facts derived from it kept once."""

    pod: PodTemplate
    path: Path  # path of the container mapping inside the object
    data: dict[str, Any]
    init: bool = False
    _memo: dict[str, Any] | None = field(default=None, repr=False, compare=False)  # derived facts (_Memo)

    @property
    def name(self) -> str:
        return str(self.data.get("name") or "")

    @property
    def image(self) -> str:
        v = self.data.get("image")
        return v if isinstance(v, str) else ""

    @property
    def sidecar(self) -> bool:
        """A native sidecar: an init container with `restartPolicy: Always`."""
        return self.init and self.data.get("restartPolicy") == "Always"

    @property
    def env(self) -> list[dict[str, Any]]:
        return [e for e in as_list(self.data.get("env")) if isinstance(e, dict)]

    def env_value(self, name: str) -> str | None:
        """The literal value of an env var (None when unset or from a reference)."""
        for e in self.env:
            if e.get("name") == name and "value" in e:
                v = e.get("value")
                return "" if v is None else str(v)
        return None

    def env_index(self, name: str) -> int | None:
        for i, e in enumerate(as_list(self.data.get("env"))):
            if isinstance(e, dict) and e.get("name") == name:
                return i
        return None

    def has_env(self, name: str) -> bool:
        return self.env_index(name) is not None

    def path_of(self, *rest: Any) -> Path:
        return self.path + rest

    def resources(self, which: str) -> dict[str, Any]:
        # (`as_dict(get_in(self.data, ("resources", which)))`, spelled out: 40,000 calls a corpus run)
        res = self.data.get("resources")
        got = res.get(which) if isinstance(res, dict) else None
        return got if isinstance(got, dict) else {}

    def request(self, name: str) -> Any:
        """The effective request: `requests`, else the limit (Kubernetes copies it)."""
        req = self.resources("requests")
        if name in req:
            return req[name]
        return self.resources("limits").get(name)

    def requested(self, names: Iterable[str]) -> dict[str, Any]:
        """`request(name)` of each of `names` that has one, the requests and limits read once."""
        req, lim = self.resources("requests"), self.resources("limits")
        got = {n: req[n] if n in req else lim.get(n) for n in names}
        return {n: v for n, v in got.items() if v is not None}

    def limit(self, name: str) -> Any:
        return self.resources("limits").get(name)

    def accelerators(self) -> dict[str, float]:
        """Accelerator resources this container asks for (limits, else requests)."""
        return dict(self._cached("accelerators", self._accelerators))

    def _accelerators(self) -> dict[str, float]:
        out: dict[str, float] = {}
        lim, req = self.resources("limits"), self.resources("requests")
        for res in ACCELERATOR_RESOURCES:
            v = lim.get(res, req.get(res))
            q = parse_quantity(v)
            if q is not None and q > 0:
                out[res] = q
        if self.pod.claimed:  # DRA: the devices of the pod's claims this container names
            for res, n in self.claimed().items():
                out[res] = out.get(res, 0) + n
        return out

    def claimed(self) -> dict[str, float]:
        """Accelerators this container gets through DRA claims it names in `resources.claims`
        (a part of `accelerators()`; the pod's `claimed` is filled from the run's catalogue)."""
        out: dict[str, float] = {}
        for _, ref in iter_dicts(get_in(self.data, ("resources", "claims"))):
            for res, n in (self.pod.claimed or {}).get(str(ref.get("name")), {}).items():
                out[res] = out.get(res, 0) + n
        return out

    def gpu_count(self) -> float:
        acc = self.accelerators()
        return sum(acc.get(r, 0) for r in GPU_RESOURCES)

    @property
    def tokens(self) -> list[str]:
        return list(self._cached("tokens", lambda: _preset_tokens(self) or command_tokens(self.data)))

    @property
    def volume_mounts(self) -> list[dict[str, Any]]:
        return [m for m in as_list(self.data.get("volumeMounts")) if isinstance(m, dict)]


def _preset_tokens(c: Container) -> list[str] | None:
    """The command a controller preset runs in `c` when the file sets none (from the
    workload adapter, e.g. KServe LLMInferenceService), else None."""
    from ailint.domain import workloads

    return workloads.preset_tokens(c)


def containers_of(pod: PodTemplate, include_init: bool = True) -> Iterator[Container]:
    """Init containers (when asked), then app containers; built once per pod template."""
    found = pod._containers
    if found is None:
        spec = pod.spec
        found = [
            Container(pod, pod.spec_path + ("initContainers", i), c, True)
            for i, c in iter_dicts(spec.get("initContainers"))
        ]
        found += [
            Container(pod, pod.spec_path + ("containers", i), c, False) for i, c in iter_dicts(spec.get("containers"))
        ]
        pod._containers = found  # lives as long as the pod template (a cycle the GC collects)
    if include_init:
        return iter(found)
    return (c for c in found if not c.init)


# -- facts carried to the process that joins the run (`K8sObject.carried`) ---------------
# With `--jobs`, a forked process parses half of the files and hands its objects to the
# parent, which forks the processes of the bundle phase: each inherits what the parent knows.
# What the parsing process had worked out about the objects' pods (a pod's role, what each
# container runs: `ailint.domain.roles.prime`) did not travel with them, so every process of
# the bundle phase worked it out again for the same pods. The plain values of those memos
# now travel with the object, and the parent's pod templates, made again from the same data,
# start with them.


# The memo values that are bulky for what they save: a container's command split into words
# and segments (0.38 of the 0.52 MB of facts of the corpus's pods; split again from the
# container's own data in 17 ms for all of its 1,345 containers, where reading them back
# cost every rerun that reads the pack). A results-cache entry leaves them out (`carry_facts(skip=)`).
BULKY_FACTS = frozenset({"tokens", "command_segments"})


def carry_facts(obj: K8sObject, skip: frozenset[str] = frozenset()) -> list[Any] | None:
    """The plain values (strings, numbers, lists, dicts of those) of the memos of `obj`'s pod
    templates and their containers, in template and container order, but those named in
    `skip`; None when its templates were never made."""
    memo = obj.memo
    pods = memo.get(TEMPLATES_MEMO) if memo is not None else None
    if not pods:
        return None
    return [
        (
            _plain_memo(pod._memo, skip),
            None if pod._containers is None else [_plain_memo(c._memo, skip) for c in pod._containers],
        )
        for pod in pods
    ]


def take_carried_facts(obj: K8sObject, pods: list[PodTemplate]) -> list[PodTemplate]:
    """`pods` (the templates of `obj`, made from its data) with the facts `carry_facts` took
    from the templates of the same object in the process that parsed it, once."""
    carried, obj.carried = obj.carried, None
    if not isinstance(carried, list) or len(carried) != len(pods):
        return pods
    for pod, (pod_memo, container_memos) in zip(pods, carried, strict=True):
        if pod_memo:  # (copied: a results-cache entry may be written again from the same data)
            pod._memo = {**pod_memo, **(pod._memo or {})}
        if container_memos is not None:
            containers = list(containers_of(pod))
            if len(containers) == len(container_memos):
                for c, m in zip(containers, container_memos, strict=True):
                    if m:
                        c._memo = {**m, **(c._memo or {})}
    return pods


def _plain_memo(memo: dict[str, Any] | None, skip: frozenset[str]) -> dict[str, Any] | None:
    if not memo:
        return None
    return {k: v for k, v in memo.items() if k not in skip and _plain(v)} or None


_PLAIN_SCALARS = (str, int, float, bool, type(None))


def _plain(v: Any, depth: int = 0) -> bool:
    """Data that pickles as it is and means the same in another process (no object of the
    run, no function): what a memo may carry."""
    t = v.__class__
    if t in _PLAIN_SCALARS:
        return True
    if depth > 4:
        return False
    if t is tuple or t is list:
        return all(_plain(x, depth + 1) for x in v)
    if t is dict:
        return all(k.__class__ is str and _plain(x, depth + 1) for k, x in v.items())
    return False


def all_containers(obj: K8sObject, include_init: bool = True) -> Iterator[Container]:
    for pod in pod_templates(obj):
        yield from containers_of(pod, include_init)


def volumes(pod: PodTemplate) -> dict[str, tuple[int, dict[str, Any]]]:
    """Volumes of a pod by name: (index, volume mapping)."""
    return {str(v.get("name")): (i, v) for i, v in iter_dicts(pod.spec.get("volumes"))}


# ---------------------------------------------------------------------------------------
# Commands and serving args
# ---------------------------------------------------------------------------------------
_SHELLS = ("sh", "bash", "/bin/sh", "/bin/bash", "/usr/bin/env", "zsh", "/bin/zsh", "dash")
_VAR_RE = lazy_re(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)")


@lru_cache(maxsize=4096)
def _split(s: str) -> tuple[str, ...]:
    """Shell-like split (cached: every rule re-reads the same scripts)."""
    return tuple(_split_uncached(s))


def _split_uncached(s: str) -> list[str]:
    try:
        return shell_split(s)
    except ValueError:
        return s.split()


# One piece of a POSIX shell word, or what separates words (shlex's whitespace is these four).
_SH_PIECE = lazy_re(r"""([ \t\r\n]+)|(\#[^\n]*)|'([^']*)'|"((?:[^"\\]|\\.)*)"|\\(.)|([^ \t\r\n'"\\\#]+)""", re.S)
_DQ_ESCAPE = lazy_re(r'\\([\\"])')


def shell_split(s: str) -> list[str]:
    """`shlex.split(s, comments=True)`, the same tokens at C speed (shlex reads a character at
    a time in Python: long `sh -c` scripts made it a visible part of a run). ValueError on
    an unclosed quote or a trailing backslash, as shlex. tests/test_extract.py compares the
    two on the corpus and on generated strings."""
    out: list[str] = []
    word: list[str] = []
    in_word = False  # a word is open (it may be empty: `''` is a word)
    pos, end = 0, len(s)
    match = _SH_PIECE.match
    while pos < end:
        m = match(s, pos)
        if m is None:
            raise ValueError("No closing quotation" if s[pos] in "'\"" else "No escaped character")
        pos = m.end()
        kind = m.lastindex
        assert kind is not None  # every alternative of _SH_PIECE is a group
        if kind == 1 or kind == 2:  # whitespace or a comment ends the word
            if in_word:
                out.append("".join(word))
                word, in_word = [], False
            continue
        if kind == 4:  # in double quotes a backslash escapes only `"` and `\`
            piece = m.group(4)
            word.append(_DQ_ESCAPE.sub(r"\1", piece) if "\\" in piece else piece)
        else:
            word.append(m.group(kind))
        in_word = True
    if in_word:
        out.append("".join(word))
    return out


def command_tokens(container: dict[str, Any]) -> list[str]:
    """`command` + `args` as shell-like tokens, `sh -c` strings split, `$(VAR)` resolved.

    `$(VAR)` references resolve against the container's literal `env` (as the kubelet
    does). A script given to `sh -c` is split like a shell would (lines and `&&` become
    separate tokens, which is enough to find flags).
    """
    raw = [
        str(x)
        for x in as_list(container.get("command")) + as_list(container.get("args"))
        if isinstance(x, (str, int, float)) and not isinstance(x, bool)
    ]
    if any("$(" in t for t in raw):  # (the env is read only when some token refers to it)
        env = {
            str(e.get("name")): str(e.get("value"))
            for e in as_list(container.get("env"))
            if isinstance(e, dict) and isinstance(e.get("value"), (str, int, float))
        }
        if env:
            raw = [_VAR_RE.sub(lambda m: env.get(m.group(1), m.group(0)), t) for t in raw]
    out: list[str] = []
    for i, tok in enumerate(raw):
        if (" " in tok or "\n" in tok) and (
            (i > 0 and re.fullmatch(r"-[a-z]*c[a-z]*", raw[i - 1]) is not None)
            or len(raw) == 1
            or (i > 0 and raw[0] in _SHELLS)
        ):
            out.extend(_split(tok.replace("\\\n", " ")))
        elif (
            " " in tok
            and i >= 0
            and tok.strip().startswith(
                ("python", "vllm", "torchrun", "deepspeed", "ray ", "serve ", "accelerate", "text-generation")
            )
        ):
            out.extend(_split(tok))
        else:
            out.append(tok)
    return out


def flag_value(tokens: Sequence[str], *flags: str) -> str | None:
    """The value of the last occurrence of any of `flags` (`--x v` or `--x=v`)."""
    found = None
    n = len(tokens)
    wanted = frozenset(flags)  # (no flag holds `=`: a token is a flag, or a flag, `=` and its value)
    for i, tok in enumerate(tokens):
        if tok in wanted:
            if i + 1 < n:
                found = tokens[i + 1]
        elif "=" in tok:
            name, _, value = tok.partition("=")
            if name in wanted:
                found = value
    return found


def has_flag(tokens: Sequence[str], *flags: str) -> bool:
    return any(t in flags or any(t.startswith(f + "=") for f in flags) for t in tokens)


def flag_token_index(container: dict[str, Any], *flags: str) -> tuple[str, int] | None:
    """Where a flag is written: ("command"|"args", index) of the list item holding it."""
    for key in ("args", "command"):
        for i, tok in enumerate(as_list(container.get(key))):
            if not isinstance(tok, str):
                continue
            for f in flags:
                if tok == f or tok.startswith(f + "=") or re.search(rf"(^|\s){re.escape(f)}(=|\s|$)", tok):
                    return key, i
    return None


def model_id(c: Container) -> str | None:
    """The model a serving container loads: vLLM `--model`/positional, TGI `--model-id`, SGLang `--model-path`."""
    toks = c.tokens
    v = flag_value(toks, "--model", "--model-id", "--model-path", "--model_id")
    if v:
        return v
    for i, t in enumerate(toks):
        if t == "serve" and i > 0 and toks[i - 1].endswith("vllm") and i + 1 < len(toks):
            nxt = toks[i + 1]
            if not nxt.startswith("-"):
                return nxt
    for name in ("MODEL_ID", "MODEL_NAME", "MODEL"):
        v = c.env_value(name)
        if v:
            return v
    return None


# ---------------------------------------------------------------------------------------
# Accelerators of a pod
# ---------------------------------------------------------------------------------------
def is_accelerator_pod(pod: PodTemplate) -> bool:
    return any(c.accelerators() for c in pod.containers())


def pod_accelerators(pod: PodTemplate) -> dict[str, float]:
    """Effective per-pod accelerator request: sum of app containers and sidecars, or the
    largest init container if that is larger."""
    total: dict[str, float] = {}
    init_max: dict[str, float] = {}
    for c in pod.containers():
        for k, v in c.accelerators().items():
            if c.init and not c.sidecar:
                init_max[k] = max(init_max.get(k, 0), v)
            else:
                total[k] = total.get(k, 0) + v
    for k, v in init_max.items():
        total[k] = max(total.get(k, 0), v)
    return total


# ---------------------------------------------------------------------------------------
# Tolerations and taints (spec decision 18)
# ---------------------------------------------------------------------------------------
def toleration_matches(tol: dict[str, Any], taint: dict[str, Any]) -> bool:
    op = tol.get("operator") or "Equal"
    key = tol.get("key") or ""
    effect = tol.get("effect") or ""
    if effect and effect != taint.get("effect"):
        return False
    if op == "Exists":
        return not key or key == taint.get("key")
    if key != taint.get("key"):
        return False
    tv, xv = str(tol.get("value") or ""), str(taint.get("value") or "")
    if op == "Equal":
        return tv == xv
    if op in ("Lt", "Gt"):
        try:
            a, b = int(xv), int(tv)
        except ValueError:
            return False
        return a < b if op == "Lt" else a > b
    return False


def effective_tolerations(pod: PodTemplate, extended_resource_toleration: bool = True) -> list[dict[str, Any]]:
    """The pod's tolerations plus the ones the ExtendedResourceToleration plugin adds."""
    tols = [t for t in as_list(pod.spec.get("tolerations")) if isinstance(t, dict)]
    if extended_resource_toleration:
        seen = set()
        for c in pod.containers():
            for res in list(c.resources("limits")) + list(c.resources("requests")):
                if "/" in res and not res.startswith(("kubernetes.io/", "hugepages-")) and res not in seen:
                    q = parse_quantity(c.request(res))
                    if q is None or q > 0:
                        seen.add(res)
                        tols.append({"key": res, "operator": "Exists", "effect": "NoSchedule"})
    return tols


def untolerated(taints: Sequence[dict[str, Any]], tolerations: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Scheduling taints (NoSchedule/NoExecute) that no toleration matches."""
    return [
        t
        for t in taints
        if isinstance(t, dict)
        and t.get("effect") in ("NoSchedule", "NoExecute")
        and not any(toleration_matches(tol, t) for tol in tolerations)
    ]


def parse_taint(s: str) -> dict[str, Any] | None:
    """`key[=value]:effect` (the profile's `gpuNodeTaints` form)."""
    if ":" not in s:
        return None
    kv, effect = s.rsplit(":", 1)
    key, _, value = kv.partition("=")
    return {"key": key, "value": value, "effect": effect}


# ---------------------------------------------------------------------------------------
# Node selection
# ---------------------------------------------------------------------------------------
@dataclass(slots=True)
class Requirement:
    """One node-selector requirement: a label key, an operator and its values."""

    key: str
    operator: str
    values: tuple[str, ...] = ()

    def allows(self, value: str | None) -> bool:
        op = self.operator
        if op == "In":
            return value is not None and value in self.values
        if op == "NotIn":
            return value is None or value not in self.values
        if op == "Exists":
            return value is not None
        if op == "DoesNotExist":
            return value is None
        if op in ("Gt", "Lt") and self.values:
            try:
                # (a missing or non-numeric label value raises, and is caught, below)
                a, b = float(value), float(self.values[0])  # type: ignore[arg-type]
            except (TypeError, ValueError):
                return False
            return a > b if op == "Gt" else a < b
        return True


def requirements_from_terms(terms: Any) -> list[Requirement]:
    out = []
    for _, r in iter_dicts(terms):
        key = r.get("key")
        if not isinstance(key, str):
            continue
        vals = tuple(str(v) for v in as_list(r.get("values")))
        out.append(Requirement(key, str(r.get("operator") or "In"), vals))
    return out


def pod_node_requirements(pod: PodTemplate) -> list[list[Requirement]]:
    """The pod's node constraints as a disjunction of conjunctions (nodeSelector is ANDed
    into every required nodeAffinity term)."""
    spec = pod.spec
    base = [Requirement(str(k), "In", (str(v),)) for k, v in as_dict(spec.get("nodeSelector")).items()]
    terms = as_list(
        get_in(
            spec, ("affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution", "nodeSelectorTerms")
        )
    )
    out = []
    for _, term in iter_dicts(terms):
        out.append(base + requirements_from_terms(term.get("matchExpressions")))
    return out or [base]
