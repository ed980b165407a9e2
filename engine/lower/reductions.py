"""Reductions and Welford: per-thread accumulation, block/grid all-reduce, write-back.

An accumulator (registers) holds the reduction's output ids right of its
allocation level, without reduction and parallel ids. The expression's statement
folds one input element into it; once the accumulating sub-tree closes, thread- and
block-parallel reduction ids are combined across threads (blockAllReduce: every
thread gets the result) or blocks (gridReduce: only the last block to arrive has it,
so everything computed from it is guarded by a flag), and the result is written to
the output tensor (its local buffer or global memory).

This module holds what every reduction shares: the accumulators, the checks that refuse
a schedule a reduction cannot run in, and the write-back. The statements of a ReductionOp
and a WelfordOp are in reduction_ops.py, the grid reductions in grid_reduce.py, and a
thread-local Welford lowered as two passes in welford_two_pass.py.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from engine.dtypes import DataType
from engine.errors import CompileError
from engine.ir import exprs as ex
from engine.ir.dependencies import downstream_tvs
from engine.ir.iterdomain import IterDomain, ParallelType
from engine.ir.tensorview import TensorView
from engine.lower import cexpr, kexpr, kir
from engine.lower.buffers import local_layout
from engine.lower.index import Ix, propagate, tv_transforms
from engine.lower.kexpr import Var
from engine.lower.loops import LoopNode

if TYPE_CHECKING:
    from engine.lower.lowering import ExprLowering


THREADS = (ParallelType.block_x, ParallelType.block_y, ParallelType.block_z)
BLOCKS = (ParallelType.grid_x, ParallelType.grid_y, ParallelType.grid_z)
_SERIAL = (ParallelType.serial, ParallelType.unroll, ParallelType.unswitch)
_LAUNCH_VARS = {ParallelType.block_x: "threadIdx.x", ParallelType.block_y: "threadIdx.y",
                ParallelType.block_z: "threadIdx.z", ParallelType.grid_x: "blockIdx.x",
                ParallelType.grid_y: "blockIdx.y", ParallelType.grid_z: "blockIdx.z"}


def bools(flags: list[bool] | tuple[bool, ...]) -> tuple[str, ...]:
    """The flags as a runtime call's template arguments."""
    return tuple("true" if f else "false" for f in flags)


def red_smem(ctype: str, offset: int = 0) -> kexpr.Expr:
    """The reduction's shared memory (`red_smem`), `offset` bytes in, as a pointer to `ctype`."""
    base = Var("red_smem")
    return kexpr.PtrCast(ctype, kexpr.Add(base, offset) if offset else base)


def slice_at(buffer: str, k: cexpr.Term, size: int) -> kexpr.Expr:
    """`buffer.data + (k) * size`: the `k`th slice of `size` elements of a workspace."""
    return kexpr.Add(Var(f"{buffer}.data"), kexpr.Mul(kexpr.Paren(k), size))


def compute_dtype(dt: DataType) -> DataType:
    return DataType.Float if dt.is_low_precision_float else dt


def acc_level(out: TensorView) -> int:
    if out.fusion.uses_of(out):
        return out.compute_at_pos
    red = [k for k, i in enumerate(out.domain.loop) if i.is_reduction]
    return red[0] if red else out.nloop


def parallel_reduction(out: TensorView) -> tuple[list[bool], list[bool]]:
    pts = {i.parallel_type for i in out.domain.loop if i.is_reduction}
    return [p in pts for p in THREADS], [p in pts for p in BLOCKS]


def check_grid_results(exprs: list) -> None:
    """Refuse a schedule that reads a grid reduction's result in every block.

    A reduction across blocks (gridReduce, gridWelford) is not an all-reduce: only the
    last block to arrive gets the result. A tensor computed from it whose loop still
    iterates over a block dimension that the reduction reduced (a result broadcast back
    over the reduced axis, as a normalization over it would need) would be computed by
    the other blocks without it.
    """
    for e in exprs:
        if not isinstance(e, (ex.ReductionOp, ex.WelfordOp)):
            continue
        out = e.outputs[0]
        if not isinstance(out, TensorView):
            continue
        reduced = {i.parallel_type for i in out.domain.loop
                   if i.is_reduction and i.parallel_type in BLOCKS}
        if not reduced:
            continue
        for t in sorted(downstream_tvs(out), key=lambda t: t.name):
            for i in t.domain.loop:
                if i.parallel_type in reduced and not (i.is_reduction or i.is_broadcast):
                    raise CompileError(
                        f"{t.short_name} is computed from {out.short_name}, a reduction across "
                        f"blocks ({i.parallel_type}) that only the last block has, but iterates over "
                        f"{i}: every block would need the result (a grid all-reduce, not supported)")


class Accumulator:
    """Registers for one reduction output: name, layout and the element the loops select."""

    def __init__(self, low: ExprLowering, out: TensorView, name: str, dtype: DataType,
                 loops: list[LoopNode], c_index: dict[IterDomain, Ix], level: int | None = None) -> None:
        self.level = acc_level(out) if level is None else level
        self.layout, self.strides, self.size = local_layout(out, self.level, "local", low.ext)
        self.name, self.dtype = name, dtype
        lin: cexpr.Term = 0
        for i, s in zip(self.layout, self.strides):
            lin = cexpr.add(lin, cexpr.mul(c_index[i].term, s))
        self.element = kexpr.Access(name, lin)


def check_no_broadcast_loop(low: ExprLowering, out: TensorView, loops: list[LoopNode]) -> None:
    """Refuse a reduction that a serial loop repeats over a piece of a broadcast axis.

    Splitting a broadcast axis gives pieces of the split factor's extent (bS{2} from an
    outer split by 2); a loop over such a piece of the reduction's own output runs the
    accumulation that many times, so the result would count every element again; so does
    a loop over an expanded broadcast axis that the reduction keeps, as the accumulator
    holds one value for all its iterations. Thread-bound loops only replicate work.
    """
    for k, node in enumerate(loops):
        if k >= out.nloop or node.virtual:
            continue
        own = out.axis(k)
        if not own.is_broadcast or own in low.ext.promoted:
            continue
        if node.concrete.parallel_type in _SERIAL and low.ext.of(node.concrete) > 1:
            raise CompileError(
                f"{out.short_name}: the reduction runs inside a loop of {low.ext.of(node.concrete)} "
                f"iterations over its broadcast axis {own}, "
                "which would accumulate every element that many times"
            )


def check_reduction_loops(low: ExprLowering, out: TensorView, loops: list[LoopNode]) -> None:
    """Refuse a reduction axis that runs in a loop bound to threads or blocks it is not itself
    bound to: each thread (block) then runs one iteration, and the serial accumulation sums
    only its own part. (Fuzz schedule 54-1189: a sum inlined into a consumer's threadIdx.x
    loop wrote each thread's one element as the total.)"""
    for k, node in enumerate(loops):
        if k >= out.nloop:
            continue  # a thread-bound level emits no loop (virtual) and counts all the same
        own, pt = out.axis(k), node.concrete.parallel_type
        if (own.is_reduction and own.parallel_type != pt and (pt.is_thread_dim or pt.is_block_dim)
                and low.ext.of(node.concrete) > 1):
            raise CompileError(
                f"{out.short_name}: its reduction axis {own} runs in a loop bound to {pt} (by "
                f"{node.concrete}), so each thread would sum only its own elements; parallelize "
                f"{own} as {pt} too (a block or grid reduction), or do not inline {out.short_name} there"
            )


def each_element(acc: Accumulator, make) -> kir.Stmt:
    if acc.size == 1:
        return make(kexpr.Access(acc.name, 0))
    loop = kir.ForLoop("k", acc.size, "serial", f"{acc.name} elements")
    loop.body.append(make(kexpr.Access(acc.name, kexpr.Var("k"))))
    return loop


def _partial_ids(tv: TensorView) -> frozenset[IterDomain]:
    """Ids between an rfactor tensor's reduced roots and its logical domain. A partial
    result's write-back must not be predicated on them: a (block, thread) whose share of the
    reduced rows is empty (an overhanging split) still holds the init value, which its
    consumer reduces."""
    dom = tv.domain
    if dom.root is None:
        return frozenset()
    derived = {r for r in dom.root if r.is_reduction}
    for t in tv_transforms(tv):
        if any(i in derived for i in t.inputs):
            derived.update(t.outputs)
    return frozenset(derived - set(dom.logical))


def write_back(low: ExprLowering, out: TensorView, pairs: list[tuple[TensorView, Accumulator]],
               loops: list[LoopNode]) -> list[kir.Stmt]:
    """Store accumulators into the outputs: loops over the accumulator ids, outputs indexed."""
    acc0 = pairs[0][1]
    known: dict[IterDomain, Ix] = {}
    # Loops that run a larger (promoted) id than out's own give out's indices through the
    # tensors inlined with it (loop_seeded_index), not as the loop's position.
    seeded = low.loop_seeded_index(out, loops, acc0.level)
    thread_only: list[kexpr.Expr] = []
    for k, i in enumerate(out.domain.loop):
        # A broadcast axis bound to a launched dimension: every thread (block) along it holds
        # the same result for one element; only the first may store it, or one that skipped
        # the accumulation would write its initial value over it.
        var = _LAUNCH_VARS.get(i.parallel_type)
        if (var is not None and i.is_broadcast and i not in low.ext.promoted
                and low.launch_dims.get(i.parallel_type, 1) > 1 and low.buffer(out).memory == "global"):
            thread_only.append(kexpr.Cmp(kexpr.Var(var), "==", 0))
        if k < acc0.level:
            if not low.forwarded(loops[k], i):
                known[i] = low.loop_index(loops[k], i)
        elif i.is_broadcast and i not in low.ext.promoted:
            known[i] = Ix(0, 0, 1)
        elif i.is_reduction:
            known[i] = Ix(0, 0, 1)
            pt = i.parallel_type
            if pt in THREADS and low.buffer(out).memory == "global":
                thread_only.append(kexpr.Cmp(kexpr.Var(_LAUNCH_VARS[pt]), "==", 0))
        elif i.parallel_type.is_thread_dim or i.parallel_type.is_block_dim:
            known[i] = low.loop_index(LoopNode(k, [i]))
        elif i in acc0.layout:
            n = low.ext.of(i)
            known[i] = Ix(Var(f"w{i.name}") if n > 1 else 0, 0, n)
    stores: list[kir.Stmt] = []
    global_stores: list[kir.Stmt] = []
    preds: list[kexpr.Expr] = []
    for tv, acc in pairs:
        # A Welford's outputs share one loop structure: a sibling's ids are out's, by position.
        tv_known = sibling_index(tv, out, known)
        lin: cexpr.Term = 0
        for i, s in zip(acc.layout, acc.strides):
            lin = cexpr.add(lin, cexpr.mul(tv_known[i].term, s))
        start = {tv.domain.loop[k]: known[i] for k, i in enumerate(out.domain.loop) if i in known}
        if tv is out:
            start = {**seeded, **start}
        index = propagate(tv, start, low.ext)
        value = low.converted(kexpr.Access(acc.name, lin), acc.dtype, tv.dtype)
        store = kir.Assign(low.address(tv, index, tv.short_name), value, f"{tv.short_name} = {acc.name}")
        # Only global stores are left to one thread of the reduction: every thread needs its
        # own copy of a local result.
        (global_stores if low.buffer(tv).memory == "global" else stores).append(store)
        if not preds:
            # A reduced axis is at index 0 after its loop: its bound holds unless the axis is
            # empty, and an empty reduction still writes its initial value.
            reduced = frozenset(i for i, ix in index.items() if i.is_reduction and isinstance(ix.term, int))
            preds = low.thread_predicates(loops[: acc0.level], out) + [
                p for p in low.bounds_predicates(tv, index, _partial_ids(tv) | reduced)
            ] + [kexpr.Var(f) for f in low.flags.get(out, [])]
    body: list[kir.Stmt] = kir.guard(preds, stores) + kir.guard(preds + thread_only, global_stores)
    for i in reversed(acc0.layout):
        n = low.ext.of(i)
        if n > 1:
            body = [kir.ForLoop(f"w{i.name}", n, "serial", str(i), body)]
    return body


def sibling_index(tv: TensorView, ref: TensorView, index: dict[IterDomain, Ix]) -> dict[IterDomain, Ix]:
    """`index` (keyed by `ref`'s loop ids) extended to the loop ids of `tv`, a sibling output
    of the same Welford: the siblings are scheduled alike, so their loop ids match by position."""
    if tv is ref:
        return index
    out = dict(index)
    for a, b in zip(tv.domain.loop, ref.domain.loop):
        if a not in out and b in index:
            out[a] = index[b]
    return out
