"""A generated kernel's resource usage as ptxas reports it, without a GPU.

`nvcc -cubin -arch=sm_90 -Xptxas -v` compiles the complete source (runtime headers included,
exactly as NVRTC gets it; the kernel's `__launch_bounds__` bound its registers as on the GPU)
and prints, per entry function, the registers, the stack frame, spill stores and loads, local
memory (`lmem`, on older toolkits) and static shared memory. A stack frame is local memory:
per-thread arrays the compiler could not keep in registers, and spills. Results are cached on
disk by a hash of the text, the arch, the flags and the nvcc version, written atomically, so
parallel checks of the same kernels share them.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

from engine.runtime.emu import cache_dir, compile_error
from engine.runtime.nvcc import _ARCH, NVCC_FLAGS, nvcc_and_key

_SOURCE_NAME = "kernel.cu"
_ENTRY = re.compile(r"Function properties for (\S+)")
_FRAME = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_USED = re.compile(r"Used (\d+) registers")
_LMEM = re.compile(r"(\d+) bytes lmem")
_SMEM = re.compile(r"(\d+) bytes smem")
_BARRIERS = re.compile(r"used (\d+) barriers")


@dataclass(frozen=True)
class ResourceUsage:
    """What ptxas reports for one entry function (bytes are per thread, smem per block)."""

    kernel: str
    registers: int
    stack_frame: int
    spill_stores: int
    spill_loads: int
    lmem: int = 0
    smem: int = 0  # static shared memory; the launch adds the dynamic part
    barriers: int = 0

    @property
    def local_bytes(self) -> int:
        """Local memory per thread: the stack frame (local arrays and spills) and any lmem."""
        return self.stack_frame + self.lmem

    def to_json(self) -> dict[str, int | str]:
        return asdict(self)


def _number(pattern: re.Pattern[str], line: str) -> int:
    m = pattern.search(line)
    return int(m.group(1)) if m else 0


def parse_ptxas_log(log: str) -> list[ResourceUsage]:
    """The entry functions of a `-Xptxas -v` log, in order."""
    out: list[ResourceUsage] = []
    name: str | None = None
    frame: tuple[int, int, int] = (0, 0, 0)
    for line in log.splitlines():
        m = _ENTRY.search(line)
        if m:
            name, frame = m.group(1), (0, 0, 0)
            continue
        m = _FRAME.search(line)
        if m and name is not None:
            frame = (int(m.group(1)), int(m.group(2)), int(m.group(3)))
            continue
        m = _USED.search(line)
        if m and name is not None:
            out.append(ResourceUsage(name, int(m.group(1)), *frame, lmem=_number(_LMEM, line),
                                     smem=_number(_SMEM, line), barriers=_number(_BARRIERS, line)))
            name = None
    return out


def ptxas_usage(source: str, arch: str = "sm_90") -> list[ResourceUsage]:
    """Every entry function's resource usage in `source`, compiled by nvcc for `arch`.

    Raises CompileError with nvcc's log when the source does not compile.
    """
    if not _ARCH.fullmatch(arch) or not arch.startswith("sm_"):
        raise ValueError(f"arch {arch!r} is not of the form sm_90")
    nvcc, key = nvcc_and_key("fs-ptxas-1", arch, source)
    out_dir = cache_dir("ptxas")
    cached = out_dir / f"{key}-{arch}.json"
    if cached.exists():
        return [ResourceUsage(**d) for d in json.loads(cached.read_text(encoding="utf-8"))]
    with tempfile.TemporaryDirectory(prefix="fs-ptxas-") as tmp:
        src = Path(tmp) / _SOURCE_NAME
        src.write_text(source, encoding="utf-8")
        cmd = [nvcc, "-cubin", f"-arch={arch}", *NVCC_FLAGS, "-Xptxas", "-v", str(src),
               "-o", str(Path(tmp) / "kernel.cubin")]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=600, cwd=tmp)
        if r.returncode != 0:
            raise compile_error(f"nvcc -cubin -arch={arch} failed", r.stderr + r.stdout,
                                {_SOURCE_NAME: source})
        usage = parse_ptxas_log(r.stderr + r.stdout)
    fd, part = tempfile.mkstemp(dir=out_dir, prefix=".ptxas-", suffix=".part")
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        json.dump([u.to_json() for u in usage], f)
    os.replace(part, cached)
    return usage
