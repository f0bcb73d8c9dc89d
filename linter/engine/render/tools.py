"""The rendering binaries and one bounded, offline run of them.

`find_tool` looks for `helm`, `kubectl` or `kustomize`: the configured path first, then
`PATH`. `run_tool` runs a command with a wall-clock timeout and an output-size limit (a
hang or an output bomb is a `RunOutcome` saying so, never a hang of ailint), in an
environment with no usable network (proxies at 127.0.0.1:9, git limited to `file`) and
empty Helm cache/config/data folders, so nothing on the machine is read or written.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import threading
from dataclasses import dataclass

from ailint.core.lazyre import lazy_re

DEFAULT_TIMEOUT = 60.0
DEFAULT_MAX_OUTPUT = 64 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class RunOutcome:
    """What running helm, kubectl or kustomize gave, or why it was stopped."""

    rc: int | None  # None: killed (timeout or output limit)
    stdout: str
    stderr: str
    timed_out: bool = False
    too_big: bool = False
    seconds: float = 0.0


def find_tool(name: str, configured: str | None = None) -> str | None:
    """The binary to run for `name`: `configured` (a path, or a name looked up on PATH), else PATH."""
    if configured:
        if os.sep in configured or (os.altsep and os.altsep in configured):
            ok = os.path.isfile(configured) and os.access(configured, os.X_OK)
            return os.path.abspath(configured) if ok else None
        found = shutil.which(configured)
    else:
        found = shutil.which(name)
    return os.path.abspath(found) if found else None


def offline_env(home: str) -> dict[str, str]:
    """The subprocess environment: PATH kept, no network, every tool folder under `home`."""
    env = {k: v for k, v in os.environ.items() if k in ("PATH", "LANG", "LC_ALL", "TZ", "SYSTEMROOT", "TMPDIR")}
    for sub in ("cache", "config", "data"):
        os.makedirs(os.path.join(home, sub), exist_ok=True)
    env.update(
        HOME=home,
        HELM_CACHE_HOME=os.path.join(home, "cache"),
        HELM_CONFIG_HOME=os.path.join(home, "config"),
        HELM_DATA_HOME=os.path.join(home, "data"),
        KUBECONFIG=os.path.join(home, "kubeconfig-none"),
        HTTP_PROXY="http://127.0.0.1:9",
        HTTPS_PROXY="http://127.0.0.1:9",
        http_proxy="http://127.0.0.1:9",
        https_proxy="http://127.0.0.1:9",
        ALL_PROXY="http://127.0.0.1:9",
        GIT_ALLOW_PROTOCOL="file",
        GIT_TERMINAL_PROMPT="0",
        HELM_NO_PLUGINS="1",
        KUSTOMIZE_PLUGIN_HOME=os.path.join(home, "no-plugins"),
    )
    return env


def run_tool(
    cmd: list[str],
    cwd: str,
    timeout: float = DEFAULT_TIMEOUT,
    max_output: int = DEFAULT_MAX_OUTPUT,
) -> RunOutcome:
    """Run `cmd` offline in `cwd`; stop it at `timeout` seconds or `max_output` bytes of stdout."""
    import time

    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="ailint-render-") as home:
        try:
            proc = subprocess.Popen(
                cmd,
                cwd=cwd,
                env=offline_env(home),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,  # the whole group is killed on a timeout
            )
        except OSError as exc:
            return RunOutcome(127, "", f"cannot run {cmd[0]}: {exc.strerror or exc}")
        out: list[bytes] = []
        err: list[bytes] = []
        state = {"size": 0, "too_big": False}

        def pump_out() -> None:
            assert proc.stdout is not None
            while chunk := proc.stdout.read(1 << 16):
                state["size"] += len(chunk)
                if state["size"] > max_output:
                    state["too_big"] = True
                    _kill(proc)
                    break
                out.append(chunk)

        def pump_err() -> None:
            assert proc.stderr is not None
            size = 0
            while chunk := proc.stderr.read(1 << 16):
                if size < 1 << 20:
                    err.append(chunk)
                size += len(chunk)

        threads = [threading.Thread(target=pump_out, daemon=True), threading.Thread(target=pump_err, daemon=True)]
        for t in threads:
            t.start()
        timed_out = False
        try:
            proc.wait(timeout=timeout)
            # the limit is the tool's time, however soon this process looked: on a busy
            # machine it may first look after the tool ended, past the limit
            timed_out = time.monotonic() - start > timeout
        except subprocess.TimeoutExpired:
            timed_out = True
            _kill(proc)
            proc.wait()
        for t in threads:
            t.join(timeout=5)
        seconds = time.monotonic() - start
        stdout = b"".join(out).decode("utf-8", "replace")
        stderr = b"".join(err).decode("utf-8", "replace")
        too_big = bool(state["too_big"])
        rc = None if (timed_out or too_big) else proc.returncode
        return RunOutcome(rc, stdout, stderr, timed_out, too_big, seconds)


def _kill(proc: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (OSError, AttributeError):
        try:
            proc.kill()
        except OSError:
            pass


# kubectl's log line: `E1201 22:30:46.696351  4290 run.go:72] "command failed" err="..."`
_KLOG = lazy_re(r'[IWEF]\d{4} \d\d:\d\d:\d\d\.\d+\s+\d+\s+[\w.-]+:\d+\]\s*(?:"[^"]*" err="(.*)"\s*$)?')


def tool_message(stderr: str, limit: int = 1200) -> str:
    """The tool's own error text, the same in every run: log lines (`level=...`) dropped, and
    of kubectl's klog lines (`E1201 22:30:46.696351  4290 run.go:72] "command failed"
    err="..."`, a time and a process id) only the error."""
    lines = []
    for ln in stderr.splitlines():
        if not ln.strip() or ln.startswith("level=") or "Use --debug flag" in ln:
            continue
        m = _KLOG.match(ln)
        if m is not None:
            ln = m.group(1).replace('\\"', '"') if m.group(1) is not None else ln[m.end() :]
        lines.append(ln.rstrip())
    text = "\n".join(lines).strip()
    return text if len(text) <= limit else text[:limit].rstrip() + " …"
