"""ailint's cache folder as a place to trust: private to its owner, with one MAC key.

The results cache (`ailint.engine.cache`) and the compiled start-up code (dataclass methods
and pattern programs, `ailint.core.codecache`) both keep what they write there, behind a keyed BLAKE2b MAC whose
key is this folder's `secret`: an entry another user or a torn write produced is never read.
`sealed` and `opened` put that MAC on and check it (`write_sealed` and `read_sealed` for a
file of the folder); `write_private` writes a file whole or not at all; `kept_file` and
`keep` name and write the files derived from a key (the rule and family indexes, the kept
scan of the Kubernetes definitions, the plugin entry points). Nothing here imports more than `os` and `_blake2`, so the code table can be read
before any dataclass of ailint exists.
"""

from __future__ import annotations

import os
from collections.abc import Iterable

from ailint.core.digest import blake2b, compare_digest

MAC_BYTES = 32


def mac(key: bytes, parts: Iterable[bytes | memoryview]) -> bytes:
    """The keyed BLAKE2b of `parts` joined (fed one by one: nothing is copied)."""
    h = blake2b(key=key, digest_size=MAC_BYTES)
    for part in parts:
        h.update(part)
    return h.digest()


def sealed(magic: bytes, key: bytes, payload: bytes, context: bytes = b"") -> list[bytes]:
    """The pieces of a sealed file: `magic`, the MAC of `context + payload`, the payload
    (`context`, such as an entry's key, is covered by the MAC but not written)."""
    return [magic, mac(key, (context, payload)), payload]


def opened(magic: bytes, key: bytes, blob: bytes, context: bytes = b"") -> memoryview | None:
    """The payload of a file `sealed` wrote, or None when it is short, of another kind, or
    its MAC does not match (torn, foreign, tampered with)."""
    n = len(magic)
    if len(blob) < n + MAC_BYTES or blob[:n] != magic:
        return None
    payload = memoryview(blob)[n + MAC_BYTES :]
    if not compare_digest(blob[n : n + MAC_BYTES], mac(key, (context, payload))):
        return None
    return payload


def read_sealed(path: str, magic: bytes, context: bytes = b"") -> memoryview | None:
    """The payload of the file `write_sealed` wrote at `path` in the cache folder, or None
    when there is none, or it is torn, foreign or unreadable (never an error)."""
    key = read_secret(os.path.dirname(path))
    if key is None:
        return None
    try:
        with open(path, "rb") as fh:
            return opened(magic, key, fh.read(), context)
    except OSError:
        return None


def write_sealed(path: str, magic: bytes, payload: bytes, context: bytes = b"", older: int | None = None) -> None:
    """Keep `payload` at `path` in the cache folder behind the folder's MAC (`keep`, with
    `older` as it takes it); never an error: what is not kept is worked out again."""
    directory = os.path.dirname(path)
    try:
        private_dir(directory)
        pieces = sealed(magic, secret(directory), payload, context)
    except (OSError, ValueError):
        return
    keep(path, pieces, older=older)


def write_private(path: str, pieces: Iterable[bytes]) -> None:
    """Write `pieces` to `path` (0600) whole or not at all: into a temporary file beside it,
    renamed into place. OSError when it cannot; no temporary file is left either way."""
    tmp = f"{path}.{os.getpid()}.{os.urandom(4).hex()}.tmp"
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as fh:
            for piece in pieces:
                fh.write(piece)
        os.replace(tmp, path)
    except BaseException:
        unlink(tmp)
        raise


def kept_file(prefix: str, key: bytes, suffix: str) -> str | None:
    """The file in the cache folder that what was derived from `key` is kept in
    (`<prefix>-<crc>-<length><suffix>`); None when `AILINT_NO_CACHE` is set."""
    if os.environ.get("AILINT_NO_CACHE"):
        return None
    from binascii import crc32  # zlib's CRC-32, from a module a run loads anyway (base64)

    from ailint.core.paths import user_cache_dir

    return os.path.join(user_cache_dir(), f"{prefix}-{crc32(key):08x}-{len(key):x}{suffix}")


def keep(path: str, pieces: Iterable[bytes], older: int | None = None) -> None:
    """Write a `kept_file` whole (owner-only, in the private folder); with `older`, keep only
    that many other files of its prefix, newest first (keys of older code: several checkouts
    may share the folder). Never an error: what is not kept is derived again next time."""
    directory, name = os.path.split(path)
    try:
        private_dir(directory)
        if older is not None:
            prefix, suffix = name.split("-", 1)[0] + "-", os.path.splitext(name)[1]
            others = sorted(
                (
                    os.path.join(directory, f)
                    for f in os.listdir(directory)
                    if f.startswith(prefix) and f.endswith(suffix)
                ),
                key=lambda f: os.stat(f).st_mtime,
                reverse=True,
            )
            for f in others[older:]:
                unlink(f)
        write_private(path, pieces)
    except (OSError, ValueError):
        pass


def private_dir(directory: str) -> None:
    """Create `directory` 0700; refuse one that another user owns or others can write."""
    os.makedirs(directory, mode=0o700, exist_ok=True)
    st = os.stat(directory)
    if hasattr(os, "getuid") and st.st_uid != os.getuid():
        raise OSError(f"{directory} belongs to another user")
    if st.st_mode & 0o077:
        os.chmod(directory, 0o700)


def read_secret(directory: str) -> bytes | None:
    """The folder's MAC key when it is there and private to its owner, else None (never made here)."""
    try:
        with open(os.path.join(directory, "secret"), "rb") as fh:
            st = os.fstat(fh.fileno())
            data = fh.read()
    except OSError:
        return None
    if len(data) == 32 and not st.st_mode & 0o077 and (not hasattr(os, "getuid") or st.st_uid == os.getuid()):
        return data
    return None


def secret(directory: str) -> bytes:
    """The folder's MAC key: 32 random bytes in `secret` (0600), created once, atomically."""
    path = os.path.join(directory, "secret")
    for _ in range(2):
        if os.path.exists(path):
            key = read_secret(directory)
            if key is None:
                raise OSError(f"{path}: not a private 32-byte key")
            return key
        tmp = f"{path}.{os.getpid()}.{os.urandom(4).hex()}.tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as fh:
            fh.write(os.urandom(32))
        try:
            os.link(tmp, path)  # fails if another run made one first: then use theirs
        except FileExistsError:
            pass
        finally:
            unlink(tmp)
    raise OSError(f"{path}: cannot create the cache key")


def unlink(path: str) -> None:
    """Remove `path` if it is there (a concurrent run may have removed it first)."""
    try:
        os.unlink(path)
    except OSError:
        pass
