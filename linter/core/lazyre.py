"""Regular expressions compiled on first use, not at import.

A rule or domain module builds its patterns at import; a run that never looks at what
they match (most one-file runs) should not pay for compiling them. `lazy_re(pattern,
flags)` stands for `re.compile(pattern, flags)`: the first call of a method compiles the
pattern, and from then on the compiled pattern's bound methods answer directly (they are
put on the instance, shadowing the class's methods), so later calls cost what the
compiled pattern's do.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

_METHODS = ("search", "match", "fullmatch", "finditer", "findall", "sub", "subn", "split")


class LazyPattern:
    def __init__(self, pattern: str, flags: int = 0) -> None:
        self.pattern = pattern
        self.flags_given = flags

    def compiled(self) -> re.Pattern[str]:
        p = re.compile(self.pattern, self.flags_given)
        for name in _METHODS:
            self.__dict__[name] = getattr(p, name)
        self.__dict__["compiled"] = lambda: p
        return p

    def search(self, string: str, pos: int = 0, endpos: int = 2**63 - 1) -> re.Match[str] | None:
        return self.compiled().search(string, pos, endpos)

    def match(self, string: str, pos: int = 0, endpos: int = 2**63 - 1) -> re.Match[str] | None:
        return self.compiled().match(string, pos, endpos)

    def fullmatch(self, string: str, pos: int = 0, endpos: int = 2**63 - 1) -> re.Match[str] | None:
        return self.compiled().fullmatch(string, pos, endpos)

    def finditer(self, string: str, pos: int = 0, endpos: int = 2**63 - 1) -> Iterator[re.Match[str]]:
        return self.compiled().finditer(string, pos, endpos)

    def findall(self, string: str, pos: int = 0, endpos: int = 2**63 - 1) -> list[Any]:
        return self.compiled().findall(string, pos, endpos)

    def sub(self, repl: str | Callable[[re.Match[str]], str], string: str, count: int = 0) -> str:
        return self.compiled().sub(repl, string, count)

    def subn(self, repl: str | Callable[[re.Match[str]], str], string: str, count: int = 0) -> tuple[str, int]:
        return self.compiled().subn(repl, string, count)

    def split(self, string: str, maxsplit: int = 0) -> list[str | Any]:
        return self.compiled().split(string, maxsplit)

    @property
    def groups(self) -> int:
        return self.compiled().groups

    @property
    def flags(self) -> int:
        return self.compiled().flags

    def __repr__(self) -> str:
        return f"lazy_re({self.pattern!r})"


def lazy_re(pattern: str, flags: int = 0) -> LazyPattern:
    return LazyPattern(pattern, flags)
