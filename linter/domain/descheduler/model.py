"""The model of a descheduler policy: its profiles, plugins, evictor and what protects a pod
from eviction (found by `ailint.domain.descheduler.policies`, which imports this module only
when the files hold a policy).

Field names follow kubernetes-sigs/descheduler (`pkg/api/v1alpha2/types.go`,
`pkg/framework/plugins/defaultevictor/{types,defaultevictor}.go`, README):
`profiles[].pluginConfig[] {name, args}`, `profiles[].plugins.{balance,deschedule,...}.enabled`,
`RemovePodsViolatingTopologySpreadConstraint.args.constraints` (default `[DoNotSchedule]`),
`namespaces.{include,exclude}`, `labelSelector` (matched against a pod template with the
labels its controller adds, `pod_labels.may_select`), and the DefaultEvictor's
`podProtections.{defaultDisabled,extraEnabled}` with the deprecated booleans
(`evictLocalStoragePods`, `ignorePvcPods`, ...), which are ignored as soon as
`podProtections` has any entry (`getEffectivePodProtections`).

Embedded policies are parsed here (rules never parse YAML) with positions, so findings can
point inside a literal block (`policy.yaml: |`) and fixes can edit it in place.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from ailint.core.model import (
    Edit,
    K8sObject,
    Path,
    SourceFile,
    Span,
    as_dict,
    as_list,
    iter_dicts,
)
from ailint.domain.context import shown_path
from ailint.domain.extract import PodTemplate
from ailint.domain.pod_labels import may_select

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

TSC_PLUGIN = "RemovePodsViolatingTopologySpreadConstraint"
EVICTOR = "DefaultEvictor"
DEFAULT_PROTECTIONS = (
    "PodsWithLocalStorage",
    "SystemCriticalPods",
    "FailedBarePods",
    "DaemonSetPods",
)
# deprecated DefaultEvictor booleans -> (protection, True when the flag lifts a default one)
LEGACY_FLAGS = {
    "evictLocalStoragePods": ("PodsWithLocalStorage", True),
    "evictDaemonSetPods": ("DaemonSetPods", True),
    "evictSystemCriticalPods": ("SystemCriticalPods", True),
    "evictFailedBarePods": ("FailedBarePods", True),
    "ignorePvcPods": ("PodsWithPVC", False),
    "ignorePodsWithoutPDB": ("PodsWithoutPDB", False),
}
EVICT_ANNOTATION = "descheduler.alpha.kubernetes.io/evict"
CRITICAL_PRIORITY_CLASSES = ("system-cluster-critical", "system-node-critical")
EXTENSION_POINTS = ("deschedule", "balance")
# Plugins that only evict failed or crash-looping pods: a running, healthy pod is never
# touched by them, so they neither need a PDB nor care about protections of healthy pods.
UNHEALTHY_ONLY_PLUGINS = ("RemoveFailedPods", "RemovePodsHavingTooManyRestarts")
LIFETIME_PLUGIN = "PodLifeTime"
NODE_AFFINITY_PLUGIN = "RemovePodsViolatingNodeAffinity"
REQUIRED_AFFINITY = "requiredDuringSchedulingIgnoredDuringExecution"


def _truthy(v: Any) -> bool:
    return v is True or (isinstance(v, str) and v.strip().lower() == "true")


# ---------------------------------------------------------------------------------------
# Embedded YAML with positions
# ---------------------------------------------------------------------------------------
class Embedded:
    """A policy written as a literal block scalar inside a ConfigMap, mapped back to the file.

    `view` is a K8sObject over the embedded text (so the edit helpers work on it); spans and
    edits computed against it translate to the ConfigMap's file by a fixed line offset and
    indentation. `mapped` is False when the block's layout does not allow that (folded or
    quoted scalars, explicit indentation indicators, CRLF): findings then point at the key.
    """

    def __init__(self, obj: K8sObject, key: str, text: str, data: dict[str, Any], positions: dict) -> None:
        self.obj = obj
        self.key = key
        self.view = K8sObject(
            SourceFile(obj.source.path, obj.source.display, text),
            obj.doc_index,
            data,
            positions,
        )
        self.first_line = 0
        self.indent = 0
        self.mapped = self._map(text)

    def _map(self, value: str) -> bool:
        obj = self.obj
        p = obj.positions.get(obj.base + ("data", self.key))
        src = obj.source
        if p is None or "\r" in src.text:
            return False
        start = src.offset(p[4], p[5])
        eol = src.text.find("\n", start)
        if eol == -1:
            return False
        header = src.text[start:eol]
        if not re.fullmatch(r"\|[-+]?[ \t]*(#.*)?", header):
            return False
        lines = value.split("\n")
        if value.endswith("\n"):
            lines = lines[:-1]
        first = p[4] + 1
        indent = None
        for i, line in enumerate(lines):
            if line.strip():
                ft = src.line_text(first + i)
                indent = len(ft) - len(line)
                break
        if indent is None or indent <= 0:
            return False
        for i, line in enumerate(lines):
            ft = src.line_text(first + i)
            if line and ft != " " * indent + line:
                return False
            if not line and ft.strip():
                return False
        self.first_line, self.indent = first, indent
        return True

    def span(self, path: Sequence[Any], anchor: str = "field") -> Span | None:
        if not self.mapped:
            return None
        s = self.view.value_span(path) if anchor == "value" else self.view.span(path)
        return Span(
            self.first_line + s.line - 1,
            self.indent + s.col,
            self.first_line + s.end_line - 1,
            self.indent + s.end_col,
        )

    def _file_offset(self, eoffset: int) -> tuple[int, bool]:
        line, col = self.view.source.position(eoffset)
        fline = self.first_line + line - 1
        if col == 1:
            return self.obj.source.offset(fline, 1), True
        return self.obj.source.offset(fline, self.indent + col), False

    def translate(self, edit: Edit | None) -> Edit | None:
        """An edit against the embedded text as an edit against the file."""
        if edit is None or not self.mapped:
            return None
        start, at_line_start = self._file_offset(edit.start)
        end, _ = self._file_offset(edit.end) if edit.end != edit.start else (start, at_line_start)
        pad = " " * self.indent
        parts = edit.content.split("\n")
        out = []
        for i, part in enumerate(parts):
            if i == 0:
                out.append(pad + part if at_line_start and part else part)
            else:
                out.append(pad + part if part else part)
        return Edit(start, end, "\n".join(out))


def parse_embedded(obj: K8sObject, key: str, text: str) -> Embedded | None:
    """The policy a ConfigMap's data value `key` embeds, with positions; None if it holds none."""
    if len(text) > 1024 * 1024 or "DeschedulerPolicy" not in text:
        return None
    import yaml  # here: only a ConfigMap that embeds a policy needs the parser
    from ailint.core.yamldata import Converter, Limits, compose

    try:
        node = compose(text)
    except yaml.YAMLError:
        return None
    except (RecursionError, ValueError):
        return None
    if node is None:
        return None
    conv = Converter(Limits())
    try:
        data, _ = conv.convert(node, (), None, 0)
    except Exception:
        return None
    if not isinstance(data, dict) or data.get("kind") != "DeschedulerPolicy":
        return None
    return Embedded(obj, key, text, data, conv.positions)


# ---------------------------------------------------------------------------------------
# Policies and profiles
# ---------------------------------------------------------------------------------------
@dataclass(eq=False)
class Policy:
    """One DeschedulerPolicy: `obj` is the document holding it (the policy or a ConfigMap)."""

    obj: K8sObject
    data: dict[str, Any]
    embedded: Embedded | None = None
    root: str = ""  # the run root its file is named against (`Context.root`)

    @property
    def key(self) -> str | None:
        return self.embedded.key if self.embedded else None

    @property
    def version(self) -> str:
        av = self.data.get("apiVersion")
        return str(av).rsplit("/", 1)[-1] if isinstance(av, str) else ""

    @property
    def label(self) -> str:
        """The policy as messages of other objects name it: the object and its file, as the
        run shows files (relative to the run root), since it is usually in another file."""
        if self.embedded:
            ns = self.obj.namespace + "/" if self.obj.namespace else ""
            return f"ConfigMap {ns}{self.obj.name} (key {self.key}, in {self.file})"
        return self._doc_label()

    def _doc_label(self) -> str:
        if self.obj.name:
            return f"DeschedulerPolicy {self.obj.name} (in {self.file})"
        return f"the DeschedulerPolicy in {self.file}"

    @property
    def file(self) -> str:
        """Its file, relative to the run root."""
        return shown_path(self.obj, self.root)

    @property
    def short_label(self) -> str:
        if self.embedded:
            ns = self.obj.namespace + "/" if self.obj.namespace else ""
            return f"ConfigMap {ns}{self.obj.name} (in {self.file})"
        return self._doc_label()

    def obj_path(self, path: Path) -> Path:
        """Where a finding about `path` (inside the policy) is recorded on the document."""
        return ("data", self.key) if self.embedded else tuple(path)

    def span(self, path: Path, anchor: str = "field") -> Span | None:
        """The file span of `path` inside the policy (None: let the finding use obj_path)."""
        if self.embedded:
            return self.embedded.span(path, anchor)
        return None

    @property
    def edit_view(self) -> K8sObject:
        """The object edits are computed against (see `translate`)."""
        return self.embedded.view if self.embedded else self.obj

    def translate(self, edit: Edit | None) -> Edit | None:
        if self.embedded:
            return self.embedded.translate(edit)
        return edit

    def profiles(self) -> list[Profile]:
        if self.version == "v1alpha1" or ("strategies" in self.data and "profiles" not in self.data):
            return [LegacyProfile(self)]
        return [Profile(self, i, p) for i, p in iter_dicts(self.data.get("profiles"))]


@dataclass(eq=False)
class Profile:
    """One profile of a descheduler policy: the policy it belongs to, its place there, its data."""

    policy: Policy
    index: int
    data: dict[str, Any] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return str(self.data.get("name") or f"profile {self.index}")

    @property
    def path(self) -> Path:
        return ("profiles", self.index)

    def plugin_config(self, name: str) -> tuple[int | None, dict[str, Any]]:
        for i, pc in iter_dicts(self.data.get("pluginConfig")):
            if pc.get("name") == name:
                return i, as_dict(pc.get("args"))
        return None, {}

    def enabled(self, name: str, points: Sequence[str] = EXTENSION_POINTS) -> bool:
        plugins = as_dict(self.data.get("plugins"))
        return any(name in [str(x) for x in as_list(as_dict(plugins.get(point)).get("enabled"))] for point in points)

    def enabled_plugins(self) -> list[str]:
        plugins = as_dict(self.data.get("plugins"))
        out = []
        for point in EXTENSION_POINTS:
            for x in as_list(as_dict(plugins.get(point)).get("enabled")):
                if isinstance(x, str) and x not in out:
                    out.append(x)
        return out

    def healthy_pod_evictors(self) -> list[str]:
        """Enabled plugins that can evict a running, healthy pod. PodLifeTime limited to
        `states` without `Running` (pods `Pending`, `Succeeded`, `PodInitializing`...) never
        evicts one: the plugin filters pods by phase or container state first."""
        return [
            p
            for p in self.enabled_plugins()
            if p not in UNHEALTHY_ONLY_PLUGINS and not (p == LIFETIME_PLUGIN and self._lifetime_skips_running())
        ]

    def _lifetime_skips_running(self) -> bool:
        _, args = self.plugin_config(LIFETIME_PLUGIN)
        legacy = as_dict(args.get("podLifeTime"))  # v1alpha1 params
        states = as_list(args.get("states") or legacy.get("states") or legacy.get("podStatusPhases"))
        return bool(states) and "Running" not in [str(x) for x in states]

    # -- the DefaultEvictor ------------------------------------------------------------
    @property
    def evictor_args(self) -> dict[str, Any]:
        return self.plugin_config(EVICTOR)[1]

    @property
    def evictor_path(self) -> Path | None:
        i, _ = self.plugin_config(EVICTOR)
        return None if i is None else self.path + ("pluginConfig", i)

    def protections(self) -> set[str]:
        """Effective pod protections (getEffectivePodProtections)."""
        args = self.evictor_args
        pp = as_dict(args.get("podProtections"))
        disabled = [str(x) for x in as_list(pp.get("defaultDisabled"))]
        extra = [str(x) for x in as_list(pp.get("extraEnabled"))]
        if disabled or extra:
            return {p for p in DEFAULT_PROTECTIONS if p not in disabled} | set(extra)
        out = set()
        for flag, (prot, lifts) in LEGACY_FLAGS.items():
            on = _truthy(args.get(flag))
            if (lifts and not on) or (not lifts and on):
                out.add(prot)
        return out

    def evictor_admits(self, pod: PodTemplate) -> bool:
        """The DefaultEvictor's `labelSelector` (none: every pod) can select the pod's pods."""
        sel = self.evictor_args.get("labelSelector")
        return sel is None or may_select(sel, pod)

    # -- plugin scope ------------------------------------------------------------------
    def plugin_covers(self, name: str, namespace: str, pod: PodTemplate) -> bool:
        """The plugin's namespaces and `labelSelector` take the pod's pods; for
        RemovePodsViolatingNodeAffinity, the pods also state a node affinity of a type it
        checks (`nodeAffinityType`, required by default): it evicts no other pod."""
        _, args = self.plugin_config(name)
        if name == NODE_AFFINITY_PLUGIN:
            kinds = [str(x) for x in as_list(args.get("nodeAffinityType"))] or [REQUIRED_AFFINITY]
            affinity = as_dict(as_dict(pod.spec.get("affinity")).get("nodeAffinity"))
            if not any(affinity.get(k) for k in kinds):
                return False
        ns = as_dict(args.get("namespaces") or args.get("evictableNamespaces"))
        include = [str(x) for x in as_list(ns.get("include"))]
        exclude = [str(x) for x in as_list(ns.get("exclude"))]
        if include and namespace not in include:
            return False
        if namespace in exclude:
            return False
        sel = args.get("labelSelector")
        return sel is None or may_select(sel, pod)

    def topology_constraints(self) -> set[str]:
        _, args = self.plugin_config(TSC_PLUGIN)
        cons = [str(x) for x in as_list(args.get("constraints"))]
        if not cons and _truthy(args.get("includeSoftConstraints")):  # before v0.27
            return {"DoNotSchedule", "ScheduleAnyway"}
        return set(cons) if cons else {"DoNotSchedule"}

    def rebalances_soft_spread(self, namespace: str, pod: PodTemplate) -> bool:
        return (
            self.enabled(TSC_PLUGIN, ("balance",))
            and "ScheduleAnyway" in self.topology_constraints()
            and self.plugin_covers(TSC_PLUGIN, namespace, pod)
        )


class LegacyProfile(Profile):
    """A v1alpha1 policy (`strategies`), read as one profile."""

    def __init__(self, policy: Policy) -> None:
        super().__init__(policy, 0, policy.data)

    @property
    def name(self) -> str:
        return "strategies"

    @property
    def path(self) -> Path:
        return ()

    def _strategy(self, name: str) -> dict[str, Any]:
        return as_dict(as_dict(self.data.get("strategies")).get(name))

    def plugin_config(self, name: str) -> tuple[int | None, dict[str, Any]]:
        if name == EVICTOR:
            return None, {k: self.data.get(k) for k in LEGACY_FLAGS if k in self.data}
        params = as_dict(self._strategy(name).get("params"))
        return None, params

    def enabled(self, name: str, points: Sequence[str] = EXTENSION_POINTS) -> bool:
        return _truthy(self._strategy(name).get("enabled"))

    def enabled_plugins(self) -> list[str]:
        return [
            k
            for k, v in as_dict(self.data.get("strategies")).items()
            if isinstance(v, dict) and _truthy(v.get("enabled"))
        ]

    @property
    def evictor_path(self) -> Path | None:
        return None


# ---------------------------------------------------------------------------------------
# What protects a pod from eviction
# ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Trait:
    """What keeps a pod from being evicted by the descheduler's DefaultEvictor, and the detail that does it."""

    protection: str  # the DefaultEvictor protection that applies
    detail: str  # e.g. "emptyDir `cache`"


def pod_traits(pod: PodTemplate, ctx: Any = None) -> list[Trait]:
    """Traits of a pod that some DefaultEvictor protection keys on."""
    spec = pod.spec
    out: list[Trait] = []
    local = []
    pvcs = []
    for _, v in iter_dicts(spec.get("volumes")):
        name = str(v.get("name") or "?")
        if "emptyDir" in v:
            local.append(f"emptyDir `{name}`")
        elif "hostPath" in v:
            local.append(f"hostPath `{name}`")
        elif "persistentVolumeClaim" in v:
            pvcs.append(f"PVC `{name}`")
    if pod.obj.kind == "StatefulSet":
        for _, t in iter_dicts(pod.obj.get("spec", "volumeClaimTemplates")):
            pvcs.append(f"PVC template `{as_dict(t.get('metadata')).get('name') or '?'}`")
    if local:
        out.append(Trait("PodsWithLocalStorage", ", ".join(local)))
    if pvcs:
        out.append(Trait("PodsWithPVC", ", ".join(pvcs)))
    if pod.obj.kind == "Pod" and not as_list(pod.obj.metadata.get("ownerReferences")):
        out.append(Trait("FailedBarePods", "a bare Pod (no controller)"))
    if spec.get("priorityClassName") in CRITICAL_PRIORITY_CLASSES:
        out.append(
            Trait(
                "SystemCriticalPods",
                f"priorityClassName {spec.get('priorityClassName')}",
            )
        )
    if pod.obj.kind == "DaemonSet":
        out.append(Trait("DaemonSetPods", "a DaemonSet pod"))
    if ctx is not None and not has_pdb(pod, ctx):
        out.append(Trait("PodsWithoutPDB", "no PodDisruptionBudget"))
    return out


def has_pdb(pod: PodTemplate, ctx: Any) -> bool:
    ns = pod.obj.namespace_or_default
    for pdb in ctx.of_kind("PodDisruptionBudget"):
        if (pdb.namespace_or_default) == ns and may_select(pdb.get("spec", "selector"), pod):
            return True
    return False


def protected_by(profile: Profile, pod: PodTemplate, ctx: Any = None) -> list[Trait]:
    """The traits that make the profile's DefaultEvictor skip this pod (empty: evictable)."""
    if EVICT_ANNOTATION in pod.annotations:
        return []
    prot = profile.protections()
    return [t for t in pod_traits(pod, ctx if "PodsWithoutPDB" in prot else None) if t.protection in prot]


__all__ = [
    "DEFAULT_PROTECTIONS",
    "EVICTOR",
    "EVICT_ANNOTATION",
    "LEGACY_FLAGS",
    "TSC_PLUGIN",
    "Embedded",
    "Policy",
    "Profile",
    "Trait",
    "has_pdb",
    "parse_embedded",
    "pod_traits",
    "protected_by",
]
