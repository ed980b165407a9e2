"""Compile-check generated CUDA with `nvcc --ptx` for a target arch, without a GPU.

The text is compiled as it is (no include flags): a generated kernel must be complete, exactly as
NVRTC will get it. Results are cached on disk by a hash of the text, the arch, the flags and the
nvcc version, so a test suite re-checking the same kernels costs nothing.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from engine.errors import CompileError
from engine.runtime.emu import cache_dir, compile_error

NVCC_FLAGS: tuple[str, ...] = ("-std=c++17",)
_ARCH = re.compile(r"(sm|compute)_\d+[a-z]?")
_SOURCE_NAME = "kernel.cu"


def nvcc_path() -> str | None:
    """nvcc on PATH, else under $CUDA_HOME (or /usr/local/cuda)."""
    found = shutil.which("nvcc")
    if found:
        return found
    home = os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH") or "/usr/local/cuda"
    candidate = Path(home) / "bin" / "nvcc"
    return str(candidate) if candidate.is_file() and os.access(candidate, os.X_OK) else None


def nvcc_available() -> bool:
    return nvcc_path() is not None


_versions: dict[str, str] = {}


def _nvcc_version(nvcc: str) -> str:
    if nvcc not in _versions:
        r = subprocess.run([nvcc, "--version"], capture_output=True, text=True, timeout=60)
        _versions[nvcc] = r.stdout.strip()
    return _versions[nvcc]


def nvcc_and_key(kind: str, arch: str, source: str) -> tuple[str, str]:
    """nvcc's path and the cache key of `source` compiled by it for `arch` into `kind` of
    output (the key changes with nvcc's version and flags); CompileError without nvcc."""
    nvcc = nvcc_path()
    if nvcc is None:
        raise CompileError("nvcc is not available (not on PATH, nor under $CUDA_HOME/bin)")
    key = hashlib.sha256(
        "\0".join([kind, _nvcc_version(nvcc), arch, " ".join(NVCC_FLAGS), source]).encode()
    ).hexdigest()[:24]
    return nvcc, key


def ptx_check(source: str, arch: str = "sm_90") -> str:
    """The PTX that `nvcc --ptx -arch=ARCH -std=c++17` makes of `source`.

    Raises CompileError with nvcc's log and the numbered source lines it blames (`.log` and
    `.locations` on the error too).
    """
    if not _ARCH.fullmatch(arch):
        raise ValueError(f"arch {arch!r} is not of the form sm_90 / compute_90")
    nvcc, key = nvcc_and_key("fs-ptx-1", arch, source)
    out_dir = cache_dir("nvcc")
    ptx_path = out_dir / f"{key}-{arch}.ptx"
    if ptx_path.exists():
        return ptx_path.read_text(encoding="utf-8")
    with tempfile.TemporaryDirectory(prefix="fs-nvcc-") as tmp:
        src = Path(tmp) / _SOURCE_NAME
        src.write_text(source, encoding="utf-8")
        out = Path(tmp) / "kernel.ptx"
        cmd = [nvcc, "--ptx", f"-arch={arch}", *NVCC_FLAGS, str(src), "-o", str(out)]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=600, cwd=tmp)
        if r.returncode != 0:
            raise compile_error(f"nvcc --ptx -arch={arch} failed", r.stderr + r.stdout,
                                {_SOURCE_NAME: source})
        ptx = out.read_text(encoding="utf-8")
    fd, part = tempfile.mkstemp(dir=out_dir, prefix=".ptx-", suffix=".part")
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(ptx)
    os.replace(part, ptx_path)
    return ptx
