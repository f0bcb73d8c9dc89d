"""A hostile repository (issue 19): a real git repository with links out of it, planted
secrets, special files; and a webhook under connection abuse; and the Action's inputs.

Nothing outside the project is read or written, no planted secret appears in any output
format, nothing hangs (every run has a wall-clock timeout far above its normal time).
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import shutil
import socket
import string
import subprocess
import sys
import warnings

import pytest
from conftest import ROOT

AILINT = [sys.executable, "-m", "ailint"]
RUN_TIMEOUT = 120  # seconds: a hang (a FIFO opened, /dev/zero read) fails instead of blocking CI

_rng = random.Random(19)


def _rand(n: int, alphabet: str = string.ascii_letters + string.digits) -> str:
    return "".join(_rng.choice(alphabet) for _ in range(n))


def _aws_secret() -> str:  # 40 characters of base64 with upper, lower and a digit
    return _rand(12, string.ascii_uppercase) + _rand(12, string.ascii_lowercase) + _rand(14) + "/" + "7"


# A dozen shapes the secret detector knows; each one's random core must never be printed.
SECRETS = {
    "github": "ghp_" + _rand(36),
    "github_pat": "github_pat_" + _rand(22) + "_" + _rand(59),
    "aws_key_id": "AKIA" + _rand(16, string.ascii_uppercase + string.digits),
    "aws_secret": _aws_secret(),
    "huggingface": "hf_" + _rand(34),
    "openai": "sk-" + _rand(48),
    "openai_proj": "sk-proj-" + _rand(40),
    "slack": "xoxb-" + _rand(12, string.digits) + "-" + _rand(24),
    "jwt": "eyJhbGciOiJIUzI1NiJ9.eyJ" + _rand(30) + "." + _rand(43),
    "google": "AIza" + _rand(35),
    "anthropic": "sk-ant-api03-" + _rand(40),
    "url_password": _rand(18),  # https://deploy:<this>@registry.example.com
}
PEM_BODY = [_rand(64, string.ascii_letters + string.digits + "+/") for _ in range(3)]
SECRET_TEXTS = [*SECRETS.values(), *PEM_BODY]


def _windows(secret: str, width: int = 10) -> list[str]:
    """Every `width`-character piece of a secret's random part: a prefix shown, a value cut
    short, a masked value with its tail left all count as a leak."""
    core = secret
    for prefix in ("github_pat_", "sk-ant-api03-", "sk-proj-", "eyJhbGciOiJIUzI1NiJ9.eyJ", "ghp_", "hf_", "sk-"):
        if core.startswith(prefix):
            core = core[len(prefix) :]
            break
    return [core[i : i + width] for i in range(max(1, len(core) - width + 1))]


def assert_no_secret(text: str, where: str) -> None:
    for secret in SECRET_TEXTS:
        for piece in _windows(secret):
            assert piece not in text, f"{where}: a piece of a planted secret ({secret[:6]}…) is printed"


def _env_block(indent: str) -> str:
    s = SECRETS
    pairs = [
        ("HF_TOKEN", s["huggingface"]),
        ("OPENAI_API_KEY", s["openai"]),
        ("ANTHROPIC_API_KEY", s["anthropic"]),
        ("AWS_ACCESS_KEY_ID", s["aws_key_id"]),
        ("AWS_SECRET_ACCESS_KEY", s["aws_secret"]),
        ("GITHUB_TOKEN", s["github"]),
        ("SLACK_BOT_TOKEN", s["slack"]),
        ("PROJ_KEY", s["openai_proj"]),
        ("MAPS", s["google"]),
        ("SESSION", s["jwt"]),
        ("GH_PAT", s["github_pat"]),
        ("REGISTRY_URL", f"https://deploy:{s['url_password']}@registry.example.com/v2"),
    ]
    return "".join(f"{indent}- name: {n}\n{indent}  value: {json.dumps(v)}\n" for n, v in pairs)


def _deployment(name: str) -> str:
    return (
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n"
        f"  name: {name}\n  annotations:\n    ci.example.com/token: {SECRETS['github']}\n"
        "spec:\n  selector:\n    matchLabels: {app: x}\n  template:\n    metadata:\n      labels: {app: x}\n"
        "    spec:\n      containers:\n        - name: vllm\n          image: vllm/vllm-openai:v0.9.2\n"
        "          resources:\n            requests:\n              nvidia.com/gpu: 1\n"
        "          env:\n" + _env_block("            ")
    )


def _config_map() -> str:
    pem = "\n".join(
        [
            "      -----BEGIN RSA PRIVATE KEY-----",
            *(f"      {line}" for line in PEM_BODY),
            "      -----END RSA PRIVATE KEY-----",
        ]
    )
    return (
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: litellm\ndata:\n"
        "  config.yaml: |\n"
        "    general_settings:\n"
        f"      master_key: {SECRETS['openai']}\n"
        f"      database_url: postgres://app:{SECRETS['url_password']}@db:5432/app\n"
        f"  aws_secret_access_key: {SECRETS['aws_secret']}\n"
        f"  tls.key: |\n{pem}\n"
    )


def _credentials_file() -> str:
    return (
        f"https://user:{SECRETS['github']}@github.com\n"
        f"aws_access_key_id = {SECRETS['aws_key_id']}\n"
        f"aws_secret_access_key = {SECRETS['aws_secret']}\n"
        f"token: {SECRETS['huggingface']}\n"
    )


def _git(repo, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)


@pytest.fixture
def hostile(tmp_path):
    """tmp/outside (never to be read or written) and tmp/repo (a git repository)."""
    out = tmp_path / "outside"
    (out / "manifests").mkdir(parents=True)
    (out / "git-credentials").write_text(_credentials_file())
    (out / "kubeconfig.yaml").write_text(
        f"apiVersion: v1\nkind: Config\nusers:\n  - name: admin\n    user:\n      token: {SECRETS['jwt']}\n"
    )
    # a manifest with a safe fix (GPU002) and secrets: linted only when links are followed
    (out / "manifests" / "gpu.yaml").write_text(_deployment("outside"))
    (out / "target.yaml").write_text(_deployment("target"))

    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q")
    (repo / "app.yaml").write_text(_deployment("app"))
    (repo / "litellm.yaml").write_text(_config_map())
    # not Kubernetes objects: a plain-text credentials file and a YAML mapping without kind
    (repo / "notes.yaml").write_text(_credentials_file())
    (repo / "settings.yaml").write_text(
        f"registry:\n  password: {SECRETS['url_password']}\n  token: {SECRETS['slack']}\n"
    )
    # a manifest that does not parse, with a secret on the line where the parser stops
    (repo / "broken.yaml").write_text(
        f'apiVersion: v1\nkind: Secret\nmetadata:\n  name: broken\nstringData:\n  key: "{SECRETS["anthropic"]}\n'
    )
    # links out of the repository
    (repo / "creds.yaml").symlink_to(out / "git-credentials")
    (repo / "kube.yaml").symlink_to(os.path.relpath(out / "kubeconfig.yaml", repo))
    (repo / "ext").symlink_to(out / "manifests", target_is_directory=True)
    (repo / "fixme.yaml").symlink_to(out / "target.yaml")
    (repo / "environ.yaml").symlink_to("/proc/self/environ")
    (repo / "zero.yaml").symlink_to("/dev/zero")
    # a link that stays inside is fine
    (repo / "sub").mkdir()
    (repo / "sub" / "same.yaml").symlink_to("../app.yaml")
    # special files in the repository itself
    os.mkfifo(repo / "pipe.yaml")
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock_path = repo / "sock.yaml"
    try:
        sock.bind(str(sock_path))
    except OSError:  # a path too long for AF_UNIX: the FIFO stands for it
        sock.close()
        sock = None
    yield repo, out
    if sock is not None:
        sock.close()


def _checksums(folder) -> dict[str, str]:
    out = {}
    for dirpath, _, files in os.walk(folder):
        for f in files:
            p = os.path.join(dirpath, f)
            with open(p, "rb") as fh:
                out[p] = hashlib.sha256(fh.read()).hexdigest()
    return out


def ailint(repo, *args: str, check_rc: bool = True) -> subprocess.CompletedProcess:
    proc = subprocess.run(
        [*AILINT, "check", *args],
        cwd=repo,
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT,
        env={**os.environ, "NO_COLOR": "1", "GITHUB_ACTIONS": ""},
    )
    if check_rc:
        assert proc.returncode in (0, 1), proc.stderr
    return proc


def _by_file(report: dict) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for f in report["findings"]:
        out.setdefault(f["file"], []).append(f["code"])
    return out


# ---------------------------------------------------------------------------------------
# The project boundary
# ---------------------------------------------------------------------------------------
def test_a_walk_reads_nothing_outside_the_project(hostile):
    repo, _ = hostile
    proc = ailint(repo, ".", "--format", "json", "--no-schema")
    report = json.loads(proc.stdout)
    files = _by_file(report)
    for link in ("creds.yaml", "kube.yaml", "ext", "fixme.yaml"):
        assert files.get(link) == ["YML013"], (link, files.get(link))
    msg = next(f["message"] for f in report["findings"] if f["file"] == "creds.yaml")
    assert "outside the project" in msg and "--follow-external-symlinks" in msg
    # pseudo-files and special files: a finding, never a read (and no hang)
    for special in ("environ.yaml", "zero.yaml", "pipe.yaml"):
        assert files.get(special) in (["YML009"], ["YML013"]), (special, files.get(special))
    if (repo / "sock.yaml").exists():
        assert files.get("sock.yaml") == ["YML009"]
    # nothing behind the links was parsed: the outside Deployments' findings are absent
    assert not any(f.startswith("ext/") for f in files)
    assert all(fs["path"] not in ("ext/gpu.yaml",) for fs in report["files"])
    # the link inside the repository is the same file as app.yaml: linted once
    assert "app.yaml" in files and "sub/same.yaml" not in files
    assert "GPU002" in files["app.yaml"] and "SEC007" in files["app.yaml"]
    assert_no_secret(proc.stdout + proc.stderr, "json")


def test_links_out_are_read_only_when_asked(hostile):
    repo, _ = hostile
    for args in (["--follow-external-symlinks"], []):
        if not args:  # the config key does the same
            (repo / ".ailint.yaml").write_text("follow-external-symlinks: true\n")
        proc = ailint(repo, ".", "--format", "json", "--no-schema", *args)
        files = _by_file(json.loads(proc.stdout))
        assert "GPU002" in files["ext/gpu.yaml"] and "SEC007" in files["ext/gpu.yaml"]
        assert "YML013" not in {c for codes in files.values() for c in codes}
        # pseudo-files stay unread whatever the flag
        assert files.get("environ.yaml") == ["YML009"] and files.get("zero.yaml") == ["YML009"]
        assert_no_secret(proc.stdout, "json with links followed")


def test_named_paths(hostile):
    repo, out = hostile
    # a link named on the command line is still a link: its target must be in the project
    proc = ailint(repo, "creds.yaml", "--format", "json", "--no-schema")
    assert _by_file(json.loads(proc.stdout)) == {"creds.yaml": ["YML013"]}
    # a regular file named on the command line is the user's choice, wherever it lives
    proc = ailint(repo, str(out / "target.yaml"), "--format", "json", "--no-schema")
    codes = {c for codes in _by_file(json.loads(proc.stdout)).values() for c in codes}
    assert "GPU002" in codes and "YML013" not in codes
    # named pseudo-files are refused, not read
    proc = ailint(repo, "/proc/self/environ", "--format", "json", "--no-schema")
    assert [f["code"] for f in json.loads(proc.stdout)["findings"]] == ["YML009"]
    assert_no_secret(proc.stdout, "named paths")


def test_fix_never_writes_through_a_link_or_outside(hostile, tmp_path):
    repo, out = hostile
    # a hard link into the repository (same file system): replaced, never written into
    (out / "hard.yaml").write_text(_deployment("hard"))
    os.link(out / "hard.yaml", repo / "hard.yaml")
    before = _checksums(out)
    app_before = (repo / "app.yaml").read_text()
    proc = ailint(repo, ".", "--follow-external-symlinks", "--fix", "--no-schema", "--format", "json")
    assert _checksums(out) == before, "a file outside the project was written"
    assert (repo / "fixme.yaml").is_symlink() and (repo / "ext").is_symlink()
    assert "fixme.yaml: not fixed: it is a symbolic link" in proc.stderr
    assert "ext/gpu.yaml: not fixed: it lies outside the project" in proc.stderr
    # the files inside were fixed (GPU002's safe fix), the hard link's outside twin was not
    assert (repo / "app.yaml").read_text() != app_before
    assert (repo / "hard.yaml").read_text() != (out / "hard.yaml").read_text()
    assert_no_secret(proc.stdout + proc.stderr, "--fix")
    # --diff quotes the files' lines: masked too
    (repo / "app.yaml").write_text(app_before)
    proc = ailint(repo, "app.yaml", "--diff", "--no-schema")
    assert "+++ b/app.yaml" in proc.stdout
    assert_no_secret(proc.stdout + proc.stderr, "--diff")


# ---------------------------------------------------------------------------------------
# The webhook under abuse
# ---------------------------------------------------------------------------------------
def _review(obj: dict, uid: str = "uid-abuse") -> bytes:
    return json.dumps(
        {
            "apiVersion": "admission.k8s.io/v1",
            "kind": "AdmissionReview",
            "request": {"uid": uid, "operation": "CREATE", "namespace": "ai", "object": obj},
        }
    ).encode()


def _secret_pod() -> dict:
    import yaml

    return yaml.safe_load(_deployment("leaky"))


def _start(**kw):
    import io
    import threading

    from ailint.doors.webhook import build_server
    from ailint.engine.config import Settings

    log = io.StringIO()
    srv = build_server("127.0.0.1", 0, Settings(), log=log, **kw)
    t = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    t.start()
    return srv, t


def _stop(srv, t) -> None:
    srv.shutdown()
    srv.server_close()
    t.join(10)


def _post(port: int, body: bytes, ctx=None, attempts_until: float = 0.0):
    """POST /validate; retried on 503 or a refused/closed connection until `attempts_until`."""
    import http.client
    import time

    while True:
        try:
            if ctx is None:
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
            else:
                conn = http.client.HTTPSConnection("127.0.0.1", port, context=ctx, timeout=10)
            conn.request("POST", "/validate", body=body, headers={"Content-Type": "application/json"})
            resp = conn.getresponse()
            status, payload = resp.status, resp.read()
            conn.close()
            if status != 503 or time.monotonic() > attempts_until:
                return status, payload
        except OSError:
            if time.monotonic() > attempts_until:
                raise
        time.sleep(0.1)


def _closed_by(sockets: list, deadline: float) -> list:
    """The sockets the server has not closed by `deadline` (read until EOF or reset)."""
    import time

    open_ones = []
    for s in sockets:
        try:
            while True:
                left = deadline - time.monotonic()
                if left <= 0:
                    open_ones.append(s)
                    break
                s.settimeout(left)
                if not s.recv(65536):  # EOF (after a 503, if one was sent)
                    break
        except TimeoutError:
            open_ones.append(s)
        except OSError:  # reset: closed too
            pass
    return open_ones


def _connect(port: int) -> socket.socket:
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    return s


def test_webhook_closes_idle_and_half_sent_connections_and_stays_bounded():
    import threading
    import time

    from ailint.doors.webhook import EVICT_SLACK, REJECT_THREADS

    limits = {"max_connections": 48, "idle_timeout": 2.0, "header_timeout": 1.0, "body_timeout": 1.0}
    srv, t = _start(tls_cert=None, tls_key=None, insecure_http=True, **limits)
    port = srv.server_address[1]
    baseline = threading.active_count()
    bound = baseline + limits["max_connections"] + EVICT_SLACK + REJECT_THREADS + 4  # + the review pool
    peak = baseline
    socks: list[socket.socket] = []
    try:
        started = time.monotonic()
        for i in range(360):
            s = _connect(port)
            kind = i % 4
            if kind == 1:  # half a request line and header
                s.sendall(b"POST /validate HTTP/1.1\r\nHost: webhook\r\nContent-Le")
            elif kind == 2:  # headers done, half a body
                s.sendall(b'POST /validate HTTP/1.1\r\nHost: webhook\r\nContent-Length: 4000\r\n\r\n{"apiVe')
            elif kind == 3:  # a request line only, then silence
                s.sendall(b"GET /healthz HTTP/1.1\r\n")
            socks.append(s)
            peak = max(peak, threading.active_count())
        # a slow sender: one byte every 0.2 s keeps a per-read timeout alive forever, not a deadline
        slow = _connect(port)
        slow_closed_at = None
        for ch in b"POST /validate HTTP/1.1\r\nHost: webhook\r\nX-Padding: " + b"a" * 40:
            try:
                slow.sendall(bytes([ch]))
            except OSError:
                slow_closed_at = time.monotonic()
                break
            peak = max(peak, threading.active_count())
            time.sleep(0.2)
        assert slow_closed_at is not None, "a byte-at-a-time request was never cut off"
        # a real AdmissionReview is still answered (retried while the server sheds load)
        status, payload = _post(port, _review(_secret_pod()), attempts_until=time.monotonic() + 10)
        assert status == 200, payload
        answer = json.loads(payload)["response"]
        assert answer["uid"] == "uid-abuse" and answer["allowed"] is True and answer["warnings"]
        assert_no_secret(payload.decode(), "webhook answer")
        # every abusive connection is closed within its timeout (plus scheduling slack)
        left = _closed_by(socks, started + limits["idle_timeout"] + 6.0)
        assert not left, f"{len(left)} of {len(socks)} connections still open"
        peak = max(peak, threading.active_count())
        assert peak <= bound, f"{peak} threads (bound {bound})"
        deadline = time.monotonic() + 5
        while srv.active_connections() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert srv.active_connections() == 0
    finally:
        for s in socks:
            s.close()
        _stop(srv, t)


@pytest.fixture(scope="module")
def tls_pair(tmp_path_factory):
    if shutil.which("openssl") is None:
        pytest.skip("openssl CLI needed to make a test certificate")
    d = tmp_path_factory.mktemp("tls")
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(d / "key.pem")]
        + ["-out", str(d / "cert.pem"), "-days", "1", "-subj", "/CN=localhost"]
        + ["-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost"],
        check=True,
        capture_output=True,
    )
    return str(d / "cert.pem"), str(d / "key.pem")


def test_webhook_tls_handshake_deadline_and_floor(tls_pair):
    import ssl
    import time

    cert, key = tls_pair
    srv, t = _start(tls_cert=cert, tls_key=key, max_connections=32, handshake_timeout=1.0, idle_timeout=2.0)
    port = srv.server_address[1]
    try:
        started = time.monotonic()
        silent = [_connect(port) for _ in range(60)]  # never send a ClientHello
        dribble = _connect(port)
        dribble.sendall(b"\x16\x03\x01")  # the first bytes of a ClientHello, then nothing
        ctx = ssl.create_default_context(cafile=cert)
        status, payload = _post(port, _review(_secret_pod()), ctx=ctx, attempts_until=time.monotonic() + 10)
        assert status == 200 and json.loads(payload)["response"]["uid"] == "uid-abuse"
        assert_no_secret(payload.decode(), "webhook answer over TLS")
        assert not _closed_by([*silent, dribble], started + 1.0 + 6.0)
        # TLS 1.2 is the floor: a client that offers at most TLS 1.1 gets no session
        old = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        old.check_hostname = False
        old.verify_mode = ssl.CERT_NONE
        try:
            with warnings.catch_warnings():  # the deprecated versions are the point here
                warnings.simplefilter("ignore", DeprecationWarning)
                old.minimum_version = ssl.TLSVersion.TLSv1
                old.maximum_version = ssl.TLSVersion.TLSv1_1
            old.set_ciphers("DEFAULT:@SECLEVEL=0")
        except (ValueError, ssl.SSLError):
            pytest.skip("this OpenSSL cannot even offer TLS 1.1")
        with socket.create_connection(("127.0.0.1", port), timeout=5) as raw, pytest.raises(ssl.SSLError):
            old.wrap_socket(raw, server_hostname="localhost")
        assert srv.tls.context().minimum_version == ssl.TLSVersion.TLSv1_2
    finally:
        _stop(srv, t)


# ---------------------------------------------------------------------------------------
# The Action on forks: inputs reach the scripts through the environment only
# ---------------------------------------------------------------------------------------
def test_action_run_scripts_interpolate_no_expression():
    import yaml

    action = yaml.safe_load((ROOT / "action.yml").read_text())
    steps = [s for s in action["runs"]["steps"] if "run" in s]
    assert steps
    for step in steps:
        script = step["run"]
        # an expression in a script is pasted into it before bash parses it: injection
        for bad in ("${{ inputs.", "${{inputs.", "${{ github.event", "${{ github.head_ref", "${{"):
            assert bad not in script, f"step {step.get('name')!r} interpolates {bad!r} into its script"
        for key in step.get("env") or {}:
            assert key.startswith(("AILINT_", "GITHUB_")), key


def test_action_input_with_shell_metacharacters_runs_nothing(tmp_path):
    from test_integrations import run_action

    ws = tmp_path / "ws"
    ws.mkdir()
    _git(ws, "init", "-q")
    (ws / "app.yaml").write_text(_deployment("app"))
    _git(ws, "add", ".")
    _git(ws, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "one")
    # a remote, so that a `since` smuggling a git option would reach `git fetch`
    _git(ws, "remote", "add", "origin", str(ws))
    marks = [tmp_path / f"pwned{i}" for i in range(6)]
    hostile_inputs = {
        "paths": f"$(touch {marks[0]}) `touch {marks[1]}`; touch {marks[2]} && app.yaml",
        "config": f"$(touch {marks[3]})",
        "fail-on": f"never; touch {marks[4]}",
        "since": f"--upload-pack=touch {marks[5]}",
        "sarif-file": str(tmp_path / "out" / "x.sarif"),
    }
    for name, value in hostile_inputs.items():
        (tmp_path / name).mkdir()
        code, stdout, _, summary = run_action(ws, tmp_path / name, **{name: value})
        ran = [m.name for m in marks if m.exists()]
        assert not ran, f"input {name!r} ran a command: {ran}"
        assert code in (0, 1, 2), (name, code, stdout)
        assert_no_secret(stdout + summary, f"action output ({name})")


# ---------------------------------------------------------------------------------------
# The newer surfaces: chart/overlay rendering, CEL policies, the results cache
# ---------------------------------------------------------------------------------------
def test_render_tool_runs_are_bounded_and_offline(tmp_path, monkeypatch):
    import time

    from ailint.engine.render import tools

    # the parent's credentials and tool settings never reach a rendering tool
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "real-kubeconfig"))
    monkeypatch.setenv("HELM_REPOSITORY_CONFIG", str(tmp_path / "repos.yaml"))
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRETS["aws_secret"])
    monkeypatch.setenv("GITHUB_TOKEN", SECRETS["github"])
    got = tools.run_tool(["sh", "-c", "env"], cwd=str(tmp_path), timeout=20)
    env = dict(line.split("=", 1) for line in got.stdout.splitlines() if "=" in line)
    assert str(tmp_path) not in env.get("KUBECONFIG", "") and "HELM_REPOSITORY_CONFIG" not in env
    assert "AWS_SECRET_ACCESS_KEY" not in env and "GITHUB_TOKEN" not in env
    assert env["HTTPS_PROXY"] == "http://127.0.0.1:9" and env["GIT_ALLOW_PROTOCOL"] == "file"
    # a tool that never ends (and leaves a child behind) is stopped at the wall-clock limit
    started = time.monotonic()
    got = tools.run_tool(["sh", "-c", "sleep 300 & sleep 300"], cwd=str(tmp_path), timeout=1.0)
    assert got.rc is None and time.monotonic() - started < 15
    # a tool that writes without end is stopped at the output bound
    started = time.monotonic()
    got = tools.run_tool(["sh", "-c", "cat /dev/zero"], cwd=str(tmp_path), timeout=60, max_output=1 << 20)
    assert got.rc is None and time.monotonic() - started < 30
    assert len(got.stdout.encode("utf-8", "surrogateescape")) <= 1 << 20


def test_a_chart_bomb_is_one_finding_not_a_hang(render_tools, tmp_path):
    import time

    if render_tools.helm is None:
        pytest.skip(render_tools.reason or "no helm")
    chart = tmp_path / "repo" / "bomb"
    (chart / "templates").mkdir(parents=True)
    _git(tmp_path / "repo", "init", "-q")
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: bomb\nversion: 0.1.0\n")
    # 10^8 lines of output: far over the output bound, and slow
    (chart / "templates" / "cm.yaml").write_text(
        "{{- range $i := until 100000000 }}\n# {{ $i }} padding padding padding padding\n{{- end }}\n"
    )
    (chart / "templates" / "lookup.yaml").write_text(
        '{{- $s := lookup "v1" "Secret" "kube-system" "admin" }}\n'
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: probe\ndata:\n  found: {{ empty $s | not | quote }}\n"
    )
    (tmp_path / "repo" / ".ailint.yaml").write_text("render:\n  timeout: 5\n  max-output-size: 1000000\n")
    started = time.monotonic()
    r = subprocess.run(
        [*AILINT, "check", "--format", "json", "bomb"],
        cwd=tmp_path / "repo",
        env={**render_tools.path_env(), "NO_COLOR": "1"},
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT,
    )
    assert time.monotonic() - started < 90
    codes = [f["code"] for f in json.loads(r.stdout)["findings"]]
    assert codes == ["YML022"], codes


def _policy(name: str, expression: str, message_expression: str = "") -> str:
    msg = f"      messageExpression: {json.dumps(message_expression)}\n" if message_expression else ""
    return (
        "apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingAdmissionPolicy\n"
        f"metadata:\n  name: {name}\nspec:\n  matchConstraints:\n    resourceRules:\n"
        '    - apiGroups: ["apps"]\n      apiVersions: ["v1"]\n      operations: ["CREATE"]\n'
        '      resources: ["deployments"]\n  validations:\n'
        f"    - expression: {json.dumps(expression)}\n{msg}"
        "---\napiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingAdmissionPolicyBinding\n"
        f"metadata:\n  name: {name}\nspec:\n  policyName: {name}\n  validationActions: [Deny]\n"
    )


def test_cel_bombs_are_findings_and_cel_messages_are_masked(hostile):
    import time

    repo, _ = hostile
    nest = "object.metadata.name.size() > 0"
    for v in "abcdef":
        nest = f"[1,2,3,4,5,6,7,8,9,10].all({v}, {nest})"
    growth = "'x'" + ".replace('x','xxxxxxxxxx')" * 14 + ".size() > 0"
    (repo / "policies.yaml").write_text(
        _policy("iterations", nest)
        + "---\n"
        + _policy("growth", growth)
        + "---\n"
        # a policy that quotes the object back: its message carries the planted token
        + _policy("echo", "false", "'token: ' + object.metadata.annotations['ci.example.com/token']")
    )
    started = time.monotonic()
    for fmt in ("json", "text", "sarif", "github"):
        proc = ailint(repo, ".", "--format", fmt, "--no-schema")
        assert_no_secret(proc.stdout + proc.stderr, f"{fmt} with CEL policies")
    assert time.monotonic() - started < 4 * RUN_TIMEOUT
    codes = {f["code"] for f in json.loads(ailint(repo, ".", "--format", "json", "--no-schema").stdout)["findings"]}
    assert {"POL002", "POL003"} <= codes, codes


def test_cache_stays_private_and_a_repository_cannot_move_it(hostile, tmp_path):
    import stat as st

    repo, _ = hostile
    home_cache = tmp_path / "user-cache"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o755)
    (repo / ".ailint.yaml").write_text(f"cache-dir: {elsewhere}\n")
    env = {**os.environ, "NO_COLOR": "1", "XDG_CACHE_HOME": str(home_cache), "AILINT_NO_CACHE": ""}
    env.pop("AILINT_CACHE_DIR", None)
    env.pop("AILINT_NO_CACHE", None)
    for _ in range(2):  # cold, then warm
        proc = subprocess.run(
            [*AILINT, "check", ".", "--format", "json", "--no-schema"],
            cwd=repo,
            env=env,
            capture_output=True,
            text=True,
            timeout=RUN_TIMEOUT,
        )
        assert proc.returncode in (0, 1), proc.stderr
        assert_no_secret(proc.stdout, "cached run")
    # the config's folder outside the project was neither used nor re-moded
    assert list(elsewhere.iterdir()) == [] and st.S_IMODE(elsewhere.stat().st_mode) == 0o755
    cache = home_cache / "ailint"
    entries = [p for p in cache.rglob("*")]
    assert entries, "the run wrote no cache entry in the user's cache folder"
    assert st.S_IMODE(cache.stat().st_mode) == 0o700
    for p in entries:
        mode = st.S_IMODE(p.stat().st_mode)
        assert mode & 0o077 == 0, (p, oct(mode))


def test_charts_and_overlays_that_link_out_are_not_rendered(render_tools, hostile):
    if render_tools.helm is None or render_tools.kubectl is None:
        pytest.skip(render_tools.reason or "no helm or kubectl")
    repo, out = hostile
    chart = repo / "chart"
    (chart / "templates").mkdir(parents=True)
    (chart / "files").mkdir()
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: leak\nversion: 0.1.0\n")
    (chart / "files" / "creds").symlink_to(out / "git-credentials")  # helm's .Files.Get follows it
    (chart / "templates" / "cm.yaml").write_text(
        'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: leak\ndata:\n  c: {{ .Files.Get "files/creds" | quote }}\n'
    )
    overlay = repo / "overlay"
    overlay.mkdir()
    (overlay / "kustomization.yaml").write_text("resources:\n  - cm.yaml\n")
    (overlay / "cm.yaml").symlink_to(out / "kubeconfig.yaml")
    for args in ([], ["--follow-external-symlinks"]):
        r = subprocess.run(
            [*AILINT, "check", "--format", "json", "--no-schema", "chart", "overlay", *args],
            cwd=repo,
            env={**render_tools.path_env(), "NO_COLOR": "1"},
            capture_output=True,
            text=True,
            timeout=RUN_TIMEOUT,
        )
        assert r.returncode in (0, 1), r.stderr
        assert_no_secret(r.stdout + r.stderr, f"rendering {args}")
        found = {(f["code"], f["file"]) for f in json.loads(r.stdout)["findings"]}
        if not args:
            assert ("YML013", "chart/files/creds") in found and ("YML013", "overlay/cm.yaml") in found, found
        else:  # followed on request: rendered (and the secret still masked)
            assert not any(code == "YML013" for code, _ in found), found


def test_no_planted_secret_in_any_output_format(hostile):
    from ailint.doors.cli import FORMATS

    repo, _ = hostile
    assert {"text", "json", "sarif", "github"} <= set(FORMATS)
    for fmt in FORMATS:  # html too, when the build has it
        for extra in ([], ["--follow-external-symlinks"]):
            proc = ailint(repo, ".", "--format", fmt, "--no-schema", *extra)
            assert proc.stdout.strip(), fmt
            assert_no_secret(proc.stdout + proc.stderr, f"--format {fmt} {extra}")
    # the masked frame still points at the value: lines and columns are unchanged
    text = ailint(repo, "app.yaml", "--format", "text", "--no-schema").stdout
    assert 'value: "*****' in text and "^^^^" in text


def test_a_folders_answer_is_each_of_its_entries_answer(tmp_path):
    """The walk asks `reads_entries_of` once per folder instead of `refuse_read` per file:
    wherever it says yes, `refuse_read` says yes for every entry that is no link."""
    from ailint.engine.boundary import Boundary

    inside, outside = tmp_path / "repo", tmp_path / "elsewhere"
    for d in (inside / "sub", outside):
        d.mkdir(parents=True)
        (d / "a.yaml").write_text("kind: Pod\n")
    folders = [str(inside), str(inside / "sub"), str(outside), os.sep, "/dev", "/proc/self", "/sys"]
    for follow in (False, True):
        b = Boundary.for_paths([str(inside)], follow_external=follow)
        answers = {d: b.reads_entries_of(os.path.realpath(d)) for d in folders}
        assert answers[str(inside)] and answers[str(inside / "sub")]
        assert answers[str(outside)] is follow  # (a walk reaches it only through a link)
        assert not any(answers[d] for d in (os.sep, "/dev", "/proc/self", "/sys"))
        for d, yes in answers.items():
            if not yes or not os.path.isdir(d):
                continue
            for name in os.listdir(d):
                full = os.path.join(d, name)
                if not os.path.islink(full):
                    assert b.refuse_read(full, os.path.join(os.path.realpath(d), name)) is None, full
