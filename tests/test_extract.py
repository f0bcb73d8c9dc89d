"""Extraction helpers that replace slower standard ones must give the same answers."""

from __future__ import annotations

import shlex

from ailint.domain.extract import shell_split
from hypothesis import given, settings
from hypothesis import strategies as st

# Characters that matter to a POSIX shell split, plus ordinary ones and whitespace shlex
# does not split on (form feed, no-break space).
_ALPHABET = st.sampled_from(list("ab-=./$ \t\r\n'\"\\#") + ["\x0c", "\xa0", "é"])


def _shlex(s: str) -> list[str] | str:
    try:
        return shlex.split(s, comments=True)
    except ValueError:
        return "error"


def _fast(s: str) -> list[str] | str:
    try:
        return shell_split(s)
    except ValueError:
        return "error"


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet=_ALPHABET, max_size=40))
def test_shell_split_is_shlex(s):
    assert _fast(s) == _shlex(s)


def test_shell_split_examples():
    script = """set -e
    # download first
    python -m vllm.entrypoints.openai.api_server --model "meta-llama/Llama-3.1-8B" \\
      --served-model-name 'llama 8b' --port=8000 # trailing comment
    echo "a \\"quoted\\" \\$HOME \\x" done"""
    assert shell_split(script) == _shlex(script)
    assert shell_split("a''b '' \"\"") == ["ab", "", ""]
    for broken in ("echo 'unclosed", 'echo "unclosed', "ends with \\"):
        assert _fast(broken) == _shlex(broken) == "error"


_ANNOTATIONS = st.dictionaries(
    st.sampled_from(["ailint.io/role", "a", "b"]),
    st.one_of(st.none(), st.sampled_from(["", "agent", "0"]), st.integers(0, 1)),
    max_size=3,
)


@settings(max_examples=300, deadline=None)
@given(own=_ANNOTATIONS, template=st.one_of(st.none(), _ANNOTATIONS), key=st.sampled_from(["ailint.io/role", "a", "c"]))
def test_one_annotation_is_the_merged_maps(own, template, key):
    """`PodTemplate.annotation(key)` reads the one key of the merged annotations (the
    template's over the object's, a null or empty value included) without merging them."""
    from ailint.core.model import K8sObject, SourceFile
    from ailint.domain.extract import pod_templates

    meta = {} if template is None else {"annotations": template}
    data = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "x", "annotations": own},
        "spec": {"template": {"metadata": meta, "spec": {"containers": [{"name": "c", "image": "i"}]}}},
    }
    (pod,) = pod_templates(K8sObject(SourceFile("-", "-", ""), 0, data, {}))
    assert pod.annotation(key) == pod.all_annotations().get(key)
    assert pod.annotation(key, "unset") == pod.all_annotations().get(key, "unset")
