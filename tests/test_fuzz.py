"""Fuzzing: near-valid manifests of every supported kind through the loader, every rule
and every reporter, in-process. Any exception or rule crash (`AIL003`) is a bug.

Seeds are the fixture manifests (every kind the rules know); each example replaces values
at random paths with hostile ones (nulls, lists for maps, huge numbers, unicode, deep
nesting) or damages the text itself. CI runs a bounded number of examples; for a longer run:

    AILINT_FUZZ_EXAMPLES=5000 .venv/bin/python -m pytest tests/test_fuzz.py -p no:cacheprovider
"""

from __future__ import annotations

import os
import pathlib

import pytest
import yaml
from ailint.core.model import SourceFile
from ailint.engine.config import Settings
from ailint.engine.load import load_text
from ailint.engine.run import lint
from ailint.report import github as github_report
from ailint.report import json as json_report
from ailint.report import sarif as sarif_report
from ailint.report import text as text_report
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

ROOT = pathlib.Path(__file__).resolve().parent.parent
EXAMPLES = int(os.environ.get("AILINT_FUZZ_EXAMPLES", "30"))


def _seeds() -> list[dict]:
    out = []
    for f in sorted((ROOT / "fixtures").rglob("*.yaml")):
        try:
            for doc in yaml.safe_load_all(f.read_text(encoding="utf-8")):
                if isinstance(doc, dict) and doc.get("kind"):
                    out.append(doc)
        except yaml.YAMLError:
            continue
    return out


SEEDS = _seeds()

HOSTILE = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=40),
    st.sampled_from(
        [
            "",
            "0",
            "-1",
            "1e309",
            "NaN",
            "∞",
            "🤖",
            "a" * 500,
            "${HF_TOKEN}",
            "$(VAR)",
            "sh -c",
            "nvidia.com/gpu",
            "Exists",
            "ScheduleAnyway",
            "100Ti",
            "0.5",
            "--tensor-parallel-size=0",
        ]
    ),
    st.lists(st.integers(), max_size=3),
    st.dictionaries(st.text(max_size=5), st.integers(), max_size=3),
    st.recursive(
        st.none(), lambda c: st.lists(c, max_size=2) | st.dictionaries(st.text(max_size=3), c, max_size=2), max_leaves=6
    ),
)


def _paths(value, prefix=()):
    yield prefix
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _paths(v, prefix + (k,))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _paths(v, prefix + (i,))


def _set(doc, path, value):
    if not path:
        return value
    cur = doc
    for step in path[:-1]:
        cur = cur[step]
    cur[path[-1]] = value
    return doc


@st.composite
def mutated_manifest(draw):
    import copy

    doc = copy.deepcopy(draw(st.sampled_from(SEEDS)))
    for _ in range(draw(st.integers(min_value=1, max_value=4))):
        paths = [p for p in _paths(doc) if p[:1] not in (("apiVersion",), ("kind",))]
        path = draw(st.sampled_from(paths))
        doc = _set(doc, path, draw(HOSTILE))
    return doc


def _check_all(text: str, tmp_path: pathlib.Path) -> None:
    f = tmp_path / "fuzz.yaml"
    f.write_text(text, encoding="utf-8", errors="surrogatepass")
    s = Settings(root=str(tmp_path))
    result = lint([str(f)], s, debug=True)  # debug: a rule exception propagates and fails the test
    for rep in (json_report, sarif_report, github_report):
        rep.render(result)
    text_report.render(result, color=False)
    text_report.render(result, color=True)


pytestmark = pytest.mark.skipif(not SEEDS, reason="no fixtures to seed from")


# Examples the fuzzer found once, run every time: a GPU container whose `command` is a bool
# (GPU008 iterated it).
_FOUND = [
    {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "qwen"},
        "spec": {
            "selector": {"matchLabels": {"app": "qwen"}},
            "template": {
                "metadata": {"labels": {"app": "qwen"}},
                "spec": {
                    "containers": [
                        {
                            "name": "c",
                            "image": "vllm/vllm-openai:v0.6.0",
                            "command": True,
                            "args": 7,
                            "resources": {"limits": {"nvidia.com/gpu": 1}},
                        }
                    ]
                },
            },
        },
    },
]


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(doc=mutated_manifest())
@example(doc=_FOUND[0])
def test_hostile_values_in_every_kind(doc, tmp_path_factory):
    try:
        text = yaml.safe_dump(doc, allow_unicode=True, sort_keys=False)
    except (yaml.YAMLError, ValueError, OverflowError):
        return
    _check_all(text, tmp_path_factory.mktemp("fz"))


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(seed=st.sampled_from(SEEDS) if SEEDS else st.nothing(), data=st.data())
def test_damaged_text(seed, data, tmp_path_factory):
    text = yaml.safe_dump(seed, sort_keys=False)
    ops = data.draw(
        st.lists(
            st.tuples(
                st.integers(min_value=0, max_value=max(len(text) - 1, 0)),
                st.sampled_from(
                    [
                        "\t",
                        ":",
                        "- ",
                        "{",
                        "}",
                        "[",
                        "'",
                        '"',
                        "&a ",
                        "*a",
                        "\n",
                        "  ",
                        "{{ x }}",
                        "\x00",
                        "\ud800",
                        "---\n",
                        "<<: ",
                    ]
                ),
                st.booleans(),
            ),
            max_size=4,
        )
    )
    for pos, s, delete in ops:
        text = text[:pos] + ("" if delete else s) + text[pos + (1 if delete else 0) :]
    # loader alone: never an exception
    load_text(SourceFile("x.yaml", "x.yaml", text))
    _check_all(text, tmp_path_factory.mktemp("fz"))


def test_hostile_fixtures_regressions(tmp_path):
    """Inputs that once crashed something stay here as regressions."""
    cases = [
        "apiVersion: v1\nkind: Pod\nspec: []\n",
        "apiVersion: v1\nkind: Pod\nspec:\n  containers: {a: 1}\n",
        "apiVersion: v1\nkind: Pod\nspec:\n  containers:\n  - null\n  - 3\n  - {resources: []}\n",
        "apiVersion: apps/v1\nkind: Deployment\nspec:\n  template: 7\n",
        "apiVersion: ray.io/v1\nkind: RayJob\nspec:\n  rayClusterSpec:\n    workerGroupSpecs: {x: 1}\n",
        "apiVersion: karpenter.sh/v1\nkind: NodePool\nspec:\n  template:\n    spec:\n      requirements: [1, null]\n",
        "apiVersion: v1\nkind: List\nitems: [1, {kind: Pod}]\n",
        "apiVersion: 1\nkind: 2\n",
        "apiVersion: v1\nkind: Pod\nmetadata: {name: [a], namespace: {b: 1}, labels: [], annotations: 5}\n",
    ]
    for i, text in enumerate(cases):
        d = tmp_path / str(i)
        d.mkdir()
        _check_all(text, d)
