"""Which objects are kustomize patches (`ailint.domain.patches`): the schema pass lets them miss
fields and the admission-policy pass does not judge them. The answer must not change with how
it is worked out: a file named by a Kustomization of the run, under a flattened folder prefix
or not, and a strategic-merge directive anywhere in the first 12 levels of the data."""

from __future__ import annotations

from pathlib import Path

from ailint.domain.patches import _has_directive, has_directive, is_partial, named_in
from hypothesis import given
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parent.parent

_names = st.text(alphabet="ab_.", min_size=1, max_size=8)


def _named_by_each_name(base: str, patch_names: set[str]) -> bool:
    """The definition, one name at a time."""
    return any(base == n or base.endswith(("__" + n, "_" + n)) for n in patch_names)


@given(_names, st.sets(_names, max_size=6))
def test_a_file_is_named_by_a_kustomization_as_each_name_would_say(base: str, patch_names: set[str]) -> None:
    assert named_in(base, patch_names) == _named_by_each_name(base, patch_names)


def test_flattened_folder_prefixes_and_names_with_underscores() -> None:
    names = {"add_gpu.yaml", "_odd.yaml"}
    assert named_in("overlays__prod__add_gpu.yaml", names)
    assert named_in("x_add_gpu.yaml", names)
    assert named_in("x__odd.yaml", names) and named_in("_odd.yaml", names)
    assert not named_in("gpu.yaml", names) and not named_in("xadd_gpu.yaml", names)


# keys and texts near the directives' names: the names themselves, inside another word,
# cut short, after a non-ASCII letter
_NEAR = st.sampled_from(
    ["$patch", "$retainKeys", "$setElementOrder/containers", "$deleteFromPrimitiveList/args"]
    + ["x$patch", "$pat", "é$patch", "$patché", "patch", "name", "$"]
) | st.text(alphabet="$patchrtiK_é", max_size=10)
_DATA = st.recursive(
    st.none() | st.integers() | _NEAR,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_NEAR, inner, max_size=3),
    max_leaves=25,
)


@given(_DATA)
def test_the_marshalled_bytes_only_spare_walks_that_find_nothing(data: object) -> None:
    assert has_directive(data, 0) == _has_directive(data, 0)


def _nested(depth: int, leaf: dict) -> dict:
    for _ in range(depth):
        leaf = {"spec": leaf}
    return leaf


def test_directives_found_where_the_walk_finds_them() -> None:
    assert has_directive(_nested(3, {"$patch": "replace"}), 0)
    assert has_directive({"spec": [{"containers": [{"$retainKeys": ["a"]}]}]}, 0)
    assert has_directive({"$patché": 1}, 0)  # (a key's bytes are there as UTF-8)
    assert not has_directive(_nested(13, {"$patch": "delete"}), 0)  # below the 12 levels looked at
    assert not has_directive({"args": ["$patch is text here, not a key"]}, 0)
    assert not has_directive({"metadata": {"name": "dispatcher"}}, 0)


def test_every_fixture_object_judged_as_the_plain_walk_judges_it() -> None:
    from ailint.core.model import SourceFile
    from ailint.engine.load import Limits, load_text

    found = 0
    for path in sorted((ROOT / "fixtures").rglob("*.yaml")):
        text = path.read_text(encoding="utf-8", errors="replace")
        for obj in load_text(SourceFile(str(path), path.name, text), Limits()).objects:
            got = has_directive(obj.data, 0)
            assert got == _has_directive(obj.data, 0), path
            found += got
            assert is_partial(obj, set()) == is_partial(obj, {"no-such-file.yaml"})
    assert found, "some fixtures hold a directive"
