"""Policies in CEL: custom rules from the config and Kubernetes ValidatingAdmissionPolicy.

`cel` wraps the CEL engine with the Kubernetes libraries and the evaluation bounds,
`custom_rules` turns `custom-rules:` into registered rules, `admission` evaluates admission
policies offline. `PROVIDER` is what the engine sees, through the `ailint.providers`
entry point (see `ailint.engine.registry`): the engine names neither custom rules nor policies.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from ailint.core.model import Finding, K8sObject

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

POLICY_CODES = ("POL001", "POL002", "POL003")


class PolicyProvider:
    """Custom rules (at config time) and the admission-policy pass (after the bundle rules)."""

    def __init__(self) -> None:
        self._context: dict[tuple[str, int, int], list[Any]] = {}

    # -- config -------------------------------------------------------------------------------
    def configure(self, data: dict[str, Any], path: str | None) -> list[Any]:
        if not path or not any(k in data for k in ("custom-rules", "custom-rules-files", "policies")):
            return []
        from ailint.policy import cel

        if "policies" in data:
            self._check_policy_paths(data["policies"], path)
        if "custom-rules" not in data and "custom-rules-files" not in data:
            return []
        missing = cel.available()
        if missing:
            raise ValueError(f"{path}: custom rules need {missing}")
        from ailint.policy import custom_rules

        return custom_rules.registered(custom_rules.load_specs(data, path))

    def _check_policy_paths(self, value: Any, path: str) -> None:
        items = [value] if isinstance(value, str) else value
        if not isinstance(items, list):
            raise ValueError(f"{path}: `policies` must be a list of files, folders or globs")
        root = os.path.dirname(os.path.abspath(path))
        import glob as globmod  # here, not at import: a run without policies never globs

        for i, item in enumerate(items):
            full = os.path.join(root, str(item))
            if not (globmod.glob(full, recursive=True) if globmod.has_magic(str(item)) else os.path.exists(full)):
                from ailint.policy.custom_rules import Where

                line, _col = Where(path).line_col(("policies",))
                raise ValueError(f"{path}:{line + i + 1}: `policies[{i}]`: no such file or folder: {item!r}")

    # -- runs ---------------------------------------------------------------------------------
    def begin_run(self) -> None:
        if "ailint.policy.cel" in __import__("sys").modules:
            from ailint.policy import cel

            cel.new_run()

    def policy_files(self, settings: Any) -> list[str]:
        """The files of `policies:` (config, relative to its folder) and `--policies` (absolute)."""
        items = settings.extra.get("policies") if isinstance(getattr(settings, "extra", None), dict) else None
        if not items:
            return []
        if isinstance(items, str):
            items = [items]
        import glob as globmod

        out: list[str] = []
        for item in items:
            full = os.path.join(settings.root, str(item))
            paths = sorted(globmod.glob(full, recursive=True)) if globmod.has_magic(str(item)) else [full]
            for p in paths:
                if os.path.isdir(p):
                    for dirpath, dirnames, filenames in os.walk(p):
                        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
                        out.extend(
                            os.path.join(dirpath, f)
                            for f in sorted(filenames)
                            if f.endswith((".yaml", ".yml", ".json"))
                        )
                elif os.path.isfile(p):
                    out.append(p)
        return list(dict.fromkeys(out))

    def context_objects(self, settings: Any) -> tuple[list[K8sObject], list[Finding]]:
        """Objects of the policy files (cached by path, size and mtime) and their YAML problems."""
        from ailint.core.model import SourceFile
        from ailint.engine.load import load_text

        objects: list[K8sObject] = []
        problems: list[Finding] = []
        for p in self.policy_files(settings):
            try:
                st = os.stat(p)
            except OSError:
                continue
            key = (os.path.abspath(p), st.st_size, st.st_mtime_ns)
            got = self._context.get(key)
            if got is None:
                display = os.path.relpath(p) if not os.path.relpath(p).startswith("..") else p
                try:
                    with open(p, encoding="utf-8") as fh:
                        text = fh.read()
                except (OSError, UnicodeDecodeError):
                    continue
                fr = load_text(SourceFile(p, display, text), settings.limits)
                got = self._context[key] = [fr.objects, fr.findings]
            objects.extend(got[0])
            problems.extend(got[1])
        return objects, problems

    takes_memo = True  # run_pass keeps what it may reuse in the results cache's `memo`

    def run_pass(
        self,
        objects: Sequence[K8sObject],
        settings: Any,
        enabled: set[str],
        hidden: frozenset[str] = frozenset(),
        memo: Any = None,
    ) -> list[Finding]:
        """POL findings of a run: `objects` are judged unless their file is in `hidden`;
        `memo` keeps each object's verdicts for the next run (`admission.findings`)."""
        codes = [c for c in POLICY_CODES if c in enabled]
        if not codes:
            return []
        context, problems = self.context_objects(settings)
        if not context and not any(
            o.kind == "ValidatingAdmissionPolicyBinding" or o.kind == "ValidatingAdmissionPolicy" for o in objects
        ):
            return []

        def not_evaluated(missing: str) -> list[Finding]:  # never a silent pass: each policy says so
            if "POL002" not in enabled:
                return []
            from ailint.engine.registry import all_rules

            pol002 = all_rules()["POL002"].rule
            return [
                pol002.finding(o, (), f"policy {o.name} not evaluated: {missing}")
                for o in [*objects, *context]
                if o.kind == "ValidatingAdmissionPolicy" and o.group == "admissionregistration.k8s.io"
            ]

        # the engine is imported only when a verdict must be worked out (`admission.findings`):
        # with every verdict remembered, a rerun loads none of it
        from ailint.core.pkgdata import find_spec

        if find_spec("cel_expr_python") is None:
            from ailint.policy import cel

            missing = cel.available()
            if missing:
                return not_evaluated(missing)
        from ailint.engine.config import severity_override
        from ailint.engine.registry import all_rules
        from ailint.policy import admission

        rules = {}
        for code in codes:
            reg = all_rules().get(code)
            if reg is not None:
                rules[code] = (reg.rule.name, reg.rule.severity)
        targets = [o for o in objects if o.file not in hidden] if hidden else list(objects)
        # a kustomize patch is a fragment the API server never receives as written: its
        # verdicts are not reported (asked only of objects with one: the walk is not free)
        from ailint.core.digest import blake2b
        from ailint.domain.patches import is_partial, kustomize_patches

        patch_names = kustomize_patches([*objects, *context])
        names_key = "\0".join(sorted(patch_names)).encode("utf-8", "surrogateescape")
        try:
            found = admission.findings(
                objects,
                targets,
                rules,
                context,
                memo,
                judged=lambda o: not is_partial(o, patch_names),
                judged_key=blake2b(names_key, digest_size=20).digest(),
            )
        except admission.CelUnavailable as exc:
            return not_evaluated(str(exc))
        found.extend(f for f in problems if f.code in enabled)
        out = []
        for f in found:
            sev = severity_override(settings, f.code)
            out.append(
                f
                if sev is None
                else Finding(f.code, f.name, sev, f.message, f.file, f.span, f.object_ref, f.path, f.fix)
            )
        return out


PROVIDER = PolicyProvider()
