"""BLAKE2 and the constant-time compare, without loading OpenSSL.

`hashlib` and `hmac` import `_hashlib` (OpenSSL), a few milliseconds of a cached one-file
run, for functions that CPython's `_blake2` and `_operator` hold themselves: they are the
same functions `hashlib.blake2b` and `hmac.compare_digest` hand out. Another Python
implementation gets them from `hashlib` and `hmac`.
"""

from __future__ import annotations

try:
    from _blake2 import blake2b
    from _operator import _compare_digest as compare_digest
except ImportError:  # another Python implementation
    from hashlib import blake2b  # type: ignore[assignment]
    from hmac import compare_digest  # type: ignore[no-redef]

__all__ = ["blake2b", "compare_digest"]
