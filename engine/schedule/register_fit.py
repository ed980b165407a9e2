"""How many registers a persistent schedule's per-thread arrays take, and how many it may.

A block of T threads gets at most registers_per_sm / T registers per thread (255 at most):
64 at 1024 threads, 128 at 512. A persistent kernel keeps its per-thread arrays (the
thread's share of each persistent row, the partial results of outer reductions and their
accumulators) in registers across the reduction; what does not fit is spilled to local
memory, or never reaches registers at all. An estimate from the fusion alone misses what the
schedule realizes (a projected bf16 input read back as a float array that persists, two
arrays for each outer reduction: its per-thread partial and its result), so the schedule
itself is applied to a copy of the fusion and its local arrays are counted
(`realized_array_bytes`), as the lowering will allocate them (engine.lower.buffers.local_layout):
those as long as the thread's share of a row (or of its columns) grow with that share when
another block shape changes it, the shorter ones (a vector's loads) do not. The register
file's rules (`register_cap`, `registers_needed`) are engine.runtime.registers'.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from engine.ir.tensorview import MemoryType, TensorView
from engine.lower.buffers import local_layout
from engine.lower.index import Extents

if TYPE_CHECKING:
    from engine.ir.fusion import Fusion
    from engine.schedule.runtime_info import SchedulerRuntimeInfo


def array_bytes(fusion: Fusion, env: dict, share: int) -> tuple[int, int]:
    """Bytes per thread of the scheduled `fusion`'s local arrays of more than one element, as
    the lowering allocates each local tensor: (those of at least `share` elements, the
    others). A reduction's accumulator is not counted apart: the accumulator is live while
    the reduction runs, its result after it."""
    ext = Extents(env)
    long = short = 0
    for tv in fusion.tensors():
        if not isinstance(tv, TensorView) or tv.memory_type != MemoryType.Local:
            continue
        if tv in fusion.inputs or tv in fusion.outputs:
            continue
        _, _, size = local_layout(tv, tv.compute_at_pos, "local", ext)
        if size <= 1:
            continue
        nbytes = size * max(1, tv.dtype.bits // 8)
        if size >= share:
            long += nbytes
        else:
            short += nbytes
    return long, short


def realized_array_bytes(fusion: Fusion, info: SchedulerRuntimeInfo, params: Any,
                         schedule: Callable[[Fusion, Any, None], None], share: int) -> tuple[int, int]:
    """`array_bytes` of a copy of `fusion` scheduled by `schedule` with `params`."""
    copy, vals = fusion.clone()
    schedule(copy, params, None)
    env = {vals.get(s, s): v for s, v in info.env.items()}
    return array_bytes(copy, env, share)
