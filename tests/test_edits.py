"""The edit helpers (`ailint.fix.edits`): exact results on the layouts users write, and
properties over generated documents and real corpus files.

Every edit is checked the same way (`check_edit`): the result parses, its documents equal
the old ones with exactly the intended change, no comment line is lost, and the line
endings and the final newline (or its absence) are the file's.
"""

from __future__ import annotations

import os
import pathlib
import random
from typing import Any

import pytest
from ailint.core.model import Edit, Fix, SourceFile, own_copy
from ailint.engine.load import load_text
from ailint.fix import edits
from ailint.fix.apply import _documents, apply_to_text, verify
from ailint.fix.apply import comment_lines as fix_comment_lines
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

# AILINT_HYPOTHESIS_SCALE=20 runs every property test twenty times longer (a deep run).
SCALE = int(os.environ.get("AILINT_HYPOTHESIS_SCALE", "1"))

CORPUS = pathlib.Path(__file__).resolve().parent.parent.parent / "shared" / "corpus"


# -- helpers ---------------------------------------------------------------------------
def objs(text: str, name: str = "t.yaml"):
    return load_text(SourceFile(name, name, text)).objects


def obj(text: str, name: str = "t.yaml", index: int = 0):
    return objs(text, name)[index]


def apply(text: str, edit: Edit | None) -> str:
    assert edit is not None
    new, applied = apply_to_text(text, [Fix("t", (edit,))])
    assert applied
    return new


def comment_lines(text: str) -> list[str]:
    """Comment lines (not `#` lines inside block scalars), sorted."""
    return sorted(fix_comment_lines(text).elements())


def set_in(data: Any, path: tuple, value: Any) -> None:
    cur = data
    for k in path[:-1]:
        if isinstance(cur, dict) and k not in cur:
            cur[k] = {}
        if isinstance(cur, dict) and cur[k] is None:
            cur[k] = {}
        cur = cur[k]
    cur[path[-1]] = value


def get_in(data: Any, path: tuple) -> Any:
    for k in path:
        data = data[k]
    return data


def check_edit(text: str, o, edit: Edit | None, mutate) -> str:
    """Apply `edit` to `text` and check it did exactly `mutate(doc_data)` to `o`'s document."""
    new = apply(text, edit)
    old_docs = _documents(text)
    new_docs = _documents(new)
    assert len(new_docs) == len(old_docs)
    expected = [own_copy(d.data) for d in old_docs]
    target = expected[o.doc_index]
    mutate(get_in(target, o.base) if o.base else target)
    assert [d.data for d in new_docs] == expected, new
    assert all(nd.problems <= od.problems for od, nd in zip(old_docs, new_docs)), "duplicate key"
    assert comment_lines(text) == comment_lines(new) or set(comment_lines(text)) <= set(comment_lines(new))
    if "\r\n" in text and text.count("\r\n") == text.count("\n"):
        assert new.count("\r\n") == new.count("\n"), "CRLF file got a bare LF"
    if "\r\n" not in text:
        assert "\r" not in new
    assert text.endswith("\n") == new.endswith("\n"), "final newline changed"
    assert verify(text, new, [edit]) is None
    return new


# -- exact results on typical layouts -----------------------------------------------------
POD = """\
apiVersion: v1
kind: Pod
metadata:
  name: p  # the pod
spec:
  # the containers
  containers:
    - name: c
      image: vllm/vllm-openai:v0.9.2
      resources:
        requests:
          nvidia.com/gpu: 1  # one GPU
  # scheduling
  nodeSelector:
    pool: gpu

  # volumes follow
  volumes: []
"""


def test_insert_value_nested_block_after_last_line_before_comments():
    o = obj(POD)
    e = edits.insert_value(o, ("spec", "containers", 0, "resources"), "limits", {"nvidia.com/gpu": 1})
    new = check_edit(
        POD, o, e, lambda d: set_in(d, ("spec", "containers", 0, "resources", "limits"), {"nvidia.com/gpu": 1})
    )
    assert (
        "          nvidia.com/gpu: 1  # one GPU\n        limits:\n          nvidia.com/gpu: 1\n  # scheduling\n" in new
    )


def test_insert_key_after_sibling_keeps_following_comments_with_next_key():
    o = obj(POD)
    tol = [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
    e = edits.insert_key_after(o, ("spec",), "tolerations", tol, after="nodeSelector")
    new = check_edit(POD, o, e, lambda d: set_in(d, ("spec", "tolerations"), tol))
    assert (
        "  nodeSelector:\n    pool: gpu\n  tolerations:\n    - key: nvidia.com/gpu\n"
        "      operator: Exists\n      effect: NoSchedule\n\n  # volumes follow\n"
    ) in new


def test_insert_key_after_missing_sibling_goes_to_end():
    o = obj(POD)
    e = edits.insert_key_after(o, ("spec",), "priorityClassName", "high", after=("affinity", "nodeName"))
    new = check_edit(POD, o, e, lambda d: set_in(d, ("spec", "priorityClassName"), "high"))
    assert new.endswith("  volumes: []\n  priorityClassName: high\n")


def test_insert_existing_key_is_none():
    o = obj(POD)
    assert edits.insert_value(o, ("spec",), "nodeSelector", {"a": "b"}) is None
    assert edits.insert_key(o, ("spec",), "volumes", "[]") is None


FOUR = """\
apiVersion: apps/v1
kind: Deployment
spec:
    template:
        spec:
            containers:
            -   name: a
                image: x
                resources:
                    requests:
                        cpu: 1
            nodeSelector:
                a: b
"""


def test_four_space_indentation_and_unindented_sequences():
    o = obj(FOUR)
    path = ("spec", "template", "spec")
    tol = [{"key": "k", "operator": "Exists"}]
    new = check_edit(
        FOUR,
        o,
        edits.insert_key_after(o, path, "tolerations", tol, "nodeSelector"),
        lambda d: set_in(d, path + ("tolerations",), tol),
    )
    assert new.endswith(
        "            nodeSelector:\n                a: b\n            tolerations:\n"
        "            -   key: k\n                operator: Exists\n"
    )
    new = check_edit(
        FOUR,
        o,
        edits.insert_value(o, path + ("containers", 0, "resources"), "limits", {"cpu": 1, "memory": "1Gi"}),
        lambda d: set_in(d, path + ("containers", 0, "resources", "limits"), {"cpu": 1, "memory": "1Gi"}),
    )
    assert '                    limits:\n                        cpu: 1\n                        memory: "1Gi"\n' in new


def test_append_item_keeps_dash_column_and_gap():
    o = obj(FOUR)
    path = ("spec", "template", "spec", "containers")
    item = {"name": "b", "image": "img", "args": ["x"]}
    new = check_edit(FOUR, o, edits.append_item(o, path, item), lambda d: get_in(d, path).append(item))
    assert "            -   name: b\n                image: img\n                args:\n                -   x\n" in new


def test_indented_sequences_stay_indented():
    text = "apiVersion: v1\nkind: Pod\nspec:\n  containers:\n    - name: a\n  volumes:\n    - name: v\n"
    o = obj(text)
    tol = [{"key": "k"}]
    new = check_edit(
        text, o, edits.set_value(o, ("spec", "tolerations"), tol), lambda d: set_in(d, ("spec", "tolerations"), tol)
    )
    assert new.endswith("  tolerations:\n    - key: k\n")


def test_unindented_sequences_stay_unindented():
    text = "apiVersion: v1\nkind: Pod\nspec:\n  containers:\n  - name: a\n  volumes:\n  - name: v\n"
    o = obj(text)
    tol = [{"key": "k"}]
    new = check_edit(
        text, o, edits.set_value(o, ("spec", "tolerations"), tol), lambda d: set_in(d, ("spec", "tolerations"), tol)
    )
    assert new.endswith("  tolerations:\n  - key: k\n")


def test_crlf_and_missing_final_newline():
    text = POD.replace("\n", "\r\n").rstrip("\r\n")
    o = obj(text)
    new = check_edit(
        text,
        o,
        edits.insert_value(o, ("spec",), "hostNetwork", False),
        lambda d: set_in(d, ("spec", "hostNetwork"), False),
    )
    assert new.endswith("  volumes: []\r\n  hostNetwork: false")
    # insertion in the middle of a CRLF file
    new = check_edit(
        text,
        o,
        edits.insert_value(o, ("metadata",), "namespace", "ai"),
        lambda d: set_in(d, ("metadata", "namespace"), "ai"),
    )
    assert "  name: p  # the pod\r\n  namespace: ai\r\n" in new


def test_missing_final_newline_at_end_of_nested_block():
    text = "apiVersion: v1\nkind: Pod\nspec:\n  a:\n    b: 1"
    o = obj(text)
    new = check_edit(
        text,
        o,
        edits.insert_value(o, ("spec", "a"), "c", {"d": [1, 2]}),
        lambda d: set_in(d, ("spec", "a", "c"), {"d": [1, 2]}),
    )
    assert new == "apiVersion: v1\nkind: Pod\nspec:\n  a:\n    b: 1\n    c:\n      d:\n        - 1\n        - 2"


def test_two_insertions_at_one_point_compose():
    text = "apiVersion: v1\nkind: Pod\nspec:\n  a: 1"
    o = obj(text)
    e1 = edits.insert_key(o, ("spec",), "b", "2")
    e2 = edits.insert_key(o, ("spec",), "c", "3")
    new, applied = apply_to_text(text, [Fix("both", (e1, e2))])
    assert len(applied) == 1
    assert new == "apiVersion: v1\nkind: Pod\nspec:\n  a: 1\n  b: 2\n  c: 3"


def test_set_value_creates_missing_parents():
    text = "apiVersion: v1\nkind: Pod\nspec:\n  containers:\n  - name: a\n    image: x  # img\n"
    o = obj(text)
    path = ("spec", "containers", 0, "securityContext", "capabilities", "drop")
    new = check_edit(text, o, edits.set_value(o, path, ["ALL"]), lambda d: set_in(d, path, ["ALL"]))
    assert new.endswith(
        "    image: x  # img\n    securityContext:\n      capabilities:\n        drop:\n        - ALL\n"
    )


@pytest.mark.parametrize(
    "empty", ["resources:", "resources:   # none yet", "resources: {}", "resources: null", "resources: ~"]
)
def test_set_value_fills_an_empty_parent(empty):
    text = f"apiVersion: v1\nkind: Pod\nspec:\n  {empty}\n  x: 1\n"
    o = obj(text)
    path = ("spec", "resources", "limits", "cpu")
    new = check_edit(text, o, edits.set_value(o, path, "1"), lambda d: set_in(d, path, "1"))
    if "#" in empty:
        assert '  resources:   # none yet\n    limits:\n      cpu: "1"\n  x: 1\n' in new


def test_set_value_replaces_a_scalar_in_its_quote_style():
    text = "apiVersion: v1\nkind: Pod\nspec:\n  a: 'old'  # keep\n  b: \"old\"\n  c: old\n  d: 5\n"
    o = obj(text)
    new = check_edit(text, o, edits.set_value(o, ("spec", "a"), "it's"), lambda d: set_in(d, ("spec", "a"), "it's"))
    assert "  a: 'it''s'  # keep\n" in new
    new = check_edit(text, o, edits.set_value(o, ("spec", "b"), "new"), lambda d: set_in(d, ("spec", "b"), "new"))
    assert '  b: "new"\n' in new
    new = check_edit(text, o, edits.set_value(o, ("spec", "c"), "on"), lambda d: set_in(d, ("spec", "c"), "on"))
    assert '  c: "on"\n' in new
    new = check_edit(text, o, edits.set_value(o, ("spec", "d"), 7), lambda d: set_in(d, ("spec", "d"), 7))
    assert "  d: 7\n" in new
    assert edits.set_value(o, ("spec", "d"), 5) is None  # already so


def test_replace_value_single_quote_style_and_empty_value():
    text = "apiVersion: v1\nkind: Pod\nspec:\n  a: 'x'\n  b:\n  c: |\n    line\n\n  d: 1\n"
    o = obj(text)
    new = check_edit(
        text, o, edits.replace_value(o, ("spec", "a"), edits.scalar("1.0")), lambda d: set_in(d, ("spec", "a"), "1.0")
    )
    assert "  a: '1.0'\n" in new
    new = check_edit(text, o, edits.replace_value(o, ("spec", "b"), "true"), lambda d: set_in(d, ("spec", "b"), True))
    assert "  b: true\n" in new
    new = check_edit(text, o, edits.replace_value(o, ("spec", "c"), '"x"'), lambda d: set_in(d, ("spec", "c"), "x"))
    assert '  c: "x"\n\n  d: 1\n' in new
    assert edits.replace_value(o, ("spec",), "{}") is None  # a block mapping


def test_inserted_scalar_follows_single_quoted_siblings():
    text = "apiVersion: v1\nkind: Pod\nspec:\n  params:\n    host: '0.0.0.0'\n    port: '8080'\n"
    o = obj(text)
    new = check_edit(
        text,
        o,
        edits.insert_value(o, ("spec", "params"), "num-cpus", "0"),
        lambda d: set_in(d, ("spec", "params", "num-cpus"), "0"),
    )
    assert new.endswith("    num-cpus: '0'\n")


def test_flow_mappings_get_flow_edits():
    text = "apiVersion: v1\nkind: Pod\nspec:\n  limits: {cpu: 1}  # c\n  empty: {}\n  seq: [a, b]\n  none: []\n"
    o = obj(text)
    new = check_edit(
        text,
        o,
        edits.insert_value(o, ("spec", "limits"), "nvidia.com/gpu", 2),
        lambda d: set_in(d, ("spec", "limits", "nvidia.com/gpu"), 2),
    )
    assert "  limits: {cpu: 1, nvidia.com/gpu: 2}  # c\n" in new
    new = check_edit(
        text,
        o,
        edits.insert_value(o, ("spec", "empty"), "a", {"b": [1]}),
        lambda d: set_in(d, ("spec", "empty", "a"), {"b": [1]}),
    )
    assert "  empty: {a: {b: [1]}}\n" in new
    new = check_edit(
        text, o, edits.append_item(o, ("spec", "seq"), "c d"), lambda d: get_in(d, ("spec", "seq")).append("c d")
    )
    assert '  seq: [a, b, "c d"]\n' in new
    new = check_edit(
        text,
        o,
        edits.append_item(o, ("spec", "none"), {"k": "v"}),
        lambda d: get_in(d, ("spec", "none")).append({"k": "v"}),
    )
    assert "  none: [{k: v}]\n" in new
    assert edits.insert_key(o, ("spec", "limits"), "x", ["a: 1"]) is None  # a block into flow: no
    new = check_edit(
        text, o, edits.delete_key(o, ("spec", "limits", "cpu")), lambda d: get_in(d, ("spec", "limits")).pop("cpu")
    )
    assert "  limits: {}  # c\n" in new
    new = check_edit(text, o, edits.delete_item(o, ("spec", "seq"), 0), lambda d: get_in(d, ("spec", "seq")).pop(0))
    assert "  seq: [b]\n" in new


def test_multiline_flow_and_json():
    text = '{\n  "apiVersion": "v1",\n  "kind": "Pod",\n  "spec": {\n    "a": 1\n  }\n}\n'
    o = obj(text, "pod.json")
    new = check_edit(
        text,
        o,
        edits.set_value(o, ("spec", "tolerations"), [{"key": "k"}]),
        lambda d: set_in(d, ("spec", "tolerations"), [{"key": "k"}]),
    )
    assert (
        new
        == '{\n  "apiVersion": "v1",\n  "kind": "Pod",\n  "spec": {\n    "a": 1,\n    "tolerations": [{"key": "k"}]\n  }\n}\n'
    )
    import json

    json.loads(new)
    assert edits.replace_value(obj("apiVersion: v1\nkind: Pod\nspec: {a: 1,  # c\n  b: 2}\n"), ("spec",), "{}") is None


@pytest.mark.parametrize(
    "text, path",
    [
        ("apiVersion: v1\nkind: Pod\nbase: &b\n  x: 1\nspec: *b\n", ("spec",)),
        ("apiVersion: v1\nkind: Pod\nspec: &b\n  x: 1\nother: *b\n", ("spec",)),
        ("apiVersion: v1\nkind: Pod\nbase: &b {x: 1}\nspec:\n  <<: *b\n  y: 2\n", ("spec",)),
        ("apiVersion: v1\nkind: Pod\nspec: !!map\n  x: 1\n", ("spec",)),
    ],
)
def test_anchors_aliases_tags_and_merges_are_declined(text, path):
    o = obj(text)
    assert edits.insert_value(o, path, "z", 1) is None
    assert edits.set_value(o, path + ("x",), 5) is None
    assert edits.delete_key(o, path + ("x",)) is None
    assert edits.insert_key_after(o, path, "z", 1, "x") is None


def test_delete_key_keeps_comments_or_declines():
    text = (
        "apiVersion: v1\nkind: Pod\nspec:\n  # about a\n  a: 1  # inline\n  b:\n    # inside b\n    c: 1\n"
        "  d:\n    e: 1\n  # tail\n"
    )
    o = obj(text)
    new = check_edit(text, o, edits.delete_key(o, ("spec", "a")), lambda d: get_in(d, ("spec",)).pop("a"))
    assert "  # about a\n  b:\n" in new
    assert edits.delete_key(o, ("spec", "b")) is None  # a comment line inside
    new = check_edit(text, o, edits.delete_key(o, ("spec", "d")), lambda d: get_in(d, ("spec",)).pop("d"))
    assert new.endswith("    c: 1\n  # tail\n")
    new = check_edit(text, o, edits.delete_key(o, ("spec", "d", "e")), lambda d: get_in(d, ("spec", "d")).pop("e"))
    assert "  d: {}\n  # tail\n" in new


def test_delete_item_block():
    text = "apiVersion: v1\nkind: Pod\nspec:\n  l:\n  - a\n  - name: b\n    x: 1\n  - c\n  only:\n    - z\n"
    o = obj(text)
    new = check_edit(text, o, edits.delete_item(o, ("spec", "l"), 1), lambda d: get_in(d, ("spec", "l")).pop(1))
    assert "  l:\n  - a\n  - c\n" in new
    new = check_edit(text, o, edits.delete_item(o, ("spec", "only"), 0), lambda d: get_in(d, ("spec", "only")).pop(0))
    assert new.endswith("  only: []\n")
    assert edits.delete_item(o, ("spec", "l"), 7) is None


def test_block_scalar_with_keep_chomping_keeps_its_blank_lines():
    text = "apiVersion: v1\nkind: ConfigMap\ndata:\n  s: |+\n    x\n\n"
    o = obj(text)
    check_edit(text, o, edits.insert_value(o, ("data",), "t", "y"), lambda d: set_in(d, ("data", "t"), "y"))
    text2 = "apiVersion: v1\nkind: ConfigMap\ndata:\n  s: |\n    x\n\n\n# end\n"
    new = check_edit(
        text2, obj(text2), edits.insert_value(obj(text2), ("data",), "t", "y"), lambda d: set_in(d, ("data", "t"), "y")
    )
    assert '    x\n  t: "y"\n\n\n# end\n' in new


def test_kind_list_items_and_later_documents():
    text = (
        "apiVersion: v1\nkind: ConfigMap\ndata: {}\n---\napiVersion: v1\nkind: List\nitems:\n"
        "- apiVersion: v1\n  kind: Pod\n  spec:\n    a: 1\n---\n# last\napiVersion: v1\nkind: Pod\nspec:\n  b: 2\n"
    )
    os_ = objs(text)
    assert [o.kind for o in os_] == ["ConfigMap", "Pod", "Pod"]
    check_edit(text, os_[1], edits.insert_value(os_[1], ("spec",), "c", [1]), lambda d: set_in(d, ("spec", "c"), [1]))
    check_edit(
        text,
        os_[1],
        edits.insert_value(os_[1], (), "metadata", {"name": "x"}),
        lambda d: set_in(d, ("metadata",), {"name": "x"}),
    )
    check_edit(text, os_[2], edits.insert_value(os_[2], ("spec",), "c", 3), lambda d: set_in(d, ("spec", "c"), 3))


@pytest.mark.parametrize(
    "value",
    [
        "on",
        "yes",
        "No",
        "null",
        "~",
        "1",
        "1.5",
        "0x1F",
        "1e3",
        ".inf",
        "2001-12-14",
        "a: b",
        "a #b",
        "#x",
        "- x",
        "x:",
        "",
        " lead",
        "tab\there",
        "é",
        "it's",
        '"q"',
        "*a",
        "&a",
        "!t",
        "%x",
        "@x",
        "`x",
        "[x]",
        "{x}",
        "a,b",
        "multi\nline",
        "\u2028",
        "<<",
        "=",
        "1Gi",
        "nvidia.com/gpu",
        True,
        False,
        None,
        0,
        -3,
        1.5,
        1e20,
        float("inf"),
        10**20,
    ],
)
def test_scalar_reads_back_as_the_same_value(value):
    import yaml

    text = edits.scalar(value)
    back = yaml.load("k: " + text, Loader=yaml.CSafeLoader)["k"]
    assert back == value and type(back) is type(value), text
    back = yaml.load("k: [" + text + "]", Loader=yaml.CSafeLoader)["k"][0]
    assert back == value and type(back) is type(value), text
    assert yaml.load("k: " + edits.single_quoted(str(value)), Loader=yaml.CSafeLoader)["k"] == str(value)


def test_helpers_never_raise_on_odd_shapes():
    o = obj("apiVersion: v1\nkind: Pod\nspec: 5\nlist: [1]\n")
    for fn, args in [
        (edits.insert_value, (("spec",), "a", 1)),
        (edits.insert_value, (("nope",), "a", 1)),
        (edits.append_item, (("spec",), 1)),
        (edits.delete_key, (("spec", "x"),)),
        (edits.delete_item, (("list",), "x")),
        (edits.set_value, (("list", 3, "a"), 1)),
        (edits.set_value, ((), 1)),
        (edits.replace_value, (("x", "y"), "1")),
        (edits.insert_key_after, (("spec",), "a", 1, "b")),
        (edits.replace_scalar, (("zz",), 1)),
    ]:
        assert fn(o, *args) is None


# -- properties over generated documents ---------------------------------------------------
KEYS = ["a", "b", "name", "image", "nvidia.com/gpu", "on", "1", "x y", "app.kubernetes.io/name", "k-8"]
STRS = ["plain", "two words", "on", "1.5", "0755", "x: y", "a#b", "", "é", "it's", "1Gi", "-x", "null"]
scalars = st.one_of(
    st.integers(-5, 10**6),
    st.booleans(),
    st.none(),
    st.sampled_from(STRS),
    st.floats(allow_nan=False, allow_infinity=False, width=32),
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.sampled_from(KEYS), inner, max_size=3)),
    max_leaves=8,
)


class Emitter:
    """Writes a value as YAML in a random but valid layout, with comments."""

    def __init__(self, rnd: random.Random, unit: int, seq_indent: bool, gap: int, comments: bool):
        self.rnd, self.unit, self.seq_indent, self.gap, self.comments = rnd, unit, seq_indent, gap, comments
        self.n = 0

    def comment(self, ind: int, lines: list[str]) -> None:
        if self.comments and self.rnd.random() < 0.25:
            self.n += 1
            lines.append(" " * (ind + self.rnd.choice([0, 0, 2])) + f"# comment {self.n}")

    def inline_comment(self) -> str:
        if self.comments and self.rnd.random() < 0.2:
            self.n += 1
            return f"  # inline {self.n}"
        return ""

    def scalar(self, v: Any) -> str:
        text = edits.scalar(v)
        if isinstance(v, str) and self.rnd.random() < 0.3:
            return edits.single_quoted(v) if self.rnd.random() < 0.5 else edits.quoted(v)
        return text

    def flow(self, v: Any) -> str:
        if isinstance(v, dict):
            return "{" + ", ".join(f"{self.scalar(k)}: {self.flow(x)}" for k, x in v.items()) + "}"
        if isinstance(v, list):
            return "[" + ", ".join(self.flow(x) for x in v) + "]"
        return self.scalar(v)

    def mapping(self, d: dict, ind: int, lines: list[str], first_comment: bool = True) -> None:
        for i, (k, v) in enumerate(d.items()):
            if i or first_comment:
                self.comment(ind, lines)
            kt = self.scalar(k)
            block = isinstance(v, (dict, list)) and v and self.rnd.random() < 0.8
            if block and isinstance(v, dict):
                lines.append(" " * ind + f"{kt}:" + self.inline_comment())
                self.mapping(v, ind + self.unit, lines)
            elif block:
                lines.append(" " * ind + f"{kt}:" + self.inline_comment())
                self.sequence(v, ind + (self.unit if self.seq_indent else 0), lines)
            else:
                lines.append(" " * ind + f"{kt}: {self.flow(v)}" + self.inline_comment())

    def sequence(self, seq: list, ind: int, lines: list[str]) -> None:
        dash = "-" + " " * self.gap
        for item in seq:
            self.comment(ind, lines)
            if isinstance(item, dict) and item and self.rnd.random() < 0.8:
                sub: list[str] = []
                self.mapping(item, ind + len(dash), sub, first_comment=False)
                sub[0] = " " * ind + dash + sub[0][ind + len(dash) :]
                lines.extend(sub)
            else:
                lines.append(" " * ind + dash + self.flow(item) + self.inline_comment())


@st.composite
def documents(draw):
    """(text, layout) for one or two generated ConfigMap-like objects."""
    rnd = random.Random(draw(st.integers(0, 2**32 - 1)))  # layout choices: fast, reproducible
    unit = draw(st.sampled_from([2, 4]))
    em = Emitter(
        rnd, unit, draw(st.booleans()), draw(st.sampled_from([1, 1, 3])) if unit == 4 else 1, draw(st.booleans())
    )
    docs = []
    for _ in range(draw(st.integers(1, 2))):
        body = draw(st.dictionaries(st.sampled_from(KEYS), values, min_size=1, max_size=4))
        data = {"apiVersion": "v1", "kind": "ConfigMap", "spec": body}
        lines: list[str] = []
        em.mapping(data, 0, lines)
        docs.append("\n".join(lines))
    text = "\n---\n".join(docs)
    if draw(st.booleans()):
        text += "\n"
    if draw(st.booleans()):
        text = text.replace("\n", "\r\n")
    return text


def _targets(o) -> tuple[list, list, list, list]:
    maps, seqs, scalars_, keys = [], [], [], []
    stack = [((), o.data)]
    while stack:
        path, v = stack.pop()
        if isinstance(v, dict):
            maps.append(path)
            for k, x in v.items():
                keys.append(path + (k,))
                stack.append((path + (k,), x))
        elif isinstance(v, list):
            seqs.append(path)
            for i, x in enumerate(v):
                stack.append((path + (i,), x))
        elif path:
            scalars_.append(path)
    return maps, seqs, scalars_, keys


OPS = ["insert_value", "insert_key_after", "set_value", "append_item", "replace_scalar", "delete_key", "delete_item"]


def run_op(text: str, o, op: str, data) -> None:
    """Draw a target for `op`, apply the helper, and check the result when it gives an edit."""
    maps, seqs, scalars_, keys = _targets(o)
    value = data.draw(values, label="value")
    if op in ("insert_value", "insert_key_after"):
        path = data.draw(st.sampled_from(maps), label="mapping")
        m = get_in(o.data, path)
        key = data.draw(st.sampled_from(KEYS + ["new-key", "z"]).filter(lambda k: k not in m), label="key")
        if op == "insert_value":
            e = edits.insert_value(o, path, key, value)
        else:
            after = data.draw(st.sampled_from(list(m) or ["none"]), label="after")
            e = edits.insert_key_after(o, path, key, value, after)
        if e is not None:
            check_edit(text, o, e, lambda d: set_in(d, path + (key,), value))
    elif op == "set_value":
        base = data.draw(st.sampled_from(maps), label="mapping")
        extra = tuple(data.draw(st.lists(st.sampled_from(["p", "q", "on"]), min_size=0, max_size=2), label="extra"))
        key = data.draw(st.sampled_from(KEYS + ["new-key"]), label="key")
        path = base + extra + (key,)
        cur = o.data
        for k in path[:-1]:
            cur = cur.get(k) if isinstance(cur, dict) else None
        assume(cur is None or isinstance(cur, dict))
        e = edits.set_value(o, path, value)
        if e is not None:
            check_edit(text, o, e, lambda d: set_in(d, path, value))
    elif op == "append_item":
        assume(seqs)
        path = data.draw(st.sampled_from(seqs), label="seq")
        e = edits.append_item(o, path, value)
        if e is not None:
            check_edit(text, o, e, lambda d: get_in(d, path).append(value))
    elif op == "replace_scalar":
        assume(scalars_)
        path = data.draw(st.sampled_from(scalars_), label="scalar")
        v = data.draw(scalars, label="new")
        e = edits.replace_scalar(o, path, v)
        if e is not None:
            check_edit(text, o, e, lambda d: set_in(d, path, v))
    elif op == "delete_key":
        path = data.draw(st.sampled_from(keys), label="key")
        e = edits.delete_key(o, path)
        if e is not None:
            check_edit(text, o, e, lambda d: get_in(d, path[:-1]).pop(path[-1]))
    elif op == "delete_item":
        assume(seqs)
        path = data.draw(st.sampled_from(seqs), label="seq")
        assume(get_in(o.data, path))
        i = data.draw(st.integers(0, len(get_in(o.data, path)) - 1), label="index")
        e = edits.delete_item(o, path, i)
        if e is not None:
            check_edit(text, o, e, lambda d: get_in(d, path).pop(i))


@settings(
    max_examples=200 * SCALE, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much]
)
@given(text=documents(), op=st.sampled_from(OPS), data=st.data())
def test_edits_on_generated_documents(text, op, data):
    os_ = objs(text)
    assert os_, text
    o = data.draw(st.sampled_from(os_), label="object")
    run_op(text, o, op, data)


@settings(max_examples=80 * SCALE, deadline=None)
@given(text=documents(), data=st.data())
def test_block_inserts_never_decline_on_plain_block_layouts(text, data):
    """Without anchors or flow style, inserting into a block mapping always gives an edit."""
    o = objs(text)[0]
    maps = [p for p in _targets(o)[0] if not edits.is_flow(o, p) and get_in(o.data, p)]
    path = data.draw(st.sampled_from(maps))
    value = data.draw(values)
    assert edits.insert_value(o, path, "fresh-key", value) is not None
    assert edits.set_value(o, path + ("fresh", "deeper"), value) is not None


# -- properties over real files -------------------------------------------------------------
def _corpus_sample(n: int = 150) -> list[pathlib.Path]:
    if not CORPUS.is_dir():
        return []
    files = sorted(p for p in CORPUS.glob("*/plain/*") if p.suffix in (".yaml", ".yml") and p.stat().st_size < 40_000)
    return random.Random(7).sample(files, min(n, len(files)))


SAMPLE = _corpus_sample()


@pytest.mark.skipif(not SAMPLE, reason="../shared/corpus is absent")
@settings(
    max_examples=120 * SCALE, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much]
)
@given(data=st.data(), op=st.sampled_from(OPS))
def test_edits_on_corpus_files(data, op):
    path = data.draw(st.sampled_from(SAMPLE), label="file")
    text = path.read_text(encoding="utf-8")
    os_ = objs(text, path.name)
    assume(os_)
    o = data.draw(st.sampled_from(os_), label="object")
    try:
        _documents(text)
    except Exception:
        assume(False)
    run_op(text, o, op, data)
