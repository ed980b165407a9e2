"""The on-disk cache of compiled kernels, shared by every process of a user.

Location: `$FUSESCOPE_CACHE` when set, else `$XDG_CACHE_HOME/fusescope`, else
`~/.cache/fusescope`; one folder per kind (emulate, nvcc, cubin, ...). Entries are
named by a hash of everything that went into them, written under a temporary name
and renamed into place, so concurrent processes share them safely.

The emulator's folder is bounded: once it holds more than `$FUSESCOPE_CACHE_MAX_MB`
(default DEFAULT_MAX_MB) the least recently used files are removed. A hit touches its
file, so the files removed are those no run has needed for longest.

    python -m engine.runtime.emu.cache           # where the cache is and its size
    python -m engine.runtime.emu.cache --clear   # remove everything in it
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from pathlib import Path

CACHE_ENV = "FUSESCOPE_CACHE"
MAX_MB_ENV = "FUSESCOPE_CACHE_MAX_MB"
DEFAULT_MAX_MB = 2048
# After pruning a folder holds at most this fraction of its bound, so that it is not pruned
# again at the next new entry.
_PRUNE_TO = 0.8


def cache_root() -> Path:
    """`$FUSESCOPE_CACHE`, else `$XDG_CACHE_HOME/fusescope`, else `~/.cache/fusescope`."""
    root = os.environ.get(CACHE_ENV)
    if root:
        return Path(root).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    # The XDG spec: a relative path is invalid and is to be ignored.
    base = Path(xdg) if xdg and os.path.isabs(xdg) else Path.home() / ".cache"
    return base / "fusescope"


def cache_dir(kind: str) -> Path:
    """`cache_root()/KIND`, created on demand."""
    path = cache_root() / kind
    path.mkdir(parents=True, exist_ok=True)
    return path


def max_bytes() -> int:
    """The bound on the emulator's folder: `$FUSESCOPE_CACHE_MAX_MB` MiB (0 or less: unbounded)."""
    text = os.environ.get(MAX_MB_ENV, "").strip()
    try:
        mb = float(text) if text else DEFAULT_MAX_MB
    except ValueError:
        raise ValueError(f"{MAX_MB_ENV}={text!r} is not a number of MiB") from None
    return int(mb * 2**20) if mb > 0 else 0


def touch(path: Path) -> None:
    """Mark a cache entry as used now (pruning removes the least recently used first)."""
    try:
        os.utime(path)
    except OSError:
        pass  # removed meanwhile by another process's pruning; the caller has it loaded or rebuilds


def _files(folder: Path) -> list[tuple[float, int, Path]]:
    """(mtime, size, path) of every file under `folder`, temporary files included."""
    out: list[tuple[float, int, Path]] = []
    for dirpath, _, names in os.walk(folder):
        for name in names:
            path = Path(dirpath, name)
            try:
                st = path.stat()
            except OSError:
                continue
            out.append((st.st_mtime, st.st_size, path))
    return out


def prune(folder: Path, limit: int) -> int:
    """Remove the least recently used files of `folder` while it holds more than `limit`
    bytes, down to a fraction of it; returns the bytes removed. `limit` 0: nothing removed.
    A file another process has open (a library it loaded) stays usable to it."""
    if limit <= 0:
        return 0
    files = _files(folder)
    total = sum(size for _, size, _ in files)
    if total <= limit:
        return 0
    removed = 0
    for _, size, path in sorted(files):
        if total - removed <= limit * _PRUNE_TO:
            break
        try:
            path.unlink()
        except OSError:
            continue
        removed += size
    return removed


def size_of(folder: Path) -> int:
    return sum(size for _, size, _ in _files(folder)) if folder.exists() else 0


def clear(kind: str | None = None) -> Path:
    """Remove the cache (or one kind's folder of it); returns what was removed."""
    path = cache_root() / kind if kind else cache_root()
    shutil.rmtree(path, ignore_errors=True)
    return path


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m engine.runtime.emu.cache",
                                description="Where fusescope's kernel cache is, and how big; --clear empties it.")
    p.add_argument("--clear", action="store_true", help="remove every cached kernel and header")
    args = p.parse_args(argv)
    root = cache_root()
    if args.clear:
        size = size_of(root)
        print(f"removed {clear()} ({size / 2**20:.1f} MiB)")
        return 0
    print(f"{root}: {size_of(root) / 2**20:.1f} MiB (bound for emulate/: {max_bytes() / 2**20:.0f} MiB, "
          f"${MAX_MB_ENV}; location: ${CACHE_ENV} or $XDG_CACHE_HOME)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
