"""Realistic multi-object stacks (fixtures/stacks/<stack>.yaml), linted with every rule.

Each stack is one file written like real platform YAML, with a mix of mistakes and good
practice, and is linted as a whole bundle with the default selection (every rule, schema
validation on, default cluster profile). The test pins the complete set of findings as
(code, line) pairs, and the rendered findings (columns, severities, messages, fix titles) in
`<stack>.expected` next to the stack, written by `pytest tests/test_stacks.py
--update-snapshots` (read the diff before committing it).

The good practice in each stack is there on purpose: it is the near miss that must stay
silent (for example the HPA with min < max that keeps REL001 quiet on a ScheduleAnyway
spread, or the InferencePool that keeps SRV007 quiet on a prefix-caching vLLM).
"""

from __future__ import annotations

import json
import os

import pytest
from ailint.engine.config import Settings
from ailint.engine.run import lint
from fixture_harness import FIXTURES, ROOT, render_snapshot

STACKS = FIXTURES / "stacks"

EXPECTED: dict[str, list[tuple[str, int]]] = {
    # Karpenter GPU pool + EC2NodeClass, vLLM Deployment, Service, HPA, PDB, NetworkPolicy,
    # InferencePool with its endpoint picker, HTTPRoute, Grafana dashboard ConfigMap.
    "vllm_serving": [
        ("KRP005", 11),  # al2023@latest on the GPU NodeClass
        ("KRP004", 59),  # GPU pool consolidates busy nodes after 1m
        ("OBS003", 75),  # dashboard queries vllm:gpu_cache_usage_perc (V0 name)
        ("REL006", 98),  # serving pod on a spot-capable pool keeps the 30 s grace period
        ("REL006", 109),  # ... and has no preStop hook
        ("STO008", 113),  # Hub download at every start while the HPA scales to 8
        ("SRV012", 149),  # liveness probe without timeoutSeconds (1 s default)
        ("STO007", 166),  # /dev/shm Memory emptyDir without sizeLimit
        ("SRV009", 194),  # HPA on CPU only for a GPU model server
        ("NET007", 229),  # namespaceSelector on the unset label `name`
        ("NET006", 244),  # DNS egress on UDP 53 only
        ("NET009", 248),  # egress 0.0.0.0/0:443 on serving pods
        ("SRV008", 264),  # endpoint picker: 1 replica, no PDB, FailClose
    ],
    # p5 NodePool + EC2NodeClass, Kueue ResourceFlavor/ClusterQueue/LocalQueue, FSx
    # StorageClass + checkpoint PVC, 4-node PyTorchJob, Ray evaluation RayJob, descheduler
    # policy embedded in a ConfigMap.
    "training": [
        ("NET004", 22),  # aws:ec2:placement-group tag (reserved prefix, places nothing)
        ("REL005", 30),  # default expireAfter without terminationGracePeriod, do-not-disrupt pods
        ("TRN008", 74),  # ClusterQueue does not cover vpc.amazonaws.com/efa
        ("REL004", 140),  # multi-node GPU job without karpenter.sh/do-not-disrupt
        ("OBS001", 165),  # NCCL_DEBUG=INFO
        ("NET003", 166),  # FI_PROVIDER=efa (only for aws-ofi-nccl <= 1.5.0)
        ("NET003", 168),  # FI_EFA_USE_DEVICE_RDMA=1
        ("TRN008", 204),  # RayJob in a LocalQueue namespace without the queue-name label
        ("TRN001", 207),  # RayJob backoffLimit unset
        # (ray-head and ray-worker without FallbackToLogsOnError: OBS002, opt-in, not selected)
    ],
    # Two EC2NodeClasses, a CPU pool, a GPU pool, an Auto Mode GPU pool with its NodeClass,
    # the aws-node DaemonSet with prefix delegation, the DCGM exporter DaemonSet.
    "karpenter_eks": [
        ("KRP006", 26),  # GPU NodeClass ignores the local NVMe (no RAID0)
        ("KRP005", 29),  # bottlerocket@latest
        ("SCH003", 75),  # v1beta1 consolidationPolicy WhenUnderutilized left after the v1 upgrade
        ("KRP002", 82),  # GPU pool without limits
        ("KRP003", 88),  # GPU pool without a NoSchedule taint
        ("KRP001", 96),  # GPU pool pinned to g6e.2xlarge only
        ("NET001", 110),  # Auto Mode NodeClass for GPU nodes without ipv4PrefixSize "32"
        ("KRP007", 136),  # Auto Mode pool requires a karpenter.k8s.aws/* label
        ("NET001", 197),  # prefix delegation without WARM_IP_TARGET/MINIMUM_IP_TARGET
        ("OBS004", 229),  # DCGM exporter lands on no GPU pool
        ("GPU007", 231),  # ... because of the NFD label nvidia.com/gpu.present
    ],
    # Namespace, RuntimeClass (gVisor), a sandboxed code-interpreter agent with IRSA and a
    # Slack assistant with a kubeconfig, their ServiceAccounts, RBAC, egress policy, Secrets
    # and an ExternalSecret.
    "agent_platform": [
        ("SEC001", 44),  # create pods/exec for the code agent
        ("SEC005", 78),  # code-executing agent egress to 0.0.0.0/0:443
        ("NET009", 143),  # ... the same ipBlock, as a broad-CIDR finding
        ("SEC001", 165),  # cluster-wide secret reads for the Slack assistant
        ("SEC010", 190),  # ExternalSecret on external-secrets.io/v1beta1
        ("SEC005", 252),  # Slack assistant has no egress policy at all
        ("SEC006", 252),  # legacy service-account-token Secret for its ServiceAccount
        ("SEC006", 258),  # SLACK_BOT_TOKEN from a Secret, no IRSA / Pod Identity
        ("SEC007", 269),  # literal ANTHROPIC_API_KEY
        # The kubeconfig Secret, once, at its volume; the message names KUBECONFIG (line 270).
        ("SEC006", 283),
    ],
}


def lint_stack(path):
    return lint([str(path)], Settings(root=str(ROOT)))


def test_every_stack_file_is_pinned():
    on_disk = sorted(p.stem for p in STACKS.glob("*.yaml"))
    assert on_disk == sorted(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_stack_findings(name, update_snapshots):
    path = STACKS / f"{name}.yaml"
    result = lint_stack(path)
    rendered = render_snapshot(result.findings)
    assert not [f for f in result.findings if f.code == "AIL003"], rendered
    got = sorted((f.code, f.span.line) for f in result.findings)
    assert got == sorted(EXPECTED[name]), rendered
    snap = path.with_suffix(".expected")
    if not snap.exists() and os.environ.get("CI"):
        pytest.fail(f"missing snapshot {snap.name}; run pytest --update-snapshots and commit it")
    if update_snapshots or not snap.exists():
        snap.write_text(rendered, encoding="utf-8")
    else:
        assert rendered == snap.read_text(encoding="utf-8")


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_stack_fixes_converge(name, tmp_path):
    """Every fix of every rule (unsafe ones too) applied together: the stack reaches a
    fixed point within a few passes, stays valid YAML and schema-clean, and no fix creates a
    finding that was not there before."""
    from ailint.fix.apply import apply_to_text

    path = STACKS / f"{name}.yaml"
    before = lint_stack(path)
    work = tmp_path / path.name
    text = path.read_text(encoding="utf-8")
    for _ in range(5):
        work.write_text(text, encoding="utf-8")
        new, _applied = apply_to_text(text, [f.fix for f in lint_stack(work).findings if f.fix is not None])
        if new == text:
            break
        text = new
    else:
        pytest.fail("fixes did not reach a fixed point in 5 passes")
    after = lint_stack(work)
    assert not [f for f in after.findings if f.code.startswith(("YML", "AIL"))], render_snapshot(after.findings)
    assert not [f for f in after.findings if f.fix is not None], render_snapshot(after.findings)
    new_codes = {f.code for f in after.findings} - {f.code for f in before.findings}
    assert not new_codes, render_snapshot(after.findings)
    assert len(after.findings) < len(before.findings)


def test_stacks_together_same_with_jobs():
    """Linting the stacks together gives the same report in one process and in two, with
    the cross-resource findings of the joined bundle."""
    from ailint.report import json as json_report

    paths = [str(p) for p in sorted(STACKS.glob("*.yaml"))]
    one = json.loads(json_report.render(lint(paths, Settings(root=str(ROOT)), jobs=1)))
    two = json.loads(json_report.render(lint(paths, Settings(root=str(ROOT)), jobs=2)))
    assert one == two
