"""Serving helpers for the SRV rules: image references, engine flags (vLLM, SGLang, TGI),
RayService `serveConfigV2` and LiteLLM config parsing, and edits inside command strings.

The data (floating tags, DLC registries, health paths, flag spellings) lives in
`data/serving.json`. Embedded YAML (a RayService's `serveConfigV2`, a ConfigMap's config
file) is parsed here, never in a rule, and cached by its text.
"""

from __future__ import annotations

import builtins
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from functools import lru_cache

from ailint.core import pkgdata
from ailint.core.model import Edit, K8sObject, Span, as_dict, as_list, iter_dicts
from ailint.domain.extract import Container, PodTemplate
from ailint.domain.kserve import preset_source
from ailint.domain.quantities import parse_quantity, to_int
from ailint.domain.roles import serving_engine
from ailint.fix import edits

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


@lru_cache(maxsize=1)
def data() -> dict[str, Any]:
    return pkgdata.load_json("ailint.data", "serving.json")


# ---------------------------------------------------------------------------------------
# Image references
# ---------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class ImageRef:
    """A container image reference split into registry, repository, tag and digest."""

    raw: str
    registry: str  # "" for Docker Hub without an explicit registry
    repository: str  # path without the registry ("vllm/vllm-openai")
    tag: str | None
    digest: str | None

    @property
    def name(self) -> str:
        """The last path segment of the repository (`vllm-openai`)."""
        return self.repository.rsplit("/", 1)[-1]

    @property
    def full_repository(self) -> str:
        return f"{self.registry}/{self.repository}" if self.registry else self.repository


def parse_image(image: Any) -> ImageRef | None:
    """Split `registry/repo:tag@sha256:...`; None for empty or unrendered (`${X}`, `{{ }}`) images."""
    if not isinstance(image, str):
        return None
    s = image.strip()
    if not s or any(ch in s for ch in "${}<> \t") or s.startswith(("-", ":")):
        return None
    digest = None
    if "@" in s:
        s, digest = s.split("@", 1)
    first, _, rest = s.partition("/")
    registry = ""
    if rest and ("." in first or ":" in first or first == "localhost"):
        registry, s = first, rest
    tag = None
    if ":" in s.rsplit("/", 1)[-1]:
        s, tag = s.rsplit(":", 1)
    if not s or s != s.lower():
        return None  # repositories are lowercase: `IMG_PLACEHOLDER` is a template placeholder
    return ImageRef(image, registry, s, tag or None, digest or None)


def mutable_tag_reason(ref: ImageRef) -> str | None:
    """Why an image reference can change under the same name (None when pinned)."""
    if ref.digest:
        return None
    if ref.tag is None:
        return "has no tag (means :latest)"
    tag = ref.tag.lower()
    d = data()
    if tag in d["floating_tags"]:
        return f"uses the floating tag :{ref.tag}"
    if re.match(d["major_only_tag"], tag):
        return f"uses the major-only tag :{ref.tag}"
    if tag.endswith(tuple(d["floating_tag_suffixes"])):
        return f"uses the floating tag :{ref.tag}"
    return None


def is_dlc(ref: ImageRef) -> bool:
    return _dlc_repository(ref.full_repository)


@lru_cache(maxsize=4096)
def _dlc_repository(full: str) -> bool:
    """Whether a repository is an AWS DLC one (once per repository: a run asks about the same
    few images thousands of times)."""
    return any(
        re.match(p, full + ("/" if not full.endswith("/") else "")) or re.match(p, full)
        for p in data()["dlc_registries"]
    )


def dlc_engine(ref: ImageRef) -> str | None:
    """The serving engine of an AWS DLC image (`vllm`, `sglang`, ...), by repository name."""
    if not is_dlc(ref):
        return None
    name = ref.name.lower()
    for eng in data()["dlc_serving_repos"]:
        if name == eng or name.startswith(eng + "-") or name.endswith("-" + eng):
            return eng
    return None


def is_torchserve(ref: ImageRef) -> bool:
    full = ref.full_repository.lower()
    pats = data()["torchserve_images"]
    if re.match(pats[0], full):
        return True
    return is_dlc(ref) and pats[1] in ref.name.lower()


# ---------------------------------------------------------------------------------------
# Engine flags
# ---------------------------------------------------------------------------------------
def _norm(tok: str) -> str:
    """`--pipeline_parallel_size=2` -> `--pipeline-parallel-size=2` (vLLM and SGLang accept both)."""
    if tok.startswith("--"):
        name, eq, value = tok.partition("=")
        return name.replace("_", "-") + eq + value
    return tok


def flag_parts(tokens: Sequence[str]) -> list[tuple[str, str, str]]:
    """Each token as (name, `=` or "", value), names normalised (`_norm`): what `get_flag`
    reads, worked out once per container (`engine_args`) instead of once per flag asked."""
    return [_norm(t).partition("=") for t in tokens]


def get_flag(
    tokens: Sequence[str], names: Sequence[str], parts: Sequence[tuple[str, str, str]] | None = None
) -> str | None:
    """The value of the last occurrence of any spelling (`--x v`, `--x=v`, underscores).
    `parts`: `flag_parts(tokens)`, when the caller keeps it."""
    found = None
    n = len(tokens)
    wanted = frozenset(names)
    dashed = all(f.startswith("-") for f in wanted)  # then a token without a dash is a value
    for i, raw in enumerate(tokens):
        if dashed and not raw.startswith("-"):
            continue
        name, eq, value = parts[i] if parts is not None else _norm(raw).partition("=")
        if name not in wanted:
            continue
        if eq:
            found = value
        elif i + 1 < n and not (tokens[i + 1].startswith("--") and len(tokens[i + 1]) > 2):
            found = tokens[i + 1]
    return found


def has_flag(tokens: Sequence[str], names: Sequence[str], parts: Sequence[tuple[str, str, str]] | None = None) -> bool:
    """Whether any spelling of `names` is given (`--x`, `--x=v`, underscores). `parts`:
    `flag_parts(tokens)`, when the caller keeps it."""
    wanted = frozenset(names)  # (a name holds no `=`: a token names it when what precedes `=` does)
    return any(p[0] in wanted for p in (parts if parts is not None else flag_parts(tokens)))


def arg_int(v: Any) -> int | None:
    """An integer from command-line or config text, where quotes and a trailing `;` stick
    to the value (`'4'`, `4;`); the number rules are `ailint.domain.quantities.to_int`'s."""
    if isinstance(v, str):
        v = v.strip().strip("\"'").rstrip(";")
    return to_int(v)


def to_float(v: Any) -> float | None:
    if isinstance(v, bool) or v is None:
        return None
    if isinstance(v, (int, float)):
        return float(v)
    if isinstance(v, str):
        try:
            return float(v.strip().strip("\"'").rstrip(";"))
        except ValueError:
            return None
    return None


@dataclass
class EngineArgs:
    """What a serving container's command line says (absent flags stay None)."""

    engine: str
    tokens: list[str]
    flags: dict[str, list[str]] = field(default_factory=dict)
    parts: list[tuple[str, str, str]] | None = None  # `flag_parts(tokens)`, the container's
    # the names `parts` holds: a flag none of whose spellings is there is absent, with no
    # walk of the tokens (most of the flags rules ask about: 3,000 walks a corpus run)
    given: frozenset[str] | None = None

    def raw(self, key: str) -> str | None:
        names = self.flags.get(key)
        if not names or (self.given is not None and self.given.isdisjoint(names)):
            return None
        return get_flag(self.tokens, names, self.parts)

    def has(self, key: str) -> bool:
        names = self.flags.get(key)
        if not names or (self.given is not None and self.given.isdisjoint(names)):
            return False
        return has_flag(self.tokens, names, self.parts)

    def int(self, key: str) -> int | None:
        return arg_int(self.raw(key))

    def float(self, key: str) -> float | None:
        return to_float(self.raw(key))

    def flag_names(self, key: str) -> list[str]:
        return list(self.flags.get(key) or [])

    @property
    def unresolved(self) -> bool:
        """Some parallelism value is a shell variable the linter cannot resolve."""
        for key in ("tp", "pp", "dp", "dp_local"):
            v = self.raw(key)
            if v is not None and arg_int(v) is None:
                return True
        return False

    @property
    def tp(self) -> builtins.int:  # `int` in this class body is the method above
        return self.int("tp") or 1

    @property
    def pp(self) -> builtins.int:
        return self.int("pp") or 1

    @property
    def dp(self) -> builtins.int:
        return self.int("dp") or 1

    @property
    def prefix_caching(self) -> bool:
        """vLLM V1 enables prefix caching by default; SGLang's radix cache is on by default."""
        toks = [_norm(t) for t in self.tokens]
        if self.engine == "vllm":
            if "--no-enable-prefix-caching" in toks:
                return False
            v = get_flag(self.tokens, ["--enable-prefix-caching"])
            if v is not None and "--enable-prefix-caching=" in " ".join(toks):
                return v.strip().lower() not in ("false", "0", "no")
            return True
        if self.engine == "sglang":
            return "--disable-radix-cache" not in toks
        return False


def engine_args(c: Container, engine: str | None = None) -> EngineArgs | None:
    """Parsed flags of a vLLM, SGLang or TGI container (None for other engines)."""
    engine = engine or serving_engine(c)
    key = {"vllm": "vllm_flags", "sglang": "sglang_flags", "tgi": "tgi_flags"}.get(engine or "")
    if key is None or engine is None:  # (a key implies an engine)
        return None
    tokens = c.tokens
    parts = c._cached("flag_parts", lambda: flag_parts(tokens))
    given = c._cached("flag_names", lambda: frozenset(p[0] for p in parts))
    return EngineArgs(engine, tokens, data()[key], parts, given)


def served_model(c: Container, args: EngineArgs | None) -> str | None:
    """The model a container serves: `--model`/`--model-path`/`--model-id`, `vllm serve <model>`, env."""
    from ailint.domain.extract import model_id

    if args is not None:
        v = args.raw("model")
        if v and not v.startswith("$"):
            return v
    m = model_id(c)
    if m and not m.startswith("$"):
        return m
    return None


def gpu_limit(c: Container) -> int | None:
    """The container's GPU count (nvidia.com/gpu or amd.com/gpu, limits else requests)."""
    lim, req = c.resources("limits"), c.resources("requests")
    for res in ("nvidia.com/gpu", "amd.com/gpu"):
        v = lim.get(res, req.get(res))
        q = parse_quantity(v)
        if q is not None:
            return int(q) if q == int(q) else None
    got = c.claimed()  # DRA devices of a GPU DeviceClass
    for res in ("nvidia.com/gpu", "amd.com/gpu"):
        if res in got:
            return int(got[res]) if got[res] == int(got[res]) else None
    return None


def gpu_path(c: Container) -> tuple:
    for which in ("limits", "requests"):
        for res in ("nvidia.com/gpu", "amd.com/gpu"):
            if res in c.resources(which):
                return c.path_of("resources", which, res)
    if c.claimed():
        return c.path_of("resources", "claims")
    return c.path_of("resources")


def flag_path(c: Container, names: Sequence[str]) -> tuple | None:
    """The path of the command/args item where one of `names` is written (last one wins), else
    where a controller-built command takes it from (KServe LLMInferenceService: spec fields)."""
    best = None
    pat = _flag_regex(names)
    for key in ("command", "args"):
        for i, tok in enumerate(as_list(c.data.get(key))):
            if isinstance(tok, str) and pat.search(tok):
                best = c.path_of(key, i)
    return best if best is not None else preset_source(c, names)


def _flag_regex(names: Sequence[str]) -> re.Pattern[str]:
    return _flag_pattern(tuple(names))


@lru_cache(maxsize=1024)
def _flag_pattern(names: tuple[str, ...]) -> re.Pattern[str]:
    alts = []
    for n in names:
        if n.startswith("--"):
            alts.append("--" + "[-_]".join(re.escape(p) for p in n[2:].split("-")))
        else:
            alts.append(re.escape(n))
    return re.compile(r"(?<![\w-])(?:" + "|".join(alts) + r")(?=$|=|\s)")


# ---------------------------------------------------------------------------------------
# Spans and edits inside scalars
# ---------------------------------------------------------------------------------------
def _raw_range(obj: K8sObject, path: Sequence[Any]) -> tuple[int, int] | None:
    p = obj.positions.get(obj.base + tuple(path))
    if p is None:
        return None
    src = obj.source
    return src.offset(p[4], p[5]), src.offset(p[6], p[7])


def match_in_scalar(
    obj: K8sObject, path: Sequence[Any], pattern: str | re.Pattern[str], group: int = 0
) -> tuple[int, int] | None:
    """Offsets of the only match of `pattern` (its `group`) in the source text of a scalar."""
    rng = _raw_range(obj, path)
    if rng is None:
        return None
    text = obj.source.text[rng[0] : rng[1]]
    rx = re.compile(pattern) if isinstance(pattern, str) else pattern
    matches = list(rx.finditer(text))
    if len(matches) != 1:
        return None
    m = matches[0]
    return rng[0] + m.start(group), rng[0] + m.end(group)


def span_of(obj: K8sObject, start: int, end: int) -> Span:
    l1, c1 = obj.source.position(start)
    l2, c2 = obj.source.position(end)
    if l2 != l1:
        l2, c2 = l1, len(obj.source.line_text(l1)) + 1
    return Span(l1, c1, l2, max(c2, c1 + 1))


def span_in_scalar(obj: K8sObject, path: Sequence[Any], pattern: str | re.Pattern[str]) -> Span | None:
    m = match_in_scalar(obj, path, pattern)
    return None if m is None else span_of(obj, *m)


def set_flag_edit(obj: K8sObject, c: Container, names: Sequence[str], new_value: Any) -> Edit | None:
    """An edit that sets an existing flag's value, wherever it is written.

    Handles `[--flag, "4"]` list items, `--flag=4`, a flag inside a shell string (`sh -c
    "vllm serve ... --flag 4"`) and `$(VAR)` values (the env var's literal value is edited).
    Returns None when the flag is absent, written twice, or not a literal.
    """
    pat = _flag_regex(names)
    hits = []
    for key in ("command", "args"):
        items = as_list(c.data.get(key))
        for i, tok in enumerate(items):
            if not isinstance(tok, str):
                continue
            for m in pat.finditer(tok):
                hits.append((key, i, m))
    if not hits:
        path = preset_source(c, names, create=True)  # KServe LLMInferenceService spec.parallelism
        if path is not None and path[-2] == "parallelism" and isinstance(new_value, int):
            return edits.set_value(obj, path, new_value)
    if len(hits) != 1:
        return None
    key, i, m = hits[0]
    items = as_list(c.data.get(key))
    tok = items[i]
    after = tok[m.end() :]
    if after == "":  # the value is the next list item
        if i + 1 >= len(items) or not isinstance(items[i + 1], (str, int)):
            return None
        value = str(items[i + 1])
        var = re.fullmatch(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)", value.strip())
        if var:
            return _env_edit(obj, c, var.group(1), new_value)
        return edits.replace_value(obj, c.path_of(key, i + 1), edits.quoted(str(new_value)))
    vm = re.match(r"(=|\s+)(\"?)(\$\([A-Za-z_][A-Za-z0-9_]*\)|[^\s\"';&|]+)", after)
    if not vm:
        return None
    value = vm.group(3)
    var = re.fullmatch(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)", value)
    if var:
        return _env_edit(obj, c, var.group(1), new_value)
    if not re.fullmatch(r"\d+", value):
        return None
    flag_rx = pat.pattern + r"(?:=|\s+)\"?(" + re.escape(value) + r")(?![\w.])"
    rng = match_in_scalar(obj, c.path_of(key, i), flag_rx, 1)
    if rng is None:
        return None
    return Edit(rng[0], rng[1], str(new_value))


def _env_edit(obj: K8sObject, c: Container, var: str, new_value: Any) -> Edit | None:
    idx = c.env_index(var)
    if idx is None or "value" not in as_dict(as_list(c.data.get("env"))[idx]):
        return None
    return edits.replace_value(obj, c.path_of("env", idx, "value"), edits.quoted(str(new_value)))


def append_arg_edit(obj: K8sObject, c: Container, text: str) -> Edit | None:
    """Append one `--flag=value` item to the container's block `args` (or `command`) list."""
    for key in ("args", "command"):
        items = as_list(c.data.get(key))
        if items and all(isinstance(t, str) for t in items):
            if key == "command" and c.data.get("args"):
                continue
            # a shell script as one string: not a place to append an argv item
            if (len(items) >= 2 and items[-2] in ("-c", "-lc", "-ec")) or any("\n" in t for t in items):
                return None
            if key == "command" and items[0].rsplit("/", 1)[-1] in (
                "sh",
                "bash",
                "zsh",
                "dash",
            ):
                return None
            return edits.append_item(obj, c.path_of(key), text)
    return None


# ---------------------------------------------------------------------------------------
# Embedded YAML: RayService serveConfigV2, ConfigMap config files
# ---------------------------------------------------------------------------------------
@lru_cache(maxsize=512)
def _load_yaml(text: str) -> Any:
    from ailint.core.yamldata import load_data

    try:
        return load_data(text)
    except Exception:
        return None


def embedded_yaml(value: Any) -> Any:
    """A YAML document given as a string (or already a mapping); None when unparsable."""
    if isinstance(value, (dict, list)):
        return value
    if isinstance(value, str) and value.strip() and len(value) < 1_000_000:
        return _load_yaml(value)
    return None


def serve_config(obj: K8sObject) -> dict[str, Any]:
    return as_dict(embedded_yaml(obj.get("spec", "serveConfigV2")))


@dataclass
class LLMConfig:
    """One Ray Serve LLM `llm_configs` entry."""

    app: str
    index: int
    data: dict[str, Any]

    @property
    def engine_kwargs(self) -> dict[str, Any]:
        return as_dict(self.data.get("engine_kwargs"))

    @property
    def model_id(self) -> str | None:
        mlc = as_dict(self.data.get("model_loading_config"))
        v = mlc.get("model_id")
        return str(v) if isinstance(v, (str, int, float)) and not isinstance(v, bool) else None

    @property
    def model_source(self) -> str | None:
        mlc = as_dict(self.data.get("model_loading_config"))
        v = mlc.get("model_source")
        if isinstance(v, str):
            return v
        return None

    @property
    def accelerator_type(self) -> str | None:
        v = self.data.get("accelerator_type")
        return str(v) if isinstance(v, str) else None

    @property
    def tp(self) -> int:
        return arg_int(self.engine_kwargs.get("tensor_parallel_size")) or 1

    @property
    def pp(self) -> int:
        return arg_int(self.engine_kwargs.get("pipeline_parallel_size")) or 1

    @property
    def max_replicas(self) -> int | None:
        dc = as_dict(self.data.get("deployment_config"))
        auto = as_dict(dc.get("autoscaling_config"))
        v = arg_int(auto.get("max_replicas"))
        if v is None:
            v = arg_int(dc.get("num_replicas"))
        return v


def llm_configs(obj: K8sObject) -> list[LLMConfig]:
    """Ray Serve LLM configs of a RayService (`applications[].args.llm_configs[]` / `llm_config`)."""
    out: list[LLMConfig] = []
    for _, app in iter_dicts(serve_config(obj).get("applications")):
        args = as_dict(app.get("args"))
        name = str(app.get("name") or "")
        for i, cfg in iter_dicts(args.get("llm_configs")):
            out.append(LLMConfig(name, i, cfg))
        if isinstance(args.get("llm_config"), dict):
            out.append(LLMConfig(name, 0, args["llm_config"]))
    return out


# ---------------------------------------------------------------------------------------
# Ray clusters
# ---------------------------------------------------------------------------------------
def ray_worker_gpus(
    pods: Sequence[PodTemplate],
) -> list[tuple[PodTemplate, int, int | None]]:
    """(worker template, GPUs per pod, max pods) for Ray worker groups with GPUs."""
    out = []
    for pod in pods:
        if pod.role in ("head", "submitter"):
            continue
        gpus = sum(int(c.gpu_count()) for c in pod.containers(include_init=False))
        if gpus <= 0:
            continue
        group = as_dict(pod.obj.get(*pod.group_path)) if pod.group_path else {}
        cluster = as_dict(pod.obj.get(*pod.group_path[:-2])) if len(pod.group_path) >= 2 else {}
        autoscaling = cluster.get("enableInTreeAutoscaling") is True
        hosts = arg_int(group.get("numOfHosts")) or 1
        mx = arg_int(group.get("maxReplicas"))
        reps = arg_int(group.get("replicas"))
        if autoscaling:
            n = mx  # unset: the CRD default is maxInt32, i.e. unbounded
        else:
            n = reps if reps is not None else arg_int(group.get("minReplicas"))
        out.append((pod, gpus, None if n is None else n * hosts))
    return out


# ---------------------------------------------------------------------------------------
# Misc
# ---------------------------------------------------------------------------------------
def container_ports(c: Container) -> set[int]:
    out = set()
    for _, p in iter_dicts(c.data.get("ports")):
        n = arg_int(p.get("containerPort"))
        if n:
            out.add(n)
    return out


def serving_port(c: Container, engine: str | None) -> int | str | None:
    """The port a serving container listens on: `--port`, a declared port, else the engine default."""
    args = engine_args(c, engine) if engine else None
    if args is not None:
        port = args.int("port")
        if port:
            return port
    ports = [p for _, p in iter_dicts(c.data.get("ports"))]
    for p in ports:
        if str(p.get("name") or "") in ("http", "serve", "api", "openai"):
            return arg_int(p.get("containerPort"))
    if len(ports) == 1:
        return arg_int(ports[0].get("containerPort"))
    return data()["default_ports"].get(engine or "")


def iter_serving(pod: PodTemplate) -> Iterator[tuple[Container, str]]:
    for c in pod.containers(include_init=False):
        eng = serving_engine(c)
        if eng:
            yield c, eng


def flag_span(obj: K8sObject, c: Container, names: Sequence[str]) -> Span | None:
    """The span of `--flag value` inside a command/args string (when written once there)."""
    rx = re.compile(_flag_regex(names).pattern + r"(?:=|[ \t]+)\"?[^\s\"';&|]*")
    found = []
    for key in ("command", "args"):
        for i, tok in enumerate(as_list(c.data.get(key))):
            if isinstance(tok, str) and _flag_regex(names).search(tok):
                found.append(c.path_of(key, i))
    if len(found) != 1:
        return None
    m = match_in_scalar(obj, found[0], rx)
    return None if m is None else span_of(obj, *m)


def text_location(obj: K8sObject, c: Container, text: str) -> tuple[tuple, Span | None] | None:
    """Where a literal (a model id) is written in command/args: (item path, span of the text)."""
    if not text:
        return None
    rx = re.compile(r"(?<![\w./-])" + re.escape(text) + r"(?![\w./-])")
    for key in ("args", "command"):
        for i, tok in enumerate(as_list(c.data.get(key))):
            if isinstance(tok, str) and rx.search(tok):
                path = c.path_of(key, i)
                m = match_in_scalar(obj, path, rx)
                return path, (span_of(obj, *m) if m else None)
    src = preset_source(c, text=text)  # KServe LLMInferenceService spec.model.uri / name
    return (src, None) if src is not None else None
