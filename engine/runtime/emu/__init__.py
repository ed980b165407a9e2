"""Shared pieces of the compile-and-run back ends that take a CUDA source text (emulate, nvcc).

cuda_emu.h (package data beside this file) is the header that g++ force-includes to run CUDA
kernels on the CPU; see engine/runtime/emulate.py.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from engine.errors import CompileError
from engine.runtime.emu.cache import cache_dir

__all__ = ["HEADER_PATH", "cache_dir", "compile_error", "error_locations", "first_errors", "source_excerpt"]

HEADER_PATH = Path(__file__).with_name("cuda_emu.h")

# "file:line:col: error: ..." (g++) and "file(line): error: ..." (nvcc's front end)
_DIAG = re.compile(r"^(?P<file>[^\s:()][^:()]*?)(?::(?P<line>\d+)(?::\d+)?:|\((?P<pline>\d+)\):)\s*"
                   r"(?P<kind>(?:fatal )?error|warning)\b", re.M)


def error_locations(log: str, files: dict[str, str]) -> list[tuple[str, int]]:
    """(file, line) of each error in a compiler log that names one of `files`, in log order."""
    seen: list[tuple[str, int]] = []
    for m in _DIAG.finditer(log):
        if "error" not in m["kind"]:
            continue
        name = os.path.basename(m["file"])
        if name not in files:
            continue
        where = (name, int(m["line"] or m["pline"]))
        if where not in seen:
            seen.append(where)
    return seen


def source_excerpt(files: dict[str, str], locations: list[tuple[str, int]], context: int = 2,
                   limit: int = 8) -> str:
    """The numbered source lines around each location ('>' marks the line at fault)."""
    out: list[str] = []
    for name, line in locations[:limit]:
        lines = files[name].splitlines()
        lo, hi = max(1, line - context), min(len(lines), line + context)
        out.append(f"{name}:{line}:")
        for i in range(lo, hi + 1):
            mark = ">" if i == line else " "
            out.append(f"{mark}{i:5d} | {lines[i - 1]}")
    if len(locations) > limit:
        out.append(f"... and {len(locations) - limit} more error locations")
    return "\n".join(out)


def first_errors(log: str, limit: int = 3) -> list[str]:
    """The first `limit` error lines of a compiler log (g++ or nvcc/NVRTC style), in order."""
    out: list[str] = []
    for m in _DIAG.finditer(log):
        if "error" in m["kind"]:
            end = log.find("\n", m.start())
            out.append(log[m.start():end if end >= 0 else len(log)].strip())
            if len(out) == limit:
                break
    return out


def compile_error(what: str, log: str, files: dict[str, str], max_log_chars: int = 6000) -> CompileError:
    """A CompileError whose message holds the compiler's log and the source lines it blames.

    The first line names the first error (a long log may begin with notes and warnings).
    files: name -> text of each file the compiler was given under that name (the log names them).
    The error carries `.log` (the whole log), `.locations` ((file, line) pairs) and
    `.first_errors` (the first error lines) too.
    """
    locations = error_locations(log, files)
    errors = first_errors(log)
    shown = log.strip()
    if len(shown) > max_log_chars:
        shown = shown[:max_log_chars] + f"\n... ({len(log) - max_log_chars} more characters of log)"
    parts = [f"{what}: first error: {errors[0]}" if errors else f"{what}:", shown]
    if locations:
        parts += ["", "source lines:", source_excerpt(files, locations)]
    err = CompileError("\n".join(parts))
    err.log = log  # type: ignore[attr-defined]
    err.locations = locations  # type: ignore[attr-defined]
    err.first_errors = errors  # type: ignore[attr-defined]
    return err
