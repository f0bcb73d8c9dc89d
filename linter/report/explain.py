"""The `why:` of a finding: whole sentences of its rule's "Why is this bad?", never cut.

A rule that checks several conditions documents each; the sentence shown is the one that
best matches the finding (its message and the field it points at), so the finding about a
missing deadline explains deadlines, not `shutdownAfterJobFinishes`. Text output shows that
sentence (and the next when it is short); `--verbose`, the HTML report and `ailint rule CODE`
show the whole section.
"""

from __future__ import annotations

import re
from functools import lru_cache

from ailint.core.model import Finding

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable

# abbreviations that end in a dot without ending a sentence
_ABBREV = ("e.g.", "i.e.", "etc.", "vs.", "cf.", "approx.", "incl.", "No.", "Fig.", "p.")
_SPLIT = re.compile(r"(?<=[.!?])[\"')\]]?\s+(?=[A-Z0-9`(\"'*_\[])")
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9_./-]*[A-Za-z0-9]")
_STOP_WORDS = (
    "the and but not for with from that this than then they them when where which while will "
    "into onto over under your have been does every only also such some more most many much "
    "none nothing its it's their there here what whom whose would could should can cannot "
    "set unset default"
)
_STOP = frozenset(_STOP_WORDS.split())


def _plain(markdown: str) -> str:
    """Markdown of a docstring section as one line of plain text (code blocks dropped)."""
    text = re.sub(r"```.*?```", " ", markdown, flags=re.S) if "```" in markdown else markdown
    if "](" in text:
        text = _LINK.sub(_label, text)  # [label](url) -> label
    if text.count("`") % 2 == 0:
        # each backtick pairs with the next one, as `([^`]*)` pairs them: all of them go
        # (a template's `\1` is expanded in Python per match: 1,800 spans in the rules' docs)
        text = text.replace("`", "")
    else:
        text = _CODE_SPAN.sub(_label, text)
    text = re.sub(r"^\s*[-*]\s+", "", text, flags=re.M)
    return " ".join(text.split())


_LINK = re.compile(r"\[([^\]]+)\]\([^)]*\)")
_CODE_SPAN = re.compile(r"`([^`]*)`")


def _label(m: re.Match[str]) -> str:
    return m.group(1)


def sentences(markdown: str) -> list[str]:
    """Whole sentences of a section; a dot in `e.g.`, `1.5` or `v0.9.2` ends none."""
    text = _plain(markdown)
    if not text:
        return []
    protected = text
    for i, ab in enumerate(_ABBREV):
        protected = protected.replace(ab + " ", f"{ab[:-1]}\x00{i} ")
    parts = _SPLIT.split(protected)
    out = []
    for p in parts:
        for i, ab in enumerate(_ABBREV):
            p = p.replace(f"{ab[:-1]}\x00{i} ", ab + " ")
        p = p.strip()
        if p:
            out.append(p)
    return out


@lru_cache(maxsize=512)
def _section(code: str) -> str:
    from ailint.engine.registry import all_rules

    reg = all_rules().get(code)
    if reg is None:
        return ""
    return reg.sections.get("Why is this bad?", "")


@lru_cache(maxsize=512)
def _sentences_of(code: str) -> tuple[str, ...]:
    return tuple(sentences(_section(code)))


def _terms(f: Finding) -> dict[str, int]:
    """Words of the finding weighted: field names and identifiers count more than prose."""
    weights: dict[str, int] = {}
    fields = [step for step in f.path if isinstance(step, str)]
    if fields and len(fields[-1]) > 2:  # the field the finding points at (not spec, template...)
        weights[fields[-1].lower()] = 4
    # what the finding says, not what it suggests: a message ends in "; <what to do>"
    said = f.message.split("; ", 1)[0]
    for word in _WORD.findall(said):
        low = word.lower().rstrip(".")
        if len(low) < 4 or low in _STOP:
            continue
        ident = any(c.isupper() for c in word[1:]) or any(c in word for c in "._/") or any(c.isdigit() for c in word)
        weights[low] = max(weights.get(low, 0), 3 if ident else 1)
        if ident:  # activeDeadlineSeconds also speaks of a "deadline"
            for part in re.findall(r"[A-Z]?[a-z]{4,}", word):
                weights.setdefault(part.lower(), 1)
    return weights


@lru_cache(maxsize=4096)
def _sentence_words(sentence: str) -> tuple[frozenset[str], frozenset[str]]:
    """A why sentence's words, lower-cased, and their 7-letter stems (each rule's few
    sentences are scored against every finding of the rule)."""
    words = frozenset(w.lower().rstrip(".") for w in _WORD.findall(sentence))
    return words, frozenset(w[:7] for w in words if len(w) >= 7)


def _score(sentence: str, terms: dict[str, int]) -> int:
    # a stem match ("deadline" / "deadlines") counts as a word match
    words, stems = _sentence_words(sentence)
    total = 0
    for t, weight in terms.items():
        if t in words or (len(t) >= 7 and t[:7] in stems):
            total += weight
    return total


def _pinned(f: Finding, sents: tuple[str, ...]) -> int | None:
    """The sentence the rule names for the condition that fired (`Rule.why_when`), if any."""
    from ailint.engine.registry import all_rules

    reg = all_rules().get(f.code)
    for pattern, opening in reg.rule.why_when if reg is not None else ():
        if re.search(pattern, f.message):
            opening = _plain(opening)
            for i, s in enumerate(sents):
                if s.startswith(opening):
                    return i
            return None  # a stale opening: the guard test reports it
    return None


def explanation(f: Finding, verbose: bool = False) -> str:
    """The why of `f`: the whole section with `verbose`, else its best sentence or two."""
    if verbose:
        return " ".join(_sentences_of(f.code))
    sents = _sentences_of(f.code)
    if not sents:
        return ""
    pinned = _pinned(f, sents)
    pick = 0 if pinned is None else pinned
    if pinned is None and len(sents) > 1:
        terms = _terms(f)
        scores = [_score(s, terms) for s in sents]
        best = max(range(len(sents)), key=lambda i: (scores[i], -i))
        # leave the lead sentence only for a clearly better match
        if scores[best] >= 3 and scores[best] >= 2 * max(scores[0], 1):
            pick = best
    out = sents[pick]
    if len(out) < 90 and pick + 1 < len(sents) and len(out) + len(sents[pick + 1]) <= 260:
        out += " " + sents[pick + 1]
    return out


_SEV_CLAUSE = r"\b(?:an?\s+|is\s+|as\s+|to\s+|Severity:\s+)?{sev}s?\b[,:]?\s+((?:only\s+)?(?:when|for|if|with|on|in|unless|because|while|where|once|at)\b[^.;]*)"
_CLAUSE_END = re.compile(r",?\s+(?:and|or|but)\s+(?:an?\s+|as\s+)?(?:error|warning|info)s?\b.*$|\s*\([^)]*$")


@lru_cache(maxsize=1024)
def _doc_clause(code: str, severity: str) -> str | None:
    """The condition the rule's doc states for `severity` (`clause_in_doc`): as the rule
    index kept it (`RegisteredRule.clauses`), else found in the doc now."""
    from ailint.engine.registry import all_rules

    reg = all_rules().get(code)
    if reg is None:
        return None
    if reg.clauses is not None:
        return reg.clauses.get(severity)
    return clause_in_doc(reg.doc, severity)


def clause_in_doc(doc: str, severity: str) -> str | None:
    """`when the job has 2 or more accelerator worker pods`: where a rule's doc says when a
    finding gets `severity` ("... and an error when ..."), that condition."""
    return _clause_in_text(_plain(doc), severity)


def clauses_in_doc(doc: str, severities: Iterable[str]) -> dict[str, str]:
    """`clause_in_doc` for each of `severities` that has a clause, the doc made plain once.

    The rule index asks this of every rule on a run with no index yet (the first after an
    install: a CI runner's every run). Asked one severity at a time, with each doc made plain
    three times, it took 76 ms of that run's start; a severity an ASCII doc never names
    (the pattern needs the word, in any case) is not searched for."""
    text = _plain(doc)
    lowered = text.lower() if text.isascii() else None  # (Unicode case folding: search it all)
    found: dict[str, str] = {}
    for sev in severities:
        if lowered is not None and sev.lower() not in lowered:
            continue
        clause = _clause_in_text(text, sev)
        if clause is not None:
            found[sev] = clause
    return found


def _clause_in_text(text: str, severity: str) -> str | None:
    for m in re.finditer(_SEV_CLAUSE.format(sev=severity), text, flags=re.I):
        clause = _CLAUSE_END.sub("", m.group(1))
        while True:  # asides in parentheses stay in the doc, out of the one-line reason
            shorter = re.sub(r"\s*\([^()]*\s[^()]*\)", "", clause)
            if shorter == clause:
                break
            clause = shorter
        clause = clause.strip(" ,:")
        if len(clause) > 8:
            return clause
    return None


def severity_reason(f: Finding) -> str | None:
    """Why `f` is printed at a severity other than its rule's documented one: the reason the
    rule gave, else the condition its doc states for that severity. None when it is the
    documented severity (or the rule is unknown)."""
    given = getattr(f, "severity_reason", None)
    if given:
        return str(given)
    from ailint.engine.registry import all_rules

    reg = all_rules().get(f.code)
    if reg is None or reg.rule.severity == f.severity:
        return None
    return _doc_clause(f.code, f.severity.value)
