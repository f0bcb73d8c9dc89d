"""`--format html -o report.html`: one self-contained page to read a run in a browser.

No network: the styles, the script and the chart (inline SVG) are in the file, and nothing
is loaded from anywhere (no fonts, images or scripts; the only links are the rules' docs).
The page has a summary by family and severity, the rules and files with most findings, and
each finding with its code frame, why, fix and docs link. Filters by severity and family
work without a server; the URL hash holds them (`report.html#severity=error&family=GPU`),
so a filtered view can be shared or opened directly. Secret values are masked
(`ailint.report.common.redact_text`) in frames, messages and fixes.
"""

from __future__ import annotations

import html
from collections import Counter

from ailint import __version__
from ailint.core.model import Finding
from ailint.report.common import frame_source, redact_result, redact_text

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

DOCS_URI = "https://github.com/ailint/ailint/blob/main/docs/rules/{code}.md"
SEVERITIES = ("error", "warning", "info")
_COLOR = {"error": "#c62828", "warning": "#ef8f00", "info": "#1e88e5"}
_CONTEXT = 2  # lines of code shown around the finding's first line

_CSS = """
:root{--fg:#1d2330;--muted:#5b6472;--line:#e3e6eb;--bg:#fff;--code:#f6f8fa}
*{box-sizing:border-box}body{margin:0;font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;
color:var(--fg);background:var(--bg)}header,main{max-width:1180px;margin:0 auto;padding:16px 24px}
header{border-bottom:1px solid var(--line)}h1{font-size:20px;margin:0 0 4px}h2{font-size:16px;margin:24px 0 8px}
.muted{color:var(--muted)}.grid{display:grid;grid-template-columns:minmax(0,3fr) minmax(0,2fr);gap:24px}
table{border-collapse:collapse;width:100%}td,th{padding:3px 8px;border-bottom:1px solid var(--line);
text-align:left;vertical-align:top}th{font-weight:600}td.n{text-align:right;font-variant-numeric:tabular-nums}
.sev{display:inline-block;min-width:58px;padding:0 6px;border-radius:9px;color:#fff;font-size:12px;text-align:center}
.sev.error{background:#c62828}.sev.warning{background:#ef8f00}.sev.info{background:#1e88e5}
#filters{position:sticky;top:0;background:var(--bg);padding:8px 0;border-bottom:1px solid var(--line);z-index:1}
#filters label{margin-right:10px;white-space:nowrap}#filters fieldset{display:inline;border:0;margin:0 16px 0 0;padding:0}
.finding{border:1px solid var(--line);border-radius:6px;margin:10px 0;padding:10px 12px}
.finding .head{font-weight:600}.finding .loc{font-family:ui-monospace,SFMono-Regular,Menlo,monospace;font-size:12px}
pre.frame{background:var(--code);padding:6px 8px;margin:8px 0;overflow-x:auto;font-size:12px;line-height:1.4}
pre.frame .hit{background:#fff3c4;display:block}pre.frame .ln{color:var(--muted);user-select:none}
.why,.fix,.obj{margin:4px 0}.fix code{white-space:pre-wrap}
.hidden{display:none}
"""

_JS = """
(function(){
  var boxes=[].slice.call(document.querySelectorAll('#filters input[type=checkbox]'));
  var items=[].slice.call(document.querySelectorAll('.finding'));
  function chosen(kind){return boxes.filter(function(b){return b.dataset.kind===kind&&b.checked})
    .map(function(b){return b.value})}
  function apply(){
    var sev=chosen('severity'),fam=chosen('family'),shown=0;
    items.forEach(function(el){
      var on=sev.indexOf(el.dataset.severity)>=0&&fam.indexOf(el.dataset.family)>=0;
      el.classList.toggle('hidden',!on);if(on)shown++;});
    document.getElementById('shown').textContent=shown;
    document.body.dataset.shown=shown;
  }
  function fromHash(){
    var h=decodeURIComponent(location.hash.replace(/^#/,'')),want={};
    h.split('&').forEach(function(kv){var p=kv.split('=');if(p.length===2&&p[1])want[p[0]]=p[1].split(',')});
    boxes.forEach(function(b){var w=want[b.dataset.kind];b.checked=!w||w.indexOf(b.value)>=0;
      b.toggleAttribute('checked',b.checked)});
    apply();
  }
  function toHash(){
    var parts=[];['severity','family'].forEach(function(k){
      var all=boxes.filter(function(b){return b.dataset.kind===k}),on=chosen(k);
      if(on.length!==all.length)parts.push(k+'='+on.join(','));});
    history.replaceState(null,'',parts.length?'#'+parts.join('&'):location.pathname+location.search);
    apply();
  }
  boxes.forEach(function(b){b.addEventListener('change',toHash)});
  window.addEventListener('hashchange',fromHash);
  fromHash();
  document.body.dataset.ready=Math.round(performance.now());  // ms from navigation to a filtered page
})();
"""


def _e(text: Any) -> str:
    return html.escape(str(text), quote=True)


def _chart(by_family: dict[str, Counter[str]]) -> str:
    """Stacked bars per family (errors, warnings, info), inline SVG with a legend."""
    fams = sorted(by_family, key=lambda f: (-sum(by_family[f].values()), f))
    if not fams:
        return '<p class="muted">No findings.</p>'
    top = max(sum(c.values()) for c in by_family.values())
    bar, gap, height, left, base = 34, 14, 180, 36, 24
    width = left + len(fams) * (bar + gap) + 10
    out = [
        f'<svg id="chart" role="img" aria-label="findings by family and severity" '
        f'viewBox="0 0 {width} {height + base + 22}" width="{width}" height="{height + base + 22}" '
        'xmlns="http://www.w3.org/2000/svg" font-size="11" font-family="system-ui,sans-serif">'
    ]
    for frac in (0.5, 1.0):
        y = height - height * frac + 10
        out.append(f'<line x1="{left}" x2="{width}" y1="{y:.1f}" y2="{y:.1f}" stroke="#e3e6eb"/>')
        out.append(f'<text x="{left - 4}" y="{y + 4:.1f}" text-anchor="end" fill="#5b6472">{round(top * frac)}</text>')
    for i, fam in enumerate(fams):
        x = left + gap / 2 + i * (bar + gap)
        y = height + 10.0
        for sev in SEVERITIES:
            n = by_family[fam][sev]
            if not n:
                continue
            h = height * n / top
            y -= h
            out.append(
                f'<rect class="bar" data-family="{fam}" data-severity="{sev}" x="{x:.1f}" y="{y:.1f}" '
                f'width="{bar}" height="{h:.1f}" fill="{_COLOR[sev]}"><title>{fam} {sev}: {n}</title></rect>'
            )
        total = sum(by_family[fam].values())
        out.append(f'<text x="{x + bar / 2:.1f}" y="{y - 3:.1f}" text-anchor="middle">{total}</text>')
        out.append(f'<text x="{x + bar / 2:.1f}" y="{height + base}" text-anchor="middle">{fam}</text>')
    lx = left
    for sev in SEVERITIES:
        out.append(f'<rect x="{lx}" y="{height + base + 8}" width="10" height="10" fill="{_COLOR[sev]}"/>')
        out.append(f'<text x="{lx + 14}" y="{height + base + 17}">{sev}</text>')
        lx += 80
    out.append("</svg>")
    return "".join(out)


def _frame(f: Finding, result: Any) -> str:
    src = frame_source(result, f.file)  # masked; None for a file that is not a manifest
    if src is None:
        return ""
    total = len(src.line_starts)
    if not 1 <= f.span.line <= total:
        return ""
    last = min(f.span.end_line if f.span.end_col > 1 else f.span.end_line - 1, f.span.line + 6)
    last = max(last, f.span.line)
    lo, hi = max(1, f.span.line - _CONTEXT), min(total, last + _CONTEXT)
    width = len(str(hi))
    rows = []
    for n in range(lo, hi + 1):
        text = _e(redact_text(src.line_text(n)).expandtabs(2))
        row = f'<span class="ln">{n:>{width}} | </span>{text}'
        rows.append(f'<span class="hit">{row}</span>' if f.span.line <= n <= last else row + "\n")
    return '<pre class="frame">' + "".join(rows) + "</pre>"


def _fix(f: Finding) -> str:
    if f.fix is None:
        return ""
    kind = "fix" if f.fix.applicability.value == "safe" else "fix (unsafe, needs --unsafe-fixes)"
    return f'<div class="fix"><b>{_e(kind)}:</b> {_e(redact_text(f.fix.title))}</div>'


def _finding(f: Finding, result: Any, index: int, verbose: bool) -> str:
    from ailint.report.explain import explanation, severity_reason

    sev = f.severity.value
    reason = severity_reason(f)
    label = f"{sev} ({reason})" if reason else sev
    where = f"{f.file}:{f.span.line}:{f.span.col}"
    parts = [
        f'<section class="finding" id="f{index}" data-severity="{sev}" data-family="{_e(f.code[:3])}" '
        f'data-code="{_e(f.code)}">',
        f'<div class="head"><span class="sev {sev}" title="{_e(label)}">{sev}</span> '
        f'{_e(f.code)} <span class="muted">{_e(f.name)}</span></div>',
        f'<div class="loc">{_e(where)}</div>',
        f'<div class="msg">{_e(redact_text(f.message))}</div>',
    ]
    if reason:
        parts.append(f'<div class="muted">{_e(sev)} because: {_e(reason)}</div>')
    if f.object_ref is not None:
        tpl = f" (from {f.object_ref.template})" if f.object_ref.template else ""
        parts.append(f'<div class="obj muted">in {_e(f.object_ref.label() + tpl)}</div>')
    parts.append(_frame(f, result))
    why = explanation(f, verbose=verbose)
    if why:
        parts.append(f'<div class="why"><b>why:</b> {_e(why)}</div>')
    parts.append(_fix(f))
    if not f.code.startswith(("YML", "AIL")):
        url = DOCS_URI.format(code=f.code)
        parts.append(
            f'<div class="docs"><a href="{_e(url)}">docs: {_e(f.code)}</a> · <code>ailint rule {_e(f.code)}</code></div>'
        )
    parts.append("</section>")
    return "".join(p for p in parts if p)


def render(result: Any, verbose: bool = True, **_: Any) -> str:
    """The whole page. The why is the rule's whole explanation unless `verbose=False`."""
    result = redact_result(result)  # no secret value in any output (ailint.report.common)
    findings: list[Finding] = list(result.findings)
    by_family: dict[str, Counter[str]] = {}
    by_rule: Counter[str] = Counter()
    by_file: Counter[str] = Counter()
    names: dict[str, str] = {}
    sev_total: Counter[str] = Counter()
    for f in findings:
        by_family.setdefault(f.code[:3], Counter())[f.severity.value] += 1
        by_rule[f.code] += 1
        by_file[f.file] += 1
        names[f.code] = f.name
        sev_total[f.severity.value] += 1
    fixable = sum(1 for f in findings if f.fix is not None)
    files = len(result.files)
    summary = (
        f"{len(findings)} finding{'s' if len(findings) != 1 else ''} in {files} file{'s' if files != 1 else ''} "
        f"({', '.join(f'{sev_total[s]} {s}' + ('s' if sev_total[s] != 1 and s != 'info' else '') for s in SEVERITIES)}); "
        f"{fixable} fixable"
    )
    if files == 0:
        summary = "Nothing linted: no files found."
    top_rules = "".join(
        f'<tr><td>{_e(c)}</td><td>{_e(names[c])}</td><td class="n">{n}</td></tr>' for c, n in by_rule.most_common(10)
    )
    top_files = "".join(f'<tr><td>{_e(p)}</td><td class="n">{n}</td></tr>' for p, n in by_file.most_common(10))
    fam_boxes = "".join(
        f'<label><input type="checkbox" data-kind="family" value="{_e(fam)}" checked> {_e(fam)} '
        f'<span class="muted">{sum(by_family[fam].values())}</span></label>'
        for fam in sorted(by_family)
    )
    sev_boxes = "".join(
        f'<label><input type="checkbox" data-kind="severity" value="{s}" checked> '
        f'<span class="sev {s}">{s}</span> <span class="muted">{sev_total[s]}</span></label>'
        for s in SEVERITIES
    )
    body = "".join(_finding(f, result, i, verbose) for i, f in enumerate(findings))
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:">
<title>ailint report: {_e(summary)}</title>
<style>{_CSS}</style></head>
<body data-total="{len(findings)}">
<header><h1>ailint report</h1><div id="summary">{_e(summary)}</div>
<div class="muted">ailint {_e(__version__)}</div></header>
<main>
<div class="grid"><div><h2>Findings by family and severity</h2>{_chart(by_family)}</div>
<div><h2>Top rules</h2><table id="top-rules"><tr><th>code</th><th>rule</th><th>findings</th></tr>{top_rules}</table>
<h2>Top files</h2><table id="top-files"><tr><th>file</th><th>findings</th></tr>{top_files}</table></div></div>
<h2>Findings (<span id="shown">{len(findings)}</span> shown)</h2>
<form id="filters" onsubmit="return false"><fieldset><legend class="muted">severity</legend>{sev_boxes}</fieldset>
<fieldset><legend class="muted">family</legend>{fam_boxes}</fieldset></form>
<div id="findings">{body}</div>
</main>
<script>{_JS}</script>
</body></html>
"""
