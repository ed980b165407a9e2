"""Compile a kernel's CUDA source and shim into a shared library for the emulator, cached.

The library's cache key hashes the compiler (path and version line), the flags, cuda_emu.h
and the exact text compiled, so any change to one of them compiles again. A library is
written under a temporary name and renamed into place: processes compiling the same kernel
at once both succeed and leave one complete file. Kernels that begin with the runtime
prelude compile against its precompiled header (engine.runtime.emu.pch) once that is built
(whole until then); when such a
compile fails, the kernel is compiled whole again so that the error log is the one of the
complete source (file names and lines as the kernel's).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from engine.errors import CompileError
from engine.runtime.emu import HEADER_PATH, compile_error, pch
from engine.runtime.emu import cache as disk

SHIM_FILE = "fs_emulate_shim.cpp"
KEY_TAG = "fs-emulate-1"
# Set to "0" to compile every kernel whole (no precompiled header), e.g. to compare.
PCH_ENV = "FUSESCOPE_EMU_PCH"
_COMPILE_TIMEOUT_S = 600

_compiler_ids: dict[str, str] = {}


def compiler_id(cxx: str) -> str:
    """Path and version of the compiler: part of the cache keys."""
    if cxx not in _compiler_ids:
        r = subprocess.run([cxx, "--version"], capture_output=True, text=True, timeout=60)
        _compiler_ids[cxx] = f"{shutil.which(cxx)}\n{r.stdout.splitlines()[0] if r.stdout else ''}"
    return _compiler_ids[cxx]


def use_pch() -> bool:
    return os.environ.get(PCH_ENV, "1").strip() != "0"


def _whole(name: str, source: str, shim: str) -> str:
    # #line: g++ then names the kernel's own lines (name.cu:LINE) and the shim's (fs_emulate_shim.cpp).
    return f'#line 1 "{name}.cu"\n{source}\n#line 1 "{SHIM_FILE}"\n{shim}'


def _run(cmd: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, capture_output=True, text=True, timeout=_COMPILE_TIMEOUT_S)


def _compile_with_pch(split: pch.Split, name: str, shim: str, cxx: str, flags: tuple[str, ...],
                      src_path: Path, out: str) -> tuple[bool, Path | None]:
    """Compile the part after the prelude against its precompiled header into `out`:
    (compiled, the header used). Not compiled: there is no header, or the compile failed (the
    caller then compiles whole, and discards the header if the whole source compiles)."""
    header = pch.precompiled_header(split.prefix, cxx, compiler_id(cxx), flags)
    if header is None:
        return False, None
    rest = f'#line {split.first_line} "{name}.cu"\n{split.rest}\n#line 1 "{SHIM_FILE}"\n{shim}'
    fd, rest_path = tempfile.mkstemp(dir=src_path.parent, prefix=f".{src_path.stem}.", suffix=".cpp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(rest)
        r = _run([cxx, *flags, "-Winvalid-pch", "-include", str(header), "-x", "c++", rest_path, "-o", out])
    finally:
        os.unlink(rest_path)
    if pch.stale_pch_used(header, r.stderr):
        pch.discard(header)  # compiled from the header's text, so still right; rebuilt next time
    return r.returncode == 0, header


def compile_library(source: str, name: str, shim: str, cxx: str,
                    flags: tuple[str, ...]) -> tuple[Path, bool]:
    """Compile source + shim into a shared library, or find it in the cache: (path, cached)."""
    if shutil.which(cxx) is None:
        raise CompileError(f"kernel {name}: the emulate back end needs {cxx}, which is not on PATH")
    header = HEADER_PATH.read_text(encoding="utf-8")
    text = _whole(name, source, shim)
    key = hashlib.sha256(
        "\0".join([KEY_TAG, compiler_id(cxx), " ".join(flags), header, text]).encode()
    ).hexdigest()[:24]
    out_dir = disk.cache_dir("emulate")
    lib = out_dir / f"{name[:48]}-{key}.so"
    if lib.exists():
        disk.touch(lib)
        return lib, True
    # Kept beside the library so that a failing kernel can be rebuilt and debugged by hand.
    src_path = out_dir / f"{name[:48]}-{key}.cpp"
    src_path.write_text(text, encoding="utf-8")
    fd, tmp = tempfile.mkstemp(dir=out_dir, prefix=f".{name[:32]}-", suffix=".so")
    os.close(fd)
    try:
        split = pch.split_source(source) if use_pch() else None
        compiled, header_used = (_compile_with_pch(split, name, shim, cxx, flags, src_path, tmp)
                                 if split else (False, None))
        if not compiled:
            r = _run([cxx, *flags, "-include", str(HEADER_PATH), "-x", "c++", str(src_path), "-o", tmp])
            if r.returncode != 0:
                files = {f"{name}.cu": source, SHIM_FILE: shim, HEADER_PATH.name: header}
                raise compile_error(f"g++ could not compile kernel {name} for the emulator ({src_path})",
                                    r.stderr + r.stdout, files)
            if header_used is not None:
                # The kernel is fine, so its precompiled header was not (g++ cannot read a
                # truncated .gch and says so without naming it): built again next time.
                pch.discard(header_used)
        os.replace(tmp, lib)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    disk.prune(out_dir, disk.max_bytes())
    return lib, False
