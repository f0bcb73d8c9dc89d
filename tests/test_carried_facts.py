"""The facts of an object's pods travel with it from the process that parsed it
(`ailint.domain.roles.prime`, `ailint.domain.extract.carry_facts`, `K8sObject.carried`):
the parent's pod templates, made again from the same data, start with them, and they are the
facts worked out afresh."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest
from ailint.core.limits import Limits
from ailint.core.model import SourceFile
from ailint.domain import roles
from ailint.domain.extract import carry_facts, pod_templates
from ailint.engine.load import load_text
from conftest import ROOT

FIXTURES = ROOT / "fixtures"


def _objects(path: Path) -> list:
    text = path.read_text(encoding="utf-8")
    return load_text(SourceFile(str(path), str(path), text), Limits()).objects


def _facts(obj) -> list:
    """Each pod's role and each container's engine, worked out from the object."""
    return [
        (
            roles.is_serving_pod(pod),
            roles.is_training_pod(pod),
            roles.is_agent_pod(pod),
            [(roles.serving_engine(c), roles.what_runs(c), c.tokens, c.accelerators()) for c in pod.containers()],
        )
        for pod in pod_templates(obj)
    ]


@pytest.mark.parametrize("name", ["vllm.yaml", "training.yaml", "agent.yaml"])
def test_carried_facts_are_the_facts_worked_out_afresh(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    objects = [o for o in _objects(FIXTURES / "demo" / name) if list(pod_templates(o))]
    assert objects
    fresh = [_facts(o) for o in _objects(FIXTURES / "demo" / name) if list(pod_templates(o))]
    for obj in objects:
        roles.prime(obj)
        obj.carried = carry_facts(obj)
        assert obj.carried
    arrived = pickle.loads(pickle.dumps(objects))  # what the parent gets from a worker
    assert all(o.memo is None and o.carried for o in arrived)

    def no_second_time(*_a: object) -> None:
        raise AssertionError("worked out again in the parent")

    monkeypatch.setattr(roles, "_what_runs", no_second_time)
    monkeypatch.setattr(roles, "_is_agent_pod", no_second_time)
    monkeypatch.setattr(roles, "_is_training_pod", no_second_time)
    monkeypatch.setattr(roles, "_is_serving_pod", no_second_time)
    assert [_facts(o) for o in arrived] == fresh
    assert all(o.carried is None for o in arrived), "taken once, by the templates made in the parent"


def test_only_plain_values_travel() -> None:
    obj = next(o for o in _objects(FIXTURES / "demo" / "vllm.yaml") if list(pod_templates(o)))
    pod = next(iter(pod_templates(obj)))
    roles.prime(obj)
    pod._cached("an object", lambda: obj)  # a fact that is an object of the run stays behind
    pod._cached("a set", lambda: {1})
    carried = carry_facts(obj)
    assert carried is not None
    pod_memo, container_memos = carried[0]
    assert "an object" not in pod_memo and "a set" not in pod_memo and pod_memo["serving"] is True
    assert container_memos and container_memos[0]["serving_engine"] == "vllm"
    pickle.dumps(carried)


def test_facts_of_templates_that_no_longer_match_are_dropped() -> None:
    """Carried facts are put on the parent's templates only when the object yields as many
    templates (and containers) as the worker's did; otherwise they are left and worked out."""
    n, obj = next((n, o) for n, o in enumerate(_objects(FIXTURES / "demo" / "vllm.yaml")) if list(pod_templates(o)))
    roles.prime(obj)
    carried = carry_facts(obj)
    assert carried is not None
    again = _objects(FIXTURES / "demo" / "vllm.yaml")[n]
    again.carried = [*carried, carried[0]]  # one template more than the object has
    pods = list(pod_templates(again))
    assert all(p._memo is None for p in pods) and again.carried is None
