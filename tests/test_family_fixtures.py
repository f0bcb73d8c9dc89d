"""Issue 12's families have fixtures: for each rule that applies to a family, fixtures/<CODE>/
holds a failing case whose `# expect: CODE` marker sits in an object of that family and a
passing case (no marker for CODE) with such an object; and each family has an `inventory`
snapshot (fixtures/inventory/<case>.yaml and its .inventory.json) that lists a workload of it.

The families are the adapter registry's (`ailint.domain.workloads.families()`), their kinds
read from it; the issue names part of two of them: KServe's InferenceService in the
`predictor.model` (framework) form with its runtimes, and kubeflow's MPIJob. A DRA object is
a workload whose pods name `resourceClaims`, in a file that holds a claim or claim template
(the DRA family's catalogue kinds).

`APPLIES` is which rule applies to which family, found by running every rule (opt-in ones
too) over the family's objects: the fixtures, tests/test_workloads.py's inline Model and the
development samples of ../shared/corpus (substratusai__kubeai, kaito-project__kaito,
sgl-project__ome, vllm-project__aibrix, InftyAI__llmaz, NVIDIA__nim-deploy,
kubeflow__mpi-operator), then over fixtures written for the rules issue 12 names (SRV001,
SRV002, SRV004, GPU001, GPU003, TRN007, SRV014, the accelerator rules on DRA pods) wherever
they fired. The schema codes (SCH) are left out: they validate every kind against its CRD
(tests/test_schema.py) and are no rule on the workload.
"""

from __future__ import annotations

import json
import pathlib
from collections.abc import Callable

import pytest
from ailint.core.model import K8sObject, SourceFile
from ailint.domain import workloads
from ailint.domain.workloads.base import Kind
from ailint.domain.workloads.kserve import framework
from ailint.engine.load import load_text
from fixture_harness import FIXTURES, expected_markers

INVENTORY = FIXTURES / "inventory"

# family -> rule -> where it was seen to apply: "samples" (a finding on the family's objects in
# the development samples), "fixtures" (a finding on them in fixtures/ before issue 12's fixtures
# were written), "probe" (a fixture written for a rule issue 12 names fired on the family),
# "named by the issue" (issue 12 names the check for the family: MPIJob's restart budget and
# processes per node, TRN005/TRN006; the Ray rules on an AIBrix RayClusterFleet's RayCluster
# template; a KAITO preset's model size against the instance type's
# GPU memory, GPU009; their fixtures come with those rules).
S, F, P, N = "samples", "fixtures", "probe", "named by the issue"
APPLIES: dict[str, dict[str, str]] = {
    "kserve": {"GPU001": P, "GPU003": F, "OBS001": F, "SRV001": S, "SRV002": F, "SRV003": F, "SRV004": F, "SRV014": P},
    "ome": {"GPU001": P, "GPU003": F, "GPU005": F, "OBS002": S, "SRV001": F, "SRV002": P, "SRV004": F, "STO007": S},
    "kaito": {"GPU003": S, "GPU009": N, "OBS002": S, "SRV001": P, "SRV002": F, "SRV004": P, "STO007": S},
    "kubeai": {"GPU001": P, "SEC012": P, "SRV002": P, "SRV004": F, "STO008": S},
    "llmaz": {"GPU001": P, "GPU003": F, "GPU005": P, "OBS002": F, "SRV001": F, "SRV002": P, "SRV004": P},
    "aibrix": {
        "GPU001": P,
        "GPU003": S,
        "GPU005": S,
        "OBS001": S,
        "OBS002": S,
        "OBS004": S,
        "OBS006": N,
        "REL008": N,
        "SEC008": N,
        "SRV001": S,
        "SRV002": S,
        "SRV004": S,
        "SRV012": S,
        "STO007": S,
        "STO008": S,
        "TRN002": N,
        "TRN004": S,
    },
    "dynamo": {"OBS001": F, "SRV002": P, "STO008": F},
    "nim": {"GPU001": P, "GPU003": F, "SRV002": P, "SRV014": F, "STO007": F},
    "mpijob": {
        "GPU001": P,
        "GPU003": S,
        "GPU005": F,
        "NET002": F,
        "NET003": F,
        "OBS001": S,
        "OBS002": S,
        "REL004": F,
        "SRV002": S,
        "TRN005": N,
        "TRN006": N,
        "TRN007": S,
    },
    "dra": {
        "GPU001": F,
        "GPU003": F,
        "GPU005": F,
        "OBS002": F,
        "OBS004": S,
        "REL004": P,
        "REL006": P,
        "SRV001": S,
        "SRV004": F,
        "STO008": F,
    },
}


# -- the families, from the registry ----------------------------------------------------------
def _registry(name: str) -> workloads.Family:
    (fam,) = [f for f in workloads.families() if f.name == name]
    return fam


def _kinds(fam: workloads.Family) -> tuple[Kind, ...]:
    return (*fam.kinds, *fam.template_kinds, *fam.catalogue)


def _of(kinds: tuple[Kind, ...], obj: K8sObject) -> bool:
    return any(kind == obj.kind and group in (None, obj.group) for group, kind in kinds)


def _kserve(obj: K8sObject, _file: list[K8sObject]) -> bool:
    fam = _registry("kserve")
    if _of(fam.catalogue, obj):
        return True  # a runtime the model form merges with
    return _of(fam.kinds, obj) and framework(obj.get("spec", "predictor") or {}) is not None


def _mpijob(obj: K8sObject, _file: list[K8sObject]) -> bool:
    mpi = tuple(k for k in _kinds(_registry("kubeflow")) if k[1] == "MPIJob")
    assert mpi, "the kubeflow adapter no longer reads MPIJob"
    return _of(mpi, obj)


def _dra(obj: K8sObject, file: list[K8sObject]) -> bool:
    claims = _registry("dra").catalogue
    if not any(_of(claims, o) for o in file) or not workloads.is_workload(obj):
        return False
    return any(p.spec.get("resourceClaims") for p in workloads.pod_templates(obj))


def _plain(name: str) -> Callable[[K8sObject, list[K8sObject]], bool]:
    def pick(obj: K8sObject, _file: list[K8sObject]) -> bool:
        return _of(_kinds(_registry(name)), obj)

    return pick


FAMILIES: dict[str, Callable[[K8sObject, list[K8sObject]], bool]] = {
    "kserve": _kserve,
    "mpijob": _mpijob,
    "dra": _dra,
    **{n: _plain(n) for n in ("ome", "kaito", "kubeai", "llmaz", "aibrix", "dynamo", "nim")},
}


# -- the fixtures ---------------------------------------------------------------------------
def _objects(path: pathlib.Path) -> list[K8sObject]:
    rel = str(path.relative_to(FIXTURES.parent))
    return load_text(SourceFile(str(path), rel, path.read_text(encoding="utf-8"))).objects


def _lines(obj: K8sObject) -> range:
    loc = obj.location(())
    assert loc is not None
    return range(loc.value.line, loc.value.end_line + 1)


def cases(code: str, family: str) -> tuple[list[str], list[str]]:
    """The failing and the passing cases of fixtures/<code>/ that hold an object of `family`
    (failing: a marker for `code` on a line of such an object)."""
    pick = FAMILIES[family]
    failing: list[str] = []
    passing: list[str] = []
    for path in sorted((FIXTURES / code).glob("*.yaml")):
        if path.name.endswith(".fixed.yaml"):
            continue
        objs = _objects(path)
        mine = [o for o in objs if pick(o, objs)]
        if not mine:
            continue
        marks = [line for line, c in expected_markers(path.read_text(encoding="utf-8")) if c == code]
        if not marks:
            passing.append(path.name)
        elif any(line in _lines(o) for o in mine for line in marks):
            failing.append(path.name)
    return failing, passing


PAIRS = sorted((code, fam) for fam, codes in APPLIES.items() for code in codes)


def test_the_table_names_known_families_and_rules():
    from ailint.engine import registry

    known = set(registry.all_rules())
    assert set(APPLIES) == set(FAMILIES)
    assert not [c for codes in APPLIES.values() for c in codes if c not in known]


@pytest.mark.parametrize(("code", "family"), PAIRS, ids=[f"{c}-{f}" for c, f in PAIRS])
def test_each_rule_has_a_failing_and_a_passing_case_per_family(code, family):
    failing, passing = cases(code, family)
    assert failing, f"fixtures/{code}/ has no failing case on a {family} object"
    assert passing, f"fixtures/{code}/ has no passing case with a {family} object"


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_each_family_has_an_inventory_snapshot(family):
    pick = FAMILIES[family]
    listed = []
    for path in sorted(INVENTORY.glob("*.yaml")):
        objs = _objects(path)
        mine = [o for o in objs if pick(o, objs) and workloads.is_inventory_workload(o)]
        snap = path.with_suffix(".inventory.json")
        if not mine or not snap.exists():
            continue
        inv = json.loads(snap.read_text(encoding="utf-8"))
        seen = {(w["kind"], w["name"]) for w in inv["workloads"]}
        listed += [(path.name, o.kind, o.name) for o in mine if (o.kind, o.name) in seen]
    assert listed, f"no fixtures/inventory/*.yaml snapshot lists a {family} workload"
