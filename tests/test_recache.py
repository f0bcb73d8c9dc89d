"""The compiled-regex cache (ailint.recache) gives the very patterns `re` would compile."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

PY = sys.executable
PATTERNS = [
    r"(?P<key>[A-Za-z_][A-Za-z0-9_.-]*)\s*[:=]\s*(?P<value>[^#\n]*?)\s*$",
    r"(?i)your[-_ ]?(api[-_ ]?)?(key|token|password|secret)",
    r"(?<![A-Za-z0-9_-])(hf_[A-Za-z0-9]{30,})(?![A-Za-z0-9_-])",
    "[^\t\n\r -~\x85\xa0-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]",
]
PROBE = """
import sys, re, json
import ailint
pats = json.loads(sys.argv[1])
out = []
for p in pats:
    rx = re.compile(p, re.M)
    m = rx.search("x HF_TOKEN: hf_abcdefghijklmnopqrstuvwxyz0123456789 YOUR_API_KEY \\x01")
    out.append([rx.pattern, rx.flags, rx.groups, dict(rx.groupindex), m.span() if m else None])
print(json.dumps(out))
"""


def _run(cache_dir, *extra_env):
    import json

    env = {**os.environ, "AILINT_CACHE_DIR": str(cache_dir)}
    env.pop("AILINT_NO_CACHE", None)
    env.update(dict(extra_env))
    res = subprocess.run([PY, "-c", PROBE, json.dumps(PATTERNS)], capture_output=True, text=True, env=env,
                         timeout=60)
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout)


def _cache_files(d):
    return sorted(f for f in os.listdir(d) if f.startswith("re-")) if d.exists() else []


def test_cached_patterns_behave_like_fresh_ones(tmp_path):
    d = tmp_path / "cache"
    fresh = _run(d, ("AILINT_NO_CACHE", "1"))
    assert _cache_files(d) == []  # turned off: nothing written
    first = _run(d)  # compiles, verifies and writes the cache
    assert _cache_files(d), "the cache file was not written"
    again = _run(d)  # rebuilt from the cache
    assert fresh == first == again


def test_a_damaged_cache_is_ignored(tmp_path):
    d = tmp_path / "cache"
    reference = _run(d, ("AILINT_NO_CACHE", "1"))
    _run(d)
    for name in _cache_files(d):
        (d / name).write_bytes(b"\x00garbage")
    assert _run(d) == reference


@pytest.mark.skipif(sys.implementation.name != "cpython", reason="CPython's re internals")
def test_an_entry_is_stored_only_when_it_rebuilds_the_same_pattern():
    import re

    from ailint import recache

    if not getattr(re._compiler.compile, "_ailint", False):
        pytest.skip("the cache is off in this process")
    rx = re.compile(r"a(?P<n>b+)c[0-9]{2,}", re.I)
    entry = recache._ENTRIES[(rx.pattern, int(re.I))]
    import _sre

    assert _sre.compile(rx.pattern, *entry) == rx
