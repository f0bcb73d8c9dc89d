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
