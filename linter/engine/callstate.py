"""The bundle calls a run keeps for the next one (`ailint.engine.tracking`), kept compact.

A large run makes hundreds of thousands of bundle calls (the benchmark's 100 MB tree: 302,368
in 29,215 objects), but few distinct ones: 127 distinct sets of tokens read, and the calls
of one object (which rules, what each read) repeat from object to object, since objects of
a kind meet the same rules. Kept as a dict per object of `code -> (reads, findings)`, that
tree's state took 20 MiB to hold once read and 8.1 MB to write, and an edit rerun held the
state it read beside the one it wrote. Here each distinct set of reads is kept once
(`reads`), each distinct object signature once (`sigs`: the positions of the rules it
called, in rule order, and the index in `reads` of what each call read, both as packed
integers), and per file the signature of each of its objects (packed integers too) with the
findings of the few calls that found something (`{object: {rule position: findings}}`,
marshalled: most of the state's weight, read only for the report, so a rerun holds them as
bytes while its bundle phase forks, and a file whose calls are all reused writes them back
as they were).

The layout is `(LAYOUT, codes, reads, sigs, files)`, `codes` the run's bundle rules in order:
a state written under other rules, or in another layout, is no state (every call runs).
"""

from __future__ import annotations

import marshal
from array import array
from collections.abc import Sequence

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

LAYOUT = "calls-1"
_RULE, _INDEX = "H", "I"  # packed rule positions (a run has under 65,536 bundle rules), indexes
Sig = tuple[bytes, bytes]  # (rule positions, read indexes), packed


def new_calls() -> tuple[array[int], array[int]]:
    """An object's calls as `CallsWriter.signature` takes them, empty: the rule positions it
    is called for, and the read index of each call."""
    return array(_RULE), array(_INDEX)


def _unpacked(code: str, packed: bytes) -> tuple[int, ...]:
    a = array(code)
    a.frombytes(packed)
    return tuple(a)


class StoredCalls:
    """The previous run's calls as stored, for the rules `codes` (empty when it has none, or
    when it was written in another layout or for other rules)."""

    def __init__(self, part: Any, codes: Sequence[str]) -> None:
        self.reads: list[tuple[str, ...]] = []
        self.sigs: list[Sig] = []
        self.files: dict[str, tuple[bytes, bytes | None]] = {}
        self._calls: dict[int, tuple[tuple[int, ...], tuple[int, ...]]] = {}
        self._stale: dict[int, tuple[set[str], frozenset[int]]] = {}
        try:
            layout, stored_codes, reads, sigs, files = part
            if layout != LAYOUT or tuple(stored_codes) != tuple(codes):
                return
            if not (isinstance(reads, list) and isinstance(sigs, list) and isinstance(files, dict)):
                return
            # every signature decoded now (a few hundred): one that names a rule or a read
            # the tables do not hold makes the whole state none, never a call half-known
            calls = {k: (_unpacked(_RULE, rules), _unpacked(_INDEX, read)) for k, (rules, read) in enumerate(sigs)}
        except (TypeError, ValueError):
            return
        for rules_at, read_at in calls.values():
            if len(rules_at) != len(read_at) or any(t >= len(codes) for t in rules_at):
                return
            if any(r >= len(reads) for r in read_at):
                return
        self.reads, self.sigs, self.files, self._calls = reads, sigs, files, calls

    def of_file(self, display: str) -> tuple[int, ...] | None:
        """Per object of the file, the index of its signature; None when nothing is stored."""
        got = self.files.get(display)
        if got is None:
            return None
        try:
            packed, found = got
            sigs = _unpacked(_INDEX, packed)
        except (TypeError, ValueError):
            return None
        if (found is not None and not isinstance(found, bytes)) or (sigs and max(sigs) >= len(self.sigs)):
            return None  # (as a changed file: its objects' calls run again)
        return sigs

    def found(self, display: str) -> dict[int, dict[int, Any]]:
        """The findings of the file's calls that found something, by object and rule
        position ({} when none did; `of_file` said the file's entry is whole)."""
        blob = self.files[display][1]
        if blob is None:
            return {}
        got = marshal.loads(blob)
        return got if isinstance(got, dict) else {}

    def calls(self, sig: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """The rule positions an object of signature `sig` was called for, in rule order,
        and the index of what each call read."""
        return self._calls[sig]

    def stale_reads(self, touched: set[str], stale: Any) -> frozenset[int]:
        """The indexes of the stored reads that changes touching `touched` make stale
        (`stale(read, touched)`), worked out once per set (a project's)."""
        held = self._stale.get(id(touched))
        if held is None or held[0] is not touched:
            held = self._stale[id(touched)] = (
                touched,
                frozenset(k for k, read in enumerate(self.reads) if stale(read, touched)),
            )
        return held[1]

    def points_into(self) -> set[str]:
        """The files that a stored finding of a call on another file's object points into."""
        out: set[str] = set()
        for d in self.files:
            for per_rule in self.found(d).values():
                for findings in per_rule.values():
                    for f in findings:
                        if isinstance(f, (tuple, list)) and len(f) > 4 and f[4] != d:
                            out.add(f[4])
        return out


class CallsWriter:
    """The calls of this run, as the next one reads them (`part`). The previous run's reads
    and signatures keep their indexes, so an object whose calls are all reused keeps its
    signature as it was; the tables are rebuilt from what is used once most of them is not."""

    def __init__(self, prev: StoredCalls, codes: Sequence[str]) -> None:
        self.codes = tuple(codes)
        self.reads = list(prev.reads)
        self._read_at = {r: k for k, r in enumerate(self.reads)}
        self.sigs = list(prev.sigs)
        self._sig_at = {s: k for k, s in enumerate(self.sigs)}
        self.files: dict[str, tuple[bytes, bytes | None]] = {}
        self._used: set[int] = set()

    def read_index(self, read: tuple[str, ...]) -> int:
        k = self._read_at.get(read)
        if k is None:
            k = self._read_at[read] = len(self.reads)
            self.reads.append(read)
        return k

    def signature(self, rules: array[int], reads: array[int]) -> int:
        """The index of the signature of an object called for `rules` (positions, in rule
        order) that read `reads` (indexes in `reads`), made by `new_calls`."""
        sig = (rules.tobytes(), reads.tobytes())
        k = self._sig_at.get(sig)
        if k is None:
            k = self._sig_at[sig] = len(self.sigs)
            self.sigs.append(sig)
        return k

    def add_file(self, display: str, sigs: Sequence[int], found: dict[int, dict[int, Any]]) -> None:
        self.files[display] = (array(_INDEX, sigs).tobytes(), marshal.dumps(found) if found else None)
        self._used.update(sigs)

    def keep_file(self, display: str, prev: StoredCalls, sigs: Sequence[int]) -> None:
        """The file's entry as the previous run stored it (every call of it reused)."""
        self.files[display] = prev.files[display]
        self._used.update(sigs)

    def part(self) -> tuple[Any, ...]:
        if len(self.sigs) > 2 * len(self._used) + 256:  # mostly what earlier runs left: rebuilt
            self._compact(self._used)
        return (LAYOUT, self.codes, self.reads, self.sigs, self.files)

    def _compact(self, used: set[int]) -> None:
        sig_map: dict[int, int] = {}
        read_map: dict[int, int] = {}
        sigs: list[Sig] = []
        reads: list[tuple[str, ...]] = []
        for k in sorted(used):
            rules, packed_reads = self.sigs[k]
            new_reads = array(_INDEX)
            for r in _unpacked(_INDEX, packed_reads):
                if r not in read_map:
                    read_map[r] = len(reads)
                    reads.append(self.reads[r])
                new_reads.append(read_map[r])
            sig_map[k] = len(sigs)
            sigs.append((rules, new_reads.tobytes()))
        self.files = {
            d: (array(_INDEX, (sig_map[k] for k in _unpacked(_INDEX, packed))).tobytes(), found)
            for d, (packed, found) in self.files.items()
        }
        self.sigs, self.reads = sigs, reads
