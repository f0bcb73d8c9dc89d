"""The cache folder is one fact: the results cache and the rule index use the same folder."""

from __future__ import annotations

import os

from ailint.core.paths import user_cache_dir
from ailint.engine import cache, registry


def test_cache_folder_precedence(monkeypatch, tmp_path):
    monkeypatch.delenv("AILINT_NO_CACHE", raising=False)
    monkeypatch.setenv("AILINT_CACHE_DIR", str(tmp_path / "a"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "x"))
    assert user_cache_dir() == str(tmp_path / "a")
    monkeypatch.delenv("AILINT_CACHE_DIR")
    assert user_cache_dir() == os.path.join(str(tmp_path / "x"), "ailint")
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "h"))
    assert user_cache_dir() == os.path.join(str(tmp_path / "h"), ".cache", "ailint")


def test_results_cache_and_rule_index_share_the_folder(monkeypatch, tmp_path):
    monkeypatch.delenv("AILINT_NO_CACHE", raising=False)
    monkeypatch.setenv("AILINT_CACHE_DIR", str(tmp_path))
    index = registry._index_file()  # named by cachedir.kept_file, as every index of ailint's code
    assert index is not None
    assert cache.default_dir() == os.path.dirname(index) == str(tmp_path)
    monkeypatch.setenv("AILINT_NO_CACHE", "1")
    assert registry._index_file() is None
