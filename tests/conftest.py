import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared"
CORPUS = SHARED / "corpus"
# shipped in the repository (OASIS notice beside it): a fresh clone runs the SARIF schema tests
SARIF_SCHEMA = ROOT / "tests" / "data" / "sarif" / "sarif-schema-2.1.0.json"
CRDS = SHARED / "ref" / "crds"


def pytest_addoption(parser):
    parser.addoption(
        "--update-snapshots",
        action="store_true",
        default=False,
        help="rewrite fixtures/<CODE>/<case>.expected from the current output",
    )


@pytest.fixture
def update_snapshots(request):
    return request.config.getoption("--update-snapshots")


needs_shared = pytest.mark.skipif(not CORPUS.is_dir(), reason="../shared is absent")


def bench_module(name: str):
    """The script `bench/<name>.py` loaded as a module (the benchmark's tools are scripts, not
    a package), for tests of its parts."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(f"bench_{name}", ROOT / "bench" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def render_tools():
    """Real helm and kubectl (PATH, else extracted from a PyPI wheel; see tests/render_tools.py)."""
    from render_tools import find_tools

    got = find_tools()
    if got.helm is None or got.kubectl is None:
        pytest.skip(got.reason)
    return got
