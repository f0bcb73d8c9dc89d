"""The lean `check` path (`ailint.doors.lean`) answers every command line exactly as click does.

Each argument list runs twice through the real entry point (`python -m ailint`): once as a
user runs it, once with `AILINT_NO_LEAN=1` (click parses). Output, errors and exit codes
must be identical; the plain command lines must also really take the lean path (click is
never imported), and the others must really reach click.
"""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT

DEMO = "fixtures/demo/vllm.yaml"

LEAN = [
    ["check", "--format", "json", "--fail-on", "never", "--no-cache", DEMO],
    ["check", DEMO],
    ["check", "--no-color", "fixtures/GPU002"],
    ["check", "--select", "GPU", "--ignore=GPU003", "--format=json", "fixtures/GPU001", "fixtures/GPU003"],
    ["check", "--select", "GPU001,GPU002", "--extend-select", "SRV", "--format", "github", "fixtures/GPU002"],
    ["check", "--no-schema", "--jobs", "1", "--kube-version", "1.30", "--format", "sarif", "fixtures/demo"],
    ["check", "--fail-on", "error", "--format", "json", "--jobs=2", "fixtures/demo"],
    ["check", "--set", "karpenter=true", "--format", "json", DEMO],
    ["check", "--no-config", "--statistics", "fixtures/GPU001"],
    ["check", "-f", "json", "--fail-on", "never", "fixtures/GPU001"],
    ["check", "--exit-zero", "-q", "fixtures/GPU002"],
    ["check", "--format", "json", "-", "--stdin-filename", "pod.yaml"],
    ["check", "--format", "json", "fixtures/no-such-folder"],
    ["check", "--select", "NOPE999", DEMO],
]

CLICK = [
    ["check", "--help"],
    ["check", "-h"],
    ["check", "--jobs", "0", DEMO],
    ["check", "--jobs", "many", DEMO],
    ["check", "--format", "xml", DEMO],
    ["check", "--format"],
    ["check", "--no-such-option", DEMO],
    ["check", "--explain", "GPU001"],
    ["check", "--no-cache=yes", DEMO],
    ["check", "--", DEMO],
    ["--version"],
    ["rules"],
]

STDIN = (ROOT / DEMO).read_text(encoding="utf-8")


def _run(args: list[str], lean: bool, cache_dir: Path, importtime: bool = False) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "AILINT_CACHE_DIR": str(cache_dir), "NO_COLOR": "1"}
    env.pop("AILINT_NO_LEAN", None)
    env.pop("GITHUB_ACTIONS", None)
    if not lean:
        env["AILINT_NO_LEAN"] = "1"
    py = [sys.executable, *(["-X", "importtime"] if importtime else []), "-m", "ailint"]
    return subprocess.run(
        [*py, *args],
        cwd=ROOT,
        env=env,
        input=STDIN if "-" in args else "",
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )


def _imported(proc: subprocess.CompletedProcess[str], module: str) -> bool:
    return any(
        line.rstrip().endswith(f"| {module}") or line.rstrip().split("|")[-1].strip() == module
        for line in proc.stderr.splitlines()
        if line.startswith("import time:")
    )


@pytest.mark.parametrize("args", LEAN + CLICK, ids=lambda a: " ".join(a)[:60])
def test_same_answer_as_click(args: list[str], tmp_path: Path) -> None:
    lean = _run(args, True, tmp_path / "a")
    ref = _run(args, False, tmp_path / "b")
    assert (lean.returncode, lean.stdout, lean.stderr) == (ref.returncode, ref.stdout, ref.stderr)


@pytest.mark.parametrize("args", LEAN[:6], ids=lambda a: " ".join(a)[:60])
def test_plain_command_lines_skip_click(args: list[str], tmp_path: Path) -> None:
    proc = _run(args, True, tmp_path, importtime=True)
    assert not _imported(proc, "click"), "the lean path imported click"
    assert _imported(proc, "ailint.doors.cli")


@pytest.mark.parametrize("args", CLICK[:4], ids=lambda a: " ".join(a)[:60])
def test_other_command_lines_reach_click(args: list[str], tmp_path: Path) -> None:
    assert _imported(_run(args, True, tmp_path, importtime=True), "click")


_EXIT_PROBE = """
import os, sys
real_exit = os._exit
def probe(code):
    m = sys.modules.get("inspect")
    import gc
    print("MODULES", type(m).__name__,
          *sorted(k for k in ("ast", "dis", "tokenize", "pkgutil", "typing", "decimal", "zlib", "tempfile",
                              "ailint.engine.bounded", "ailint.domain.karpenter", "ailint.schema.findings",
                              "ailint.schema.crd_rules", "ailint.domain.descheduler.model") if k in sys.modules),
          file=sys.stderr)
    print("GC", gc.isenabled(), file=sys.stderr)
    print("FAMILIES", *sorted(k.rsplit(".", 1)[1] for k in sys.modules if k.startswith("ailint.domain.workloads.")),
          file=sys.stderr)
    print("BASE64", type(sys.modules.get("base64")).__name__, file=sys.stderr)
    print("DATETIME", type(sys.modules.get("datetime")).__name__, file=sys.stderr)
    print("YAML", type(sys.modules.get("yaml")).__name__,
          *sorted(k for k in ("yaml.loader", "yaml.dumper", "yaml.cyaml") if k in sys.modules), file=sys.stderr)
    real_exit(code)
os._exit = probe
sys.argv = ["ailint", *sys.argv[1:]]
from ailint.doors.lean import main
main()
"""


@pytest.mark.parametrize("fmt", ["json", "text"])
def test_a_one_file_check_never_loads_inspect(fmt: str, tmp_path: Path) -> None:
    """`inspect` (with ast, dis and tokenize) stays a stand-in through a one-file run that
    reports findings, severity reasons included: no ailint dataclass lacks a docstring, and
    rule docs are dedented without it. Nor is `typing` imported (ailint's modules import it
    for the type checker only, `if TYPE_CHECKING:`; 2.8 ms) or `decimal` (quantities are
    exact integers; 1.7 ms); `base64` stays deferred, nor is the spilling of bounded runs
    (`ailint.engine.bounded`, with zlib), and no workload family is imported that the
    Deployment cannot belong to or read. Nor are the domains and passes a lone, valid
    Deployment never calls into: the Karpenter domain (no NodePool, NodeClass or Karpenter
    label), Kubeflow's (no MPIJob), the descheduler's policy model (no policy in the files),
    and the schema's error reporting and CEL rules."""
    env = {**os.environ, "AILINT_CACHE_DIR": str(tmp_path / "c")}
    env.pop("AILINT_NO_LEAN", None)
    env.pop("AILINT_NO_CACHE", None)
    # the first run discovers the rules (pkgutil, inspect) and writes the rule index; the
    # second reads the index, as every run of an installed ailint does
    subprocess.run([sys.executable, "-m", "ailint", "rules"], cwd=ROOT, env=env, capture_output=True, check=True)
    if "get_annotations" in dataclasses._process_class.__code__.co_names:
        # Python 3.12's and 3.13's `dataclasses` read `inspect` for every class they make,
        # and a first check records the plans of the classes `ailint rules` did not import:
        # the next check makes them all from their plans, as every check after the first does
        subprocess.run(
            [sys.executable, "-m", "ailint", "check", "--no-config", "--no-cache", "fixtures/demo/vllm.yaml"],
            cwd=ROOT, env=env, capture_output=True, check=False, timeout=300,
        )  # fmt: skip
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            _EXIT_PROBE,
            "check",
            "--no-config",
            "--no-cache",
            "--format",
            fmt,
            "fixtures/demo/vllm.yaml",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert proc.returncode == 1 and proc.stdout, proc.stderr
    line = next(ln for ln in proc.stderr.splitlines() if ln.startswith("MODULES"))
    assert line.split() == ["MODULES", "_Deferred"], line
    assert "GC False" in proc.stderr.splitlines(), "a check process runs without the cyclic collector"
    # a Deployment's families: its own and DRA's (whose claims any pod may use); not the
    # families that merge only their own InferenceServices with a runtime (`reads_only_own`)
    families = next(ln for ln in proc.stderr.splitlines() if ln.startswith("FAMILIES")).split()[1:]
    assert "core" in families and "dra" in families and not {"kserve", "ome", "kubeflow"} & set(families), families
    assert "BASE64 _Deferred" in proc.stderr.splitlines() or "BASE64 NoneType" in proc.stderr.splitlines()
    # PyYAML's timestamps import `datetime`, whose stand-in holds `_datetime`'s classes; its
    # parser is read from its submodules, and its `__init__` (loaders, dumpers) never runs
    assert "DATETIME _Deferred" in proc.stderr.splitlines(), proc.stderr
    assert "YAML _DeferredInit" in proc.stderr.splitlines(), proc.stderr


_NAMESPACE = """
import sys, types
def describe(module):
    return sorted(
        (k, type(v).__name__, getattr(v, "__module__", None), getattr(v, "__qualname__", None),
         v is sys.modules.get(getattr(v, "__name__", None)) if isinstance(v, types.ModuleType) else None)
        for k, v in vars(module).items() if k != "__builtins__"
    )
"""


def _namespaces(deferred: str, plain: str) -> tuple[str, str]:
    out = []
    for code in (deferred, plain):
        proc = subprocess.run(
            [sys.executable, "-c", _NAMESPACE + code], cwd=ROOT, capture_output=True, text=True, check=False
        )
        assert proc.returncode == 0 and proc.stdout, proc.stderr
        out.append(proc.stdout)
    return out[0], out[1]


def test_yaml_read_by_its_submodules_is_the_package_a_plain_import_makes() -> None:
    """A check reads PyYAML's parser from its submodules and never runs the package's
    `__init__`; the first read of a package-level name runs it in the same module object,
    and the package is then the one a plain `import yaml` makes, name for name."""
    deferred = (
        "from ailint.doors.lean import defer_init\n"
        "defer_init('yaml')\n"
        "from ailint.core.yamldata import compose_all, Converter\n"
        "import yaml\n"
        "assert type(yaml).__name__ == '_DeferredInit'\n"
        "assert not {'yaml.loader', 'yaml.dumper', 'yaml.cyaml'} & set(sys.modules), sorted(sys.modules)\n"
        "node = next(compose_all('a: [1, on]\\n'))\n"
        "assert Converter.__name__ and node.value[0][0].value == 'a'\n"
        "assert yaml.safe_load('a: [1, on]') == {'a': [1, True]}  # runs the __init__\n"
        "assert type(yaml) is types.ModuleType and yaml.cyaml.CParser is yaml._yaml.CParser\n"
        "print(describe(yaml))\n"
    )
    plain = "import yaml, yaml._yaml\nprint(describe(yaml))\n"
    got, want = _namespaces(deferred, plain)
    assert got == want


def test_threads_that_read_yaml_at_once_all_wait_for_its_init() -> None:
    """Threads that read a package-level name of the deferred PyYAML at the same moment (a
    webhook's request threads) each get it: one runs the `__init__`, the others wait."""
    code = (
        "import sys, threading\n"
        "from ailint.doors.lean import defer_init\n"
        "defer_init('yaml')\n"
        "import yaml, yaml.nodes\n"
        "sys.setswitchinterval(1e-6)\n"
        "start = threading.Barrier(8)\n"
        "got = []\n"
        "def read():\n"
        "    start.wait()\n"
        "    try:\n"
        "        got.append(yaml.safe_load('a: [1, on]'))\n"
        "    except Exception as exc:\n"
        "        got.append(repr(exc))\n"
        "threads = [threading.Thread(target=read) for _ in range(8)]\n"
        "for t in threads: t.start()\n"
        "for t in threads: t.join()\n"
        "print(got)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=False)
    assert proc.stdout.strip() == str([{"a": [1, True]}] * 8), proc.stdout + proc.stderr


def test_datetime_stand_in_holds_the_classes_of_the_real_module() -> None:
    """The stand-in of `datetime` holds `_datetime`'s public names, which are the module's
    own; any other name loads the real module, which then lends its names."""
    deferred = (
        "import _datetime\n"
        "from ailint.doors.lean import defer_import\n"
        "defer_import('datetime', '_datetime')\n"
        "import datetime\n"
        "assert type(datetime).__name__ == '_Deferred' and datetime.date is _datetime.date\n"
        "assert datetime.datetime(2024, 5, 1, tzinfo=datetime.UTC).isoformat() == '2024-05-01T00:00:00+00:00'\n"
        "assert type(sys.modules['datetime']).__name__ == '_Deferred'  # nothing loaded yet\n"
        "assert datetime.__all__ and type(sys.modules['datetime']) is types.ModuleType\n"
        "assert datetime.__doc__ == sys.modules['datetime'].__doc__\n"
        "print(describe(sys.modules['datetime']))\n"
    )
    plain = "import datetime\nprint(describe(datetime))\n"
    got, want = _namespaces(deferred, plain)
    assert got == want


def test_a_deferred_module_is_loaded_whole_on_first_read() -> None:
    code = (
        "import sys\n"
        "from ailint.doors.lean import defer_import\n"
        "defer_import('inspect')\n"
        "import dataclasses, inspect\n"
        "assert 'ast' not in sys.modules\n"
        "assert str(inspect.signature(lambda a, b=1: a)) == '(a, b=1)'\n"
        "from inspect import cleandoc\n"
        "assert cleandoc('  x\\n    y') == 'x\\ny'\n"
        "assert type(sys.modules['inspect']).__name__ == 'module' and 'ast' in sys.modules\n"
        "assert dataclasses.inspect.getmodulename('a.py') == 'a'  # the reference kept earlier\n"
        "print('ok')\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=False)
    assert proc.stdout.strip() == "ok", proc.stderr
