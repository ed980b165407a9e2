"""The pointwise scheduler's transforms: 1-D and 2-D (break point) schedules over the
reference, and the block schedule of block quantization.

The schedule caches inputs (cache_after) and outputs (cache_before / cache_fork),
except tensors that must stay in global memory (the layout op's output and offsets,
block scales); transforms the reference, propagates to every tensor, binds the parallel
types, vectorizes the innermost axis of the input caches and outputs that the analysis
found vectorizable, and inlines as much as is legal.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Collection
from typing import TYPE_CHECKING

from engine.ir import exprs as ex
from engine.ir.iterdomain import ParallelType
from engine.ir.logical_map import consumers_of, producers_of
from engine.ir.quant_exprs import BlockQuantizationOp
from engine.ir.tensorview import MemoryType, TensorView
from engine.schedule import tools
from engine.schedule.pointwise_heuristics import GRID_Y_LIMIT, THREADS_X, PointwiseParams
from engine.schedule.pointwise_reference import find_reference, schedule_axes
from engine.schedule.tools import global_only, note_transform

if TYPE_CHECKING:
    from engine.ir.fusion import Fusion
    from engine.trace import Trace


def uncacheable_inputs(fusion: Fusion, ref: TensorView, bp: int, vectorized: Collection[str]) -> list[TensorView]:
    """Inputs whose cache a schedule broken at `bp` (0: 1-D) could not index; their
    consumers read them from global memory instead, indexed from their own loops.

    An input without a concrete axis for some reference axis right of the break point (a
    [H] weight broadcast to [N, S, H], or any input broadcast in a 1-D schedule) has a
    merged right axis shorter than the reference's: the loops its cache is inlined into
    run the reference's (promoted) merge, and only the consumer's indices through the
    broadcast say which element an iteration needs. That works for positions the cache
    shares with its consumer, not for an axis it runs alone, as a vectorized cache runs
    its vector. Nor for a cache that shares no loop at all: in a 2-D schedule an input
    without any axis left of the break point (a broadcast adds them all) gets a cache
    whose loop domain lacks the reference's outer axis, so compute-at positions, which
    pair loop axes position by position, leave it in a loop nest of its own, and threads
    would read the elements that other threads computed. `vectorized`: the names of the
    inputs whose caches are to be vectorized."""
    ref_ids = schedule_axes(fusion, ref)
    inputs = [t for t in fusion.inputs if isinstance(t, TensorView) and fusion.uses_of(t)]
    reached = tools.dims_present(ref, inputs, broadcasts=True, axes=ref_ids)
    present = tools.dims_present(ref, inputs, axes=ref_ids)
    # The reference's own broadcast axes add nothing to its merged extent: no input needs them.
    right = {d for d in range(bp, len(ref_ids)) if not ref_ids[d].is_broadcast}

    def unaligned(t: TensorView) -> bool:
        return bp > 0 and not any(d < bp for d in reached[t])

    return [t for t in inputs if not right <= present[t] and (t.short_name in vectorized or unaligned(t))]


def schedule_pointwise(fusion: Fusion, params: PointwiseParams, trace: Trace | None = None) -> None:
    keep = global_only(fusion)
    ref0 = find_reference(fusion)
    if ref0 is None:
        raise ValueError("pointwise schedule needs a reference output")
    # Intermediates may carry global memory from segmentation; they become registers.
    for tv in fusion.tensors():
        if isinstance(tv, TensorView) and tv not in fusion.inputs and tv not in fusion.outputs:
            tv.memory_type = MemoryType.Local

    vectorized = params.vectorized_tensors if params.vectorization_factor > 1 else ()
    uncached = [] if params.block_size else uncacheable_inputs(fusion, ref0, params.break_point, vectorized)
    why = ("it lacks some of the reference's inner axes, and its cache could not be indexed "
           "(see uncacheable_inputs); its consumers read it from global memory")

    def kept(tv: TensorView) -> bool:
        return tv in keep

    input_caches = {c.definition.input: c
                    for c in tools.cache_inputs(fusion, kept, trace, dict.fromkeys(uncached, why))
                    if c.definition is not None}
    tools.cache_and_fork_outputs(fusion, kept, trace)
    note_transform(trace, "pointwise", "cached inputs " + ", ".join(
        f"{t.short_name}->{c.short_name}" for t, c in input_caches.items()))
    ref = find_reference(fusion)
    assert ref is not None
    if ref.nloop == 0 or all(i.is_broadcast for i in ref.domain.loop):
        note_transform(trace, ref.short_name, "zero-dimensional reference: no loop transforms")
        tools.inline_most(fusion)
        return

    if params.block_size:
        _schedule_blocks(fusion, ref, params, input_caches, keep, trace)
        return
    v = params.vectorization_factor
    bp = params.break_point
    n = ref.nloop
    # The loop in the order the heuristics rated (schedule_axes: memory order where the
    # reference's allocation domain permutes its logical axes).
    axes = schedule_axes(fusion, ref)
    where = {id(i): k for k, i in enumerate(ref.domain.loop)}
    if len(axes) == len(where) and all(id(a) in where for a in axes):
        order = [where[id(a)] for a in axes]
        if order != sorted(order):
            ref.reorder(order)
    pt = ParallelType
    if bp == 0:
        for _ in range(n - 1):
            ref.merge(0)
        if v > 1:
            ref.split(0, v)
        ref.split(0, THREADS_X)
        if params.unroll_factor_inner > 1:
            ref.split(0, params.unroll_factor_inner)
        ref.axis(0).parallelize(pt.grid_x)
        if params.unroll_factor_inner > 1:
            ref.axis(1).parallelize(pt.unroll)
        ref.axis(-2 if v > 1 else -1).parallelize(pt.block_x)
    else:
        # [left..., right...] -> [L, R]
        for _ in range(n - bp - 1):
            ref.merge(bp)
        for _ in range(bp - 1):
            ref.merge(0)
        if v > 1:
            ref.split(1, v)
        ref.split(1, params.lparams.bdimx)  # [L, Ro, TIDx, (V)]
        left = 0
        if params.split_block:
            ref.split(0, params.lparams.bdimy)  # [Lo, TIDy, Ro, TIDx, (V)]
            ref.axis(1).parallelize(pt.block_y)
        right = 2 if params.split_block else 1
        ref.axis(right + 1).parallelize(pt.block_x)
        outer_left, outer_right = left, right
        y_axis = outer_right if params.flip_grid_binding else outer_left
        x_axis = outer_left if params.flip_grid_binding else outer_right
        ref.axis(x_axis).parallelize(pt.grid_x)
        if params.split_grid_y_dim:
            ref.split(y_axis, GRID_Y_LIMIT)  # [serial, BIDy(65535)]
            ref.axis(y_axis + 1).parallelize(pt.grid_y)
        else:
            ref.axis(y_axis).parallelize(pt.grid_y)
    if trace is not None:  # trials pass no trace: skip printing the domain
        note_transform(trace, ref.short_name, f"reference scheduled: {ref}", loop=str(ref.domain))

    tools.propagate(ref)
    others = [t for t in fusion.tensors() if isinstance(t, TensorView) and t is not ref]
    non_vector = [p for p in ParallelType if p not in (pt.serial, pt.vectorize)]
    tools.parallelize_all_like(ref, -1, others, non_vector)
    serial = serial_nests(fusion)
    if serial:
        # Edge-by-edge maps stop at a slice or pad: an output on the far side of one from the
        # reference (and what only it reads) has no thread or block binding yet, and every
        # thread would run its whole loop nest. Those tensors alone take the reference's
        # parallel types through the resize (PERMISSIVE_RESIZE, as nvFuser's
        # parallelizeAllLike); tensors that bound consumers read keep their serial loops.
        tools.parallelize_all_like(ref, -1, serial, non_vector, across_resize=True)
        note_transform(trace, "pointwise", "parallel types mapped across slices and pads to "
               + ", ".join(t.short_name for t in serial))
    if v > 1:
        ref.axis(-1).parallelize(pt.vectorize)
        # Vectorize only global reads and writes: the input caches and the outputs
        # whose innermost axis the analysis found contiguous with the reference's.
        names = set(params.vectorized_tensors)
        targets = [c for t, c in input_caches.items() if t.short_name in names]
        for o in fusion.outputs:
            if not isinstance(o, TensorView) or o is ref or o in keep:
                continue
            src = o.definition.input if isinstance(o.definition, ex.LoadStoreOp) else None
            forked = isinstance(src, TensorView) and src.short_name in names and src not in fusion.outputs
            if o.short_name in names or forked:
                targets.append(o)
        tools.parallelize_all_like(ref, -1, targets, [pt.vectorize])
        note_transform(trace, "pointwise", f"vectorized by {v}: {ref.short_name}"
               + "".join(f", {t.short_name}" for t in targets))
    tools.inline_most(fusion)
    if trace is not None:
        note_transform(trace, "pointwise", "inlined most", ca_pos={
            t.short_name: t.compute_at_pos for t in fusion.tensors() if isinstance(t, TensorView)})


def _is_bound(tv: TensorView) -> bool:
    return any(i.parallel_type.is_thread_dim or i.parallel_type.is_block_dim for i in tv.domain.loop)


def serial_nests(fusion: Fusion) -> list[TensorView]:
    """The outputs without a thread or block binding, and the tensors (no fusion inputs)
    without one that only such tensors read: the loop nests every thread would run whole.
    A tensor that a bound consumer reads is not among them: it is not inlined into that
    consumer, and with parallel types of its own its threads would compute elements other
    than those the consumer's threads read (a `full` padded into a cat)."""
    outs = [o for o in fusion.outputs if isinstance(o, TensorView) and o not in fusion.inputs
            and o.nloop > 0 and not _is_bound(o)]
    found: set[TensorView] = set(outs)
    queue = deque(outs)
    while queue:
        for p in producers_of(queue.popleft()):
            if p in found or p in fusion.inputs or _is_bound(p):
                continue
            readers = consumers_of(p)
            if readers and all(c in found for c in readers):
                found.add(p)
                queue.append(p)
    return [t for t in fusion.tensors() if t in found]


def _schedule_blocks(fusion: Fusion, ref: TensorView, params: PointwiseParams,
                     input_caches: dict[TensorView, TensorView], keep: set[TensorView],
                     trace: Trace | None) -> None:
    """Block quantization: every thread quantizes whole blocks of the last logical axis.

    The reference (a quantized output) is split into blocks and the blocks are spread
    over threads: [.., K] -> [.., K/B, B] -> [(..*K/B), B] -> [BIDx, TIDx(128), B]. The
    quantize ops' outputs keep B as one serial loop: the runtime function quantizes the
    B values of a block at once and writes the block's packed values and its scale. The
    block scales [.., K/B] have no axis that maps to B (their last axis counts blocks),
    so they get the same merge and split of their logical domain directly and end as
    [BIDx, TIDx]: scale (i, j) is written by the thread that owns block (i, j). Every
    other tensor splits B by the vector factor, [BIDx, TIDx, B/V, V], so input caches
    read a block in vectors of V; they are inlined at TIDx into the quantization, which
    thus finds the whole block in the thread's registers. This departs from nvFuser,
    whose runtime function shares a block among 2-8 threads of a warp (a Group-parallel
    axis of 2, 4 or 8 elements next to TIDx).
    """
    pt = ParallelType
    block = params.block_size
    v = params.vectorization_factor
    qops = [e for e in fusion.exprs() if isinstance(e, BlockQuantizationOp)]
    scales = [e.block_scales for e in qops if isinstance(e.block_scales, TensorView)]
    quantized = [e.quantized for e in qops if isinstance(e.quantized, TensorView)]

    def blocks_over_threads(tv: TensorView) -> None:
        # The scales' [.., K/B] as the reference's axes left of B: [BIDx, TIDx].
        for _ in range(tv.nloop - 1):
            tv.merge(0)
        tv.split(0, THREADS_X)  # [BIDx, TIDx]

    n = ref.nloop
    ref.split(-1, block)  # [.., K/B, B]
    for _ in range(n - 1):
        ref.merge(0)  # [(..*K/B), B]
    ref.split(0, THREADS_X)  # [BIDx, TIDx, B]
    ref.axis(0).parallelize(pt.grid_x)
    ref.axis(1).parallelize(pt.block_x)
    note_transform(trace, ref.short_name, f"reference scheduled in blocks of {block}: {ref}",
           loop=str(ref.domain))
    # What reads the scales (seed 000's layout op output) iterates the scales' loops:
    # the thread that quantized block (i, j) also moves scale (i, j).
    after: dict[TensorView, list[TensorView]] = {}
    seen: set[TensorView] = set(scales)
    for sc in scales:
        queue, after[sc] = [sc], []
        while queue:
            for c in consumers_of(queue.pop(0)):
                if c not in seen:
                    seen.add(c)
                    after[sc].append(c)
                    queue.append(c)
    others = [t for t in fusion.tensors()
              if isinstance(t, TensorView) and t is not ref and t not in seen]
    tools.propagate(ref, others)
    for tv in scales:
        blocks_over_threads(tv)
        tv.axis(0).parallelize(pt.grid_x)
        tv.axis(1).parallelize(pt.block_x)
        if after[tv]:
            tools.propagate(tv, after[tv])
            tools.parallelize_all_like(tv, -1, after[tv], [pt.grid_x, pt.block_x])
    threaded = [t for t in fusion.tensors() if isinstance(t, TensorView) and t is not ref]
    tools.parallelize_all_like(ref, -1, threaded, [pt.grid_x, pt.block_x])
    # A block's loops are unrolled: every index into the thread's block is then a constant
    # and the block lives in registers, never in local memory.
    blocked = [ref] + [t for t in others if t not in fusion.inputs and t.nloop == ref.nloop]
    for tv in blocked:
        tv.axis(-1).parallelize(pt.unroll)
    if v > 1:
        split = [t for t in blocked if t not in quantized]
        for tv in split:
            tv.split(-1, v)
            tv.axis(-2).parallelize(pt.unroll)
        names = set(params.vectorized_tensors)
        targets = [c for t, c in input_caches.items() if t.short_name in names]
        targets += [o for o in fusion.outputs if isinstance(o, TensorView) and o in split
                    and o not in keep and o.short_name in names]
        for tv in targets:
            tv.axis(-1).parallelize(pt.vectorize)
        note_transform(trace, "pointwise", f"blocks read in vectors of {v}: "
               + ", ".join(t.short_name for t in targets))
    tools.inline_most(fusion)
    if trace is not None:
        note_transform(trace, "pointwise", "inlined most", ca_pos={
            t.short_name: t.compute_at_pos for t in fusion.tensors() if isinstance(t, TensorView)})
