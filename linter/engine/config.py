"""Configuration: discovery, validation against `schemas/config.schema.json`, merging.

`.ailint.yaml` (or `.ailint.yml`) or `[tool.ailint]` in `pyproject.toml`, searched from
the current folder upwards; `--config FILE` names one, `--no-config` skips them. Command
line options win over the file. Errors name the file and the bad key.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field

from ailint.core import pkgdata
from ailint.core.limits import Limits
from ailint.core.model import Severity
from ailint.domain.profile import Profile

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


class ConfigError(Exception):
    """A config file that cannot be used; the CLI prints it and exits 2."""


@dataclass
class Settings:
    """A run's settings: the config file's, with the command line's on top."""

    select: list[str] | None = None
    ignore: list[str] = field(default_factory=list)
    extend_select: list[str] = field(default_factory=list)
    per_file_ignores: dict[str, list[str]] = field(default_factory=dict)
    exclude: list[str] = field(default_factory=list)
    context: list[str] = field(default_factory=list)  # globs, relative to `root` (the config's folder)
    fail_on: str = "warning"
    profile: Profile = field(default_factory=Profile)
    rule_settings: dict[str, dict[str, Any]] = field(default_factory=dict)  # code -> {severity, options}
    limits: Limits = field(default_factory=Limits)
    kube_version: str = "1.33"
    schema: bool = True
    respect_gitignore: bool = True
    follow_external_symlinks: bool = False  # read links that lead out of the project (ailint.engine.boundary)
    scope: str = "repo"  # what objects the bundle rules join: `run`, `repo`, `dir` (ailint.engine.scope)
    render: dict[str, Any] = field(
        default_factory=dict
    )  # `helm`, `kustomize`, `charts`, `render` (ailint.engine.render)
    render_cli: dict[str, Any] = field(default_factory=dict)  # --helm, --values, --helm-set, ... (ailint.engine.render)
    cache_dir: str | None = None  # the results cache's folder (ailint.engine.cache); None: the default
    config_path: str | None = None
    root: str = "."
    extra: dict[str, Any] = field(default_factory=dict)  # the config's data, for providers (registry.providers)


CONFIG_NAMES = (".ailint.yaml", ".ailint.yml")


def find_config(start: str) -> str | None:
    cur = os.path.abspath(start)
    while True:
        for name in CONFIG_NAMES:
            p = os.path.join(cur, name)
            if os.path.isfile(p):
                return p
        pp = os.path.join(cur, "pyproject.toml")
        if os.path.isfile(pp):
            try:
                with open(pp, "rb") as fh:
                    if b"[tool.ailint" in fh.read():
                        return pp
            except OSError:
                pass
        parent = os.path.dirname(cur)
        if parent == cur:
            return None
        cur = parent


def read_config(path: str) -> dict[str, Any]:
    try:
        if path.endswith(".toml"):
            import tomllib

            with open(path, "rb") as fh:
                data = tomllib.load(fh)
            return data.get("tool", {}).get("ailint", {}) or {}
        from ailint.core.yamldata import load_data

        with open(path, encoding="utf-8") as fh:
            data = load_data(fh)
    except FileNotFoundError:
        raise ConfigError(f"{path}: config file not found") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read config: {exc.strerror}") from None
    except Exception as exc:
        raise ConfigError(f"{path}: invalid config: {exc}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: the config must be a mapping")
    return data


def config_schema() -> dict[str, Any]:
    return pkgdata.load_json("ailint.schemas", "config.schema.json")


def validate(data: dict[str, Any], path: str) -> None:
    import jsonschema

    validator = jsonschema.Draft202012Validator(config_schema())
    errors = sorted(validator.iter_errors(data), key=lambda e: list(e.absolute_path))
    if errors:
        e = errors[0]
        where = ".".join(str(p) for p in e.absolute_path) or "(top level)"
        msg = e.message
        if e.validator == "additionalProperties":
            msg = f"unknown key: {msg}"
        raise ConfigError(f"{path}: `{where}`: {msg}")


def _list(v: Any) -> list[str]:
    if v is None:
        return []
    if isinstance(v, str):
        return [x.strip() for x in v.split(",") if x.strip()]
    return [str(x) for x in v]


def load_settings(config_file: str | None, no_config: bool, cwd: str = ".") -> Settings:
    s = Settings(root=os.path.abspath(cwd))
    configure_providers({}, None)  # rules of an earlier configuration are gone
    if no_config:
        return s
    path = config_file or find_config(cwd)
    if not path:
        return s
    data = read_config(path)
    configure_providers(data, path)  # before the selectors: `select: [ORG001]` names a custom rule
    s.extra = data
    check_selectors(data, path)
    validate(data, path)
    s.config_path = path
    s.root = os.path.dirname(os.path.abspath(path))
    if "select" in data:
        s.select = _list(data["select"])
    s.ignore = _list(data.get("ignore"))
    s.extend_select = _list(data.get("extend-select"))
    s.per_file_ignores = {k: _list(v) for k, v in (data.get("per-file-ignores") or {}).items()}
    s.exclude = _list(data.get("exclude"))
    s.context = _list(data.get("context"))
    s.fail_on = data.get("fail-on", s.fail_on)
    s.profile = Profile(dict(data.get("profile") or {}))
    s.kube_version = str(data.get("kube-version", s.kube_version))
    s.schema = bool(data.get("schema", True))
    s.respect_gitignore = bool(data.get("respect-gitignore", True))
    s.follow_external_symlinks = bool(data.get("follow-external-symlinks", False))
    s.scope = str(data.get("scope", "repo"))
    if s.scope not in ("run", "repo", "dir"):
        raise ConfigError(f"{path}: `scope`: must be run, repo or dir (got {s.scope!r})")
    s.render = {k: data[k] for k in ("helm", "kustomize", "charts", "render") if k in data}
    if data.get("cache-dir"):  # relative to the config's folder
        s.cache_dir = os.path.join(s.root, os.path.expanduser(str(data["cache-dir"])))
    lim = data.get("limits") or {}
    s.limits = Limits(
        max_file_bytes=int(lim.get("max-file-size", s.limits.max_file_bytes)),
        max_documents=int(lim.get("max-documents", s.limits.max_documents)),
        max_depth=int(lim.get("max-depth", s.limits.max_depth)),
        max_alias_expansion=int(lim.get("max-alias-expansion", s.limits.max_alias_expansion)),
        max_scalar_chars=int(lim.get("max-scalar-length", s.limits.max_scalar_chars)),
    )
    from ailint.engine.registry import OptionError, find_rule, options_for

    for key, value in (data.get("rules") or {}).items():
        reg = find_rule(str(key))
        if reg is None:
            raise ConfigError(f"{path}: `rules.{key}`: no rule has this code or name")
        value = dict(value or {})
        known = set(reg.rule.options)
        for opt in value:
            if opt != "severity" and opt not in known:
                hint = f" (options: {', '.join(sorted(known))})" if known else " (this rule has no options)"
                raise ConfigError(f"{path}: `rules.{key}.{opt}`: unknown option{hint}")
        try:
            options_for(reg.rule, value)
        except OptionError as exc:
            raise ConfigError(f"{path}: `rules.{key}`: {exc}") from None
        s.rule_settings[reg.rule.code] = value
    return s


def configure_providers(data: dict[str, Any], path: str | None) -> None:
    """Rules that providers build from the config (custom rules): registered for this process."""
    from ailint.engine import registry

    regs: list[Any] = []
    try:
        for provider in registry.providers():
            regs.extend(provider.configure(data, path))
    except (ValueError, RuntimeError) as exc:
        raise ConfigError(str(exc)) from None
    registry.set_config_rules(regs)


_SELECTOR_KEYS = ("select", "extend-select", "ignore")


def _config_line(path: str, keys: tuple[Any, ...], needle: str, key_line: bool = False) -> int | None:
    """The 1-based line of the value at `keys` (YAML node positions; TOML: a text search)."""
    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
    except OSError:
        return None
    if not path.endswith(".toml"):
        import yaml
        from ailint.core.yamldata import pyyaml_compose

        try:
            node: Any = pyyaml_compose(text)
        except Exception:
            node = None
        for n, key in enumerate(keys):
            if node is None:
                break
            if isinstance(node, yaml.MappingNode):
                pair = next(((k, v) for k, v in node.value if getattr(k, "value", None) == key), None)
                node = None if pair is None else pair[0 if key_line and n == len(keys) - 1 else 1]
            elif isinstance(node, yaml.SequenceNode) and isinstance(key, int) and key < len(node.value):
                node = node.value[key]
            elif isinstance(node, yaml.ScalarNode) and isinstance(key, int):
                break  # "GPU001,SRV" in one string: the string's line
            else:
                node = None
        if node is not None:
            return int(node.start_mark.line) + 1
    for i, line in enumerate(text.splitlines(), 1):
        if needle in line and not line.lstrip().startswith("#"):
            return i
    return None


def _suggest(selector: str) -> str:
    import difflib

    from ailint.engine.registry import all_rules

    rules = all_rules().values()
    words = [r.rule.code for r in rules] + [r.rule.name for r in rules] + sorted({r.rule.family for r in rules})
    import re

    key = selector if "-" in selector else selector.upper()
    if re.fullmatch(r"[A-Z]{3}\d+", key):  # a code: the nearest code, not a family
        words = [w for w in words if re.fullmatch(r"[A-Z]{3}\d{3}", w)]
    close = difflib.get_close_matches(key, words, n=1, cutoff=0.5)
    return f"; did you mean {close[0]}?" if close else " (see `ailint rules`)"


def unknown_selector_message(selector: str) -> str:
    """`unknown rule code, prefix or name: 'GPU999'; did you mean GPU009?`"""
    return f"unknown rule code, prefix or name: {selector!r}{_suggest(selector)}"


def check_selectors(data: dict[str, Any], path: str) -> None:
    """Every code, prefix or name the config names must name a rule (a typo must not
    silently turn linting off): the error names the file, the line and the nearest code."""
    from ailint.engine.registry import find_rule, is_known_selector

    def bad(where: str, keys: tuple[Any, ...], selector: str, msg: str, key_line: bool = False) -> ConfigError:
        line = _config_line(path, keys, selector, key_line)
        at = f"{path}:{line}" if line else path
        return ConfigError(f"{at}: `{where}`: {msg}")

    def each(value: Any) -> list[tuple[int, str]]:
        if isinstance(value, str):
            return list(enumerate(x.strip() for x in value.split(",") if x.strip()))
        if not isinstance(value, list):
            return []  # a wrong type: the schema check says so
        return [(i, str(x).strip()) for i, x in enumerate(value) if isinstance(x, str)]

    lists: list[tuple[str, tuple[Any, ...], Any]] = [(k, (k,), data.get(k)) for k in _SELECTOR_KEYS if k in data]
    pfi = data.get("per-file-ignores")
    for pattern, codes in (pfi if isinstance(pfi, dict) else {}).items():
        lists.append((f"per-file-ignores.{pattern}", ("per-file-ignores", pattern), codes))
    for where, keys, value in lists:
        for i, sel in each(value):
            if sel.upper() != "ALL" and not is_known_selector(sel):
                raise bad(f"{where}[{i}]", (*keys, i), sel, unknown_selector_message(sel))
    rules = data.get("rules")
    for key in rules if isinstance(rules, dict) else {}:
        if find_rule(str(key)) is None:
            msg = f"no rule has this code or name{_suggest(str(key))}"
            raise bad(f"rules.{key}", ("rules", key), str(key), msg, key_line=True)


def parse_set(pairs: tuple[str, ...], profile: Profile) -> Profile:
    """`--set KEY=VALUE` pairs into the profile (JSON values, else strings)."""
    values = dict(profile.values)
    for pair in pairs:
        if "=" not in pair:
            raise ConfigError(f"--set {pair}: expected KEY=VALUE")
        key, raw = pair.split("=", 1)
        key = key.strip()
        if key not in Profile.DEFAULTS:
            raise ConfigError(f"--set {key}: unknown profile key (known: {', '.join(sorted(Profile.DEFAULTS))})")
        try:
            value = json.loads(raw)
        except ValueError:
            value = [x for x in raw.split(",") if x] if isinstance(Profile.DEFAULTS[key], list) else raw
        values[key] = value
        _validate_profile_value(pair, key, value)
    return Profile(values)


def _validate_profile_value(pair: str, key: str, value: Any) -> None:
    """`--set` values checked against the config schema's `profile` section."""
    import jsonschema

    schema = config_schema()["properties"]["profile"]["properties"].get(key)
    if schema is None:
        return
    errors = list(jsonschema.Draft202012Validator(schema).iter_errors(value))
    if errors:
        raise ConfigError(f"--set {pair}: {errors[0].message} (for {key})")


def severity_override(settings: Settings, code: str) -> Severity | None:
    v = settings.rule_settings.get(code, {}).get("severity")
    return Severity.parse(v) if v else None
