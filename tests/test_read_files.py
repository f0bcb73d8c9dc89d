"""`boundary.open_regular`, the one read of every linted file: whole, bounded, and read on
when the file grew after it was opened."""

from __future__ import annotations

import os

import pytest
from ailint.engine import boundary
from ailint.engine.boundary import FileTooLarge, open_regular

MIB = 1 << 20


@pytest.mark.parametrize("size", [0, 1, 4095, MIB - 1, MIB, MIB + 1, 3 * MIB + 5])
def test_a_file_is_read_whole(tmp_path, size):
    data = os.urandom(size)
    path = tmp_path / "f.yaml"
    path.write_bytes(data)
    assert open_regular(str(path), 8 * MIB) == data


def test_the_limit_bounds_the_read(tmp_path):
    data = os.urandom(MIB + 10)
    path = tmp_path / "f.yaml"
    path.write_bytes(data)
    assert open_regular(str(path), 100) == data[:100]
    assert open_regular(str(path), MIB + 3) == data[: MIB + 3]
    with pytest.raises(FileTooLarge):
        open_regular(str(path), MIB + 11, refuse_over=MIB)


@pytest.mark.parametrize("reported", [0, 10, MIB - 1, MIB])
def test_a_file_that_grew_after_its_stat_is_read_to_its_end(tmp_path, monkeypatch, reported):
    """The first read asks for the stat's size and one byte more: a file that is longer
    than its stat said (it grew between the two) is still read on to its end."""
    data = os.urandom(2 * MIB + 7)
    path = tmp_path / "f.yaml"
    path.write_bytes(data)
    real_fstat = os.fstat

    class Shrunk:
        def __init__(self, st: os.stat_result) -> None:
            self.st_mode, self.st_size = st.st_mode, reported

    monkeypatch.setattr(boundary.os, "fstat", lambda fd: Shrunk(real_fstat(fd)))
    assert open_regular(str(path), 8 * MIB) == data


def test_a_fifo_is_refused_without_blocking(tmp_path):
    if not hasattr(os, "mkfifo"):
        pytest.skip("no FIFOs on this platform")
    path = tmp_path / "pipe.yaml"
    os.mkfifo(path)
    with pytest.raises(OSError, match="not a regular file"):
        open_regular(str(path), MIB)


def test_short_reads_before_the_end_are_read_on(tmp_path, monkeypatch):
    """A read may answer with less than asked before the end (a network or FUSE file
    system): only a short answer that completes the file's size ends the read."""
    data = os.urandom(300_000)
    path = tmp_path / "f.yaml"
    path.write_bytes(data)
    real_read = os.read
    monkeypatch.setattr(boundary.os, "read", lambda fd, n: real_read(fd, min(n, 4096)))
    assert open_regular(str(path), 8 * MIB) == data
