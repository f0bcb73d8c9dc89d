"""The results cache (`ailint.engine.cache`): same findings as without it, invalidated by
every part of its key, safe when two runs write at once, and never trusting a bad entry."""

from __future__ import annotations

import json
import multiprocessing
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import CORPUS, ROOT, bench_module, needs_shared

FIXTURES = ROOT / "fixtures"


def _lint(
    paths: list[str], cache_dir: Path | None, jobs: int = 1, context: tuple[str, ...] = (), **settings_changes: object
) -> dict:
    from ailint.engine.config import Settings
    from ailint.engine.run import lint
    from ailint.report import json as rep

    settings = Settings(root=str(ROOT))
    for k, v in settings_changes.items():
        setattr(settings, k, v)
    saved = os.environ.get("AILINT_CACHE_DIR")
    if cache_dir is None:  # an uncached run: no cache folder at all (str(None) would make ./None)
        os.environ.pop("AILINT_CACHE_DIR", None)
    else:
        os.environ["AILINT_CACHE_DIR"] = str(cache_dir)  # the runner's choice (a config's must stay in the project)
    try:
        result = lint(paths, settings, jobs=jobs, cache=cache_dir is not None, context=context)
    finally:
        if saved is None:
            os.environ.pop("AILINT_CACHE_DIR", None)
        else:
            os.environ["AILINT_CACHE_DIR"] = saved
    return json.loads(rep.render(result))


def _entries(cache_dir: Path) -> set[str]:
    return {str(p) for p in cache_dir.rglob("*") if p.is_file() and p.parent.parent.name.startswith("results-v")}


def _cli(args: list[str], cache_dir: Path, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "AILINT_CACHE_DIR": str(cache_dir)}
    env.pop("AILINT_NO_CACHE", None)
    return subprocess.run(
        [sys.executable, "-m", "ailint", *args], cwd=cwd, env=env, capture_output=True, text=True, check=False
    )


# -- same findings ---------------------------------------------------------------------------
def test_fixtures_cached_and_uncached_identical(tmp_path: Path) -> None:
    _copy_tree(FIXTURES, tmp_path / "fx", 100_000)
    paths = [str(tmp_path / "fx")]
    ref = _lint(paths, None)
    assert ref["findings"]
    cold = _lint(paths, tmp_path / "c")
    assert _entries(tmp_path / "c"), "the first run writes entries"
    warm = _lint(paths, tmp_path / "c")
    warm2 = _lint(paths, tmp_path / "c", jobs=2)
    assert cold == ref
    assert warm == ref
    assert warm2 == ref


def _rendered(p: Path) -> bool:
    """Inside a Helm chart or a kustomize overlay: a run with those renders them, uncached."""
    return any(
        (d / "Chart.yaml").exists() or (d / "kustomization.yaml").exists() or (d / "kustomization.yml").exists()
        for d in p.parents
    )


def _copy_tree(src: Path, dst: Path, limit: int) -> list[Path]:
    files = sorted(p for p in src.rglob("*.y*ml") if p.is_file() and not _rendered(p))[:limit]
    out = []
    for p in files:
        q = dst / p.relative_to(src)
        q.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(p, q)
        out.append(q)
    return out


def test_rerun_after_edits_identical_to_uncached(tmp_path: Path) -> None:
    """Edit, add and remove files between cached runs: every rerun equals a fresh run."""
    tree = tmp_path / "tree"
    files = _copy_tree(FIXTURES, tree, 400)
    cache = tmp_path / "c"
    paths = [str(tree)]
    assert _lint(paths, cache) == _lint(paths, None)
    # an edit that changes findings: a GPU limit gone, a namespace moved
    edited = 0
    for p in files:
        text = p.read_text(encoding="utf-8")
        if "nvidia.com/gpu" in text and edited < 3:
            p.write_text(text.replace("nvidia.com/gpu", "nvidia.com/gpu-x", 1), encoding="utf-8")
            edited += 1
    assert edited
    for jobs in (1, 2):
        assert _lint(paths, cache, jobs=jobs) == _lint(paths, None, jobs=jobs)
    files[0].unlink()
    shutil.copyfile(files[1], tree / "added-copy.yaml")
    assert _lint(paths, cache) == _lint(paths, None)


_EDITS = {
    "delete": None,
    "move its namespace": ("namespace: ", "namespace: moved-"),
    "relabel": ("app: ", "app: other-"),
    "rename": ("  name: ", "  name: renamed-"),
    "change a kind": ("kind: ", "kind: X"),
}


@pytest.mark.parametrize("repos", [1, 3])
def test_reruns_after_edits_of_every_kind_identical_to_uncached(tmp_path: Path, repos: int) -> None:
    """Edits that change what other objects' calls read (a file gone, an object moved to
    another namespace, relabelled, renamed, of another kind), one file at a time in a tree
    of a third of every family's fixtures, which join as one project, or as three (each a
    repository of its own, the run's catalogue shared by all three): each cached rerun
    equals a fresh run (findings, spans, messages and fixes)."""
    import random

    tree = tmp_path / "tree"
    files = []
    for n, p in enumerate(p for p in sorted(FIXTURES.rglob("*.yaml"))[::3] if not p.name.endswith(".fixed.yaml")):
        repo = tree / f"repo{n % repos}" if repos > 1 else tree
        files.append(repo / p.relative_to(FIXTURES))
        files[-1].parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(p, files[-1])
    for n in range(repos if repos > 1 else 0):
        (tree / f"repo{n}" / ".git").mkdir()
    rnd = random.Random(17)  # fixed: the same edits every run
    cache, paths = tmp_path / "c", [str(tree)]
    _lint(paths, cache)
    for how in [*_EDITS, *_EDITS]:
        victim = rnd.choice([p for p in files if p.exists()])
        text = victim.read_text(encoding="utf-8")
        edit = _EDITS[how]
        if edit is None:
            victim.unlink()
        else:
            victim.write_text(text.replace(*edit, 1), encoding="utf-8")
        assert _lint(paths, cache) == _lint(paths, None), f"{how}: {victim.relative_to(tree)}"


def test_namespace_scoped_reads_rerun_when_their_namespace_changes(tmp_path: Path) -> None:
    """A bundle call that read one namespace (a PDB lookup) is reused after an edit in another
    namespace and runs again after one in its own: each rerun equals a fresh run."""
    tree = tmp_path / "tree"
    tree.mkdir()
    shutil.copyfile(FIXTURES / "REL003" / "consolidating_pool.yaml", tree / "vllm.yaml")
    pdb = tree / "pdb.yaml"
    cache = tmp_path / "c"
    paths = [str(tree)]

    def rel003(found: dict) -> int:
        return sum(1 for f in found["findings"] if f["code"] == "REL003")

    def budget(namespace: str) -> str:
        return (
            "apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata:\n  name: vllm\n"
            f"  namespace: {namespace}\nspec:\n  maxUnavailable: 1\n  selector:\n    matchLabels: {{app: vllm}}\n"
        )

    pdb.write_text(budget("elsewhere"), encoding="utf-8")
    first = _lint(paths, cache)
    assert first == _lint(paths, None) and rel003(first) == 1
    pdb.write_text(budget("inference"), encoding="utf-8")  # the budget moves to the workload's namespace
    moved = _lint(paths, cache)
    assert moved == _lint(paths, None) and rel003(moved) == 0
    pdb.write_text(budget("other"), encoding="utf-8")  # and away again
    away = _lint(paths, cache)
    assert away == _lint(paths, None) and rel003(away) == 1


def test_a_memo_shared_by_objects_reruns_each_reader_after_an_edit(tmp_path: Path) -> None:
    """Two agents share a ServiceAccount whose RoleBinding one of them looks up first; the
    other reads the run-wide memo. After the binding stops naming the account, both calls
    run again: a memo filled per key by its readers (`memo(name, dict)`) had noted the
    binding for the first reader only, and the rerun kept the second agent's old result."""
    tree = tmp_path / "tree"
    tree.mkdir()
    text = (FIXTURES / "SEC001" / "unbound_token_mounted.yaml").read_text(encoding="utf-8")
    (tree / "a.yaml").write_text(text, encoding="utf-8")
    (tree / "b.yaml").write_text(text.replace("name: support-copilot\n", "name: support-copilot-b\n"), encoding="utf-8")
    binding = tree / "rbac.yaml"
    binding.write_text(
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata:\n  name: copilot\n"
        "  namespace: support\nroleRef:\n  apiGroup: rbac.authorization.k8s.io\n  kind: ClusterRole\n"
        "  name: view\nsubjects:\n  - kind: ServiceAccount\n    name: copilot\n    namespace: support\n",
        encoding="utf-8",
    )
    cache, paths = tmp_path / "c", [str(tree)]

    def sec001(found: dict) -> list[str]:
        return sorted(Path(f["file"]).name for f in found["findings"] if f["code"] == "SEC001")

    first = _lint(paths, cache)
    assert first == _lint(paths, None) and sec001(first) == []
    binding.write_text(
        binding.read_text(encoding="utf-8").replace("name: copilot\n    namespace", "name: other\n    namespace")
    )
    rerun = _lint(paths, cache)
    assert sec001(rerun) == ["a.yaml", "b.yaml"]
    assert rerun == _lint(paths, None)


def test_an_index_every_pool_reads_reruns_each_pool_after_a_workload_moves(tmp_path: Path) -> None:
    """KRP008 builds one index of the run's GPU workloads (`ctx.pod_owners`) and every
    NodePool it judges reads it: the first pool's call builds it, the second's finds it
    built. After the batch job moves from pool b to pool a, both calls run again (each
    noted the run's pods), and pool b's finding goes."""
    tree = tmp_path / "tree"
    tree.mkdir()
    for name in ("gpu-a", "gpu-b"):
        (tree / f"{name}.yaml").write_text(
            f"apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata:\n  name: {name}\nspec:\n  template:\n"
            "    spec:\n      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: gpu}\n"
            "      requirements:\n        - key: karpenter.k8s.aws/instance-family\n          operator: In\n"
            '          values: ["g6e"]\n      taints:\n        - key: nvidia.com/gpu\n          effect: NoSchedule\n',
            encoding="utf-8",
        )
    pinned = "      nodeSelector: {karpenter.sh/nodepool: gpu-b}\n"
    (tree / "serve.yaml").write_text(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: vllm\nspec:\n  selector:\n"
        "    matchLabels: {app: vllm}\n  template:\n    metadata:\n      labels: {app: vllm}\n    spec:\n"
        + pinned
        + "      containers:\n        - name: vllm\n          image: vllm/vllm-openai:v0.9.2\n"
        "          resources:\n            limits:\n              nvidia.com/gpu: 1\n",
        encoding="utf-8",
    )
    job = tree / "job.yaml"
    job.write_text(
        "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: finetune\nspec:\n  template:\n    spec:\n"
        + pinned
        + "      restartPolicy: Never\n      containers:\n        - name: train\n          image: my/trainer:1.0\n"
        "          resources:\n            limits:\n              nvidia.com/gpu: 4\n",
        encoding="utf-8",
    )
    cache, paths = tmp_path / "c", [str(tree)]

    def krp008(found: dict) -> list[str]:
        return sorted(Path(f["file"]).name for f in found["findings"] if f["code"] == "KRP008")

    first = _lint(paths, cache)
    assert krp008(first) == ["gpu-b.yaml"] and first == _lint(paths, None)
    job.write_text(job.read_text(encoding="utf-8").replace("gpu-b", "gpu-a"), encoding="utf-8")
    rerun = _lint(paths, cache)
    assert krp008(rerun) == []
    assert rerun == _lint(paths, None)


def test_no_run_wide_memo_is_a_container_its_readers_fill() -> None:
    """`ctx.memo(key, compute)` notes what `compute` read for every later reader (the results
    cache reruns a call when that changes). A memo created empty and filled by its readers
    (`memo("x", dict)`) notes nothing for them: each entry must be a memo of its own key."""
    import re

    pattern = re.compile(
        r"memo\(\s*[^,()]+(?:\([^()]*\))?\s*,\s*(?:dict|list|set|lambda:\s*(?:\{\}|\[\]|set\(\)|dict\(\)))\s*\)"
    )
    found = [
        f"{p.relative_to(ROOT)}: {m.group(0)}"
        for base in ("linter", "rules")
        for p in sorted((ROOT / base).rglob("*.py"))
        for m in pattern.finditer(p.read_text(encoding="utf-8"))
    ]
    assert found == []


@needs_shared
def test_corpus_cached_and_uncached_identical(tmp_path: Path) -> None:
    plain = sorted(str(p) for p in CORPUS.glob("*/plain"))
    ref = _lint(plain, None, jobs=2)
    assert len(ref["findings"]) > 500
    assert _lint(plain, tmp_path / "c", jobs=2) == ref  # cold, writing
    assert _lint(plain, tmp_path / "c", jobs=1) == ref  # warm
    # one changed file of the corpus, copied so the corpus stays untouched
    tree = tmp_path / "tree"
    for d in plain[:6]:
        shutil.copytree(d, tree / Path(d).parent.name)
    paths = [str(tree)]
    _lint(paths, tmp_path / "c2")
    victims = [p for p in sorted(tree.rglob("*.yaml")) if "kind: Deployment" in p.read_text(encoding="utf-8")][:2]
    for v in victims:
        v.write_text(
            v.read_text(encoding="utf-8").replace("kind: Deployment", "kind: StatefulSet", 1), encoding="utf-8"
        )
    assert _lint(paths, tmp_path / "c2") == _lint(paths, None)


def test_cli_jobs_1_and_2_byte_identical_cold_and_warm(tmp_path: Path) -> None:
    _copy_tree(FIXTURES, tmp_path / "fx", 100_000)
    args = ["check", "--format", "json", "--fail-on", "never", str(tmp_path / "fx")]
    uncached = _cli([*args, "--no-cache", "--jobs", "1"], tmp_path / "none")
    assert uncached.returncode == 0, uncached.stderr
    assert not (tmp_path / "none" / "results-v1").exists() or not _entries(tmp_path / "none"), "--no-cache wrote"
    outs = [_cli([*args, "--jobs", j], tmp_path / "c").stdout for j in ("2", "1", "2", "1")]
    assert _entries(tmp_path / "c"), "the cached runs wrote entries"
    assert all(o == uncached.stdout for o in outs)


# -- the key ------------------------------------------------------------------------------------
def _writes(paths: list[str], cache: Path, **changes: object) -> int:
    before = _entries(cache)
    _lint(paths, cache, **changes)
    return len(_entries(cache) - before)


def test_each_key_part_invalidates(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from ailint.core.model import Severity
    from ailint.domain.extract import Profile
    from ailint.engine.load import Limits

    tree = tmp_path / "tree"
    _copy_tree(FIXTURES / "GPU002", tree, 20)
    paths = [str(tree)]
    cache = tmp_path / "c"
    first = _writes(paths, cache)
    n_files = len(list(tree.rglob("*.y*ml")))
    assert first >= n_files
    assert _writes(paths, cache) == 0, "an unchanged rerun writes nothing"
    # the settings: config-level knobs, the profile, the kube version, the selection
    assert _writes(paths, cache, kube_version="1.31") >= n_files
    assert _writes(paths, cache, profile=Profile({"karpenter": True})) >= n_files
    assert _writes(paths, cache, schema=False) >= n_files
    assert _writes(paths, cache, select=["GPU"]) >= n_files
    assert _writes(paths, cache, rule_settings={"GPU002": {"severity": Severity.INFO.value}}) >= n_files
    assert _writes(paths, cache, limits=Limits(max_depth=50)) >= n_files
    # a file's bytes: only that file is written again (plus the run's state and result)
    victim = sorted(tree.rglob("*.y*ml"))[0]
    victim.write_text(victim.read_text(encoding="utf-8") + "\n# edited\n", encoding="utf-8")
    assert 1 <= _writes(paths, cache) <= 3
    # ailint's version
    import ailint

    monkeypatch.setattr(ailint, "__version__", ailint.__version__ + "+test")
    assert _writes(paths, cache) >= n_files
    monkeypatch.undo()


def test_package_files_and_crd_schemas_are_in_the_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An edit to any file of the installed package (code, rules, CRD schemas) changes the key."""
    import ailint.schemas
    from ailint.engine.cache import package_fingerprint

    extra = tmp_path / "crds"
    extra.mkdir()
    schema = extra / "example.json"
    schema.write_text("{}")
    monkeypatch.setattr(ailint.schemas, "__path__", [*ailint.schemas.__path__, str(extra)])
    a = package_fingerprint()
    assert package_fingerprint() == a
    schema.write_text('{"type": "object"}')
    os.utime(schema, ns=(1, 1))
    assert package_fingerprint() != a


def test_files_named_by_the_config_are_in_the_key(tmp_path: Path) -> None:
    from ailint.engine.cache import config_inputs
    from ailint.engine.config import Settings

    pol = tmp_path / "policies"
    pol.mkdir()
    (pol / "p.yaml").write_text("kind: ValidatingAdmissionPolicy\n")
    s = Settings(root=str(tmp_path), config_path=str(tmp_path / ".ailint.yaml"))
    s.extra = {"policies": ["policies"]}
    a = config_inputs(s)
    (pol / "p.yaml").write_text("kind: ValidatingAdmissionPolicy\n# changed\n")
    assert config_inputs(s) != a


# -- the store ----------------------------------------------------------------------------------
def _store(path: Path):  # type: ignore[no-untyped-def]
    from ailint.engine.cache import Store

    return Store(str(path))


def test_the_run_slot_gives_its_result_only_for_its_inputs(tmp_path: Path) -> None:
    """The stored run is read for the inputs the slot names, never for others; a result
    written by another run between the two reads (its inputs in it differ) is no hit."""
    from ailint.engine.cache import RunCache

    cache = RunCache(_store(tmp_path / "c"), b"k" * 20, ["/p"])
    one, two = b"1" * 20, b"2" * 20
    assert cache.load_run(one) is None  # nothing stored yet
    cache.store_run(one, ["first"])
    assert cache.load_run(one) == ["first"]
    assert cache.load_run(two) is None
    cache.store.put(cache.run_body, (two, ["second"]))  # another run's result, its inputs not yet
    assert cache.load_run(one) is None and cache.load_run(two) is None
    cache.store_run(two, ["second"])
    assert cache.load_run(two) == ["second"] and cache.load_run(one) is None


def test_permissions_owner_only(tmp_path: Path) -> None:
    s = _store(tmp_path / "c")
    s.put(b"k" * 20, {"a": 1})
    assert stat.S_IMODE(os.stat(tmp_path / "c").st_mode) == 0o700
    assert stat.S_IMODE(os.stat(tmp_path / "c" / "secret").st_mode) == 0o600
    entry = Path(s._path(b"k" * 20))
    assert stat.S_IMODE(entry.stat().st_mode) == 0o600
    assert stat.S_IMODE(entry.parent.stat().st_mode) == 0o700
    assert stat.S_IMODE(Path(s.dir).stat().st_mode) == 0o700


def test_corrupted_foreign_and_unreadable_entries_are_misses(tmp_path: Path) -> None:
    s = _store(tmp_path / "c")
    key = b"x" * 20
    value = {"findings": [("GPU001", 1, 2.5, None, True, b"raw")]}
    s.put(key, value)
    assert s.get(key) == value
    path = Path(s._path(key))
    blob = path.read_bytes()
    for bad in (
        blob[: len(blob) // 2],  # truncated
        blob[:10],  # shorter than the header
        b"",  # empty
        os.urandom(len(blob)),  # garbage
        blob[:-1] + bytes([blob[-1] ^ 1]),  # one bit flipped in the payload
        b"AILC0\n" + blob[6:],  # another format's magic
    ):
        path.write_bytes(bad)
        assert s.get(key) is None
    # an entry written with another cache folder's secret (another user, a copied folder)
    other = _store(tmp_path / "other")
    other.put(key, value)
    path.write_bytes(Path(other._path(key)).read_bytes())
    assert s.get(key) is None
    # unreadable: a folder where the file should be
    path.unlink()
    path.mkdir()
    assert s.get(key) is None
    # a secret others can read is not trusted: the store refuses to open
    os.chmod(tmp_path / "c" / "secret", 0o644)
    with pytest.raises(OSError):
        _store(tmp_path / "c")


def test_a_broken_cache_never_breaks_a_run(tmp_path: Path) -> None:
    cache = tmp_path / "c"
    paths = [str(FIXTURES / "GPU002")]
    ref = _lint(paths, None)
    _lint(paths, cache)
    for p in _entries(cache):
        Path(p).write_bytes(b"garbage")
    assert _lint(paths, cache) == ref
    (cache / "secret").write_bytes(b"short")
    assert _lint(paths, cache) == ref  # a bad secret: the cache is off for the run
    blocked = tmp_path / "file"
    blocked.write_text("")
    assert _lint(paths, blocked) == ref  # the folder is a file: no cache, no error


def _writer(directory: str, n: int, start: multiprocessing.synchronize.Event) -> None:  # type: ignore[name-defined]
    from ailint.engine.cache import Store

    s = Store(directory)
    start.wait()
    for i in range(n):
        s.put(bytes([i % 7]) * 20, [os.getpid(), i, "x" * (i * 97 % 5000)])
        got = s.get(bytes([(i + 3) % 7]) * 20)
        assert got is None or (isinstance(got, list) and got[2] == "x" * (got[1] * 97 % 5000))


def test_concurrent_writers_and_readers(tmp_path: Path) -> None:
    directory = str(tmp_path / "c")
    ctx = multiprocessing.get_context("fork")
    start = ctx.Event()
    procs = [ctx.Process(target=_writer, args=(directory, 300, start)) for _ in range(2)]
    for p in procs:
        p.start()
    start.set()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    s = _store(tmp_path / "c")
    for i in range(7):
        got = s.get(bytes([i]) * 20)
        assert isinstance(got, list) and got[2] == "x" * (got[1] * 97 % 5000)
    assert not list(Path(directory).rglob("*.tmp")), "no temporary file is left behind"


def test_concurrent_cli_runs_agree(tmp_path: Path) -> None:
    _copy_tree(FIXTURES, tmp_path / "fx", 100_000)
    fx = str(tmp_path / "fx")
    args = [sys.executable, "-m", "ailint", "check", "--format", "json", "--fail-on", "never", fx]
    env = {**os.environ, "AILINT_CACHE_DIR": str(tmp_path / "c")}
    procs = [subprocess.Popen(args, cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True) for _ in range(2)]
    outs = [p.communicate(timeout=300)[0] for p in procs]
    ref = _cli(["check", "--format", "json", "--fail-on", "never", "--no-cache", fx], tmp_path / "n")
    assert outs[0] == outs[1] == ref.stdout
    assert _entries(tmp_path / "c")
    assert _cli(["check", "--format", "json", "--fail-on", "never", fx], tmp_path / "c").stdout == ref.stdout


def test_pruned_to_its_bound(tmp_path: Path) -> None:
    from ailint.engine.cache import Store

    s = Store(str(tmp_path / "c"), max_bytes=200_000)
    for i in range(100):
        s.put(i.to_bytes(20, "little"), "y" * 10_000)
        os.utime(s._path(i.to_bytes(20, "little")), (1000 + i, 1000 + i))
    s.prune()
    left = [i for i in range(100) if os.path.exists(s._path(i.to_bytes(20, "little")))]
    assert 0 < len(left) < 100
    assert left == list(range(100 - len(left), 100)), "the oldest go first"


def test_pruned_once_runs_wrote_a_tenth_of_the_bound(tmp_path: Path) -> None:
    """Runs count what they wrote; the one that takes the count past a tenth of the bound
    prunes, so the folder stays near its bound without a scan on every rerun."""
    from ailint.engine.cache import Store

    bound = 400_000
    for run in range(60):  # 60 runs of 10 KB each: 600 KB written, over the bound
        s = Store(str(tmp_path / "c"), max_bytes=bound)
        s.put(run.to_bytes(20, "little"), "y" * 10_000)
        s.prune_if_due()
    total = sum(Path(p).stat().st_size for p in _entries(tmp_path / "c"))
    assert total <= bound + bound // 10 + 20_000, total
    assert not os.path.exists(Store(str(tmp_path / "c"), max_bytes=bound)._path((0).to_bytes(20, "little")))


# -- the doors -------------------------------------------------------------------------------
def test_clean_env_and_config_dir(tmp_path: Path) -> None:
    args = ["check", "--format", "json", "--fail-on", "never", str(FIXTURES / "GPU002")]
    assert _cli(args, tmp_path / "env").returncode == 0
    assert _entries(tmp_path / "env"), "AILINT_CACHE_DIR is used"
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / ".ailint.yaml").write_text("cache-dir: .mycache\n")
    shutil.copytree(FIXTURES / "GPU002", proj / "m")
    got = _cli(["check", "--format", "json", "--fail-on", "never", "m"], tmp_path / "env2", cwd=proj)
    assert got.returncode == 0, got.stderr
    assert _entries(proj / ".mycache"), "cache-dir in the config wins"
    assert not (tmp_path / "env2").exists() or not _entries(tmp_path / "env2")
    cleaned = _cli(["clean"], tmp_path / "env2", cwd=proj)
    assert cleaned.returncode == 0
    assert not _entries(proj / ".mycache")
    assert {p.name.split("-")[0] for p in (tmp_path / "env").iterdir()} >= {"rules", "docs", "code", "secret"}
    assert _cli(["clean"], tmp_path / "env").returncode == 0
    assert not _entries(tmp_path / "env")
    assert not list((tmp_path / "env").iterdir()), "the indexes and the code table go too"


# -- the stat index -------------------------------------------------------------------------
def test_stat_index_skips_reading_unchanged_files_and_sees_every_rewrite(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Files whose stat signature was recorded are not read on a rerun; a rewrite that keeps
    the size and sets the mtime back is still seen (its ctime moved), and the rerun equals
    a fresh run."""
    from ailint.engine import cache as cache_mod
    from ailint.engine import run as run_mod

    monkeypatch.setattr(cache_mod, "SETTLE_NS", -(10**18))  # every file counts as settled at once
    tree = tmp_path / "tree"
    files = _copy_tree(FIXTURES, tree, 60)
    cache = tmp_path / "c"
    paths = [str(tree)]
    first = _lint(paths, cache)
    reads: list[str] = []
    real_read = run_mod.read_raw

    def counting(c, settings):  # type: ignore[no-untyped-def]
        reads.append(c.display)
        return real_read(c, settings)

    monkeypatch.setattr(run_mod, "read_raw", counting)
    assert _lint(paths, cache) == first
    assert reads == [], "a rerun over settled, unchanged files reads none of them"
    victim = next(p for p in files if "nvidia.com/gpu" in p.read_text(encoding="utf-8"))
    before = victim.stat()
    text = victim.read_text(encoding="utf-8")
    victim.write_text(text.replace("nvidia.com/gpu", "nvidia.com/gpx", 1), encoding="utf-8")
    os.utime(victim, ns=(before.st_atime_ns, before.st_mtime_ns))  # same size, same mtime
    assert victim.stat().st_size == before.st_size and victim.stat().st_mtime_ns == before.st_mtime_ns
    monkeypatch.setattr(run_mod, "read_raw", real_read)
    again = _lint(paths, cache)
    assert again == _lint(paths, None)
    assert again != first, "the rewrite changed findings, and the rerun shows it"


def test_recently_changed_files_are_always_hashed(tmp_path: Path) -> None:
    """A file changed in the last two seconds is not trusted by its stat (a write in the same
    clock tick keeps the mtime): its signature is not recorded."""
    from ailint.engine import cache as cache_mod

    tree = tmp_path / "tree"
    _copy_tree(FIXTURES, tree, 5)
    _lint([str(tree)], tmp_path / "c")
    store = cache_mod.Store(str(tmp_path / "c"))
    recorded = [v for p in _entries(tmp_path / "c") if isinstance(v := _value(store, Path(p)), dict) and v]
    assert not any(isinstance(k, str) and k.endswith(".yaml") for d in recorded for k in d)


def test_a_rerun_holds_only_the_candidates_of_the_files_it_parses(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After an edit, the bundle phase (whose processes fork from the one that joins the run)
    starts with the candidate of the edited file only: what the lookup read for the others
    (their candidates, paths and stats) is let go once the files are in hand. The rerun still
    equals a fresh run."""
    import gc

    from ailint.engine import run as run_mod
    from ailint.engine.sources import Candidate

    files, paths, _ = _settled_tree(tmp_path, monkeypatch, 40)  # (every file keyed by its stat)
    tree = tmp_path / "tree"
    cache = tmp_path / "c"
    _lint(paths, cache)
    victim = next(p for p in files if "nvidia.com/gpu" in p.read_text(encoding="utf-8"))
    victim.write_text(victim.read_text(encoding="utf-8").replace("nvidia.com/gpu", "nvidia.com/gpx", 1), "utf-8")
    alive: list[list[str]] = []
    real_finish = run_mod.finish

    def finish(*args, **kwargs):  # type: ignore[no-untyped-def]
        gc.collect()
        alive.append(
            sorted(o.path for o in gc.get_objects() if isinstance(o, Candidate) and o.path.startswith(str(tree)))
        )
        return real_finish(*args, **kwargs)

    monkeypatch.setattr(run_mod, "finish", finish)
    gc.collect()
    again = _lint(paths, cache)
    assert alive == [[str(victim)]]
    monkeypatch.setattr(run_mod, "finish", real_finish)
    assert again == _lint(paths, None)


def _value(store: object, path: Path) -> object:
    import marshal

    blob = path.read_bytes()
    try:
        return marshal.loads(blob[len(b"AILC1\n") + 32 :])
    except (ValueError, EOFError):
        return None


def test_a_rerun_takes_the_pod_facts_of_files_it_does_not_parse_from_the_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After a NodePool's taint changes, the GPU001 calls on the other files' pods run again,
    but what the parse worked out of those pods (each container's accelerators) comes from
    the cache with their objects (`cache._pod_facts`), not worked out again; only the edited
    file's pods are (and those merged with a runtime or a claim, made anew in every run).
    The rerun equals a fresh run."""
    from ailint.domain import extract
    from ailint.engine import run as run_mod
    from ailint.engine.catalogue import deferred

    tree = tmp_path / "tree"
    _copy_tree(FIXTURES / "GPU001", tree, 200)
    cache, paths = tmp_path / "c", [str(tree)]
    assert _lint(paths, cache) == _lint(paths, None)
    victim = next(
        p
        for p in sorted(tree.rglob("*.yaml"))
        if "kind: NodePool" in (t := p.read_text(encoding="utf-8")) and "effect: NoSchedule" in t
    )
    victim.write_text(victim.read_text(encoding="utf-8").replace("effect: NoSchedule", "effect: NoExecute"), "utf-8")
    worked_out: set[str] = set()
    ran_on: set[str] = set()
    real_facts, real_run = extract.Container._accelerators, run_mod.Engine.run_rule

    def facts(self):  # type: ignore[no-untyped-def]
        if not deferred(self.pod.obj):  # (pods merged with a runtime or claim are made anew)
            worked_out.add(self.pod.obj.file)
        return real_facts(self)

    def run_rule(self, reg, obj, ctx):  # type: ignore[no-untyped-def]
        if reg.rule.code == "GPU001":
            ran_on.add(obj.file)
        return real_run(self, reg, obj, ctx)

    monkeypatch.setattr(extract.Container, "_accelerators", facts)
    monkeypatch.setattr(run_mod.Engine, "run_rule", run_rule)
    got = _lint(paths, cache)
    others = {f for f in ran_on if not victim.as_posix().endswith(f.replace("\\", "/"))}
    assert len(others) > 5, "the taint's change ran GPU001 again on other files' pods"
    assert not worked_out & others, sorted(worked_out & others)
    monkeypatch.undo()
    assert got == _lint(paths, None)


def test_a_bounded_runs_entries_keep_no_pod_facts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With bounded memory the parse works out no pods' facts for the run (`process_file`),
    and the cache entries it writes keep none either: they are held until the pack's
    segments are written (9.5 MiB of the 100 MB tree's first run with the cache), and a
    rerun's objects would carry them all. Without bounds they are kept; either way a rerun
    after an edit equals a fresh run."""
    from ailint.engine import cache as cache_mod

    tree = tmp_path / "tree"
    _copy_tree(FIXTURES / "GPU001", tree, 60)
    paths = [str(tree)]
    seen: list[object] = []
    real = cache_mod.file_out

    def kept(fr, *args, **kwargs):  # type: ignore[no-untyped-def]
        out = real(fr, *args, **kwargs)
        seen.append(out[12])
        return out

    monkeypatch.setattr(cache_mod, "file_out", kept)
    _lint(paths, tmp_path / "unbounded")
    assert any(f is not None for f in seen), "an unbounded run keeps its pods' facts"
    seen.clear()
    monkeypatch.setenv("AILINT_BOUNDED", "1")
    for jobs in (1, 2):
        cache = tmp_path / f"bounded{jobs}"
        assert _lint(paths, cache, jobs=jobs) == _lint(paths, None, jobs=jobs)
        assert seen and all(f is None for f in seen)
        victim = sorted(tree.rglob("*.yaml"))[jobs]
        victim.write_text(victim.read_text(encoding="utf-8") + "# edited\n", encoding="utf-8")
        assert _lint(paths, cache, jobs=jobs) == _lint(paths, None, jobs=jobs)


# -- the admission-policy memo ------------------------------------------------------------------
def test_policy_verdicts_reused_and_invalidated_by_their_environment(tmp_path: Path) -> None:
    """Cached reruns after editing the judged object, the policy, its param and its binding
    each equal a fresh run."""
    tree = tmp_path / "tree"
    tree.mkdir()
    src = (FIXTURES / "POL001" / "params_configmap_selector.yaml").read_text(encoding="utf-8")
    f = tree / "policy.yaml"
    f.write_text(src, encoding="utf-8")
    cache = tmp_path / "c"
    paths = [str(tree)]

    def pol(found: dict) -> list[tuple[str, int]]:
        return [(x["code"], x["line"]) for x in found["findings"] if x["code"].startswith("POL")]

    first = _lint(paths, cache)
    assert first == _lint(paths, None) and pol(first)
    steps = [
        ("nvidia.com/gpu: 8", "nvidia.com/gpu: 2"),  # the object: now within the cap
        ("nvidia.com/gpu: 2", "nvidia.com/gpu: 8"),  # and over it again
        ('maxGpus: "4"', 'maxGpus: "16"'),  # the param
        ('maxGpus: "16"', 'maxGpus: "4"'),
        ("validationActions: [Deny]", "validationActions: [Warn]"),  # the binding
        ("variables.gpus <= int(params.data.maxGpus)", "variables.gpus <= int(params.data.maxGpus) +"),  # no compile
    ]
    seen = set()
    for old, new in steps:
        text = f.read_text(encoding="utf-8")
        assert old in text
        f.write_text(text.replace(old, new, 1), encoding="utf-8")
        got = _lint(paths, cache)
        assert got == _lint(paths, None), (old, new)
        seen.add(tuple(pol(got)))
    assert len(seen) >= 3, "the edits changed the POL findings"


def test_policy_pass_compiles_only_for_objects_whose_data_changed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A rerun compiles a policy (and imports CEL) only for an object a binding of it selects
    whose data is new: comments added at the end and at the top of the judged objects' file,
    a Kustomization that makes that file a patch (not reported) and takes it back, and a new
    object no binding selects compile nothing; a changed value compiles. Each rerun equals a
    fresh run, the POL001 line moved by the comment at the top among them."""
    from ailint.policy import cel

    src = (FIXTURES / "POL001" / "params_configmap_selector.yaml").read_text(encoding="utf-8")
    docs = src.split("\n---\n")
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "policy.yaml").write_text("\n---\n".join(docs[:3]) + "\n", encoding="utf-8")
    work = tree / "workloads.yaml"
    work.write_text("\n---\n".join(docs[3:]), encoding="utf-8")
    compiled: list[str] = []
    real = cel.compile_expression

    def counting(source, variables):  # type: ignore[no-untyped-def]
        compiled.append(source)
        return real(source, variables)

    monkeypatch.setattr(cel, "compile_expression", counting)
    cache, paths = tmp_path / "c", [str(tree)]

    def pol(found: dict) -> list[tuple[str, str, int]]:
        return [(x["code"], x["file"], x["line"]) for x in found["findings"] if x["code"].startswith("POL")]

    first = _lint(paths, cache)
    assert first == _lint(paths, None) and pol(first)
    kustomization = tree / "overlay-spec.yaml"  # (a kustomization.yaml would be built: new objects)
    steps = [
        ("comment at the end", lambda: work.write_text(work.read_text("utf-8") + "# reviewed\n", "utf-8"), False),
        (
            "comment at the top",
            lambda: work.write_text("# owner: ml-platform\n" + work.read_text("utf-8"), "utf-8"),
            False,
        ),
        (
            "made a patch",
            lambda: kustomization.write_text(
                "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n"
                "patchesStrategicMerge: [workloads.yaml]\n",
                "utf-8",
            ),
            False,
        ),
        ("a patch no more", kustomization.unlink, False),
        (
            "an object no binding selects",
            lambda: (tree / "svc.yaml").write_text(
                "apiVersion: v1\nkind: Service\nmetadata: {name: llama}\nspec: {ports: [{port: 80}]}\n", "utf-8"
            ),
            False,
        ),
        (
            "a value",
            lambda: work.write_text(
                work.read_text("utf-8").replace("nvidia.com/gpu: 8", "nvidia.com/gpu: 9", 1), "utf-8"
            ),
            True,
        ),
    ]
    seen = {tuple(pol(first))}
    for what, step, compiles in steps:
        step()
        compiled.clear()
        got = _lint(paths, cache)
        assert bool(compiled) == compiles, (what, compiled)
        assert got == _lint(paths, None), what
        seen.add(tuple(pol(got)))
    assert len(seen) >= 3, "the steps moved and hid the POL findings"


def test_the_policy_memo_keeps_the_kinds_no_binding_takes_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Objects of a kind no binding's resource rules can take (Services, for a policy on
    Deployments and StatefulSets) have no verdict record each: the memo keeps those kinds
    once for the environment, so a rerun after an edit of their file passes them over (the
    memo is not asked for them). A policy that comes to take the kind changes the
    environment: they are judged again, and found. Each run equals a fresh run."""
    from ailint.engine import cache as cache_mod
    from ailint.policy import admission

    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "policy.yaml").write_text(
        (FIXTURES / "POL001" / "params_configmap_selector.yaml").read_text(encoding="utf-8"), encoding="utf-8"
    )
    services = tree / "services.yaml"
    services.write_text(
        "\n---\n".join(
            f"apiVersion: v1\nkind: Service\nmetadata: {{name: svc-{n}}}\nspec: {{ports: [{{port: 80}}]}}"
            for n in range(12)
        )
        + "\n",
        encoding="utf-8",
    )
    recalled: list[str] = []
    real_recall = admission._recall

    def recall(memo, env, obj, judged_key):  # type: ignore[no-untyped-def]
        recalled.append(obj.kind)
        return real_recall(memo, env, obj, judged_key)

    kept: list[int] = []
    real_save = cache_mod.PassMemo.save

    def save(self):  # type: ignore[no-untyped-def]
        kept.append(len(self._new))
        return real_save(self)

    monkeypatch.setattr(admission, "_recall", recall)
    monkeypatch.setattr(cache_mod.PassMemo, "save", save)
    cache, paths = tmp_path / "c", [str(tree)]
    first = _lint(paths, cache)
    assert first == _lint(paths, None)
    assert recalled.count("Service") == 12, "a first run matches every object"
    assert max(kept) < 12, "no record per Service"
    services.write_text(services.read_text("utf-8") + "# reviewed\n", "utf-8")
    recalled.clear()
    assert _lint(paths, cache) == _lint(paths, None)
    assert "Service" not in recalled, "a rerun passes the Services over"
    # a second policy that takes Services: the environment changes, and they are judged
    (tree / "labels.yaml").write_text(
        "apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingAdmissionPolicy\n"
        "metadata: {name: labelled}\nspec:\n  matchConstraints:\n    resourceRules:\n"
        '    - {apiGroups: [""], apiVersions: ["v1"], operations: ["CREATE"], resources: ["services"]}\n'
        "  validations:\n  - expression: has(object.metadata.labels)\n---\n"
        "apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingAdmissionPolicyBinding\n"
        "metadata: {name: labelled}\nspec: {policyName: labelled, validationActions: [Deny]}\n",
        encoding="utf-8",
    )
    recalled.clear()
    got = _lint(paths, cache)
    assert got == _lint(paths, None)
    assert recalled.count("Service") == 12
    assert sum(f["code"] == "POL001" and f["file"].endswith("services.yaml") for f in got["findings"]) == 12


def test_what_a_change_touches_is_the_same_from_the_parse_as_worked_out_again() -> None:
    """The bundle phase takes whether an object is a catalogue member and whether it waits for
    the catalogue from its file's parse (`FileResult.catalogue`, `.deferred`) instead of asking
    each object again (a first run asks for every object): for every fixture object the tokens
    a change to it touches, and the kinds its pods merge with, are the same either way."""
    from ailint.engine.config import Settings
    from ailint.engine.run import Engine, process_file
    from ailint.engine.sources import Candidate
    from ailint.engine.tracking import merge_tokens, object_tokens

    settings = Settings(root=str(ROOT))
    engine = Engine(settings, [])
    members = waiting = 0
    for p in sorted(FIXTURES.rglob("*.yaml")):
        fr = process_file(Candidate(str(p), p.name), settings, engine)
        assert fr.catalogue is not None and fr.deferred is not None
        for n, o in enumerate(fr.objects):
            assert object_tokens(o, n in fr.catalogue) == object_tokens(o), (p, n)
            assert merge_tokens(o, n in fr.deferred) == merge_tokens(o), (p, n)
            members += n in fr.catalogue
            waiting += n in fr.deferred
    assert members and waiting, "the fixtures hold catalogue members and objects that wait for them"


def _recorded_forks(monkeypatch: pytest.MonkeyPatch) -> list[list[int]]:
    """The tasks of each `parallel.run_forked` call from now on (the calls go on as ever)."""
    from ailint.engine import parallel

    tasks: list[list[int]] = []
    real = parallel.run_forked

    def recorded(work, run_tasks, jobs, apart=None, **kwargs):  # type: ignore[no-untyped-def]
        tasks.append(list(run_tasks))
        return real(work, run_tasks, jobs, apart, **kwargs)

    monkeypatch.setattr(parallel, "run_forked", recorded)
    return tasks


def test_a_forked_cached_bundle_phase_runs_the_policy_pass_as_a_task(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With --jobs 2 and enough bundle calls to fork for, the cached bundle phase runs the
    admission-policy pass as one of its forked tasks (as the cold run does), not after it in
    this process; its findings, and the reruns' after an edit, equal a fresh run's."""
    from ailint.engine import tracking

    monkeypatch.setattr(tracking, "FORK_CALLS", 0)
    tree = tmp_path / "tree"
    _copy_tree(FIXTURES / "POL001", tree / "pol", 100)
    _copy_tree(FIXTURES / "REL003", tree / "rel", 100)
    paths = [str(tree)]
    tasks = _recorded_forks(monkeypatch)
    fresh = _lint(paths, None, jobs=2)
    assert any(f["code"].startswith("POL") for f in fresh["findings"])
    tasks.clear()
    assert _lint(paths, tmp_path / "c", jobs=2) == fresh
    assert any(tracking.PASSES_TASK in t for t in tasks), tasks
    victim = next(p for p in (tree / "pol").rglob("*.yaml") if "nvidia.com/gpu: 8" in p.read_text(encoding="utf-8"))
    victim.write_text(victim.read_text(encoding="utf-8").replace("nvidia.com/gpu: 8", "nvidia.com/gpu: 2"), "utf-8")
    assert _lint(paths, tmp_path / "c", jobs=2) == _lint(paths, None, jobs=2)


def test_longest_first_puts_the_known_times_first_and_keeps_the_rest_in_order() -> None:
    from ailint.engine.tracking import longest_first

    seconds = [0.001, None, 0.05, "x", 0.01, float("nan"), True, 0.01]
    assert longest_first([0, 1, 2, 3, 4, 5, 6, 7], seconds) == [2, 4, 7, 0, 1, 3, 5, 6]
    assert longest_first([3, 1], seconds) == [3, 1]


def test_a_rerun_hands_out_the_rules_tasks_longest_first_by_the_last_runs_times(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A cached run's forked bundle phase hands out each rule's task in the order of how long
    that rule's task took in the last run here (a first run: rule order), and keeps the times
    it measures for the next; the reports stay a fresh run's."""
    from ailint.engine import tracking

    monkeypatch.setattr(tracking, "FORK_CALLS", 0)
    tree = tmp_path / "tree"
    _copy_tree(FIXTURES / "REL003", tree / "rel", 100)
    paths, cache = [str(tree)], tmp_path / "c"
    seen: list[tuple[list[int], list[object]]] = []
    real = tracking.longest_first

    def recorded(tasks, seconds):  # type: ignore[no-untyped-def]
        seen.append((list(tasks), list(seconds)))
        return real(tasks, seconds)

    monkeypatch.setattr(tracking, "longest_first", recorded)
    forks = _recorded_forks(monkeypatch)

    def bundle_order(tasks: list[int]) -> list[int]:
        """The rule tasks of the cached run's forked bundle phase, as handed out."""
        got = [[t for t in f if t >= 0] for f in forks if {t for t in f if t >= 0} == set(tasks)]
        assert len(got) == 1, forks
        return got[0]

    cached = _lint(paths, cache, jobs=2)
    first_tasks, first_seconds = seen[0]
    assert all(s is None for s in first_seconds)  # nothing timed yet: rule order
    assert bundle_order(first_tasks) == first_tasks
    assert cached == _lint(paths, None, jobs=2)
    victim = next(p for p in tree.rglob("*.yaml") if "kind: Deployment" in p.read_text(encoding="utf-8"))
    victim.write_text(victim.read_text(encoding="utf-8").replace("replicas:", "replicas: 7\n  x-replicas:", 1), "utf-8")
    seen.clear()
    forks.clear()
    cached = _lint(paths, cache, jobs=2)
    tasks, seconds = seen[0]
    timed = [t for t in tasks if isinstance(seconds[t], float)]
    assert timed, "the first run kept its rules' times"
    ordered = bundle_order(tasks)
    assert ordered == real(tasks, seconds) != sorted(tasks)
    assert [seconds[t] for t in ordered[: len(timed)]] == sorted((seconds[t] for t in timed), reverse=True)
    assert cached == _lint(paths, None, jobs=2)


def test_a_rerun_forks_its_bundle_calls_for_few_of_them_only_in_a_large_project(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A rule's first call in a process builds its indexes over its project's objects, so a
    rerun's bundle calls are shared out with `--jobs 2` when there are many, or when there are
    a few (`FORK_CALLS_LARGE`) in projects that are large (`FORK_OBJECTS`): the same edit forks
    in the large repository and not in the small one; every rerun equals a fresh run."""
    from ailint.engine import tracking

    tree = tmp_path / "tree"
    (tree / "small" / ".git").mkdir(parents=True)
    (tree / "large" / ".git").mkdir(parents=True)
    _copy_tree(FIXTURES / "REL003", tree / "small", 3)
    _copy_tree(FIXTURES / "REL003", tree / "large", 100)
    _copy_tree(FIXTURES / "GPU001", tree / "large" / "gpu", 100)
    paths = [str(tree)]
    cache = tmp_path / "c"
    fresh = _lint(paths, None, jobs=2)
    objects = {
        repo: sum(f["objects"] for f in fresh["files"] if f["path"].split("/tree/")[-1].startswith(repo + "/"))
        for repo in ("small", "large")
    }
    assert objects["large"] > 4 * objects["small"] > 0, objects
    monkeypatch.setattr(tracking, "FORK_CALLS_LARGE", 2, raising=False)
    assert _lint(paths, cache, jobs=2) == fresh
    forks = _recorded_forks(monkeypatch)
    # (the small project forks too once it counts as large: the size decides, not the calls)
    for repo, large_from, forked in (("small", "large", False), ("small", "small", True), ("large", "large", True)):
        monkeypatch.setattr(tracking, "FORK_OBJECTS", objects[large_from], raising=False)
        victim = next(
            p for p in sorted((tree / repo).glob("*.yaml")) if "kind: Deployment" in p.read_text(encoding="utf-8")
        )
        victim.write_text(victim.read_text(encoding="utf-8").replace("replicas: ", "replicas: 1"), "utf-8")
        forks.clear()
        got = _lint(paths, cache, jobs=2)
        assert bool(forks) == forked, (repo, forks)
        assert got == _lint(paths, None, jobs=2), repo


def test_an_edit_reruns_bundle_calls_only_in_its_own_project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Bundle rules join one project's objects, so an edit in one repository runs no bundle
    call on another's objects again; the rerun equals a fresh run."""
    from ailint.engine import run as run_mod

    tree = tmp_path / "tree"
    for repo in ("a", "b"):
        (tree / repo / ".git").mkdir(parents=True)
        shutil.copyfile(FIXTURES / "REL003" / "consolidating_pool.yaml", tree / repo / "vllm.yaml")
    cache = tmp_path / "c"
    paths = [str(tree)]
    first = _lint(paths, cache)
    assert first == _lint(paths, None)
    ran: list[str] = []
    real = run_mod.Engine.run_rule

    def counting(self, reg, obj, ctx):  # type: ignore[no-untyped-def]
        ran.append(obj.file)
        return real(self, reg, obj, ctx)

    monkeypatch.setattr(run_mod.Engine, "run_rule", counting)
    victim = tree / "b" / "vllm.yaml"
    victim.write_text(
        victim.read_text(encoding="utf-8").replace("nvidia.com/gpu", "nvidia.com/gpx", 1), encoding="utf-8"
    )
    again = _lint(paths, cache)
    assert ran and all("/b/" in f for f in ran), sorted(set(ran))
    monkeypatch.setattr(run_mod.Engine, "run_rule", real)
    assert again == _lint(paths, None)


def test_deferred_objects_judged_again_when_their_catalogue_changes(tmp_path: Path) -> None:
    """An InferenceService waits for the run's runtimes (the catalogue pass): cached reruns
    after editing its runtime, in another file, and after editing the model itself, each
    equal a fresh run."""
    tree = tmp_path / "tree"
    tree.mkdir()
    runtime, model = (FIXTURES / "SRV002" / "kserve_runtime_latest.yaml").read_text(encoding="utf-8").split("\n---\n")
    (tree / "runtime.yaml").write_text(runtime + "\n", encoding="utf-8")
    (tree / "model.yaml").write_text(model, encoding="utf-8")
    cache = tmp_path / "c"
    paths = [str(tree)]
    first = _lint(paths, cache)
    assert first == _lint(paths, None)
    steps = [
        (tree / "runtime.yaml", '["--port=8080"]', '["--port=8080", "--tensor-parallel-size=2"]'),
        (tree / "runtime.yaml", "vllm/vllm-openai:latest", "vllm/vllm-openai:v0.9.2"),
        (tree / "model.yaml", "nvidia.com/gpu: 1}", "nvidia.com/gpu: 2}"),
        (tree / "runtime.yaml", "vllm/vllm-openai:v0.9.2", "vllm/vllm-openai:latest"),
    ]
    outcomes = set()
    for f, old, new in steps:
        text = f.read_text(encoding="utf-8")
        assert old in text, old
        f.write_text(text.replace(old, new), encoding="utf-8")
        got = _lint(paths, cache)
        assert got == _lint(paths, None), (f.name, old, new)
        outcomes.add(json.dumps(sorted((x["code"], x["file"], x["line"]) for x in got["findings"])))
    assert len(outcomes) >= 2, "the edits changed the findings"


def test_an_edit_of_the_catalogue_in_one_project_reaches_workloads_in_another(tmp_path: Path) -> None:
    """The run's catalogue is one for every project: a DRA claim template and a runtime in
    repository `a` merge with a pod and an InferenceService in repository `b`. Each cached
    rerun after editing, removing or adding back `a`'s files equals a fresh run, the bundle
    rules on `b`'s merged pods included (GPU003 reads the claim's devices through them)."""
    from test_catalogue import DRA, ISVC, POD, RUNTIME

    a, b = tmp_path / "tree" / "a", tmp_path / "tree" / "b"
    for repo in (a, b):
        (repo / ".git").mkdir(parents=True)
    (a / "claim.yaml").write_text(DRA.replace("CLASS", "nic.example.com"), encoding="utf-8")
    (a / "runtime.yaml").write_text(RUNTIME.replace("TP", "4"), encoding="utf-8")
    (b / "pod.yaml").write_text(POD, encoding="utf-8")
    (b / "isvc.yaml").write_text(ISVC, encoding="utf-8")
    cache, paths = tmp_path / "c", [str(tmp_path / "tree")]
    assert _lint(paths, cache) == _lint(paths, None)
    steps = [
        lambda: (a / "claim.yaml").write_text(DRA.replace("CLASS", "gpu.nvidia.com"), encoding="utf-8"),
        lambda: (a / "runtime.yaml").write_text(RUNTIME.replace("TP", "2"), encoding="utf-8"),
        lambda: (a / "claim.yaml").unlink(),
        lambda: (a / "claim.yaml").write_text(DRA.replace("CLASS", "gpu.nvidia.com"), encoding="utf-8"),
        lambda: (a / "runtime.yaml").unlink(),
    ]
    seen = set()
    for n, step in enumerate(steps):
        step()
        got = _lint(paths, cache)
        assert got == _lint(paths, None), n
        seen.add(json.dumps(sorted((x["code"], x["file"], x["line"]) for x in got["findings"] if "/b/" in x["file"])))
    assert len(seen) >= 3, "the edits in `a` changed the findings in `b`"


def test_an_edit_of_a_context_file_reaches_every_project(tmp_path: Path) -> None:
    """A context file (`--context`: the cluster's NodePool) joins every project: after its
    taint changes, or the file goes, a cached rerun equals a fresh run in each repository
    (GPU001 on both Deployments), with one process and with two."""
    pool, deployment = (FIXTURES / "GPU001" / "dedicated_taint.yaml").read_text(encoding="utf-8").split("\n---\n")
    tree, cluster = tmp_path / "tree", tmp_path / "cluster" / "pool.yaml"
    for repo in ("a", "b"):
        (tree / repo / ".git").mkdir(parents=True)
        (tree / repo / "vllm.yaml").write_text(deployment.replace("name: vllm", f"name: vllm-{repo}"), encoding="utf-8")
    cluster.parent.mkdir()

    def gpu001(cache: bool, jobs: int) -> list[str]:
        got = _lint([str(tree)], tmp_path / f"c{jobs}" if cache else None, jobs, context=(str(cluster),))
        return sorted(f["file"] for f in got["findings"] if f["code"] == "GPU001")

    for jobs in (1, 2):
        cluster.write_text(pool, encoding="utf-8")
        assert len(gpu001(True, jobs)) == 2  # both Deployments, one per repository
        for text in (pool.replace("effect: NoSchedule", "effect: PreferNoSchedule"), pool, None):
            if text is None:
                cluster.unlink()
            else:
                cluster.write_text(text, encoding="utf-8")
            assert gpu001(True, jobs) == gpu001(False, jobs), (jobs, text)


def test_reruns_after_edits_across_projects_and_context_identical_to_uncached(tmp_path: Path) -> None:
    """Three repositories and a context folder (`--context`), from every fixture with a
    NodePool, a runtime, a DRA claim or an InferenceService, each document a file of its
    own: NodePools in the context folder (they join every project), the other documents
    spread over the repositories (a runtime and its InferenceService apart). Edits of what
    other objects read (`bench/cache_fuzz.py`'s: taints, runtimes, claims, selectors,
    namespaces, names, kinds) and removals, with a fixed seed: each cached rerun equals a
    fresh run."""
    import random
    import re

    tree, cluster = tmp_path / "tree", tmp_path / "cluster"
    cluster.mkdir()
    for n in range(3):
        (tree / f"repo{n}" / ".git").mkdir(parents=True)
    kinds = ("kind: NodePool", "ServingRuntime", "ResourceClaimTemplate", "kind: InferenceService")
    files: list[Path] = []
    sources = sorted(p for p in FIXTURES.rglob("*.yaml") if not p.name.endswith(".fixed.yaml"))
    for m, src in enumerate(p for p in sources if any(k in p.read_text(encoding="utf-8") for k in kinds)):
        for d, doc in enumerate(src.read_text(encoding="utf-8").split("\n---\n")):
            home = cluster if "kind: NodePool" in doc else tree / f"repo{(m + d) % 3}"
            files.append(home / f"{src.parent.name}-{src.stem}-{d}.yaml")
            files[-1].write_text(doc + "\n", encoding="utf-8")

    def report(cache: bool) -> dict:
        return _lint([str(tree)], tmp_path / "c" if cache else None, context=(str(cluster),))

    # the edits of bench/cache_fuzz.py (what other objects read) that change a value in the
    # kinds of this tree (named: an edit added there for other kinds leaves these steps as they are)
    fuzz = bench_module("cache_fuzz")
    ours = ("kind: NodePool", "ServingRuntime", "ResourceClaim", "InferenceService", "kind: Deployment", "")
    edits = [(holds, pattern, new) for holds, pattern, new in fuzz.EDITS if pattern is not None and holds in ours]
    before = report(True)
    assert before == report(False)
    rnd = random.Random(5)  # fixed: the same edits every run (each fix above is needed by step 4)
    changed_findings = 0
    for step in range(14):
        if step % 7 == 6:
            victim = rnd.choice([p for p in files if p.exists()])
            victim.unlink()
        else:
            texts = {p: p.read_text(encoding="utf-8") for p in files if p.exists()}
            candidates: list[Path] = []
            while not candidates:  # an edit this tree has a place for
                holds, pattern, new = rnd.choice(edits)
                candidates = [p for p, t in texts.items() if holds in t and re.search(pattern, t)]
            victim = rnd.choice(candidates)
            victim.write_text(re.sub(pattern, new, texts[victim], count=1), encoding="utf-8")
        got = report(True)
        assert got == report(False), f"step {step}: {victim.relative_to(tmp_path)}"
        changed_findings += got["findings"] != before["findings"]
        before = got
    assert changed_findings >= 4, "the edits changed findings"


def _own_calls_answers(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """What `tracking._own_calls_stand` answers, in order, from now on."""
    from ailint.engine import tracking

    answers: list[bool] = []
    real = tracking._own_calls_stand

    def recording(*args: object) -> bool:
        answers.append(real(*args))  # type: ignore[arg-type]
        return answers[-1]

    monkeypatch.setattr(tracking, "_own_calls_stand", recording)
    return answers


_APPENDS = ("# saved\n", "\n", "\n\n# a note\n", "   \n", "---\n", "...\n", "# no newline")


def test_text_appended_to_files_reruns_as_a_fresh_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Comments, blank lines and document markers added at the end of files whose objects'
    calls found something (a fix among them), and of files whose findings reach their last
    line, or their last comment rewritten: the data and the text up to the last content
    line stand, so the files' own calls are taken as stored unless a finding reaches past
    it (`tracking._own_calls_stand`), and each cached rerun equals a fresh run, spans and
    fix offsets included. Both answers are given on the way."""
    import random

    tree = tmp_path / "tree"
    files = _copy_tree(FIXTURES, tree, 400)
    paths = [str(tree)]
    cache = tmp_path / "c"
    fresh = _lint(paths, None)
    assert _lint(paths, cache) == fresh
    by_file: dict[str, list[dict]] = {}
    for f in fresh["findings"]:
        by_file.setdefault(f["file"], []).append(f)

    def last_line(p: Path) -> int:
        return len(p.read_text(encoding="utf-8").rstrip("\n").split("\n"))

    with_findings = [p for p in files if str(p) in by_file]
    reaching = [p for p in with_findings if any(f["end_line"] >= last_line(p) for f in by_file[str(p)])]
    fixed = [p for p in with_findings if any(f["fix"] for f in by_file[str(p)])]
    assert reaching and fixed
    answers = _own_calls_answers(monkeypatch)
    rnd = random.Random(11)
    for step in range(6):
        victims = rnd.sample(fixed, 2) + rnd.sample(reaching, 1) + rnd.sample(with_findings, 1)
        for victim in victims:
            text = victim.read_text(encoding="utf-8")
            add = rnd.choice(_APPENDS)
            body, _, last = text.rstrip("\n").rpartition("\n")
            if last.startswith("#") and rnd.random() < 0.5:  # the last comment rewritten (the benchmark's edit)
                text = f"{body}\n# rewritten {step}\n"
            else:
                text += ("" if text.endswith("\n") or add.startswith("\n") else "\n") + add
            victim.write_text(text, encoding="utf-8")
        got = _lint(paths, cache, jobs=1 + step % 2)
        assert got == _lint(paths, None), f"step {step}: {[v.name for v in victims]}"
    assert True in answers and False in answers


def test_a_texts_head_ends_with_its_last_content_line() -> None:
    from ailint.engine.bounded import text_ref, text_ref_and_head

    cases = {
        "a: 1\n# c\n": "a: 1\n",
        "a: 1": "a: 1",
        "a: 1\n\n  \n# x\n  # y": "a: 1\n",
        "# only\n\n": "",
        "": "",
        "\n\na: 1\n\n": "\n\na: 1\n",
        "a: |\n  x\n---\n# c\n": "a: |\n  x\n---\n",  # (a marker is content)
    }
    for text, head in cases.items():
        assert text_ref_and_head(text) == (*text_ref(text), (len(head), text_ref(head)[0])), text


def test_own_calls_stand_only_when_no_finding_reaches_the_old_end() -> None:
    """A stored finding of the file's own calls whose span, or an edit of whose fix, reaches
    the old text's end runs its calls again; one about another file does not count."""
    from ailint.core.model import SourceFile
    from ailint.engine.tracking import _own_calls_stand

    old = "a: 1\nb:\n  c: 2\n"
    source = SourceFile("/x/f.yaml", "f.yaml", old + "# added\n")

    class Stored:
        def __init__(self, found: dict) -> None:
            self.files = {"f.yaml": (b"", b"")}
            self._found = found

        def of_file(self, d: str) -> tuple[int, ...]:
            return (0,)

        def found(self, d: str) -> dict:
            return self._found

    def finding(file: str, span: tuple[int, int, int, int], edits: tuple = ()) -> tuple:
        fix = ("fix", edits, "safe") if edits else None
        return ("X001", "x", "warning", "m", file, span, None, (), fix, None)

    def stands(*found: tuple) -> bool:
        return _own_calls_stand(Stored({0: {0: list(found)}}), "f.yaml", source, len(old))  # type: ignore[arg-type]

    assert stands(finding("f.yaml", (1, 1, 1, 5)))
    assert stands(finding("f.yaml", (3, 3, 3, 7), ((5, 6, "2"),)))
    assert not stands(finding("f.yaml", (2, 1, 4, 1)))  # (the mapping's end: the old end)
    assert not stands(finding("f.yaml", (1, 1, 1, 5), ((len(old), len(old), "---\n"),)))  # an edit there
    assert stands(finding("other.yaml", (2, 1, 40, 1)))  # about another file
    assert not _own_calls_stand(Stored({}), "g.yaml", source, len(old))  # (nothing stored for it)


def _pack_item(v: object) -> bool:
    """(key, file entry): what the pack holds for a file."""
    return isinstance(v, tuple) and len(v) == 2 and isinstance(v[0], bytes) and isinstance(v[1], tuple)


def _files_of(segment: dict) -> dict:
    """A segment's files (not the name of the pool its shared data is in)."""
    from ailint.engine.cache import POOL

    return {d: v for d, v in segment.items() if d != POOL}


def _is_segment(v: object) -> bool:
    return isinstance(v, dict) and bool(_files_of(v)) and all(_pack_item(x) for x in _files_of(v).values())


def _settled_tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, n: int) -> tuple[list[Path], list[str], dict]:
    """`n` fixture files copied to tmp_path/tree, whose stats count as settled (an unchanged
    file is not read again), and the report of a fresh run over them."""
    from ailint.engine import cache as cache_mod

    monkeypatch.setattr(cache_mod, "SETTLE_NS", -(10**18))
    files = _copy_tree(FIXTURES, tmp_path / "tree", n)
    paths = [str(tmp_path / "tree")]
    return files, paths, _lint(paths, None)


def _reads(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """How often each file's bytes are read from now on (`run.read_raw`, in this process)."""
    from ailint.engine import run as run_mod

    count: dict[str, int] = {}
    real = run_mod.read_raw

    def read_raw(c, *args, **kwargs):  # type: ignore[no-untyped-def]
        count[c.display] = count.get(c.display, 0) + 1
        return real(c, *args, **kwargs)

    monkeypatch.setattr(run_mod, "read_raw", read_raw)
    return count


@pytest.mark.parametrize("entries_up_to", [10, 256])
def test_a_first_run_reads_each_file_once_and_its_rerun_reads_none(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, entries_up_to: int
) -> None:
    """With nothing stored for these paths, no file can be found in the cache, so none is read
    and hashed to look it up: the parse reads each once, and the keys, the stats and the run
    entry come from its results. The rerun finds every file by its stat and restores the run
    (one pack of entries, or one entry a file); both equal a fresh run."""
    from ailint.engine import cache as cache_mod

    monkeypatch.setattr(cache_mod, "FILE_ENTRIES_UP_TO", entries_up_to)
    _, paths, _ = _settled_tree(tmp_path, monkeypatch, 40)
    (tmp_path / "tree" / "unreadable.yaml").write_bytes(b"\xff\xfe\x00bad")  # (keyed by its finding)
    fresh = _lint(paths, None)
    reads = _reads(monkeypatch)
    assert _lint(paths, tmp_path / "c") == fresh
    assert reads and set(reads.values()) == {1}, sorted(k for k, v in reads.items() if v != 1)[:5]
    reads.clear()
    assert _lint(paths, tmp_path / "c") == fresh
    assert not reads, sorted(reads)[:5]


def test_a_run_whose_files_were_too_new_for_stats_is_found_by_the_next(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A fresh clone's first run records no stat (every file changed in the last two seconds),
    but keeps its entries: the next run, with no stats either, must still look its files up
    (read and hashed) and take the stored run, not parse them all again as a first run."""
    from ailint.engine import run as run_mod

    files = _copy_tree(FIXTURES, tmp_path / "tree", 40)
    for p in files:
        p.touch()  # (new: no stat is settled)
    paths = [str(tmp_path / "tree")]
    fresh = _lint(paths, None)
    assert _lint(paths, tmp_path / "c") == fresh
    parsed: list[str] = []
    real = run_mod.process_file

    def process_file(c, *args, **kwargs):  # type: ignore[no-untyped-def]
        parsed.append(c.display)
        return real(c, *args, **kwargs)

    monkeypatch.setattr(run_mod, "process_file", process_file)
    assert _lint(paths, tmp_path / "c") == fresh
    assert not parsed, parsed[:5]


def _first_run_past_the_threshold(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> tuple[list[Path], list[str], dict, Path]:
    """60 settled fixture files and a fresh run's report, with FILE_ENTRIES_UP_TO made 10,
    and the cache folder after a first run over them (which equals the fresh run)."""
    from ailint.engine import cache as cache_mod
    from ailint.engine import tracking

    monkeypatch.setattr(cache_mod, "FILE_ENTRIES_UP_TO", 10)
    # (a first run of 64 files or fewer keeps their schema findings one per file)
    monkeypatch.setattr(tracking, "SCHEMA_MEMO_FILES", 5)
    files, paths, fresh = _settled_tree(tmp_path, monkeypatch, 60)
    assert fresh["findings"]
    cache = tmp_path / "c"
    assert _lint(paths, cache) == fresh
    return files, paths, fresh, cache


def _count_reparses(monkeypatch: pytest.MonkeyPatch) -> list[bytes]:
    """A list that grows by the file entry's key each time a file's position tables are
    parsed again (`TableRefs`)."""
    from ailint.engine import cache as cache_mod

    reparsed: list[bytes] = []
    reparse = cache_mod.TableRefs._reparse

    def counted(self: cache_mod.TableRefs) -> list[bytes]:
        reparsed.append(self.key)
        return reparse(self)

    monkeypatch.setattr(cache_mod.TableRefs, "_reparse", counted)
    return reparsed


def test_position_tables_parsed_again_when_the_file_entries_are_gone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file entry keeps its position tables; the pack keeps the entries without them, and
    a rerun reads the tables from the file's entry only where a finding points. With the
    file entries pruned and the pack left, the positions come from parsing the files again
    and every rerun still equals a fresh run."""
    from ailint.engine import cache as cache_mod

    files, paths, fresh = _settled_tree(tmp_path, monkeypatch, 80)
    cache = tmp_path / "c"
    assert _lint(paths, cache) == fresh  # the entries, tables and all
    victim = next(p for p in files if "nvidia.com/gpu" in p.read_text(encoding="utf-8"))
    original = victim.read_text(encoding="utf-8")
    victim.write_text(original.replace("nvidia.com/gpu", "nvidia.com/gpx", 1), encoding="utf-8")
    assert _lint(paths, cache) == _lint(paths, None)  # read outside the pack: the pack is written
    store = cache_mod.Store(str(cache))
    file_entries, packs = [], []
    for p in map(Path, _entries(cache)):
        try:
            key = bytes.fromhex(p.parent.name + p.name)
        except ValueError:
            continue
        value = store.get(key)
        if cache_mod.entry_tables(value) is not None:
            file_entries.append(p)
        elif isinstance(value, dict) and value and all(_pack_item(v) for v in value.values()):
            assert all(v[1][3] is None for v in value.values()), "the pack keeps no tables"
            packs.append(p)
    assert len(file_entries) >= len(files) and packs, "a file entry each, with its tables, and the pack"
    for p in file_entries:
        p.unlink()
    reparsed = _count_reparses(monkeypatch)
    victim.write_text(original, encoding="utf-8")
    assert _lint(paths, cache) == _lint(paths, None)
    assert reparsed, "positions of files from the pack were needed, and parsed again"
    # kept once parsed: the next reruns that need them read them, and are still right
    for key in reparsed:
        assert cache_mod._tables(store.get(cache_mod.tables_key(key))) is not None
    first = set(reparsed)
    for text in (original.replace("nvidia.com/gpu", "nvidia.com/gpx", 1), original):
        reparsed.clear()
        victim.write_text(text, encoding="utf-8")
        assert _lint(paths, cache) == _lint(paths, None)
        assert not first & set(reparsed), "tables parsed again although kept"


def test_a_run_that_parses_many_files_keeps_them_in_the_pack_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past FILE_ENTRIES_UP_TO parsed files a run writes no entry per file (making thousands
    of files was most of a first run): the pack holds them, without tables. Reruns, with
    nothing changed, after an edit and with --jobs 2, equal a fresh run, their positions
    parsed again where a finding needs one; a run of a few of the files writes those entries
    one per file again."""
    from ailint.engine import cache as cache_mod

    files, paths, fresh, cache = _first_run_past_the_threshold(tmp_path, monkeypatch)
    store = cache_mod.Store(str(cache))
    values = [_value(store, Path(p)) for p in _entries(cache)]
    assert not [v for v in values if cache_mod.entry_tables(v) is not None], "no entry per file"
    packs = [v for v in values if isinstance(v, dict) and v and all(_pack_item(x) for x in v.values())]
    assert len(packs) == 1 and len(packs[0]) == len(files), "the pack holds every file"
    assert all(x[1][3] is None for x in packs[0].values()), "without tables"
    assert len(_entries(cache)) < 12, "a handful of entries, not one per file"

    reparsed = _count_reparses(monkeypatch)
    assert _lint(paths, cache) == fresh  # the run entry
    victim = next(p for p in files if "nvidia.com/gpu" in p.read_text(encoding="utf-8"))
    original = victim.read_text(encoding="utf-8")
    victim.write_text(original.replace("nvidia.com/gpu", "nvidia.com/gpx", 1), encoding="utf-8")
    edited = _lint(paths, None)
    # the edited file alone is parsed in a child beside the reading of the cache: the others
    # are in the pack (with no entry of their own, they had all counted as edited)
    from ailint.engine import parallel

    monkeypatch.setattr(cache_mod, "BESIDE_FILES", 5)
    beside: list[int] = []
    real_beside = parallel.run_beside

    def recorded(*works):  # type: ignore[no-untyped-def]
        beside.append(len(works))
        return real_beside(*works)

    monkeypatch.setattr(parallel, "run_beside", recorded)
    for p in files[:10]:  # touched, not changed: read and hashed again, found in the pack
        if p != victim:
            os.utime(p)
    assert _lint(paths, cache, jobs=2) == edited
    assert beside, "the edited file is parsed beside"
    assert _lint(paths, cache) == edited
    assert reparsed, "spans of files kept in the pack come from parsing them again"
    victim.write_text(original, encoding="utf-8")
    assert _lint(paths, cache) == fresh

    few = [str(p) for p in files[:3]]
    before = _entries(cache)
    assert _lint(few, cache) == _lint(few, None)
    tabled = [p for p in _entries(cache) - before if cache_mod.entry_tables(_value(store, Path(p))) is not None]
    assert len(tabled) == 3, "a run of a few files keeps an entry each"


def test_a_bounded_run_that_parses_many_files_keeps_them_in_pack_segments(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A bounded run (over 32 MB: `ailint.engine.bounded`) keeps no entry of the whole run:
    past FILE_ENTRIES_UP_TO parsed files its entries go into segments of SEGMENT_FILES files
    with an index, not into a file each. Reruns with nothing changed, after an edit, after
    editing many files (new segments beside the old), with --jobs 2, after the edits are
    undone and with a segment gone each equal a fresh bounded run."""
    from ailint.engine import cache as cache_mod

    monkeypatch.setenv("AILINT_BOUNDED", "1")
    monkeypatch.setattr(cache_mod, "SEGMENT_FILES", 7)
    files, paths, fresh, cache = _first_run_past_the_threshold(tmp_path, monkeypatch)
    store = cache_mod.Store(str(cache))

    def segments() -> list[dict]:
        values = [_value(store, Path(p)) for p in _entries(cache)]
        return [_files_of(v) for v in values if _is_segment(v)]

    tabled = [p for p in _entries(cache) if cache_mod.entry_tables(_value(store, Path(p))) is not None]
    assert not tabled, "no entry per file"
    first = segments()
    assert len(first) == -(-len(files) // 7) and all(len(seg) <= 7 for seg in first), [len(x) for x in first]
    assert sum(map(len, first)) == len(files) and all(x[1][3] is None for seg in first for x in seg.values())
    # (and a handful of entries of the run: its index, state, stats, rules' task times, result)
    assert len(_entries(cache)) <= len(first) + 9, "the segments, their pool and a handful of entries"
    assert _lint(paths, cache) == fresh  # the run entry

    originals = {p: p.read_text(encoding="utf-8") for p in files}
    victim = next(p for p in files if "nvidia.com/gpu" in originals[p])
    victim.write_text(originals[victim].replace("nvidia.com/gpu", "nvidia.com/gpx", 1), encoding="utf-8")
    assert _lint(paths, cache) == _lint(paths, None)
    for p in files[::4]:  # more files than FILE_ENTRIES_UP_TO: new segments beside the old ones
        p.write_text(p.read_text(encoding="utf-8") + "\n# edited\n", encoding="utf-8")
    edited = _lint(paths, None)
    assert _lint(paths, cache) == edited
    assert len(segments()) > len(first)
    assert _lint(paths, cache, jobs=2) == edited
    for p, text in originals.items():
        p.write_text(text, encoding="utf-8")
    assert _lint(paths, cache) == fresh
    for p in map(Path, _entries(cache)):
        if _is_segment(_value(store, p)):
            p.unlink()  # a segment pruned: its files are parsed again
            break
    files[0].write_text(originals[files[0]] + "\n# again\n", encoding="utf-8")
    assert _lint(paths, cache) == _lint(paths, None)


def test_a_bounded_runs_segments_keep_data_repeated_across_them_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Data that files of several segments hold (copies of a file: overlays, a chart rendered
    per environment) is written once, in the segments' pool, and a rerun's objects of those
    files hold one copy of it, as the cold run's do; with the pool gone their files are
    parsed again; each rerun equals a fresh run."""
    from ailint.engine import cache as cache_mod

    monkeypatch.setenv("AILINT_BOUNDED", "1")
    monkeypatch.setattr(cache_mod, "SETTLE_NS", -(10**18))
    monkeypatch.setattr(cache_mod, "FILE_ENTRIES_UP_TO", 2)
    monkeypatch.setattr(cache_mod, "SEGMENT_FILES", 3)
    sources = [FIXTURES / "GPU001" / "dcgm_daemonset.yaml", FIXTURES / "GPU001" / "dedicated_taint.yaml"]
    tree = tmp_path / "tree"
    tree.mkdir()
    for copy in range(4):  # each copy of a file in another segment
        for src in sources:
            shutil.copyfile(src, tree / f"c{copy}_{src.name}")
    other = tree / "z_other.yaml"
    shutil.copyfile(FIXTURES / "GPU003" / "llmaz_service_gpu_only.yaml", other)
    paths, cache = [str(tree)], tmp_path / "c"
    fresh = _lint(paths, None)
    assert fresh["findings"]
    assert _lint(paths, cache) == fresh
    store = cache_mod.Store(str(cache))
    values = [_value(store, Path(p)) for p in _entries(cache)]
    pools = [v for v in values if isinstance(v, list) and v and all(isinstance(x, dict) for x in v)]
    objects = (
        sum(f["objects"] for f in fresh["files"] if f["path"].endswith(sources[0].name)) // 4
        + sum(f["objects"] for f in fresh["files"] if f["path"].endswith(sources[1].name)) // 4
    )
    assert len(pools) == 1 and len(pools[0]) == objects, "each copied object's data once"
    segments = [_files_of(v) for v in values if _is_segment(v)]
    named = [o[1] for seg in segments for _, entry in seg.values() for o in entry[2] if isinstance(o[1], int)]
    assert sorted(set(named)) == list(range(objects)) and len(named) == 4 * objects

    held: dict[str, list[object]] = {}
    real_file_in = cache_mod.file_in

    def file_in(t, c, *a, **k):  # type: ignore[no-untyped-def]
        fr = real_file_in(t, c, *a, **k)
        held[c.display] = [o.data for o in fr.objects]
        return fr

    monkeypatch.setattr(cache_mod, "file_in", file_in)
    other.write_text(other.read_text(encoding="utf-8") + "\n# edited\n", encoding="utf-8")
    assert _lint(paths, cache) == _lint(paths, None)
    for src in sources:
        copies = [datas for d, datas in held.items() if d.endswith(src.name)]
        assert len(copies) == 4 and copies[0]
        for n in range(len(copies[0])):
            assert len({id(c[n]) for c in copies}) == 1, "one copy of the data for the four files"

    for p in map(Path, _entries(cache)):
        if _value(store, p) == pools[0]:
            p.unlink()  # the pool pruned: the files that name it are parsed again
    held.clear()
    other.write_text(other.read_text(encoding="utf-8") + "\n# again\n", encoding="utf-8")
    assert _lint(paths, cache) == _lint(paths, None)
    assert not any(d.endswith(sources[0].name) for d in held), "not taken from the pack without their data"


@pytest.mark.parametrize("entries_up_to", [10, 100_000], ids=["pack", "file-entries"])
def test_a_file_edited_between_its_first_read_and_its_parse_is_kept_under_the_parsed_bytes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, entries_up_to: int
) -> None:
    """A cached run reads each file first (its key), then parses it. A file edited in
    between was judged as its new bytes: the pack, the bundle state and the memos keep it
    under that key, and the run entry is not kept, so a rerun on the old bytes (the edit
    undone) equals a fresh run. (The state had kept the new bytes' findings under the old
    key: the rerun reported the edit that was undone.)"""
    from ailint.engine import cache as cache_mod
    from ailint.engine import run as run_mod
    from ailint.engine import tracking

    monkeypatch.setattr(cache_mod, "FILE_ENTRIES_UP_TO", entries_up_to)
    monkeypatch.setattr(tracking, "SCHEMA_MEMO_FILES", 5)
    files, paths, fresh = _settled_tree(tmp_path, monkeypatch, 60)
    victim = next(p for p in files if "nvidia.com/gpu" in p.read_text(encoding="utf-8"))
    original = victim.read_text(encoding="utf-8")
    real = run_mod.process_file  # (lint_cached imports it from the run module when it runs)

    def editing(c, *args, **kwargs):  # type: ignore[no-untyped-def]
        if Path(c.path) == victim:
            victim.write_text(original.replace("nvidia.com/gpu", "nvidia.com/gpx", 1), encoding="utf-8")
        return real(c, *args, **kwargs)

    monkeypatch.setattr(run_mod, "process_file", editing)
    assert _lint(paths, tmp_path / "c") == _lint(paths, None)  # judged as the bytes it parsed
    monkeypatch.setattr(run_mod, "process_file", real)
    victim.write_text(original, encoding="utf-8")
    assert _lint(paths, tmp_path / "c") == fresh


def test_a_file_edited_in_a_first_runs_bundle_phase_is_seen_by_the_next_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A first run with the cache checks that its files still hold the bytes it parsed before
    its bundle phase (and lets go of their candidates then). A file edited after that check,
    in the bundle phase, has another stat than the one the run keeps for it: the next run
    reads it again, and equals a fresh run of the edited file (with the old findings, the
    run's whole result would have been taken)."""
    from ailint.engine import run as run_mod

    files, paths, _ = _settled_tree(tmp_path, monkeypatch, 40)
    victim = next(p for p in files if "nvidia.com/gpu" in p.read_text(encoding="utf-8"))
    real = run_mod.finish
    edits: list[str] = []

    def editing(*args, **kwargs):  # type: ignore[no-untyped-def]
        if not edits:
            text = victim.read_text(encoding="utf-8")
            victim.write_text(text.replace("nvidia.com/gpu", "nvidia.com/gpx", 1), encoding="utf-8")
            edits.append(str(victim))
        return real(*args, **kwargs)

    monkeypatch.setattr(run_mod, "finish", editing)
    _lint(paths, tmp_path / "c")
    assert edits
    monkeypatch.setattr(run_mod, "finish", real)
    again = _lint(paths, tmp_path / "c")
    assert again == _lint(paths, None)
    assert any(f["file"] == str(victim) or f["file"].endswith(victim.name) for f in again["findings"])


def test_a_file_edited_during_a_cached_run_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A source the cache hands out unread is read back when something needs its text: if
    the file changed in between, that is FileChangedError (never a wrong span or fix), and
    the CLI says so in one line with exit 2, not as an internal error."""
    from ailint.doors import cli
    from ailint.engine import bounded
    from ailint.engine import run as run_mod
    from click.testing import CliRunner

    victim = tmp_path / "x.yaml"
    text = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n"
    victim.write_text(text, encoding="utf-8")
    crc, length = bounded.text_ref(text)
    assert bounded.spilled_source(str(victim), "x.yaml", crc, length).text == text
    lazy = bounded.spilled_source(str(victim), "x.yaml", crc, length)
    victim.write_text(text + "data: {}\n", encoding="utf-8")
    with pytest.raises(bounded.FileChangedError):
        _ = lazy.text

    def edited(*args: object, **kwargs: object) -> None:
        raise bounded.FileChangedError("x.yaml changed while ailint was running; run it again")

    monkeypatch.setattr(run_mod, "lint", edited)
    got = CliRunner().invoke(cli.cli, ["check", "--no-cache", str(victim)])
    assert got.exit_code == 2
    assert "x.yaml changed while ailint was running" in got.output
    assert "internal error" not in got.output and "Traceback" not in got.output


def _pool_and_budget(tree: Path, budget: str) -> Path:
    """The REL003 fixture's consolidating NodePool and a PodDisruptionBudget (`budget`, the
    text of its file) in `tree`: the budget's file."""
    tree.mkdir(exist_ok=True)
    shutil.copyfile(FIXTURES / "REL003" / "consolidating_pool.yaml", tree / "pool.yaml")
    pdb = tree / "pdb.yaml"
    pdb.write_text(budget, encoding="utf-8")
    return pdb


def _bundle_calls(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """A list that grows by the file of each bundle call's object from now on."""
    from ailint.engine import run as run_mod

    ran: list[str] = []
    real = run_mod.Engine.run_rule

    def counting(self, reg, obj, ctx):  # type: ignore[no-untyped-def]
        if ctx.bundle:
            ran.append(obj.file)
        return real(self, reg, obj, ctx)

    monkeypatch.setattr(run_mod.Engine, "run_rule", counting)
    return ran


def test_an_edit_that_keeps_every_object_reruns_no_other_call(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Early cutoff: an edit after which the file parses to the same objects, data and
    positions alike (a comment reworded in place), runs again only its own objects' calls;
    the rerun equals a fresh run. An edit of a value runs the other objects' calls again."""
    tree = tmp_path / "tree"
    pdb = _pool_and_budget(
        tree,
        "# a budget for the model server\napiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata:\n"
        "  name: vllm\n  namespace: inference\nspec:\n  maxUnavailable: 1\n  selector:\n"
        "    matchLabels: {app: vllm}\n",
    )
    cache = tmp_path / "c"
    paths = [str(tree)]
    assert _lint(paths, cache) == _lint(paths, None)
    ran = _bundle_calls(monkeypatch)
    pdb.write_text(pdb.read_text(encoding="utf-8").replace("# a budget for", "# the budget of"), encoding="utf-8")
    same = _lint(paths, cache)
    assert ran and all(f.endswith("pdb.yaml") for f in ran), sorted(set(ran))
    assert same == _lint(paths, None)
    ran.clear()
    pdb.write_text(pdb.read_text(encoding="utf-8").replace("maxUnavailable: 1", "maxUnavailable: 0"), encoding="utf-8")
    changed = _lint(paths, cache)
    assert any(f.endswith("pool.yaml") for f in ran), "a value edit reaches the other file's calls"
    assert changed == _lint(paths, None)


def test_a_comment_added_at_the_end_reruns_only_its_own_calls_unless_another_points_into_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A comment appended to a file keeps its objects' data but moves the end of every block
    collection it closes: the other objects' calls still run again only when one of their
    findings points into that file (SRV004 on the runtime's `args` line, judged for the
    InferenceService merged with it), and its own calls only when one of their findings
    reaches its old end (`tracking._own_calls_stand`). The same after a first run that kept
    its files in the pack only (no entry of their own, no position tables). Every rerun
    equals a fresh run."""
    from ailint.engine import cache as cache_mod
    from test_catalogue import ISVC, RUNTIME

    monkeypatch.setattr(cache_mod, "FILE_ENTRIES_UP_TO", 0)  # the first run: the pack only
    tree = tmp_path / "tree"
    _pool_and_budget(
        tree,
        "apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata:\n  name: vllm\n  namespace: inference\n"
        "spec:\n  maxUnavailable: 1\n  selector:\n    matchLabels:\n      app: vllm\n",
    )
    (tree / "runtime.yaml").write_text(RUNTIME.replace("TP", "4"), encoding="utf-8")
    (tree / "isvc.yaml").write_text(ISVC, encoding="utf-8")
    cache, paths = tmp_path / "c", [str(tree)]
    first = _lint(paths, cache)
    assert first == _lint(paths, None)
    assert any(f["code"] == "SRV004" and f["file"].endswith("runtime.yaml") for f in first["findings"])
    ran = _bundle_calls(monkeypatch)
    stood = _own_calls_answers(monkeypatch)
    for name, others_run in (("pdb.yaml", False), ("isvc.yaml", False), ("runtime.yaml", True), ("pdb.yaml", False)):
        ran.clear()
        stood.clear()
        victim = tree / name
        victim.write_text(victim.read_text(encoding="utf-8") + "# a note at the end\n", encoding="utf-8")
        got = _lint(paths, cache)
        assert stood == [stood[0]], name  # (asked once, of the edited file)
        assert any(Path(f).name == name for f in ran) is not stood[0], (name, sorted(set(ran)))
        assert any(Path(f).name != name for f in ran) is others_run, (name, sorted(set(ran)))
        assert got == _lint(paths, None), name


def test_schema_worked_out_beside_is_dropped_when_the_patches_change(tmp_path: Path) -> None:
    """An edit run validates the edited files in a child under the previous run's kustomize
    patches; when the same run makes the edited file a patch (a Kustomization names it), the
    child's findings are not used: the rerun equals a fresh run, with --jobs 2."""
    tree = tmp_path / "tree"
    tree.mkdir()
    pod = tree / "app.yaml"
    pod.write_text(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: app\nspec:\n  restartPolicy: Never\n", encoding="utf-8"
    )
    kz = tree / "kz.yaml"  # not named kustomization.yaml: linted as it is, not built
    kz.write_text("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: []\n", encoding="utf-8")
    cache = tmp_path / "c"
    paths = [str(tree)]
    first = _lint(paths, cache, jobs=2)
    assert first == _lint(paths, None, jobs=2)
    assert any(f["code"] == "SCH004" for f in first["findings"]), "the Pod lacks its containers"
    pod.write_text(pod.read_text(encoding="utf-8") + "# edited\n", encoding="utf-8")
    kz.write_text(kz.read_text(encoding="utf-8") + "patches:\n- path: app.yaml\n", encoding="utf-8")
    again = _lint(paths, cache, jobs=2)
    assert again == _lint(paths, None, jobs=2)
    assert not any(f["code"] == "SCH004" for f in again["findings"]), "a patch may leave required fields out"


def test_text_report_masks_secrets_the_same_on_cached_reruns(tmp_path: Path) -> None:
    """Code frames quote whole files with every secret masked; a rerun knows the files it
    found clean by their digest and scans only the others: its text report is the same,
    and no secret value shows in it."""
    tree = tmp_path / "tree"
    _copy_tree(FIXTURES / "SEC007", tree, 100)
    _copy_tree(FIXTURES / "GPU002", tree / "gpu", 100)
    args = ["check", "--format", "text", "--no-color", "--fail-on", "never", str(tree)]
    fresh = _cli([*args, "--no-cache"], tmp_path / "none")
    assert fresh.returncode == 0, fresh.stderr
    runs = [_cli(args, tmp_path / "c").stdout for _ in range(3)]
    assert all(r == fresh.stdout for r in runs)
    assert "*****" in fresh.stdout, "the fixtures' secrets are masked in the frames"
    for secret in ("sk-ant-", "hf_", "AKIA"):
        for line in fresh.stdout.splitlines():
            if secret in line and "|" in line:  # a quoted source line
                assert "*" in line, line


def test_schema_findings_of_bytes_validated_before_are_reused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An edit back to bytes validated before (an undo) takes their schema findings from the
    cache instead of validating again; under other kustomize patches it validates again.
    Every rerun equals a fresh run."""
    from ailint.schema import validate as sch

    tree = tmp_path / "tree"
    tree.mkdir()
    pod = tree / "app.yaml"
    first_bytes = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: app\nspec:\n  restartPolicy: Never\n"
    pod.write_text(first_bytes, encoding="utf-8")
    kz = tree / "kz.yaml"
    kz.write_text("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: []\n", encoding="utf-8")
    cache = tmp_path / "c"
    paths = [str(tree)]
    validated: list[str] = []
    real = sch.validate_objects

    def counting(objects, *args, **kwargs):  # type: ignore[no-untyped-def]
        objects = list(objects)
        validated.extend(o.file for o in objects)
        return real(objects, *args, **kwargs)

    monkeypatch.setattr(sch, "validate_objects", counting)
    assert _lint(paths, cache) == _lint(paths, None)
    pod.write_text(first_bytes.replace("name: app", "name: app2"), encoding="utf-8")
    assert _lint(paths, cache) == _lint(paths, None)
    validated.clear()
    pod.write_text(first_bytes, encoding="utf-8")  # back to what the first run validated
    back = _lint(paths, cache)
    assert not any(f.endswith("app.yaml") for f in validated), validated
    fresh = _lint(paths, None)
    assert back == fresh and any(f["code"] == "SCH004" for f in back["findings"])
    kz.write_text(kz.read_text(encoding="utf-8") + "patches:\n- path: app.yaml\n", encoding="utf-8")
    validated.clear()
    patched = _lint(paths, cache)
    assert any(f.endswith("app.yaml") for f in validated), "other patches: validated again"
    assert patched == _lint(paths, None)


def test_an_edited_file_is_parsed_and_checked_beside(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With --jobs 2, a rerun parses and checks the edited file in a forked child while it
    reads the cache: this process parses nothing, and the report equals a fresh run's."""
    from ailint.engine import run as run_mod

    tree = tmp_path / "tree"
    tree.mkdir()
    shutil.copyfile(FIXTURES / "REL003" / "consolidating_pool.yaml", tree / "pool.yaml")
    app = tree / "app.yaml"
    shutil.copyfile(FIXTURES / "demo" / "vllm.yaml", app)
    cache = tmp_path / "c"
    paths = [str(tree)]
    assert _lint(paths, cache, jobs=2) == _lint(paths, None, jobs=2)
    parent = os.getpid()
    parsed_here: list[str] = []
    real = run_mod.load_text

    def recording(source, *args, **kwargs):  # type: ignore[no-untyped-def]
        if os.getpid() == parent:
            parsed_here.append(source.display)
        return real(source, *args, **kwargs)

    monkeypatch.setattr(run_mod, "load_text", recording)
    app.write_text(app.read_text(encoding="utf-8").replace("replicas: 2", "replicas: 3"), encoding="utf-8")
    again = _lint(paths, cache, jobs=2)
    assert parsed_here == [], parsed_here
    monkeypatch.setattr(run_mod, "load_text", real)
    assert again == _lint(paths, None, jobs=2)


_PARENT_MODULES_PROBE = """
import os, sys
parent = os.getpid()
real_exit = os._exit
def probe(code):
    if os.getpid() == parent:
        # (`yaml` itself is a stand-in whose `__init__` has not run, `ailint.doors.lean.defer_init`)
        print("PARENT", *sorted(m for m in ("yaml._yaml", "yaml.composer", "ailint.core.yamldata") if m in sys.modules),
              file=sys.stderr)
    real_exit(code)
os._exit = probe
sys.argv = ["ailint", *sys.argv[1:]]
from ailint.doors.lean import main
main()
"""


def test_an_edit_rerun_imports_no_yaml_parser_in_the_parent(tmp_path: Path) -> None:
    """After a comment edit, the forked child parses the edited file and this process reads
    the cache: neither the fix helpers nor a domain module pulls the YAML parser in here
    (it was a thirtieth of an edit rerun of the corpus)."""
    tree = tmp_path / "tree"
    tree.mkdir()
    shutil.copyfile(FIXTURES / "demo" / "vllm.yaml", tree / "app.yaml")
    svc = tree / "svc.yaml"  # the edited file: a Service no rule offers a fix for
    svc.write_text(
        "apiVersion: v1\nkind: Service\nmetadata:\n  name: llama\n  namespace: inference\n"
        "spec:\n  selector:\n    app: x\n  ports:\n  - port: 80\n",
        encoding="utf-8",
    )
    env = {**os.environ, "AILINT_CACHE_DIR": str(tmp_path / "c")}
    for k in ("AILINT_NO_LEAN", "AILINT_NO_CACHE", "PYTHONDONTWRITEBYTECODE"):
        env.pop(k, None)
    args = [sys.executable, "-c", _PARENT_MODULES_PROBE, "check", "--no-config", "--jobs", "2", str(tree)]

    def run() -> subprocess.CompletedProcess[str]:
        return subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True, check=False, timeout=300)

    first = run()
    assert first.returncode == 1 and "PARENT" in first.stderr, first.stderr
    svc.write_text(svc.read_text(encoding="utf-8") + "# edited\n", encoding="utf-8")
    again = run()
    assert again.returncode == 1 and again.stdout == first.stdout, again.stderr
    line = next(ln for ln in again.stderr.splitlines() if ln.startswith("PARENT"))
    assert line.split() == ["PARENT"], line


# -- the report an unchanged rerun prints ----------------------------------------------------
def _kept_reports(cache_dir: Path) -> dict[bytes, tuple[bytes, str]]:
    """The kept reports of the cache (`RunCache.report_slot`): the store key of each, with the
    report key and text it holds."""
    out = {}
    for p in cache_dir.rglob("*"):
        if p.is_file() and p.parent.parent.name.startswith("results-v"):
            got = _value(None, p)
            if isinstance(got, tuple) and len(got) == 2 and isinstance(got[1], str) and got[1].startswith("{\n"):
                out[bytes.fromhex(p.parent.name + p.name)] = got
    return out


def test_an_unchanged_rerun_prints_the_report_the_last_one_printed(tmp_path: Path) -> None:
    """A run restored whole from its entry keeps its JSON report, and the next such run prints
    it as it is (a stand-in text put in its place shows it is what is printed); one of other
    inputs, of another format or other options, or with another walk, renders its own."""
    tree = tmp_path / "tree"
    _copy_tree(FIXTURES / "demo", tree, 100)
    cache = tmp_path / "c"
    args = ["check", "--format", "json", "--fail-on", "never", str(tree)]
    first = _cli(args, cache).stdout
    assert _cli(args, cache).stdout == first  # restored whole: rendered, and kept
    (slot, (key, text)) = next(iter(_kept_reports(cache).items()))
    assert text == first
    _store(cache).put(slot, (key, "{\n  kept\n}\n"))
    assert _cli(args, cache).stdout == "{\n  kept\n}\n"  # printed as kept
    assert _cli(["check", "--format", "text", "--fail-on", "never", str(tree)], cache).stdout != "{\n  kept\n}\n"
    assert _cli([*args[:-1], "--show-fixes", str(tree)], cache).stdout.startswith('{\n  "tool"')
    (tree / "values.yaml").write_text("replicas: 1\n")  # a file the walk passes over: the summary counts it
    walked = _cli(args, cache).stdout
    assert json.loads(walked)["summary"]["skipped"]["files"] == json.loads(first)["summary"]["skipped"]["files"] + 1
    (tree / "values.yaml").unlink()
    victim = next(p for p in sorted(tree.rglob("*.yaml")))
    victim.write_text(victim.read_text() + "# edited\n")
    assert _cli(args, cache).stdout == _cli([*args[:-1], "--no-cache", str(tree)], cache).stdout
    # a report over the size a run holds is written as it is made, and not kept
    from ailint.doors import cli

    kept: list[str] = []
    chunks = ["x" * (cli.KEPT_REPORT_CHARS // 2 + 1)] * 2
    assert "".join(cli._keeping(iter(chunks), kept.append)) == "".join(chunks) and kept == []
    assert "".join(cli._keeping(iter(["a", "b"]), kept.append)) == "ab" and kept == ["ab"]
