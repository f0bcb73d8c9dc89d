"""Output masking (`ailint.domain.agents.secret_spans`): the lines it passes over and the runs
it tries the AWS key shape on give the same spans as reading every line and trying every
pattern over the whole text, which is what the detector means (and what it did)."""

from __future__ import annotations

import random
import string

import pytest
from ailint.domain import agents
from conftest import CORPUS, ROOT


def _every_line(text: str) -> list[tuple[int, int]]:
    """The detector without its shortcuts: each pattern over the whole text, each line read."""
    if not text or not agents._FAST_OUT.search(text):
        return []
    c = agents._compiled()
    spans: list[tuple[int, int]] = []
    if c["any_shape"].search(text):
        spans.extend(m.span() for m in c["any_shape"].finditer(text))
    if "PRIVATE KEY" in text:
        spans.extend(m.span() for m in c["mask_pem"].finditer(text))
    if "://" in text:
        spans.extend(m.span(1) for m in c["mask_url"].finditer(text))
    spans.extend(m.span() for m in c["mask_aws"].finditer(text))
    pos = 0
    pending: str | None = None
    for line in text.splitlines(keepends=True):
        body = line.rstrip("\r\n")
        found = agents._config_line_hit(body) if ":" in body or "=" in body else None
        if found is not None and not found[2].placeholder:
            agents._mark(spans, body, pos, found[1])
        m = agents._ENV_NAME.match(body)
        if m:
            name = m.group(1)
            pending = name if agents.is_secret_name(name) or name.upper() in c["url_names"] else None
        if pending is not None:
            v = agents._ENV_VALUE.search(body, m.end() if m else 0)
            if v is not None:
                hit = agents.secret_kind(pending, v.group(2).strip())
                if hit is not None and not hit.placeholder:
                    spans.append((pos + v.start(2), pos + v.end(2)))
                pending = None
            elif not m and body.strip().startswith("-"):
                pending = None
        pos += len(line)
    return spans


def _rand(n: int, alphabet: str = string.ascii_letters + string.digits) -> str:
    rnd = random.Random(n)
    return "".join(rnd.choice(alphabet) for _ in range(n))


AWS = "wJalrXUtnFEMI/K7MDENG/bPxRfiCY" + "EXAMPLEK9y"  # 40 characters, mixed case and digits
PLANTED = [
    f"HF_TOKEN: hf_{_rand(34)}",
    f"  - name: OPENAI_API_KEY\n    value: sk-proj-{_rand(40)}",
    "  - name: HF_TOKEN\n\n    # the value comes later\n    value: 'abcdefgh12345'",
    "  - name: hf_token\n  - name: plain\n    value: not-a-secret-123",
    "password=hunter2hunter2",
    "Db_Password: 'Str0ng-and-long'",
    "DATABASE_URL: postgres://user:pw12345@db:5432/app",
    f"export NGC_API_KEY=nvapi-{_rand(40)}",
    f"-----BEGIN RSA PRIVATE KEY-----\n{_rand(64)}\n-----END RSA PRIVATE KEY-----",
    "token: ${TOKEN}",
    "x: AKIAABCDEFGHIJKLMNOP y",
    f"note: 'sk-ant-api03-{_rand(40)}'",
    f"- {{name: WANDB_API_KEY, value: {_rand(16)}}}",
    f"aws_secret_access_key = {AWS}",
    f"blob: {AWS}",  # the shape alone, under a key that names nothing
    f"blob: ={AWS}",  # `=` before it: not a key
    f"blob: {AWS}=",
    f"blob: {AWS}x",  # 41 characters
    f"blob: {AWS.lower()}",  # no upper case letter
    f"weird: {AWS[:20]}\u2028{AWS[20:]}",  # a line break inside
    f"ünïcode_KEY: {_rand(20)}",
    f"  MY_TOKEN : {_rand(24)}  # a comment",
    f"url: https://deploy:{_rand(18)}@registry.example.com/v2",
]


def _texts() -> list[str]:
    base = [p.read_text(encoding="utf-8", errors="replace") for p in sorted((ROOT / "fixtures").rglob("*.y*ml"))]
    if CORPUS.is_dir():
        base += [p.read_text(encoding="utf-8", errors="replace") for p in sorted(CORPUS.glob("*/plain/*.y*ml"))[:600]]
    rnd = random.Random(7)
    out = list(base)
    for text in base[:300]:
        lines = text.split("\n")
        for _ in range(4):
            lines.insert(rnd.randrange(len(lines) + 1), rnd.choice(PLANTED))
        out.append(("\r\n" if rnd.random() < 0.2 else "\n").join(lines))
    out += PLANTED
    out.append("\n".join(PLANTED))
    return out


def test_secret_spans_equal_reading_every_line() -> None:
    texts = _texts()
    assert len(texts) > 300
    masked = 0
    for text in texts:
        got = agents.secret_spans(text)
        assert got == _every_line(text), text[:300]
        masked += bool(got)
    assert masked > 300, "the planted secrets are found"


@pytest.mark.parametrize("line", PLANTED)
def test_each_planted_line_alone(line: str) -> None:
    assert agents.secret_spans(line) == _every_line(line)


def test_an_aws_style_key_is_masked_only_as_a_whole_run() -> None:
    assert agents.redact(f"blob: {AWS}\n") == "blob: " + "*" * 40 + "\n"
    for kept in (f"blob: ={AWS}", f"blob: {AWS}=", f"blob: {AWS}x", f"blob: {AWS.lower()}"):
        assert agents.redact(kept) == kept
