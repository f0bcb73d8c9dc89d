"""The loader's C reader (`ailint.core.yamlc`, through `yamldata.read_documents`): the same
data, types, key order and position table as the pure reading (`compose_all` and
`Converter`) for every text it reads, and None for every text it leaves to that reading.

The comparison is strict: `1` is not `True`, `1.0` is not `1`, and the position tables must
list the same paths in the same order with the same eight numbers."""

from __future__ import annotations

import math
import os
import pathlib
import shutil
import sys
import sysconfig
from typing import Any

import pytest
from ailint.core import yamldata
from ailint.core.limits import Limits
from ailint.core.model import SourceFile
from ailint.engine.load import _TEMPLATE_RE, _has_crd, load_text
from conftest import CORPUS, ROOT, needs_shared
from hypothesis import given, settings
from hypothesis import strategies as st

C_SOURCE = ROOT / "linter" / "core" / "yamlc.c"


def _can_build() -> bool:
    """Whether this machine could have built the reader at install: a C compiler and libyaml's
    header where the compiler looks by default."""
    include = pathlib.Path(sysconfig.get_config_var("INCLUDEDIR") or "/usr/include")
    headers = [include / "yaml.h", pathlib.Path("/usr/include/yaml.h"), pathlib.Path("/usr/local/include/yaml.h")]
    return any(h.exists() for h in headers) and bool(shutil.which("cc") or shutil.which("gcc"))


@pytest.fixture(scope="module")
def reader() -> Any:
    if yamldata._reader is None:
        if os.environ.get("AILINT_PURE_YAML"):
            pytest.skip("AILINT_PURE_YAML is set: the C reader is off")
        if _can_build():
            pytest.fail(
                "a C compiler and libyaml's headers are here but ailint.core.yamlc is not built: pip install -e ."
            )
        pytest.skip("ailint.core.yamlc is not built (no C compiler or no libyaml headers at install)")
    return yamldata._reader


def test_the_built_reader_is_its_source_s(reader: Any) -> None:
    """An editable install builds the module beside its source: one older than the source is
    a stale build, whose results these tests would not be testing."""
    built = pathlib.Path(reader.__file__)
    if built.parent == C_SOURCE.parent:
        assert built.stat().st_mtime >= C_SOURCE.stat().st_mtime, "yamlc.c changed since the build: pip install -e ."


def same(a: Any, b: Any) -> bool:
    """Equal with the same types throughout, the same key order, NaN equal to NaN."""
    if type(a) is not type(b):
        return False
    if type(a) is dict:
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if type(a) in (list, tuple):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if type(a) is float and math.isnan(a):
        return math.isnan(b)
    return bool(a == b)


def pure(text: str, limits: Limits = Limits()) -> list[Any] | None:
    """What the pure reading makes of `text`, in `read_documents`'s shape; None where it
    finds anything the C reader would leave to it (a finding inside a document, an error)."""
    out: list[Any] = []
    try:
        for node in yamldata.compose_all(text):
            if node.__class__ is yamldata.ScalarNode and node.value == "" and not node.style:
                out.append(node.start_mark.line + 1)
                continue
            conv = yamldata.Converter(limits, "&" in text)
            data, _ = conv.convert(node, (), None, 0)
            if conv.findings:
                return None
            out.append((data, conv.positions))
            if len(out) > limits.max_documents:
                break
    except Exception:
        return None
    return out


def check(text: str, limits: Limits = Limits()) -> bool:
    """The C reader's documents are the pure reading's; returns whether it read the text."""
    got = unpacked(yamldata.read_documents(text, limits))
    if got is None:
        return False
    want = pure(text, limits)
    assert want is not None, "the C reader read a text the pure reading finds fault with"
    assert same(got, want)
    for g, w in zip(got, want):
        if type(g) is tuple:
            assert list(g[1].items()) == list(w[1].items())  # the table's order too
    return True


def unpacked(docs: list[Any] | None) -> list[Any] | None:
    """`read_documents`'s documents with their tables unpacked (each checked to know its
    document's line and column)."""
    if docs is None:
        return None
    out: list[Any] = []
    for doc in docs:
        if type(doc) is tuple:
            data, packed = doc
            table = packed.unpack()
            assert packed.root() == table[()][4:6]
            out.append((data, table))
        else:
            out.append(doc)
    return out


def _plain_texts(paths: list[pathlib.Path]) -> list[tuple[str, str]]:
    texts = []
    for p in paths:
        text = p.read_text(encoding="utf-8", errors="replace")
        if not _TEMPLATE_RE.search(text) and not _has_crd(text):
            texts.append((str(p), text))
    return texts


def _yaml_files(root: pathlib.Path) -> list[pathlib.Path]:
    return sorted(p for p in root.rglob("*") if p.suffix in (".yaml", ".yml", ".json") and p.is_file())


def test_every_fixture_reads_the_same(reader: Any) -> None:
    texts = _plain_texts(_yaml_files(ROOT / "fixtures"))
    read = [name for name, text in texts if check(text)]
    assert len(read) > 0.9 * len(texts)  # (the rest hold anchors, tags, duplicate keys, errors)


@needs_shared
def test_every_corpus_file_reads_the_same(reader: Any) -> None:
    texts = _plain_texts(_yaml_files(CORPUS))
    read = [name for name, text in texts if check(text)]
    assert len(read) > 0.9 * len(texts)


YAML_11 = ["on", "off", "yes", "No", "y", "~", "null", "", "0755", "08", "0x1F", "0b101", "1_000", "+5", "-0"]
YAML_11 += ["1e3", "1.0e3", ".5", "-.inf", ".nan", "190:20:30", "2001-12-14", "12345678901234567890", "=", "<"]
YAML_11 += ["true", "TRUE", "tRuE", "nvidia.com/gpu", "IfNotPresent", "a b", "é", "日本", "100Gi", "500m", "-"]


def test_yaml_11_scalars_read_as_the_pure_reading_reads_them(reader: Any) -> None:
    text = "".join(f"k{i}: {v}\n" for i, v in enumerate(YAML_11) if v not in ("-",))
    text += "list:\n" + "".join(f"  - {v}\n" for v in YAML_11 if v not in ("-",))
    text += "quoted:\n" + "".join(f"  - '{v}'\n  - \"{v}\"\n" for v in YAML_11)
    assert check(text)
    assert check("".join(f"{v}: x\n" for v in YAML_11 if v not in ("", "-", "~", "=", "<")))  # keys stay text


@pytest.mark.parametrize(
    "text",
    [
        "a: &x 1\nb: *x\n",  # an anchor and an alias
        "a: !!str 1\n",  # a tag
        "a: !custom x\n",
        "base: &b {x: 1}\nc:\n  <<: *b\n",  # a merge key
        "a: 1\na: 2\n",  # a repeated key
        "? [a, b]\n: 1\n",  # a complex key
        "a: [1, 2\n",  # a syntax error
        "a: 1\n---\nb: [\n",  # an error in the second document
        "a:\n\tb: 1\n",  # a tab
    ],
)
def test_what_the_reader_declines(reader: Any, text: str) -> None:
    assert yamldata.read_documents(text, Limits()) is None


def test_the_limits_are_declined_not_enforced(reader: Any) -> None:
    """The pure reading reports a limit with its YML finding: the reader leaves it that."""
    assert yamldata.read_documents("a: " + "x" * 40 + "\n", Limits(max_scalar_chars=30)) is None
    assert yamldata.read_documents("a: [[[[1]]]]\n", Limits(max_depth=3)) is None
    assert check("a: [[1]]\n", Limits(max_depth=3))
    assert check("a: " + "x" * 30 + "\n", Limits(max_scalar_chars=30))


def test_documents_past_the_limit_are_not_read(reader: Any) -> None:
    got = yamldata.read_documents("a: 1\n---\nb: 2\n---\nc: 3\n---\nd: 4\n", Limits(max_documents=2))
    assert got is not None and len(got) == 3


def test_empty_documents_are_their_lines(reader: Any) -> None:
    text = "---\n---\n# c\n---\na: 1\n"
    assert check(text)
    assert unpacked(yamldata.read_documents(text, Limits())) == [
        2,
        4,
        ({"a": 1}, {(): (5, 1, 5, 1, 5, 1, 6, 1), ("a",): (5, 1, 5, 2, 5, 4, 5, 5)}),
    ]
    assert yamldata.read_documents("", Limits()) == []
    assert check("--- ''\n--- \"\"\n---\n")  # quoted empty documents are values, not empty


def test_a_packed_table_travels_and_unpacks_once(reader: Any) -> None:
    """A `--jobs` worker pickles a document's packed table as it is; the parent unpacks it
    into the `LazyPositions` the objects share, on the first read."""
    import pickle

    from ailint.core.tables import LazyPositions

    ((_, packed),) = yamldata.read_documents("apiVersion: v1\nitems:\n- {kind: Pod}\n", Limits()) or [None]
    lazy = pickle.loads(pickle.dumps(LazyPositions(packed, 0)))
    assert lazy._file is not None and len(pickle.dumps(lazy)) < 200 + len(packed.packed)
    assert lazy.get(("items", 0, "kind")) == (3, 4, 3, 8, 3, 10, 3, 13)
    assert lazy._file is None and dict(lazy.items()) == packed.unpack()


def test_a_table_that_does_not_fit_its_data_is_an_error(reader: Any) -> None:
    ((data, packed),) = yamldata.read_documents("a: [1, 2]\n", Limits()) or [None]
    with pytest.raises(ValueError, match="more nodes than the packed"):
        reader.table({"a": [1, 2, 3]}, packed.packed)
    with pytest.raises(ValueError, match="packed table has more nodes"):
        reader.table({"a": [1]}, packed.packed)
    with pytest.raises(ValueError):
        reader.table(data, packed.packed[:-1])


def test_a_text_keeps_no_copy_of_its_utf8(reader: Any) -> None:
    """A run keeps its texts: reading one must not leave a UTF-8 copy inside the string (what
    `PyUnicode_AsUTF8AndSize` does, and `sys.getsizeof` counts)."""
    text = "name: é\nitems:\n" + "- 日本\n" * 100
    before = sys.getsizeof(text)
    assert check(text)
    assert sys.getsizeof(text) == before


def test_a_lone_surrogate_is_left_to_the_pure_reading(reader: Any) -> None:
    assert yamldata.read_documents("a: \ud800\n", Limits()) is None


def test_interned_like_the_converter(reader: Any) -> None:
    """Keys and values of at most `INTERNED_CHARS` characters are interned, longer values not:
    what keeps a run's objects small (`yamldata.INTERNED_CHARS`)."""
    short, long = "n" * 10, "l" * (yamldata.INTERNED_CHARS + 1)
    got = yamldata.read_documents(f"name{1}: {short}\nlong: {long}\n", Limits())
    assert got is not None
    ((data, _),) = got
    assert next(iter(data)) is sys.intern("".join(["name", "1"]))
    assert data["name1"] is sys.intern("".join(["n"] * 10))
    assert data["long"] is not sys.intern("".join(["l"] * len(long)))


# -- generated texts: block and flow collections, the YAML 1.1 scalars, quoting styles --------

_SCALAR = st.one_of(
    st.sampled_from(YAML_11),
    st.text(st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), max_size=12),
    st.integers(-(10**20), 10**20).map(str),
    st.floats(allow_nan=False).map(repr),
)


def _quoted(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


@st.composite
def _value(draw: Any, depth: int = 0) -> str:
    """A YAML value's text at the indentation `depth` * 2 (block) or inline (flow)."""
    kind = draw(
        st.sampled_from(["plain", "quoted", "single", "map", "seq", "flow"] if depth < 4 else ["plain", "quoted"])
    )
    s = draw(_SCALAR)
    if kind == "plain":
        return s if s in YAML_11 else _quoted(s)
    if kind == "quoted":
        return _quoted(s)
    if kind == "single":
        return "'" + s.replace("'", "''") + "'" if "\n" not in s else _quoted(s)
    if kind == "flow":
        items = draw(st.lists(st.sampled_from(YAML_11[:-1]).filter(lambda v: v not in ("", "-")), max_size=4))
        return "[" + ", ".join(items) + "]"
    pad = "  " * (depth + 1)
    if kind == "map":
        keys = draw(
            st.lists(st.sampled_from(["a", "b", "on", "1", "yes", "name", "é"]), min_size=1, max_size=4, unique=True)
        )
        return "".join(f"\n{pad}{k}: {draw(_value(depth + 1))}" for k in keys)
    n = draw(st.integers(1, 3))
    return "".join(f"\n{pad}- {draw(_value(depth + 1)).lstrip()}" for _ in range(n))


@st.composite
def _stream(draw: Any) -> str:
    docs = []
    for _ in range(draw(st.integers(1, 3))):
        keys = draw(
            st.lists(st.sampled_from(["apiVersion", "kind", "spec", "on", "2", "x y"]), max_size=4, unique=True)
        )
        docs.append("".join(f"{k}: {draw(_value())}\n" for k in keys) + draw(st.sampled_from(["", "# c\n", "\n"])))
    return "---\n".join(docs)


@settings(max_examples=300, deadline=None)
@given(_stream())
def test_generated_streams_read_the_same(reader: Any, text: str) -> None:
    check(text)


_FIXTURE_TEXTS = [t for _, t in _plain_texts(_yaml_files(ROOT / "fixtures"))][:400]
_NOISE = st.sampled_from(
    [
        "&a ",
        "*a",
        "!t ",
        "<<: ",
        "\t",
        "- ",
        ": ",
        "#",
        "'",
        '"',
        "{",
        "}",
        "[",
        "]",
        ",",
        "\n",
        "é",
        "\x00",
        "---\n",
        "? ",
        "|\n",
        " ",
    ]
)


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(_FIXTURE_TEXTS), st.lists(st.tuples(st.integers(0, 10**6), _NOISE, st.booleans()), max_size=4))
def test_damaged_fixtures_read_the_same_or_are_declined(reader: Any, text: str, edits: list[Any]) -> None:
    """Real manifests with characters put in or taken out at random: whatever the reader
    still reads, it reads as the pure reading does (and it never crashes on the rest)."""
    for at, noise, insert in edits:
        i = at % (len(text) + 1)
        text = text[:i] + noise + text[i:] if insert else text[:i] + text[i + len(noise) :]
    check(text)


# -- the loader: the same objects and findings whichever reads ---------------------------------


def _loaded(text: str, name: str) -> Any:
    result = load_text(SourceFile(name, name, text))
    return (
        [(f.code, f.span, f.message) for f in result.findings],
        [(o.doc_index, o.data, list(o.positions.items()), o.template, o.base) for o in result.objects],
        result.documents,
    )


def test_the_loader_gives_the_same_with_either(reader: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    cases = [(str(p), p.read_text(encoding="utf-8", errors="replace")) for p in _yaml_files(ROOT / "fixtures")]
    cases += [
        ("root-scalar.yaml", "just text\n"),
        ("root-list.yaml", "- a\n- b\n"),
        ("no-kind.yaml", "apiVersion: v1\nmetadata: {name: x}\n"),
        ("many.yaml", "---\n" * 3 + "apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: Pod}\n"),
    ]
    fast = {name: _loaded(text, name) for name, text in cases}
    monkeypatch.setattr(yamldata, "_reader", None)
    for name, text in cases:
        assert same(fast[name], _loaded(text, name)), name


@needs_shared
def test_the_loader_gives_the_same_with_either_on_the_corpus(reader: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every corpus file, CRDs (read piece by piece) and templates included."""
    cases = [(str(p), p.read_text(encoding="utf-8", errors="replace")) for p in _yaml_files(CORPUS)]
    fast = {name: _loaded(text, name) for name, text in cases}
    monkeypatch.setattr(yamldata, "_reader", None)
    for name, text in cases:
        assert same(fast[name], _loaded(text, name)), name


CRD = """apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: things.example.com
spec: {}
"""


@pytest.mark.parametrize(
    "text",
    [
        "kind: A\n---\n" + CRD + "---\nkind: B\n",
        CRD + "---\n---\nkind: B\n---\n" + CRD,
        "# only a comment\n---\n" + CRD + "---\na: &x 1\nb: *x\n",  # a piece the reader declines
        "%YAML 1.1\n---\n" + CRD + "---\nkind: B\n",  # directives: one piece
    ],
)
@pytest.mark.parametrize("max_documents", [1, 2, 5000])
def test_a_stream_with_a_crd_reads_the_same(
    reader: Any, monkeypatch: pytest.MonkeyPatch, text: str, max_documents: int
) -> None:
    limits = Limits(max_documents=max_documents)
    fast = load_text(SourceFile("t.yaml", "t.yaml", text), limits)
    monkeypatch.setattr(yamldata, "_reader", None)
    slow = load_text(SourceFile("t.yaml", "t.yaml", text), limits)
    assert [(f.code, f.span, f.message) for f in fast.findings] == [(f.code, f.span, f.message) for f in slow.findings]
    assert same(
        [(o.doc_index, o.data, list(o.positions.items())) for o in fast.objects],
        [(o.doc_index, o.data, list(o.positions.items())) for o in slow.objects],
    )
    assert fast.documents == slow.documents


def test_yml010_at_the_same_line(reader: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    text = "a: 1\n---\n---\nb: 2\n---\nkind: x\n"
    limits = Limits(max_documents=2)
    fast = load_text(SourceFile("t.yaml", "t.yaml", text), limits).findings
    monkeypatch.setattr(yamldata, "_reader", None)
    slow = load_text(SourceFile("t.yaml", "t.yaml", text), limits).findings
    assert [(f.code, f.span) for f in fast] == [(f.code, f.span) for f in slow] != []
