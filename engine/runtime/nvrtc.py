"""Compile a complete CUDA source with NVRTC (through cupy) and cache the cubin on disk.

Why NVRTC through cupy's thin NVRTC wrapper (cupy.cuda.nvrtc) rather than
`cupy.RawModule(code=...)` or nvcc:
- we need the raw NVRTC log to raise a CompileError that quotes the failing
  source lines; RawModule folds it into its own exception text;
- we want our own disk cache, keyed by what determines the binary (source, arch,
  options, NVRTC version) and stored where the user can find and clear it,
  instead of cupy's kernel cache, which is keyed by cupy's own preamble;
- NVRTC ships with cupy's CUDA wheels, so the cuda back end needs no toolkit on
  the machine; nvcc stays the tool for compile-checking without a GPU.

The cache lives in the `cubin` folder of fusescope's cache (engine.runtime.emu.cache:
`$FUSESCOPE_CACHE`, `$XDG_CACHE_HOME/fusescope` or `~/.cache/fusescope`); one file `<sha256>.cubin` per binary, written
atomically so concurrent processes never read a half-written file.

cupy is imported inside functions only: `import engine` must work without it.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from engine.errors import CompileError
from engine.runtime.emu.cache import cache_root

# No --use_fast_math: results are compared with torch, which uses IEEE division,
# square root and denormals. -default-device lets helper functions in the runtime
# headers omit __device__ (nvFuser compiles with it too). -lineinfo keeps source
# lines in the cubin so ncu can attribute samples to generated code; it does not
# change the generated machine code.
DEFAULT_OPTIONS: tuple[str, ...] = ("--std=c++17", "-default-device", "-lineinfo")

# How many source lines to quote on each side of a line that NVRTC reports.
CONTEXT_LINES = 3

# NVRTC diagnostics look like `fusion_k0.cu(12): error: identifier "x" is undefined`
# (also `catastrophic error`, and `warning` which we do not quote).
_DIAG = re.compile(r"^(?P<file>[^\n(]*)\((?P<line>\d+)\): (?:catastrophic )?error\b", re.MULTILINE)


@dataclass(frozen=True)
class CompiledBinary:
    """A cubin for one arch, and how it was obtained."""

    cubin: bytes
    arch: str  # sm_XY
    options: tuple[str, ...]  # everything passed to NVRTC, --gpu-architecture included
    nvrtc_version: tuple[int, int]
    key: str  # sha256 hex of what determines the binary
    compile_time_s: float  # wall time of compile_cuda: NVRTC, or the cache read when cached
    cached: bool  # True when read from the disk cache
    log: str = ""  # NVRTC's log (warnings) when compiled now; empty when cached
    path: Path | None = None  # where the cubin is cached (None when caching is off or failed)


def cache_dir() -> Path:
    """The cubin cache folder; read from the environment on each call so tests can redirect it."""

    return cache_root() / "cubin"


def _nvrtc():  # type: ignore[no-untyped-def]
    # cupy re-exports its NVRTC wrapper as cupy.cuda.nvrtc; older layouts only
    # have it under cupy_backends.
    try:
        from cupy.cuda import nvrtc
    except ImportError:
        from cupy_backends.cuda.libs import nvrtc  # type: ignore[no-redef]
    return nvrtc


def nvrtc_version() -> tuple[int, int]:
    major, minor = _nvrtc().getVersion()
    return int(major), int(minor)


def device_arch(device_index: int | None = None) -> str:
    """`sm_XY` of a CUDA device (torch's current device by default)."""
    import torch

    index = torch.cuda.current_device() if device_index is None else device_index
    major, minor = torch.cuda.get_device_capability(index)
    return f"sm_{major}{minor}"


def cache_key(source: str, arch: str, options: tuple[str, ...], version: tuple[int, int]) -> str:
    payload = json.dumps({"source": source, "arch": arch, "options": list(options),
                          "nvrtc": list(version)}, sort_keys=True)
    return hashlib.sha256(payload.encode()).hexdigest()


def error_lines(log: str) -> list[int]:
    """1-based source lines that NVRTC reports errors at, in order, without repeats."""
    seen: list[int] = []
    for m in _DIAG.finditer(log):
        line = int(m.group("line"))
        if line not in seen:
            seen.append(line)
    return seen


def source_excerpt(source: str, line: int, context: int = CONTEXT_LINES) -> str:
    """Numbered lines around `line` (1-based), the reported one marked with '>'."""
    lines = source.splitlines()
    lo, hi = max(1, line - context), min(len(lines), line + context)
    width = len(str(hi))
    return "\n".join(
        f"{'>' if n == line else ' '} {n:>{width}} | {lines[n - 1]}" for n in range(lo, hi + 1)
    )


def format_compile_error(source: str, log: str, program: str, arch: str, status: str = "") -> str:
    """The message of a CompileError: NVRTC's log, then the source around each error line."""
    why = f" ({status})" if status else ""
    first = next((ln.strip() for ln in log.splitlines() if _DIAG.match(ln)), None)
    head = f"NVRTC failed to compile {program} for {arch}{why}" + (f": first error: {first}" if first else ":")
    parts = [head, log.rstrip() or "(NVRTC gave no log)"]
    for line in error_lines(log):
        parts.append(f"\n{program}:{line}:\n{source_excerpt(source, line)}")
    return "\n".join(parts)


def compile_cuda(source: str, *, program: str = "fusion.cu", arch: str | None = None,
                 options: tuple[str, ...] = DEFAULT_OPTIONS, use_cache: bool = True,
                 refresh: bool = False) -> CompiledBinary:
    """Compile `source` to a cubin for `arch` (the current GPU's by default).

    The cache is consulted first; a hit reads the file and skips NVRTC.
    refresh=True skips the read but still writes, to replace a damaged entry.
    Raises CompileError with NVRTC's log and the numbered source around each error.
    """
    start = time.perf_counter()
    nvrtc = _nvrtc()
    arch = arch or device_arch()
    # A real arch (sm_XY, not compute_XY) makes NVRTC emit a cubin, so loading
    # needs no PTX JIT and the cached file is the exact binary that runs.
    all_options = (*options, f"--gpu-architecture={arch}")
    version = nvrtc_version()
    key = cache_key(source, arch, all_options, version)
    path = cache_dir() / f"{key}.cubin"

    if use_cache and not refresh and path.is_file():
        cubin = path.read_bytes()
        if cubin:
            return CompiledBinary(cubin, arch, all_options, version, key,
                                  time.perf_counter() - start, cached=True, path=path)

    prog = nvrtc.createProgram(source, program, (), ())
    try:
        try:
            nvrtc.compileProgram(prog, list(all_options))
        except Exception as exc:  # NVRTCError; its status says compile vs. bad option
            log = _program_log(nvrtc, prog)
            err = CompileError(format_compile_error(source, log, program, arch, str(exc)))
            err.log = log  # type: ignore[attr-defined]
            err.lines = error_lines(log)  # type: ignore[attr-defined]
            raise err from None
        log = _program_log(nvrtc, prog)
        cubin = nvrtc.getCUBIN(prog)
    finally:
        nvrtc.destroyProgram(prog)

    stored: Path | None = None
    if use_cache:
        stored = _store(path, cubin)
    return CompiledBinary(cubin, arch, all_options, version, key, time.perf_counter() - start,
                          cached=False, log=log, path=stored)


def _program_log(nvrtc, prog: int) -> str:  # type: ignore[no-untyped-def]
    try:
        return str(nvrtc.getProgramLog(prog))
    except Exception:  # the log is a diagnostic aid; never hide the real error behind it
        return ""


def _store(path: Path, data: bytes) -> Path | None:
    """Write atomically (temp file + rename); a read-only or full disk just means no caching."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".cubin")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    except OSError:
        return None
    return path
