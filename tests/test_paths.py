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


def test_repository_root_walks_the_absolute_or_the_real_path(tmp_path, monkeypatch):
    """One walk up to `.git` serves both: reports name folders by their absolute path (a
    link stays a link), the project boundary by their real one."""
    from ailint.core.paths import repository_root

    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "deploy" / "gpu").mkdir(parents=True)
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    link = outside / "linked"
    link.symlink_to(repo / "deploy")
    assert repository_root(str(repo / "deploy" / "gpu")) == str(repo)
    assert repository_root(str(link)) is None  # `elsewhere/` holds no `.git`
    assert repository_root(str(link), real=True) == os.path.realpath(repo)
    (tmp_path / "wt").mkdir()
    (tmp_path / "wt" / ".git").write_text("gitdir: ../repo/.git/worktrees/wt\n")  # a worktree's file
    monkeypatch.chdir(tmp_path / "wt")
    assert repository_root(".") == str(tmp_path / "wt")
