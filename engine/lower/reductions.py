"""Reductions and Welford: per-thread accumulation, block/grid all-reduce, write-back.

An accumulator (registers) holds the reduction's output ids right of its
allocation level, without reduction and parallel ids. The expression's statement
folds one input element into it; once the accumulating sub-tree closes, thread- and
block-parallel reduction ids are combined across threads (blockAllReduce: every
thread gets the result) or blocks (gridReduce: only the last block to arrive has it,
so everything computed from it is guarded by a flag), and the result is written to
the output tensor (its local buffer or global memory).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from engine.analysis.persistent import downstream_tvs
from engine.codegen import ops_table
from engine.dtypes import DataType
from engine.errors import CompileError
from engine.ir import exprs as ex
from engine.ir.iterdomain import IterDomain, ParallelType
from engine.ir.tensorview import TensorView
from engine.lower import cexpr, kir
from engine.lower.buffers import local_layout
from engine.lower.grid_epilogue import GridSync
from engine.lower.index import Ix, propagate, tv_transforms
from engine.lower.loops import LoopNode

if TYPE_CHECKING:
    from engine.lower.lowering import ExprLowering

_THREADS = (ParallelType.block_x, ParallelType.block_y, ParallelType.block_z)
_BLOCKS = (ParallelType.grid_x, ParallelType.grid_y, ParallelType.grid_z)
_SERIAL = (ParallelType.serial, ParallelType.unroll, ParallelType.unswitch)
_LAUNCH_VARS = {ParallelType.block_x: "threadIdx.x", ParallelType.block_y: "threadIdx.y",
                ParallelType.block_z: "threadIdx.z", ParallelType.grid_x: "blockIdx.x",
                ParallelType.grid_y: "blockIdx.y", ParallelType.grid_z: "blockIdx.z"}


def _bools(flags: list[bool]) -> str:
    return ", ".join("true" if f else "false" for f in flags)


def _compute(dt: DataType) -> DataType:
    return DataType.Float if dt.is_low_precision_float else dt


def acc_level(out: TensorView) -> int:
    if out.fusion.uses_of(out):
        return out.compute_at_pos
    red = [k for k, i in enumerate(out.domain.loop) if i.is_reduction]
    return red[0] if red else out.nloop


def parallel_reduction(out: TensorView) -> tuple[list[bool], list[bool]]:
    pts = {i.parallel_type for i in out.domain.loop if i.is_reduction}
    return [p in pts for p in _THREADS], [p in pts for p in _BLOCKS]


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
                   if i.is_reduction and i.parallel_type in _BLOCKS}
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
        self.element = f"{name}[{cexpr.text(lin)}]"


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


def lower_reduction(low: ExprLowering, expr: ex.ReductionOp, loops: list[LoopNode],
                    c_index: dict[IterDomain, Ix], preds: list[str]) -> list[kir.Stmt]:
    out, inp = expr.output, expr.input
    check_no_broadcast_loop(low, out, loops)
    check_reduction_loops(low, out, loops)
    dt = _compute(out.dtype)
    acc = Accumulator(low, out, f"{out.short_name}_acc", dt, loops, c_index)
    init = ops_table.literal(expr.init, dt)
    low.alloc_at(acc.level, loops, kir.Allocate(acc.name, dt.cuda_name, acc.size, "local", init=init))
    x = low.converted(low.read(inp, out, c_index).text, inp.dtype, dt)
    step = kir.Assign(acc.element, ops_table.reduction_combine(expr.op, acc.element, x, dt),
                      f"{out.short_name} = reduction({inp.short_name})")
    post: list[kir.Stmt] = []
    threads, blocks = parallel_reduction(out)
    combine = f"[]({dt.cuda_name} a, {dt.cuda_name} b) {{ return {ops_table.reduction_combine(expr.op, 'a', 'b', dt)}; }}"
    if any(blocks):
        post += _grid(low, out, acc, threads, blocks, combine, init, loops)
    elif any(threads):
        low.reserve_reduction_smem(8)
        post.append(_each(acc, lambda e: kir.Assign(
            e, f"blockAllReduce<{_bools(threads)}>({e}, {combine}, reinterpret_cast<{dt.cuda_name}*>(red_smem))")))
    post += _write_back(low, out, [(out, acc)], loops)
    low.work.post[low.item_at(acc.level, loops, expr)].extend(post)
    return kir.guard(preds, [step])


def _each(acc: Accumulator, make) -> kir.Stmt:
    if acc.size == 1:
        return make(f"{acc.name}[0]")
    loop = kir.ForLoop("k", acc.size, "serial", f"{acc.name} elements")
    loop.body.append(make(f"{acc.name}[k]"))
    return loop


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


def _grid(low: ExprLowering, out: TensorView, acc: Accumulator, threads: list[bool], blocks: list[bool],
          combine: str, init: str, loops: list[LoopNode]) -> list[kir.Stmt]:
    n_blocks, per = _grid_sizes(low)
    work, sync = f"{out.short_name}_work", f"{out.short_name}_sync"
    n_threads = per // n_blocks
    instance, count = _grid_instance(low, loops, acc.level)
    flag = f"{out.short_name}_last"
    low.alloc_at(acc.level, loops, kir.Raw(f"bool {flag} = false;"))
    low.flags[out] = [flag]
    low.flag_blocks[flag] = frozenset(pt for pt, b in zip(_BLOCKS, blocks) if b)
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
        template = f"{_bools(blocks)}, {_bools(threads)}"
        work_ptr = f"{work}.data + ({cexpr.text(instance)}) * {2 * per * acc.size}"
        args = (f"({acc.name}, {combine}, {init}, {work_ptr}, {per}, "
                f"{sync}.data + ({cexpr.text(instance)}) * {n_flags}, reinterpret_cast<{ct}*>(red_smem))")
        if sync_grid:
            low.grid_syncs[flag] = GridSync(flag, acc.name, tuple(blocks), tuple(threads),  # type: ignore[arg-type]
                                            template, args, work_ptr)
        return [kir.Assign(flag, f"gridReduceGroup{'Sync' if sync_grid else ''}<{template}>{args}")]
    low.workspaces[work] = (ct, per * acc.size * count, False)
    slot = cexpr.text(cexpr.add(cexpr.mul(instance, acc.size), "k"))
    low.workspaces[sync] = ("nvfuser_index_t", n_blocks * acc.size * count, True)
    low.reserve_reduction_smem(8)
    loop = kir.ForLoop("k", acc.size, "serial", f"{acc.name} elements")
    loop.body.append(kir.Assign(
        flag,
        f"gridReduce<{_bools(blocks)}, {_bools(threads)}>({acc.name}[k], {acc.name}[k], {combine}, {init}, "
        f"{work}.data + ({slot}) * {per}, {sync}.data + ({slot}) * {n_blocks}, "
        f"reinterpret_cast<{ct}*>(red_smem))",
    ))
    return [loop]


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


def _write_back(low: ExprLowering, out: TensorView, pairs: list[tuple[TensorView, Accumulator]],
                loops: list[LoopNode]) -> list[kir.Stmt]:
    """Store accumulators into the outputs: loops over the accumulator ids, outputs indexed."""
    acc0 = pairs[0][1]
    known: dict[IterDomain, Ix] = {}
    # Loops that run a larger (promoted) id than out's own give out's indices through the
    # tensors inlined with it (loop_seeded_index), not as the loop's position.
    seeded = low.loop_seeded_index(out, loops, acc0.level)
    thread_only: list[str] = []
    for k, i in enumerate(out.domain.loop):
        # A broadcast axis bound to a launched dimension: every thread (block) along it holds
        # the same result for one element; only the first may store it, or one that skipped
        # the accumulation would write its initial value over it.
        var = _LAUNCH_VARS.get(i.parallel_type)
        if (var is not None and i.is_broadcast and i not in low.ext.promoted
                and low.launch_dims.get(i.parallel_type, 1) > 1 and low.buffer(out).memory == "global"):
            thread_only.append(f"{var} == 0")
        if k < acc0.level:
            if not low.forwarded(loops[k], i):
                known[i] = low.loop_index(loops[k], i)
        elif i.is_broadcast and i not in low.ext.promoted:
            known[i] = Ix(0, 0, 1)
        elif i.is_reduction:
            known[i] = Ix(0, 0, 1)
            pt = i.parallel_type
            if pt in _THREADS and low.buffer(out).memory == "global":
                thread_only.append(f"{_LAUNCH_VARS[pt]} == 0")
        elif i.parallel_type.is_thread_dim or i.parallel_type.is_block_dim:
            known[i] = low.loop_index(LoopNode(k, [i]))
        elif i in acc0.layout:
            n = low.ext.of(i)
            known[i] = Ix(f"w{i.name}" if n > 1 else 0, 0, n)
    stores: list[kir.Stmt] = []
    global_stores: list[kir.Stmt] = []
    preds: list[str] = []
    for tv, acc in pairs:
        # A Welford's outputs share one loop structure: a sibling's ids are out's, by position.
        tv_known = _sibling_index(tv, out, known)
        lin: cexpr.Term = 0
        for i, s in zip(acc.layout, acc.strides):
            lin = cexpr.add(lin, cexpr.mul(tv_known[i].term, s))
        start = {tv.domain.loop[k]: known[i] for k, i in enumerate(out.domain.loop) if i in known}
        if tv is out:
            start = {**seeded, **start}
        index = propagate(tv, start, low.ext)
        value = low.converted(f"{acc.name}[{cexpr.text(lin)}]", acc.dtype, tv.dtype)
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
            ] + low.flags.get(out, [])
    body: list[kir.Stmt] = kir.guard(preds, stores) + kir.guard(preds + thread_only, global_stores)
    for i in reversed(acc0.layout):
        n = low.ext.of(i)
        if n > 1:
            body = [kir.ForLoop(f"w{i.name}", n, "serial", str(i), body)]
    return body


def _sibling_index(tv: TensorView, ref: TensorView, index: dict[IterDomain, Ix]) -> dict[IterDomain, Ix]:
    """`index` (keyed by `ref`'s loop ids) extended to the loop ids of `tv`, a sibling output
    of the same Welford: the siblings are scheduled alike, so their loop ids match by position."""
    if tv is ref:
        return index
    out = dict(index)
    for a, b in zip(tv.domain.loop, ref.domain.loop):
        if a not in out and b in index:
            out[a] = index[b]
    return out


def lower_welford(low: ExprLowering, expr: ex.WelfordOp, loops: list[LoopNode],
                  c_index: dict[IterDomain, Ix], preds: list[str]) -> list[kir.Stmt]:
    avg, var, n = expr.outputs
    check_no_broadcast_loop(low, avg, loops)
    check_reduction_loops(low, avg, loops)
    dt = _compute(avg.dtype)
    # One level for the three accumulators: they are combined and written back together
    # (siblings are never inlined, so their buffers are all at the top level).
    level = min(acc_level(t) for t in (avg, var, n))
    accs = [Accumulator(low, t, f"{t.short_name}_acc", d, loops, _sibling_index(t, avg, c_index), level)
            for t, d in ((avg, dt), (var, dt), (n, DataType.Int))]
    for a in accs:
        low.alloc_at(a.level, loops, kir.Allocate(a.name, a.dtype.cuda_name, a.size, "local", init="0"))
    a_e, m_e, n_e = (a.element for a in accs)
    post: list[kir.Stmt] = []
    if len(expr.inputs) == 1:
        x = low.converted(low.read(expr.inputs[0], avg, c_index).text, expr.inputs[0].dtype, dt)
        two_pass = _two_pass_steps(low, expr, accs, loops, level, preds)
        if two_pass is not None:
            step = kir.Raw(f"{a_e} += {x};")
            post = _second_pass(low, loops, level, two_pass, x, a_e, m_e, n_e, dt.cuda_name)
            low.fixed_counts[n] = two_pass
        else:
            step = kir.Raw(f"fs_welford_update({a_e}, {m_e}, {n_e}, {x});")
    else:
        ia, im, inn = expr.inputs
        xa = low.converted(low.read(ia, avg, c_index).text, ia.dtype, dt)
        xm = low.converted(low.read(im, avg, c_index).text, im.dtype, dt)
        xn = low.converted(low.read(inn, avg, c_index).text, inn.dtype, DataType.Int)
        step = kir.Raw(f"fs_welford_combine({a_e}, {m_e}, {n_e}, {xa}, {xm}, {xn});")
    threads, blocks = parallel_reduction(avg)
    a0 = accs[0]
    ct = dt.cuda_name
    nthreads = low.block_threads()
    smem = (f"reinterpret_cast<{ct}*>(red_smem), reinterpret_cast<{ct}*>(red_smem) + {nthreads}, "
            f"reinterpret_cast<nvfuser_index_t*>(red_smem + {2 * nthreads * max(dt.bits // 8, 1)})")
    if any(blocks):
        post += _grid_welford(low, expr, accs, threads, blocks, loops, smem)
    elif any(threads):
        low.reserve_reduction_smem(24)

        fn = "blockWelfordEqualCounts" if _equal_counts(low, expr, avg, preds) else "blockWelford"

        def call(e: str) -> kir.Stmt:
            k = e[len(a0.name):]
            return kir.Raw(f"{fn}<{_bools(threads)}>({a0.name}{k}, {accs[1].name}{k}, {accs[2].name}{k}, {smem});")

        post.append(_each(a0, call))
    post += _write_back(low, avg, list(zip((avg, var, n), accs)), loops)
    low.work.post[low.item_at(accs[0].level, loops, expr)].extend(post)
    return kir.guard(preds, [step])


def _two_pass_steps(low: ExprLowering, expr: ex.WelfordOp, accs: list[Accumulator],
                    loops: list[LoopNode], level: int, preds: list[str]) -> int | None:
    """How many values each thread folds in, when a thread-local Welford can be two passes over
    values already in its registers: the sum, then the squared deviations from the mean, read
    again after the loop nest (more accurate than the serial update, which also divides at
    every value). Only a single-input Welford over serial loops alone, unpredicated (every
    thread folds the same count), of one accumulator element, whose input is a register
    buffer allocated outside the nest: it also drops the serial update's division per value,
    which makes a persistent layer norm's thread part cheaper."""
    if len(expr.inputs) != 1 or any(a.size != 1 for a in accs) or preds:
        return None
    threads, blocks = parallel_reduction(expr.outputs[0])
    if any(threads) or any(blocks):
        return None
    inp = expr.inputs[0]
    if not isinstance(inp, TensorView) or inp not in low.buffers:
        return None
    buf = low.buffers[inp]
    # Allocated in a scope around the nest: only loops that emit nothing (thread- and
    # block-bound levels) may lie between the accumulators' level and the buffer's.
    if buf.memory != "local" or any(not n.virtual for n in loops[level:buf.level]):
        return None
    count = 1
    for node in loops[level:]:
        if node.virtual:
            continue
        # Not an unswitched loop: its bounds may be checked once outside, not in `preds`.
        if node.concrete.parallel_type not in (ParallelType.serial, ParallelType.unroll, ParallelType.vectorize):
            return None
        count *= low.ext.of(node.concrete)
    return count or None  # an empty reduction keeps the update's (0, 0, 0)


def _equal_counts(low: ExprLowering, expr: ex.WelfordOp, avg: TensorView, preds: list[str]) -> bool:
    """Whether every step of this Welford's block tree combines equal counts: it combines the
    partials of a two-pass thread Welford (a fixed count per thread), unpredicated, over
    reduced thread axes that span their launch dimensions exactly, a power of two threads."""
    if len(expr.inputs) != 3 or preds or expr.inputs[2] not in low.fixed_counts:
        return False
    threads = 1
    for i in avg.domain.loop:
        if i.is_reduction and i.parallel_type in _THREADS:
            n = low.ext.of(i)
            if n != low.launch_dims.get(i.parallel_type, 1):
                return False
            threads *= n
        elif i.is_reduction and low.ext.of(i) > 1:
            return False  # a serial or block part: not the tree alone
    return threads & (threads - 1) == 0


def _second_pass(low: ExprLowering, loops: list[LoopNode], level: int, count: int, x: str,
                 a_e: str, m_e: str, n_e: str, ct: str) -> list[kir.Stmt]:
    """After the first pass summed the values into the mean's accumulator: the mean, the loops
    again (the same variables, so `x` reads the same values) summing squared deviations, and
    the count."""
    body: list[kir.Stmt] = [kir.Raw(f"{{ const {ct} fs_d = {x} - {a_e}; {m_e} += fs_d * fs_d; }}")]
    for node in reversed(loops[level:]):
        if not node.virtual:
            c = node.concrete
            body = [kir.ForLoop(f"i{c.name}", low.ext.of(c), "unroll", str(c), body)]
    return [kir.Raw(f"{a_e} = {a_e} / static_cast<{ct}>({count});"), *body, kir.Raw(f"{n_e} = {count};")]


def _grid_welford(low: ExprLowering, expr: ex.WelfordOp, accs: list[Accumulator], threads: list[bool],
                  blocks: list[bool], loops: list[LoopNode], smem: str) -> list[kir.Stmt]:
    """gridWelford per accumulator element: as _grid's gridReduce, with three work buffers
    (avg, m2, n). Only the last block to arrive gets the result; its flag guards every
    output's consumers."""
    avg = expr.outputs[0]
    a0 = accs[0]
    n_blocks, per = _grid_sizes(low)
    instance, count = _grid_instance(low, loops, a0.level)
    flag = f"{avg.short_name}_last"
    low.alloc_at(a0.level, loops, kir.Raw(f"bool {flag} = false;"))
    low.flag_blocks[flag] = frozenset(pt for pt, b in zip(_BLOCKS, blocks) if b)
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
    low.reserve_reduction_smem(24)
    slot = cexpr.text(cexpr.add(cexpr.mul(instance, a0.size), "k"))
    vals = ", ".join(f"{a.name}[k]" for a in accs)
    bufs = ", ".join(f"{w}.data + ({slot}) * {per}" for w in works)
    loop = kir.ForLoop("k", a0.size, "serial", f"{a0.name} elements")
    loop.body.append(kir.Assign(
        flag,
        f"gridWelford<{_bools(blocks)}, {_bools(threads)}>({vals}, {vals}, {bufs}, "
        f"{sync}.data + ({slot}) * {n_blocks}, {smem})",
    ))
    return [loop]
