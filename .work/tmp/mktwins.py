"""Write <case>.fixed.yaml for fixable fixtures of the given codes (helper for me)."""
import sys, pathlib, re, tempfile
sys.path.insert(0, "/work/main/tests")
from fixture_harness import all_cases, run_rule
from ailint.fix import apply_to_text

def strip_markers(text):
    return re.sub(r"[ \t]*#\s*expect(-next-line)?:[^\n]*", "", text)

codes = set(sys.argv[1:])
for case in all_cases():
    if case.code not in codes or case.is_fixed_twin:
        continue
    text = case.path.read_text()
    tmp = pathlib.Path(tempfile.mkdtemp()) / case.path.name
    cur = text
    for _ in range(5):
        tmp.write_text(cur)
        res = run_rule(case.code, tmp)
        fixes = [f.fix for f in res.findings if f.fix is not None and f.code == case.code]
        new, _ = apply_to_text(cur, fixes)
        if new == cur:
            break
        cur = new
    if cur != text:
        case.fixed_twin.write_text(strip_markers(cur))
        print("wrote", case.fixed_twin)
