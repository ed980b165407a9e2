"""A g++ precompiled header of cuda_emu.h and the runtime prelude, for the emulator.

Every generated kernel's source begins with the same runtime prelude (the ~2,400 lines of
engine/runtime/headers/*.cuh, engine.runtime.prelude), and g++ force-includes cuda_emu.h
before it. Parsing both is about a third of a kernel's compile. This module precompiles
them once into `pch/fs_pch-KEY.h.gch` in the emulator's cache folder; a kernel is then
compiled as `-include fs_pch-KEY.h` plus the rest of its source, from a `#line` directive
that keeps the kernel's line numbers those of its complete source. The source text itself
is never changed: the split is exactly at the prelude's end.

KEY hashes the header's text, the prelude's, the compile flags and the compiler, so a
changed header or flag gets a new file. g++ silently falls back to the text of `.h` when a
`.gch` is unusable (not a PCH file, built with other flags, a rebuilt compiler with the same
version line): the `.h` holds the complete text, so results stay right, and kernels are
compiled with -Winvalid-pch so that such a fallback is seen (`stale_pch_used`) and the file
removed, to be rebuilt by the next compile. A truncated `.gch` makes g++ fail without naming
it; build.py then compiles the kernel whole and, that succeeding, discards the header. A missing `.gch` is built in a background thread while
kernels compile whole, under a file lock, written under a temporary name, renamed into
place and then checked with `g++ -H` (which marks a used precompiled header with '!').
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import subprocess
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from engine.runtime.emu import HEADER_PATH
from engine.runtime.emu.cache import cache_dir, touch
from engine.runtime.prelude import runtime_prelude

PCH_TAG = "fs-emulate-pch-1"
# Driver options that only the link step reads: left out of the header's compile.
LINK_ONLY_FLAGS = frozenset({"-shared"})
_BUILD_TIMEOUT_S = 600

_checked: set[Path] = set()  # headers this process built or verified
_failed: set[Path] = set()  # headers that did not build here: not tried again by this process
_builds: dict[Path, threading.Thread] = {}  # headers being built in the background
_checked_lock = threading.Lock()


@dataclass(frozen=True)
class Split:
    """A kernel source cut after the runtime prelude: `prefix + rest` is the source, and
    `rest` begins on line `first_line` of it."""

    prefix: str
    rest: str
    first_line: int


def split_source(source: str) -> Split | None:
    """The source cut after the runtime prelude, or None when it does not begin with this
    engine's prelude (hand-written or edited CUDA: compiled whole)."""
    prelude = runtime_prelude()
    if not source.startswith(prelude):
        return None
    return Split(prelude, source[len(prelude):], prelude.count("\n") + 1)


def compile_flags(flags: tuple[str, ...]) -> tuple[str, ...]:
    """`flags` without link-only options: what the header and a kernel's compile share."""
    return tuple(f for f in flags if f not in LINK_ONLY_FLAGS)


def header_text(prefix: str) -> str:
    """The text precompiled: cuda_emu.h, then the prelude (its own file name in diagnostics)."""
    emu = HEADER_PATH.read_text(encoding="utf-8")
    return (f"// fusescope emulator: precompiled cuda_emu.h + runtime prelude\n"
            f'#line 1 "{HEADER_PATH.name}"\n{emu}\n'
            f'#line 1 "fs_runtime_prelude.cu"\n{prefix}')


def header_path(prefix: str, compiler_id: str, flags: tuple[str, ...]) -> Path:
    """Where the header for this prelude, compiler and flags lives (its `.gch` beside it)."""
    text = header_text(prefix)
    key = hashlib.sha256("\0".join([PCH_TAG, compiler_id, " ".join(compile_flags(flags)), text]).encode())
    return cache_dir("emulate") / "pch" / f"fs_pch-{key.hexdigest()[:24]}.h"


def gch_path(header: Path) -> Path:
    return header.with_name(header.name + ".gch")


@contextmanager
def _file_lock(path: Path) -> Iterator[None]:
    """An exclusive lock between processes (and between threads: each opens its own file)."""
    with open(path, "a+b") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def _write_atomic(path: Path, data: str) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(data)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def pch_is_used(header: Path, cxx: str, flags: tuple[str, ...]) -> bool:
    """True when g++ with `flags` uses `header`'s `.gch` (rather than its text)."""
    cmd = [cxx, *compile_flags(flags), "-Winvalid-pch", "-H", "-fsyntax-only", "-include", str(header),
           "-x", "c++", os.devnull]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=_BUILD_TIMEOUT_S)
    first = r.stderr.splitlines()[0] if r.stderr else ""
    return r.returncode == 0 and first.startswith("!") and first.endswith(gch_path(header).name)


def stale_pch_used(header: Path, log: str) -> bool:
    """True when a compile's log (with -Winvalid-pch) says `header`'s `.gch` was not used."""
    name = gch_path(header).name
    return any(name in line for line in log.splitlines())


def discard(header: Path) -> None:
    """Remove an unusable `.gch` (the next compile builds it again)."""
    with _checked_lock:
        _checked.discard(header)
    try:
        gch_path(header).unlink()
    except FileNotFoundError:
        pass


def _build(header: Path, prefix: str, cxx: str, flags: tuple[str, ...]) -> bool:
    """Build and check `header`'s `.gch` (the caller holds the lock); False when it failed."""
    gch = gch_path(header)
    for stale in header.parent.glob(f".{gch.name}.*.tmp"):
        stale.unlink(missing_ok=True)  # left by a builder that was killed (we hold the lock)
    if not header.exists():
        _write_atomic(header, header_text(prefix))
    fd, tmp = tempfile.mkstemp(dir=header.parent, prefix=f".{gch.name}.", suffix=".tmp")
    os.close(fd)
    try:
        cmd = [cxx, *compile_flags(flags), "-x", "c++-header", str(header), "-o", tmp]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=_BUILD_TIMEOUT_S)
        if r.returncode != 0:
            return False  # kernels compile whole, and a kernel's log shows the error
        os.replace(tmp, gch)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    if not pch_is_used(header, cxx, flags):
        gch.unlink(missing_ok=True)
        return False
    return True


def _build_locked(header: Path, prefix: str, cxx: str, flags: tuple[str, ...]) -> None:
    """Build the `.gch` unless another process did meanwhile; record how it went."""
    ok = False
    try:
        with _file_lock(header.with_name(header.name + ".lock")):
            ok = gch_path(header).exists() and header.exists() or _build(header, prefix, cxx, flags)
    finally:
        with _checked_lock:
            (_checked if ok else _failed).add(header)
            _builds.pop(header, None)


def precompiled_header(prefix: str, cxx: str, compiler_id: str, flags: tuple[str, ...]) -> Path | None:
    """The header to `-include` for a kernel whose source begins with `prefix`, when its
    `.gch` is there. When it is not, a background thread builds it (other processes wait
    for the first one's build through a file lock) and this returns None: the kernel is
    compiled whole meanwhile, so a first run never waits for the header. None too when the
    header cannot be built (every kernel of this process is then compiled whole)."""
    header = header_path(prefix, compiler_id, flags)
    gch = gch_path(header)
    with _checked_lock:
        if header in _failed or header in _builds:
            return None
        if header in _checked and gch.exists() and header.exists():
            return header
        if not (gch.exists() and header.exists()):
            header.parent.mkdir(parents=True, exist_ok=True)
            # Not a daemon: an exiting interpreter waits for it rather than leave a partial file.
            thread = threading.Thread(target=_build_locked, args=(header, prefix, cxx, flags),
                                      name="fs-emu-pch", daemon=False)
            _builds[header] = thread
            thread.start()
            return None
        _checked.add(header)  # built by an earlier process; a compile finding it stale discards it
    touch(header)  # in use: pruning keeps both files
    touch(gch)
    return header


def wait_for_builds() -> None:
    """Wait until the precompiled headers being built in the background are done."""
    with _checked_lock:
        threads = list(_builds.values())
    for thread in threads:
        thread.join()
