"""The launch's thread and block dimensions, as the loop nest binds them, and the check that
every global write of a multi-thread launch is partitioned among its threads."""

from __future__ import annotations

from engine.errors import CompileError, UnpartitionedWriteError
from engine.ir.iterdomain import ParallelType
from engine.ir.tensorview import MemoryType
from engine.lower.index import Extents
from engine.lower.loops import Nest, out_tv, walk
from engine.lower.lowering import loop_kind

DIMS = [ParallelType.grid_x, ParallelType.grid_y, ParallelType.grid_z,
        ParallelType.block_x, ParallelType.block_y, ParallelType.block_z]


# CUDA's launch limits per dimension (gridDim.x is 2^31 - 1, larger than any extent here).
_DIM_LIMITS = {
    ParallelType.block_x: 1024, ParallelType.block_y: 1024, ParallelType.block_z: 64,
    ParallelType.grid_y: 65535, ParallelType.grid_z: 65535,
}


def parallel_dims(nest: Nest, ext: Extents) -> dict[ParallelType, int]:
    """The extent the nest binds to each grid and block dimension; CompileError beyond CUDA's
    limits."""
    dims: dict[ParallelType, int] = {}
    for _e, loops in walk(nest):
        for node in loops:
            c = node.concrete
            if c.parallel_type in DIMS:
                dims[c.parallel_type] = max(dims.get(c.parallel_type, 1), ext.of(c))
    threads = dims.get(ParallelType.block_x, 1) * dims.get(ParallelType.block_y, 1) * dims.get(ParallelType.block_z, 1)
    if threads > 1024:
        raise CompileError(f"the schedule asks for {threads} threads per block (at most 1024)")
    for pt, n in dims.items():
        if n > _DIM_LIMITS.get(pt, n):
            raise CompileError(
                f"the schedule binds {n} iterations to {pt.name} ({pt.value}); CUDA allows at most "
                f"{_DIM_LIMITS[pt]}"
            )
    return dims


def check_partitioned_writes(nest: Nest, ext: Extents, dims: dict[ParallelType, int]) -> None:
    """UnpartitionedWriteError when the launch has more than one thread (all blocks counted)
    and a tensor written to global memory binds no thread or block index in its loop domain
    while its nest has a serial loop of more than one iteration: the top-level loop is then
    serial over the tensor's whole extent, and every thread of the grid writes the whole
    tensor (the same values, so results stay right while the time grows with the size times
    the threads)."""
    threads = 1
    for n in dims.values():
        threads *= n
    if threads <= 1:
        return
    for e, loops in walk(nest):
        o = out_tv(e)
        if o.memory_type != MemoryType.Global:
            continue
        if any(i.parallel_type in DIMS for i in o.domain.loop):
            continue  # parallelized (at small sizes a bound axis may have one iteration)
        serial = [n for n in loops if not n.virtual and ext.of(n.concrete) > 1
                  and loop_kind(n.concrete.parallel_type) in ("serial", "unroll")]
        if not serial:
            continue
        grid = [dims.get(p, 1) for p in DIMS[:3]]
        block = [dims.get(p, 1) for p in DIMS[3:]]
        raise UnpartitionedWriteError(
            f"{o.short_name}: its loop nest binds no thread or block index (serial loops "
            f"{', '.join(f'{n.concrete}' for n in serial)}), so every thread of the launch (grid "
            f"{'x'.join(map(str, grid))}, block {'x'.join(map(str, block))}) would write the whole "
            "tensor; the schedule did not parallelize it")
