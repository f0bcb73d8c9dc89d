"""
## What it does
Checks the images of serving and training pods (every container, init containers
included) for references that can change under the same name: no tag (`:latest`),
`:latest`, a floating tag (`stable`, `main`, `nightly`, `edge`, a `-latest` suffix...) or
a major-only tag (`:2`, `:v1`), without an `@sha256:` digest. On accelerator pods it also
says when `imagePullPolicy: Always` (explicit, or the default for `:latest`) re-pulls the
image on every start.

Serving pods are found by image or command (vLLM, SGLang, TGI, Triton, LMDeploy,
llama.cpp, Ray Serve, RayService); training pods by owner kind or launcher command, and a
Job whose containers only sleep or check their devices (`nvidia-smi`, `hl-smi`) trains nothing.

Severity: error on a serving pod of vLLM, SGLang or an AWS Deep Learning Container engine
(their images change flags and metrics between releases).

## Why is this bad?
Inference images move fast (vLLM went from one minor release to the next in weeks, with
changed flags and metrics), so a floating tag deploys whatever was pushed last: replicas
of one Deployment can run different engine versions, a node replacement silently
upgrades, and a rollback cannot go back. With `imagePullPolicy: Always` every restart
pulls the 10-20 GB image again, which slows recovery and costs egress.

## Example
```yaml
apiVersion: apps/v1
kind: Deployment
metadata:
  name: vllm
spec:
  selector:
    matchLabels: {app: vllm}
  template:
    metadata:
      labels: {app: vllm}
    spec:
      containers:
        - name: vllm
          image: vllm/vllm-openai:latest
          resources:
            limits:
              nvidia.com/gpu: 1
```

## Use instead
```yaml
apiVersion: apps/v1
kind: Deployment
metadata:
  name: vllm
spec:
  selector:
    matchLabels: {app: vllm}
  template:
    metadata:
      labels: {app: vllm}
    spec:
      containers:
        - name: vllm
          image: vllm/vllm-openai:v0.9.2
          resources:
            limits:
              nvidia.com/gpu: 1
```

## Options
- `pins` (object, default `{}`): image repository -> tag or `sha256:` digest to pin to
  (for example `{"vllm/vllm-openai": "v0.9.2"}`); enables the fix for those images.

## Fix
Unsafe: replaces the reference with the pinned tag or digest from the `pins` option, or,
for `vllm/vllm-openai`, with `v<vllmVersion>` when the cluster profile sets `vllmVersion`.
Otherwise no fix: pinning needs registry access (look up the digest with
`crane digest IMAGE` or `docker buildx imagetools inspect IMAGE`).

## References
- https://kubernetes.io/docs/concepts/containers/images/#image-names
- https://kubernetes.io/docs/concepts/containers/images/#imagepullpolicy-defaulting
- https://docs.aws.amazon.com/deep-learning-containers/latest/devguide/
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from ailint.core.lazyre import lazy_re
from ailint.core.model import Finding, Fix, FixAvailability, K8sObject, Severity
from ailint.core.rule import Option, Options, Rule, make_fix
from ailint.domain import serving
from ailint.domain.context import Context
from ailint.domain.extract import (
    POD_KINDS,
    is_accelerator_pod,
    is_serving_pod,
    is_training_pod,
    pod_templates,
    serving_engine,
)
from ailint.domain.kserve import preset_supplies
from ailint.domain.roles import only_waits
from ailint.fix import edits

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

RULE = Rule(
    code="SRV002",
    name="mutable-image-tag-serving",
    severity=Severity.WARNING,
    summary="A serving or training image uses :latest, no tag or a floating tag instead of a pinned version",
    kinds=POD_KINDS,
    fix=FixAvailability.SOMETIMES,
    options={"pins": Option({}, "image repository -> tag or sha256 digest to pin to", "object")},
    tags=("serving", "training", "images"),
    why_when=(  # a re-pull costs time and egress; any other floating tag deploys what was pushed last
        (r"is re-pulled", "With imagePullPolicy: Always"),
        (r"can change between pulls", "Inference images move fast"),
    ),
)


def check(obj: K8sObject, ctx: Context, opts: Options) -> Iterator[Finding]:
    seen: set[tuple] = set()
    pods = list(pod_templates(obj))
    # a Ray cluster's worker groups run what its head serves or trains (the workers only `ray start`)
    ray_serving = obj.kind in _RAY_KINDS and any(is_serving_pod(p) for p in pods)
    ray_training = obj.kind in _RAY_KINDS and not ray_serving and any(_training(obj, p) for p in pods)
    for pod in pods:
        serving_pod = is_serving_pod(pod) or ray_serving
        if not serving_pod and not (ray_training or _training(obj, pod)):
            continue
        accel = is_accelerator_pod(pod)
        role = "serving" if serving_pod else "training"
        for c in pod.containers():
            if c.path in seen:
                continue
            seen.add(c.path)
            ref = serving.parse_image(c.data.get("image"))
            if ref is None:
                continue
            reason = serving.mutable_tag_reason(ref) or _floating_prefix(ref)
            if reason is None:
                continue
            engine = serving_engine(c) if not c.init else None
            severe = serving_pod and (engine in ("vllm", "sglang") or serving.dlc_engine(ref) is not None)
            kind = "init" if c.init and not c.sidecar else role
            image, what, name = _short_image(c.image), _short_reason(reason), c.name or "<unnamed>"
            msg = f"image {image} ({what}) can change between pulls in {kind} container {name}; pin a tag or digest"
            policy = c.data.get("imagePullPolicy")
            if policy is None and preset_supplies(c, "imagePullPolicy"):
                policy = "IfNotPresent"  # KServe LLMInferenceService presets set it
            if accel and (policy == "Always" or (policy is None and (ref.tag is None or ref.tag == "latest"))):
                why = "imagePullPolicy: Always" if policy == "Always" else "pull policy Always by default"
                msg = (
                    f"image {image} ({what}) is re-pulled ({why}) at every start of accelerator "
                    f"container {name}; pin a tag or digest"
                )
            yield RULE.finding(
                obj,
                c.path_of("image"),
                msg,
                anchor="value",
                severity=Severity.ERROR if severe else Severity.WARNING,
                fix=_pin(obj, c, ref, ctx, opts),
            )


_RAY_KINDS = ("RayCluster", "RayService", "RayJob")


def _floating_prefix(ref: serving.ImageRef) -> str | None:
    """`latest-gpu`, `nightly-py310`: a floating tag with a variant suffix (a dated nightly,
    `nightly-20250601`, is a pinned build)."""
    tag = (ref.tag or "").lower()
    if ref.digest or not re.match(r"(latest|nightly)[-_.]", tag) or re.search(r"\d{6}", tag):
        return None
    return f"uses the floating tag :{ref.tag}"


def _short_reason(reason: str) -> str:
    """`uses the floating tag :latest` -> `floating tag` (the image in the message shows the tag)."""
    if reason.startswith("has no tag"):
        return "no tag, so :latest"
    return reason.removeprefix("uses the ").split(" :")[0]


def _short_image(image: str, limit: int = 56) -> str:
    """A long image keeps its registry and repository name: `vault.habana.ai/.../tf-cpu-2.9.1`
    (the finding points at the full value)."""
    parts = image.split("/")
    if len(image) <= limit or len(parts) < 3:
        return image
    return f"{parts[0]}/.../{parts[-1]}"


_ML_KINDS = (
    "PyTorchJob",
    "MPIJob",
    "TFJob",
    "XGBoostJob",
    "PaddleJob",
    "JAXJob",
    "TrainJob",
    "TrainingRuntime",
    "ClusterTrainingRuntime",
)
_LAUNCHER = lazy_re(
    r"\b(torchrun|deepspeed|accelerate launch|ray\.train|torch\.distributed\.(run|launch)|mpirun|"
    r"horovodrun)\b"
)


def _training(obj: Any, pod: Any) -> bool:
    """A training pod that runs ML work: an ML training kind, accelerators, or a launcher command.

    Generic batch kinds (Job, JobSet, RayJob) running `busybox sleep` are not training images,
    with an accelerator or without: a pod whose containers only sleep holds its devices (a GPU
    claim demo, a scheduler's placeholder) and trains nothing.
    """
    if not is_training_pod(pod):
        return False
    if obj.kind in _ML_KINDS:
        return True
    if is_accelerator_pod(pod):
        mains = list(pod.containers(include_init=False))
        return not mains or not all(only_waits(c) for c in mains)
    return any(_LAUNCHER.search(" ".join(c.tokens)) for c in pod.containers())


def _pin(obj: Any, c: Any, ref: serving.ImageRef, ctx: Any, opts: Options) -> Fix | None:
    pins = opts.get_dict("pins")
    pin = pins.get(ref.full_repository, pins.get(ref.repository))
    if pin is None and ref.repository == "vllm/vllm-openai" and ref.registry in ("", "docker.io"):
        version = ctx.profile.get("vllmVersion") if ctx is not None else None
        if isinstance(version, (str, int, float)) and not isinstance(version, bool) and str(version).strip():
            v = str(version).strip()
            pin = v if v.startswith("v") else "v" + v
    if not isinstance(pin, str) or not pin.strip():
        return None
    pin = pin.strip().lstrip(":@")
    new = f"{ref.full_repository}@{pin}" if pin.startswith("sha256:") else f"{ref.full_repository}:{pin}"
    pinned = serving.parse_image(new)
    if pinned is None or serving.mutable_tag_reason(pinned) is not None:
        return None
    return make_fix(
        f"pin the image to {new}", [edits.replace_value(obj, c.path_of("image"), edits.scalar(new))], unsafe=True
    )
