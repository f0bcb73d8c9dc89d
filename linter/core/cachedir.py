"""ailint's cache folder as a place to trust: private to its owner, with one MAC key.

The results cache (`ailint.engine.cache`) and the compiled dataclass methods
(`ailint.core.codecache`) both keep what they write there, behind a keyed BLAKE2b MAC whose
key is this folder's `secret`: an entry another user or a torn write produced is never read.
Nothing here imports more than `os`, so the code table can be read before any dataclass of
ailint exists.
"""

from __future__ import annotations

import os


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
