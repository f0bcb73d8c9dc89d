"""The composer's node classes (`ailint.core.yamldata._Node`): libyaml's composer makes them
without a Python `__init__`, only for the span of ailint's own composing, and every other PyYAML C
loader of the process, in any thread, keeps PyYAML's classes and data."""

from __future__ import annotations

import ast
import os
import sys
import threading
import warnings
from pathlib import Path

import pytest
import yaml
import yaml._yaml
import yaml.nodes
from ailint.core import yamldata
from ailint.core.limits import Limits
from conftest import ROOT

DOC = """\
a: [1, 0x1f, yes, ~, 1.5e3, "2", 0755, on]
b: &x {c: d, e: [f, {g: h}]}
i: *x
j:
  <<: *x
  c: k
l: !custom 12
m: |
  text
n: '3'
"""
PLAIN = DOC.replace("!custom ", "")  # what PyYAML's safe loaders take (no unknown tag)


def converted(node):
    conv = yamldata.Converter(Limits())
    data, _ = conv.convert(node, (), None, 0)
    return data, conv.positions


def test_the_composer_makes_ailints_nodes_and_gives_pyyamls_back():
    (node,) = list(yamldata.compose_all(DOC))
    assert isinstance(node, yamldata.MappingNode)
    assert isinstance(node, yaml.nodes.MappingNode)  # (PyYAML's constructors take them)
    # outside ailint's composing, PyYAML's composer has its own classes again
    assert yaml._yaml.ScalarNode is yaml.nodes.ScalarNode
    assert yaml._yaml.SequenceNode is yaml.nodes.SequenceNode
    assert yaml._yaml.MappingNode is yaml.nodes.MappingNode
    pyyaml = yaml.compose(DOC, Loader=yaml.CSafeLoader)
    assert type(pyyaml) is yaml.nodes.MappingNode
    assert yaml.load(PLAIN, Loader=yaml.CSafeLoader)["a"] == [1, 31, True, None, "1.5e3", "2", 493, True]


def test_the_nodes_carry_what_pyyamls_do():
    ours = yamldata.compose(DOC)
    theirs = yaml.compose(DOC, Loader=yaml.CSafeLoader)

    def same(a, b, seen):
        if id(a) in seen:
            return
        seen.add(id(a))
        assert (a.start_mark.line, a.start_mark.column) == (b.start_mark.line, b.start_mark.column)
        assert (a.end_mark.line, a.end_mark.column) == (b.end_mark.line, b.end_mark.column)
        if isinstance(b, yaml.nodes.ScalarNode):
            assert a.value == b.value and a.style == b.style
            return
        assert len(a.value) == len(b.value)
        if isinstance(b, yaml.nodes.MappingNode):
            for (ak, av), (bk, bv) in zip(a.value, b.value, strict=True):
                same(ak, bk, seen)
                same(av, bv, seen)
        else:
            for x, y in zip(a.value, b.value, strict=True):
                same(x, y, seen)

    same(ours, theirs, set())
    data, positions = converted(ours)
    assert data["a"] == [1, 31, True, None, "1.5e3", "2", 493, True]
    assert data["i"] is data["b"] and data["j"] == {"c": "k", "e": ["f", {"g": "h"}]}
    assert data["l"] == "12" and data["m"] == "text\n" and data["n"] == "3"
    assert positions[("b", "e", 1, "g")] == (2, 22, 2, 23, 2, 25, 2, 26)


def test_making_a_node_runs_no_python_code():
    """What the classes are for: the composer makes each node in C (no `__init__` of
    PyYAML's nodes runs, and ours have none)."""
    nodes_py = yaml.nodes.__file__
    called: list[str] = []

    def hook(frame, event, arg):
        if event == "call" and frame.f_code.co_filename in (nodes_py, yamldata.__file__):
            called.append(frame.f_code.co_qualname)  # (`FastLoader.__init__` runs, once)

    before = sys.getprofile()
    sys.setprofile(hook)
    try:
        nodes = list(yamldata.compose_all(DOC + "---\n" + PLAIN))
    finally:
        sys.setprofile(before)
    assert nodes and not [q for q in called if q.endswith("Node.__init__")], called[:5]
    sys.setprofile(hook)
    try:
        yaml.compose(PLAIN, Loader=yaml.CSafeLoader)  # (the hook does see PyYAML's own)
    finally:
        sys.setprofile(before)
    assert "ScalarNode.__init__" in called


def test_compose_wants_one_document():
    assert yamldata.compose("") is None
    with pytest.raises(yaml.composer.ComposerError):
        yamldata.compose("a: 1\n---\nb: 2\n")


def test_a_pyyaml_whose_composer_keeps_its_classes_gives_the_same_data(monkeypatch):
    """Where the composer does not take the classes (another PyYAML build), its nodes are
    rebuilt with them: the same data and positions, an alias still one node."""
    expected = converted(yamldata.compose(DOC))
    monkeypatch.setattr(yamldata, "_COMPOSER_GLOBALS", dict(vars(yaml._yaml)))  # a swap that changes nothing
    node = yamldata.compose(DOC)
    assert isinstance(node, yamldata.MappingNode)
    assert converted(node) == expected
    loop = yamldata.compose("&a [1, *a]\n")  # an anchor holding an alias of itself
    assert loop.value[1] is loop


def test_threads_that_load_while_others_compose_keep_pyyamls_data():
    """PyYAML's own loaders in other threads (a webhook's workers) never meet ailint's nodes
    while a composer holds them: each load holds the same lock."""
    expected_load = yaml.load(PLAIN, Loader=yaml.CSafeLoader)
    expected_conv = converted(yamldata.compose(DOC))
    errors: list[str] = []
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as the interpreter can
    try:

        def composer() -> None:
            for _ in range(150):
                for node in yamldata.compose_all(DOC):
                    if converted(node) != expected_conv:
                        errors.append("ailint's composer")

        def loader() -> None:
            for _ in range(150):
                try:
                    if yamldata.load_data(PLAIN) != expected_load:
                        errors.append("load_data")
                    if type(yamldata.pyyaml_compose(DOC)) is not yaml.nodes.MappingNode:
                        errors.append("pyyaml_compose")
                except Exception as exc:  # a PyYAML loader that met ailint's nodes
                    errors.append(repr(exc))

        threads = [threading.Thread(target=f) for f in (composer, loader, composer, loader)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        sys.setswitchinterval(interval)
    assert not errors, errors[:3]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_process_forked_while_a_thread_composes_can_compose_and_load():
    """The child of a fork made while another thread held the lock, with ailint's classes in
    the composer (that thread is not in the child): both are reset there."""
    holding, done = threading.Event(), threading.Event()
    g = vars(yaml._yaml)

    def composer_in_the_middle() -> None:
        with yamldata.PYYAML_C:
            saved = g["ScalarNode"], g["SequenceNode"], g["MappingNode"]
            g["ScalarNode"], g["SequenceNode"], g["MappingNode"] = yamldata._OURS
            holding.set()
            done.wait(10)
            g["ScalarNode"], g["SequenceNode"], g["MappingNode"] = saved

    t = threading.Thread(target=composer_in_the_middle)
    t.start()
    try:
        assert holding.wait(10)
        with warnings.catch_warnings():  # (a fork beside a live thread is the point here)
            warnings.simplefilter("ignore", DeprecationWarning)
            pid = os.fork()
        if pid == 0:  # the child: the lock free, PyYAML's classes back
            code = 1
            try:
                ok = yamldata.load_data(PLAIN)["n"] == "3" and isinstance(yamldata.compose(DOC), yamldata.MappingNode)
                code = 0 if ok and g["ScalarNode"] is yaml.nodes.ScalarNode else 2
            finally:
                os._exit(code)
        status = _waited(pid, 20)  # (a child stuck on the lock is killed: the test fails)
    finally:
        done.set()
        t.join()
    assert status == 0


def _waited(pid: int, seconds: float) -> int | None:
    """The child's exit code, or None when it had not ended after `seconds` (then killed)."""
    import signal
    import time

    end = time.monotonic() + seconds
    while time.monotonic() < end:
        got, status = os.waitpid(pid, os.WNOHANG)
        if got:
            return os.waitstatus_to_exitcode(status)
        time.sleep(0.02)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    return None


_C_LOADERS = {"CSafeLoader", "CLoader", "CBaseLoader", "CFullLoader", "CUnsafeLoader", "CParser", "_yaml"}


def test_only_yamldata_uses_pyyamls_c_loaders():
    """Any other use would run without the lock the composer holds (see above): it goes
    through `yamldata.load_data` and the functions beside it."""
    offenders = []
    for folder in ("linter", "rules"):
        for path in sorted((Path(ROOT) / folder).rglob("*.py")):
            if path.name == "yamldata.py" and path.parent.name == "core":
                continue
            tree = ast.parse(path.read_text(encoding="utf-8"))
            for n in ast.walk(tree):
                name = (
                    n.attr
                    if isinstance(n, ast.Attribute)
                    else n.id
                    if isinstance(n, ast.Name)
                    else n.module
                    if isinstance(n, ast.ImportFrom)
                    else None
                )
                if name and (name in _C_LOADERS or name.endswith("._yaml")):
                    offenders.append(f"{path.relative_to(ROOT)}:{n.lineno}: {name}")
    assert not offenders, offenders
