"""The on-disk kernel cache: where it is, its size bound, clearing it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from engine.runtime.emu import cache


def test_location_follows_the_environment(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setenv("FUSESCOPE_CACHE", str(tmp_path / "override"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache.cache_root() == tmp_path / "override"
    monkeypatch.delenv("FUSESCOPE_CACHE")
    assert cache.cache_root() == tmp_path / "xdg" / "fusescope"
    assert cache.cache_dir("emulate") == tmp_path / "xdg" / "fusescope" / "emulate"
    assert (tmp_path / "xdg" / "fusescope" / "emulate").is_dir()
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/path")  # invalid per the XDG spec: ignored
    assert cache.cache_root() == Path.home() / ".cache" / "fusescope"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert cache.cache_root() == Path.home() / ".cache" / "fusescope"


def test_size_bound_from_the_environment(monkeypatch) -> None:
    monkeypatch.delenv(cache.MAX_MB_ENV, raising=False)
    assert cache.max_bytes() == cache.DEFAULT_MAX_MB * 2**20
    monkeypatch.setenv(cache.MAX_MB_ENV, "1.5")
    assert cache.max_bytes() == int(1.5 * 2**20)
    monkeypatch.setenv(cache.MAX_MB_ENV, "0")
    assert cache.max_bytes() == 0
    monkeypatch.setenv(cache.MAX_MB_ENV, "lots")
    with pytest.raises(ValueError, match="FUSESCOPE_CACHE_MAX_MB"):
        cache.max_bytes()


def _file(path: Path, size: int, mtime: float) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"x" * size)
    os.utime(path, (mtime, mtime))
    return path


def test_prune_removes_the_least_recently_used_first(tmp_path: Path) -> None:
    old = _file(tmp_path / "old.so", 400, 1000)
    used = _file(tmp_path / "used.so", 400, 1001)
    new = _file(tmp_path / "pch" / "new.h.gch", 400, 3000)
    cache.touch(used)  # a cache hit: now the most recent
    assert cache.prune(tmp_path, 2000) == 0  # within the bound: nothing removed
    assert cache.prune(tmp_path, 900) == 800  # down to 80% of the bound (720): two files go
    assert not old.exists() and not new.exists() and used.exists()
    assert cache.prune(tmp_path, 0) == 0  # 0: unbounded


def test_clear_and_the_command_line(monkeypatch, tmp_path: Path, capsys) -> None:
    monkeypatch.setenv("FUSESCOPE_CACHE", str(tmp_path / "c"))
    _file(cache.cache_dir("emulate") / "k.so", 2**20, 1000)
    assert cache.main([]) == 0
    assert f"{tmp_path / 'c'}: 1.0 MiB" in capsys.readouterr().out
    assert cache.main(["--clear"]) == 0
    assert "removed" in capsys.readouterr().out
    assert not (tmp_path / "c").exists()
