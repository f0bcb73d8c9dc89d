"""Cross-resource rules look at other objects only once their own object could have a finding.

What a bundle call reads decides which calls a cached rerun repeats (`ailint.engine.tracking`):
a call that read the pods runs again after any pod changed. So a rule checks its own object
first (a role's grants, a policy's blocks) and reads the other objects only when the object
could have a finding; and an index a rule builds over every pod works out the costly part
(each pod's NodePools) only for the pods a finding can name.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from test_cache import _lint

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"


def _calls_rerun(monkeypatch: pytest.MonkeyPatch, paths: list[str], cache: Path) -> set[tuple[str, str]]:
    """(rule, object name) of every call a cached run makes (the rerun equals a fresh run)."""
    from ailint.engine import run as run_mod

    ran: set[tuple[str, str]] = set()
    real = run_mod.Engine.run_rule

    def counting(self, reg, obj, ctx):  # type: ignore[no-untyped-def]
        ran.add((reg.rule.code, obj.name or ""))
        return real(self, reg, obj, ctx)

    with monkeypatch.context() as m:
        m.setattr(run_mod.Engine, "run_rule", counting)
        again = _lint(paths, cache)
    assert again == _lint(paths, None)
    return ran


@pytest.mark.parametrize(
    ("fixture", "narrowed", "code", "untouched", "pod"),
    [
        # a ClusterRole that grants only reads of configuration, bound to the agent's ServiceAccount
        (
            "SEC001/pass_read_only_namespaced.yaml",
            ("resources: [pods, pods/log, events, configmaps]", "resources: [events, configmaps]"),
            "SEC001",
            "pod-reader",
            "sre-agent",
        ),
        # policies whose blocks are narrow, or broad for pods that are neither serving nor agents
        ("NET009/pass_narrow_or_other_pods.yaml", None, "NET009", "narrow", "vllm"),
    ],
)
def test_a_pod_edit_reruns_no_call_on_an_object_that_cannot_have_a_finding(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    fixture: str,
    narrowed: tuple[str, str] | None,
    code: str,
    untouched: str,
    pod: str,
) -> None:
    """After a pod's image changes, a cached rerun runs no `code` call on `untouched`, whose
    own fields rule out a finding whatever the pods are; the rerun equals a fresh run."""
    tree = tmp_path / "tree"
    tree.mkdir()
    other = tree / "pod.yaml"  # the pod in a file of its own, edited alone
    text = (FIXTURES / fixture).read_text(encoding="utf-8")
    if narrowed is not None:
        assert narrowed[0] in text
        text = text.replace(*narrowed)
    docs = text.split("\n---\n")
    pod_doc = next(d for d in docs if f"name: {pod}\n" in d and "kind: Deployment" in d)
    (tree / "all.yaml").write_text("\n---\n".join(d for d in docs if d is not pod_doc), encoding="utf-8")
    other.write_text(pod_doc, encoding="utf-8")
    cache, paths = tmp_path / "c", [str(tree)]
    assert _lint(paths, cache) == _lint(paths, None)
    image = next(line for line in pod_doc.splitlines() if "image:" in line)
    other.write_text(pod_doc.replace(image, image + "-edited"), encoding="utf-8")
    ran = _calls_rerun(monkeypatch, paths, cache)
    assert any(name == pod for _, name in ran)  # (the edited object's own calls run again)
    assert (code, untouched) not in ran, sorted(ran)


def test_expiry_index_matches_pools_only_for_pods_a_finding_can_name() -> None:
    """REL005 joins NodePools with the pods they host; only pods protected by do-not-disrupt
    or training runs of a known length can be named, and only theirs are matched to pools."""
    from ailint.core.model import SourceFile
    from ailint.domain.context import Context
    from ailint.engine.load import load_text
    from ailint.engine.registry import all_rules, check_function, options_for

    base = (FIXTURES / "REL005" / "deadline_longer_than_expiry.yaml").read_text(encoding="utf-8")
    serving = """
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web-N
spec:
  selector:
    matchLabels: {app: web-N}
  template:
    metadata:
      labels: {app: web-N}
    spec:
      containers:
        - name: web
          image: nginx:1.27
"""
    text = base + "".join("\n---\n" + serving.replace("N", str(n)) for n in range(20))
    objects = load_text(SourceFile("x.yaml", "x.yaml", text)).objects
    ctx = Context(objects=objects, bundle=True)
    asked: list[str] = []
    real = Context.pools_for

    def counting(self, pod, **kw):  # type: ignore[no-untyped-def]
        asked.append(pod.obj.name)
        return real(self, pod, **kw)

    reg = all_rules()["REL005"]
    check = check_function(reg)
    pool = next(o for o in objects if o.kind == "NodePool")
    with pytest.MonkeyPatch.context() as m:
        m.setattr(Context, "pools_for", counting)
        found = list(check(pool, ctx, options_for(reg.rule)))
    assert [f.code for f in found] == ["REL005"] and "Job default/pretrain" in found[0].message
    assert asked == ["pretrain"], asked
