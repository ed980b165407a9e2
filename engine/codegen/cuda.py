"""Kernel IR to CUDA C: one complete source text per kernel.

The text is the runtime headers (prelude.py), a few kernel-support functions, and
the kernel itself, so it compiles alone with `nvcc --ptx`, with NVRTC and, with the
emulator's header force-included, with g++.
"""

from __future__ import annotations

import re

from engine.codegen.statements import body_lines
from engine.errors import CompileError
from engine.lower import kir
from engine.runtime.prelude import runtime_prelude

# What the kernel's name and parameter names may be. They are the engine's own (T3, the
# scheduler's kernel name), never text from a fusion file; checked so that a future change
# cannot splice arbitrary text into the source.
_C_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,254}")

# Serial Welford steps used by the generated code (the block/grid combinations are in
# the runtime headers). Chan's formula, as the reference evaluator.
_SUPPORT = r"""
template <typename T>
__device__ __forceinline__ void fs_welford_update(T& avg, T& m2, nvfuser_index_t& n, T x) {
  n += 1;
  T delta = x - avg;
  avg += delta / (T)n;
  m2 += delta * (x - avg);
}

template <typename T>
__device__ __forceinline__ void fs_welford_combine(
    T& avg, T& m2, nvfuser_index_t& n, T b_avg, T b_m2, nvfuser_index_t b_n) {
  if (b_n == 0) {
    return;
  }
  nvfuser_index_t ab_n = n + b_n;
  T b_frac = (T)b_n / (T)ab_n;
  T delta = b_avg - avg;
  avg += delta * b_frac;
  m2 += b_m2 + delta * delta * (T)n * b_frac;
  n = ab_n;
}
"""


def kernel_text(kernel: kir.Kernel) -> str:
    for name in (kernel.name, *(p.name for p in kernel.params)):
        if not _C_IDENTIFIER.fullmatch(name):
            raise CompileError(f"kernel {kernel.name!r}: {name!r} is not a C identifier")
    params = ", ".join(f"{p.decl} {p.name}" for p in kernel.params)
    bounds = str(kernel.launch.threads)
    if kernel.min_blocks_per_sm > 1:
        bounds += f", {kernel.min_blocks_per_sm}"
    lines = [
        f'extern "C" __global__ void __launch_bounds__({bounds}) {kernel.name}({params}) {{',
    ]
    if kernel.smem_bytes:
        lines.append("  FS_DYNAMIC_SHARED(smem);")
        off = getattr(kernel, "reduction_smem_offset", 0)
        lines.append(f"  char* red_smem = smem + {off};")
    lines += body_lines(kernel.body, 1)
    lines.append("}")
    return "\n".join(lines) + "\n"


def render(kernel: kir.Kernel) -> str:
    """The complete CUDA source of `kernel`."""
    return runtime_prelude() + "\n" + _SUPPORT + "\n" + kernel_text(kernel)
