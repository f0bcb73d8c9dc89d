"""Extraction helpers that replace slower standard ones must give the same answers."""

from __future__ import annotations

import shlex

import pytest
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


FLAG_CASES = [
    (["vllm", "serve", "m", "--tp", "2"], ("--tp",), "2"),
    (["--tp=4", "--tp", "8"], ("--tp",), "8"),  # the last one given
    (["--tp", "8", "--tp=4"], ("--tp", "-t"), "4"),
    (["-t", "3"], ("--tp", "-t"), "3"),
    (["--tp"], ("--tp",), None),  # no value after it
    (["--tp="], ("--tp",), ""),
    (["--tpx=1", "--t", "2"], ("--tp",), None),
    (["--a=b=c"], ("--a",), "b=c"),
    (["x", "=y"], ("--a",), None),
    (["model", "m1", "--model", "m2"], ("model",), "m1"),  # a flag without a dash
    ([], ("--a",), None),
]


@pytest.mark.parametrize(("tokens", "flags", "value"), FLAG_CASES)
def test_flag_value_reads_the_last_spelling(tokens, flags, value):
    from ailint.domain.extract import flag_value

    assert flag_value(tokens, *flags) == value


def test_engine_args_answer_as_the_token_walk_does():
    """`EngineArgs` skips the walk for flags its container does not give: the answers are
    the walk's, for given and absent flags alike."""
    from ailint.domain.serving import EngineArgs, flag_parts, get_flag, has_flag

    tokens = ["vllm", "serve", "m", "--tensor_parallel_size", "2", "--max-model-len=8192", "--enforce-eager"]
    parts = flag_parts(tokens)
    flags = {
        "tp": ["--tensor-parallel-size", "-tp"],
        "len": ["--max-model-len"],
        "eager": ["--enforce-eager"],
        "pp": ["--pipeline-parallel-size", "-pp"],
    }
    args = EngineArgs("vllm", tokens, flags, parts, frozenset(p[0] for p in parts))
    for key, names in flags.items():
        assert args.raw(key) == get_flag(tokens, names)
        assert args.has(key) == has_flag(tokens, names)
    assert (args.raw("tp"), args.raw("len"), args.raw("pp"), args.has("eager")) == ("2", "8192", None, True)


def _walk(tokens: list[str], *flags: str) -> str | None:
    """The plain walk `flag_value` replaces: each token split at its first `=`."""
    found = None
    for i, tok in enumerate(tokens):
        name, eq, value = tok.partition("=")
        if name in flags:
            found = value if eq else tokens[i + 1] if i + 1 < len(tokens) else found
    return found


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(["--tp", "-t", "--tp=1", "--tp=", "2", "x=y", "=", "--tpx", "--t", "tp"]), max_size=8))
def test_flag_value_is_the_plain_walk(tokens):
    from ailint.domain.extract import flag_value

    for flags in (("--tp",), ("--tp", "-t"), ("tp", "--t")):
        assert flag_value(tokens, *flags) == _walk(tokens, *flags)
