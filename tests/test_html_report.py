"""`--format html`: one self-contained page, rendered and filtered in a real headless Chromium.

The browser is Chromium from the system's packages. Where none is installed, the session
fixture installs it with apt when it can (CI set, apt-get present, running as root);
otherwise the browser tests are skipped with the reason. The screenshot is kept in the
test's temporary folder (and in `$AILINT_TEST_ARTIFACTS` when that is set).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "fixtures" / "demo"
BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")


def _find() -> str | None:
    return next((p for p in map(shutil.which, BROWSERS) if p), None)


@pytest.fixture(scope="session")
def chromium() -> str:
    found = _find()
    if found:
        return found
    why = "no Chromium on this machine"
    if os.environ.get("CI") and shutil.which("apt-get") and hasattr(os, "geteuid") and os.geteuid() == 0:
        env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
        try:
            subprocess.run(["apt-get", "update", "-qq"], check=True, env=env, capture_output=True, timeout=600)
            subprocess.run(
                ["apt-get", "install", "-y", "-qq", "chromium"], check=True, env=env, capture_output=True, timeout=1200
            )
        except (subprocess.SubprocessError, OSError) as exc:
            why = f"apt-get install chromium failed: {exc}"
        found = _find()
        if found:
            return found
    else:
        why += " (installed only under CI, as root, with apt-get)"
    pytest.skip(why)


def _browser(chromium: str, tmp: Path, *args: str) -> str:
    profile = tmp / "profile"
    cmd = [
        chromium,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        "--disable-dev-shm-usage",
        f"--user-data-dir={profile}",
        *args,
    ]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=180)
    assert p.returncode == 0, p.stderr[-2000:]
    return p.stdout


def _report(tmp: Path, *paths: Path) -> Path:
    out = tmp / "report.html"
    p = subprocess.run(
        [sys.executable, "-m", "ailint", "check", "--no-config", "--format", "html", "-o", str(out), *map(str, paths)],
        capture_output=True,
        text=True,
    )
    assert p.returncode in (0, 1), p.stderr
    return out


def _demo_json() -> list[dict]:
    p = subprocess.run(
        [sys.executable, "-m", "ailint", "check", "--no-config", "--format", "json", str(DEMO)],
        capture_output=True,
        text=True,
    )
    return list(json.loads(p.stdout)["findings"])


def test_html_is_self_contained(tmp_path: Path) -> None:
    page = _report(tmp_path, DEMO).read_text()
    assert page.startswith("<!DOCTYPE html>")
    assert not re.search(r"<script[^>]*\bsrc=", page) and "<link" not in page and "@import" not in page
    assert "url(" not in page and "<img" not in page and "<iframe" not in page
    # the only URLs are the rules' docs links (and the SVG namespace)
    urls = set(re.findall(r"https?://[^\s\"'<>]+", page))
    assert urls and all(
        u.startswith("https://github.com/ailint/ailint/blob/main/docs/rules/") or u == "http://www.w3.org/2000/svg"
        for u in urls
    ), urls
    assert "default-src 'none'" in page  # and the page forbids loading anything else
    findings = _demo_json()
    assert page.count('<section class="finding"') == len(findings)


def test_html_renders_in_chromium(chromium: str, tmp_path: Path) -> None:
    report = _report(tmp_path, DEMO)
    dom = _browser(chromium, tmp_path, "--dump-dom", report.as_uri())
    findings = _demo_json()
    assert f'data-shown="{len(findings)}"' in dom  # the script ran over every finding
    assert dom.count('<section class="finding"') == len(findings)
    assert "hidden" not in re.findall(r'<section class="finding([^"]*)"', dom)[0]
    families = {f["code"][:3] for f in findings}
    for fam in families:  # one bar per family and severity present
        assert f'data-family="{fam}"' in dom
    bars = re.findall(r'<rect class="bar" data-family="(\w+)" data-severity="(\w+)"', dom)
    want = {(f["code"][:3], f["severity"]) for f in findings}
    assert set(bars) == want
    assert 'id="top-rules"' in dom and 'id="top-files"' in dom
    # a finding with its frame, why, fix and docs link
    gpu002 = re.search(r'<section class="finding[^>]*data-code="GPU002".*?</section>', dom, re.S)
    assert gpu002 is not None
    block = gpu002.group(0)
    assert 'class="frame"' in block and "nvidia.com/gpu: 1" in block
    assert "why:" in block and "fix:" in block and "docs/rules/GPU002.md" in block
    shot = tmp_path / "report.png"
    _browser(chromium, tmp_path, f"--screenshot={shot}", "--window-size=1280,2400", report.as_uri())
    assert shot.stat().st_size > 10_000
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    keep = os.environ.get("AILINT_TEST_ARTIFACTS")
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
        shutil.copy(shot, Path(keep) / "html-report.png")


def test_html_filters_by_severity_and_family(chromium: str, tmp_path: Path) -> None:
    report = _report(tmp_path, DEMO)
    findings = _demo_json()
    want = [f for f in findings if f["severity"] == "error" and f["code"][:3] in ("GPU", "SRV")]
    assert want and len(want) < len(findings)
    dom = _browser(chromium, tmp_path, "--dump-dom", report.as_uri() + "#severity=error&family=GPU,SRV")
    assert f'data-shown="{len(want)}"' in dom
    shown = re.findall(r'<section class="finding" id="f\d+" data-severity="(\w+)" data-family="(\w+)"', dom)
    hidden = re.findall(r'<section class="finding hidden"', dom)
    assert len(shown) == len(want) and len(hidden) == len(findings) - len(want)
    assert all(s == "error" and fam in ("GPU", "SRV") for s, fam in shown)
    # the checkboxes reflect the filter
    assert re.search(r'<input type="checkbox" data-kind="severity" value="warning">', dom)
    assert re.search(r'<input type="checkbox" data-kind="family" value="GPU" checked', dom)
    assert re.search(r'<input type="checkbox" data-kind="family" value="TRN">', dom)
