"""Grid reductions: a reduction (gridReduce, gridReduceGroup) or Welford (gridWelford) across
blocks. Every call has its own work and flag regions in global workspaces; only the last
block to arrive gets the result, so a flag guards everything computed from it. A
co-resident grid may instead wait at a grid barrier (gridReduceGroupSync), recorded for the
grid epilogue (grid_epilogue.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from engine.ir import exprs as ex
from engine.ir.iterdomain import ParallelType
from engine.ir.tensorview import TensorView
from engine.lower import cexpr, kir
from engine.lower.grid_epilogue import GridSync
from engine.lower.kexpr import FALSE, Access, Add, Call, Expr, Var
from engine.lower.loops import LoopNode
from engine.lower.reductions import BLOCKS, Accumulator, bools, red_smem, slice_at

if TYPE_CHECKING:
    from engine.lower.lowering import ExprLowering


# Shared memory a grouped grid reduction may take for its in-block step (it needs one slot
# per thread and accumulator element); a larger accumulator reduces element by element.
_GROUP_SMEM_BYTES = 48 * 1024


def _grid_sizes(low: ExprLowering) -> tuple[int, int]:
    """(blocks, blocks x threads per block) of the launch: a grid reduction's partials."""
    dims = low.launch_dims
    n_blocks = dims.get(ParallelType.grid_x, 1) * dims.get(ParallelType.grid_y, 1) * dims.get(ParallelType.grid_z, 1)
    return n_blocks, n_blocks * low.block_threads()


def _grid_instance(low: ExprLowering, loops: list[LoopNode], level: int) -> tuple[cexpr.Term, int]:
    """Which call of a grid reduction this is, and how many there are. Every call needs its
    own work and flag regions (a block may run ahead into the next call before the last
    block of this one has read the partials): one per iteration of the serial loops around
    the call (and, by the caller, per accumulator element)."""
    instance: cexpr.Term = 0
    count = 1
    for node in reversed(loops[:level]):
        if not node.virtual:
            ix = low.loop_index(node)
            instance = cexpr.add(instance, cexpr.mul(ix.term, count))
            count *= ix.hi
    return instance, count


def grid_reduction(low: ExprLowering, out: TensorView, acc: Accumulator, threads: list[bool],
                   blocks: list[bool], combine: Expr, init: Expr, loops: list[LoopNode]) -> list[kir.Stmt]:
    n_blocks, per = _grid_sizes(low)
    work, sync = f"{out.short_name}_work", f"{out.short_name}_sync"
    n_threads = per // n_blocks
    instance, count = _grid_instance(low, loops, acc.level)
    flag = f"{out.short_name}_last"
    low.alloc_at(acc.level, loops, kir.Local("bool", flag, FALSE))
    low.flags[out] = [flag]
    low.flag_blocks[flag] = frozenset(pt for pt, b in zip(BLOCKS, blocks) if b)
    ct = acc.dtype.cuda_name
    width = acc.dtype.bits // 8
    if 1 < acc.size and acc.size * width * n_threads <= _GROUP_SMEM_BYTES:
        # One call for the whole accumulator: one arrival and fence instead of acc.size.
        # Two levels of partials, each acc.size element-major rows of `per`. A co-resident grid
        # waits at a grid barrier and every block combines a share (3 flags per block segment);
        # otherwise flags per block segment: one per group of blocks and one for the groups.
        sync_grid = 0 < n_blocks <= low.coresident_blocks
        low.cooperative |= sync_grid
        n_flags = (3 if sync_grid else 2) * n_blocks
        low.workspaces[work] = (ct, 2 * per * acc.size * count, False)
        low.workspaces[sync] = ("nvfuser_index_t", n_flags * count, True)
        # gridReduceGroupShares stages every thread's elements in rows of acc.size + 1.
        low.reserve_reduction_smem(max(8, (acc.size + (1 if sync_grid else 0)) * width))
        targs = bools(blocks) + bools(threads)
        work_ptr = slice_at(work, instance, 2 * per * acc.size)
        args = (Var(acc.name), combine, init, work_ptr, per, slice_at(sync, instance, n_flags), red_smem(ct))
        if sync_grid:
            low.grid_syncs[flag] = GridSync(flag, acc.name, tuple(blocks), tuple(threads),  # type: ignore[arg-type]
                                            targs, args, work_ptr)
        return [kir.Assign(Var(flag), Call("gridReduceGroupSync" if sync_grid else "gridReduceGroup", targs, args))]
    low.workspaces[work] = (ct, per * acc.size * count, False)
    slot = cexpr.add(cexpr.mul(instance, acc.size), "k")
    low.workspaces[sync] = ("nvfuser_index_t", n_blocks * acc.size * count, True)
    low.reserve_reduction_smem(8)
    loop = kir.ForLoop("k", acc.size, "serial", f"{acc.name} elements")
    element = Access(acc.name, Var("k"))
    loop.body.append(kir.Assign(Var(flag), Call("gridReduce", bools(blocks) + bools(threads), (
        element, element, combine, init, slice_at(work, slot, per), slice_at(sync, slot, n_blocks), red_smem(ct)))))
    return [loop]


def grid_welford(low: ExprLowering, expr: ex.WelfordOp, accs: list[Accumulator], threads: list[bool],
                 blocks: list[bool], loops: list[LoopNode], smem: tuple[Expr, ...]) -> list[kir.Stmt]:
    """gridWelford per accumulator element: as grid_reduction's gridReduce, with three work
    buffers (avg, m2, n). Only the last block to arrive gets the result; its flag guards every
    output's consumers."""
    avg = expr.outputs[0]
    a0 = accs[0]
    n_blocks, per = _grid_sizes(low)
    instance, count = _grid_instance(low, loops, a0.level)
    flag = f"{avg.short_name}_last"
    low.alloc_at(a0.level, loops, kir.Local("bool", flag, FALSE))
    low.flag_blocks[flag] = frozenset(pt for pt, b in zip(BLOCKS, blocks) if b)
    for o in expr.outputs:
        if isinstance(o, TensorView):
            low.flags[o] = [flag]
    works = []
    for acc, part in zip(accs, ("avg", "m2", "n")):
        name = f"{avg.short_name}_work_{part}"
        low.workspaces[name] = (acc.dtype.cuda_name, per * a0.size * count, False)
        works.append(name)
    sync = f"{avg.short_name}_sync"
    low.workspaces[sync] = ("nvfuser_index_t", n_blocks * a0.size * count, True)
    width = a0.dtype.bits // 8
    per_element = 2 * width + 8  # avg, m2 and the count in shared memory
    if 1 < a0.size and a0.size * per_element * (per // n_blocks) <= _GROUP_SMEM_BYTES:
        # One call for the whole accumulator (gridWelfordGroup): one arrival and one
        # last-block combine instead of a0.size; element-major partials of stride `per`.
        nthreads = per // n_blocks
        ct = a0.dtype.cuda_name
        low.reserve_reduction_smem(a0.size * per_element)
        group_smem = (red_smem(ct), Add(red_smem(ct), a0.size * nthreads),
                      red_smem("nvfuser_index_t", 2 * a0.size * nthreads * width))
        bufs = [slice_at(w, instance, per * a0.size) for w in works]
        return [kir.Assign(Var(flag), Call("gridWelfordGroup", bools(blocks) + bools(threads), (
            *(Var(a.name) for a in accs), *bufs, per, slice_at(sync, instance, n_blocks * a0.size), *group_smem)))]
    low.reserve_reduction_smem(24)
    slot = cexpr.add(cexpr.mul(instance, a0.size), "k")
    elements = [Access(a.name, Var("k")) for a in accs]
    loop = kir.ForLoop("k", a0.size, "serial", f"{a0.name} elements")
    bufs = [slice_at(w, slot, per) for w in works]
    loop.body.append(kir.Assign(Var(flag), Call("gridWelford", bools(blocks) + bools(threads), (
        *elements, *elements, *bufs, slice_at(sync, slot, n_blocks), *smem))))
    return [loop]
