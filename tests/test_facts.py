"""One definition per fact: the decisions taken where two copies disagreed, pinned.

Each case says which upstream behaviour it follows (CONTRIBUTING.md, "One definition per fact", lists the
corpus effect of each decision).
"""

from __future__ import annotations

import math

import pytest
from ailint.core.model import K8sObject, SourceFile
from ailint.domain import durations, instances, karpenter
from ailint.domain.quantities import to_int
from ailint.domain.serving import arg_int


def _obj(data: dict) -> K8sObject:
    return K8sObject(SourceFile("-", "-", ""), 0, data, {})


# -- instance families: Karpenter's instanceTypeScheme `(^[a-z]+)(\-[0-9]+tb)?([0-9]+).*\.`
@pytest.mark.parametrize(
    ("family", "category", "generation"),
    [("gr6", "gr", "6"), ("inf2", "inf", "2"), ("trn1n", "trn", "1"), ("dl2q", "dl", "2"), ("p6-b200", "p", "6"),
     ("u-6tb1", "u", "1"), ("m7i", "m", "7")],
)  # fmt: skip
def test_category_and_generation_follow_karpenter(family: str, category: str, generation: str) -> None:
    assert instances.category_of(family) == category
    assert instances.generation_of(family) == generation


def test_table_labels_carry_karpenters_category() -> None:
    # the table's node labels used to take the first letter (`g` for gr6, `i` for inf2)
    gr6 = instances.get("gr6.4xlarge")
    assert gr6 is not None and gr6.labels()["karpenter.k8s.aws/instance-category"] == "gr"
    inf2 = next(it for it in instances.table().values() if it.family == "inf2")
    assert inf2.labels()["karpenter.k8s.aws/instance-category"] == "inf"


@pytest.mark.parametrize("family", ["p4d", "p5en", "p6-b200", "g4dn", "g5g", "g6e", "gr6", "inf2", "trn2", "dl1"])
def test_accelerator_families(family: str) -> None:
    assert instances.is_accelerator_family(family)
    assert instances.is_accelerator_type(f"{family}.xlarge")


@pytest.mark.parametrize("family", ["m7i", "c6gn", "i4i", "gpu", "G5", "", "inf"])
def test_not_accelerator_families(family: str) -> None:
    # label values match exactly: `G5` selects no node, so it is no accelerator family
    assert not instances.is_accelerator_family(family)


# -- durations: Go's time.ParseDuration (the API server and Karpenter), finite only
@pytest.mark.parametrize(
    ("text", "seconds"),
    [("90s", 90.0), ("1h30m", 5400.0), ("720h", 2592000.0), ("1.5h", 5400.0), ("0", 0.0), (300, 300.0)],
)
def test_parse_duration(text: object, seconds: float) -> None:
    assert durations.parse_duration(text) == seconds


def test_parse_duration_never_is_infinite() -> None:
    assert durations.parse_duration("Never") == math.inf
    assert durations.format_duration(math.inf) == "Never"


@pytest.mark.parametrize("text", ["3d", "300", "", "h", "1h 30m", float("inf"), float("nan"), True, None, "1e400h"])
def test_parse_duration_rejects(text: object) -> None:
    # `d` is no Go unit, a bare number string has no unit, and nothing infinite but Never
    assert durations.parse_duration(text) is None


def test_static_pool_needs_replicas_set() -> None:
    # `replicas` is a pointer in the NodePool API: null means a dynamic pool
    assert karpenter.is_static(_obj({"spec": {"replicas": 2}}))
    assert not karpenter.is_static(_obj({"spec": {"replicas": None}}))
    assert not karpenter.is_static(_obj({"spec": {}}))


def test_scheduling_taints_and_the_tolerable_ones() -> None:
    pool = _obj(
        {
            "spec": {
                "template": {
                    "spec": {
                        "taints": [
                            {"key": "nvidia.com/gpu", "effect": "NoSchedule"},
                            {"key": "karpenter.sh/disrupted", "effect": "NoSchedule"},
                            {"key": "soft", "effect": "PreferNoSchedule"},
                        ]
                    }
                }
            }
        }
    )
    assert [i for i, _ in karpenter.scheduling_taints(pool)] == [0, 1]
    assert [t["key"] for t in karpenter.tolerable_taints(pool)] == ["nvidia.com/gpu"]


# -- integers: one coercer; command-line text strips its quotes first
@pytest.mark.parametrize(("value", "expected"), [(3, 3), ("3", 3), (" -1 ", -1), (2.0, 2), (2.5, None), (True, None),
                                                 ("3x", None), (None, None)])  # fmt: skip
def test_to_int(value: object, expected: int | None) -> None:
    assert to_int(value) == expected


def test_arg_int_strips_quotes_and_semicolons() -> None:
    assert arg_int("'4'") == 4 and arg_int("4;") == 4 and arg_int("four") is None


def test_namespace_or_default() -> None:
    assert _obj({"metadata": {"namespace": "ml"}}).namespace_or_default == "ml"
    assert _obj({"metadata": {}}).namespace_or_default == "default"
    assert _obj({"metadata": {"namespace": ""}}).namespace_or_default == "default"


# -- quantities: the exact number rounded once to a float (Kubernetes' resource.Quantity)
@pytest.mark.parametrize(
    ("text", "value"),
    [("500m", 0.5), ("16Gi", 16 * 2**30), ("1.5Gi", 1.5 * 2**30), ("1e3", 1000.0), ("1e3k", 1e6), (".5", 0.5),
     ("1.", 1.0), ("00012", 12.0), (" 2Ki ", 2048.0), ("-0", -0.0), ("+3M", 3e6), ("100n", 1e-7), ("7u", 7e-6),
     ("1.7976931348623157e308", 1.7976931348623157e308), ("1e-400", 0.0),
     ("-9834038.612806e11Ei", -1.1337874593838125e36)],  # 32 digits: `decimal`'s 28 rounded twice
)  # fmt: skip
def test_parse_quantity(text: str, value: float) -> None:
    from ailint.domain.quantities import parse_quantity

    got = parse_quantity(text)
    assert got == value and math.copysign(1, got) == math.copysign(1, value)


@pytest.mark.parametrize("text", ["1e9999999", "-1e9999999", "1e400", "1.8e308", "abc", "", "1Qi", "1e", "--1", "."])
def test_parse_quantity_rejects(text: str) -> None:
    """Not a quantity, or none a float holds: None, never an error (`1e9999999` used to raise
    decimal.Overflow out of the rule reading it)."""
    from ailint.domain.quantities import parse_quantity

    assert parse_quantity(text) is None


def test_parse_quantity_is_the_exact_value_rounded_once() -> None:
    """Random quantities of up to 14 digits, every suffix, exponents up to 30: the value is
    the exact rational (`fractions.Fraction`) rounded to the nearest float."""
    import random
    from fractions import Fraction

    from ailint.domain.quantities import parse_quantity

    scale = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60, "n": Fraction(1, 10**9),
             "u": Fraction(1, 10**6), "m": Fraction(1, 1000), "": 1, "k": 10**3, "K": 10**3, "M": 10**6,
             "G": 10**9, "T": 10**12, "P": 10**15, "E": 10**18}  # fmt: skip
    rng = random.Random(17)
    for _ in range(3000):
        whole = "".join(rng.choice("0123456789") for _ in range(rng.randint(1, 8)))
        fraction = "".join(rng.choice("0123456789") for _ in range(rng.randint(0, 6)))
        exponent = f"e{rng.randint(-30, 30)}" if rng.random() < 0.3 else ""
        suffix = rng.choice(list(scale))
        number = f"{rng.choice(['', '-'])}{whole}{'.' + fraction if fraction else ''}{exponent}"
        assert parse_quantity(number + suffix) == float(Fraction(number) * scale[suffix]), number + suffix
