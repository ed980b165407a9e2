"""The pointwise scheduler: 1-D and 2-D (break point) schedules over a reference output.

Acceptance follows nvFuser's PointWiseScheduler::canScheduleCompileTime (a reference
tensor, inputs of select/gather and resize ops are fusion inputs, no reductions,
block scales are fusion outputs) and the ops this engine evaluates with torch (matmul,
linear, the grouped matmul) which no generated kernel takes. The seed-000 rule for the
layout op (its offsets are fusion inputs and its output a fusion output without uses)
is checked by the registry before every scheduler's own checks (global_memory.py). With a
reshape, the flattened schedule is tried on a copy and refused, naming the tensor, when
some tensor could not be inlined into its consumers (reshape_schedule_reason).

Heuristics follow nvFuser's non-TMA pointwise heuristics: 128 threads in x; the
vector/unroll budget is 16 bytes of the widest input, fewer with many tensors or with
less than a wave of work; a break point splits the reference into a left (grid y) and
right (grid x, threads, vector) part when that moves at least 10% fewer bytes than a
1-D schedule, because broadcast inputs are then read once per row or column; grid y
is split beyond 65535. The vector width comes from engine.analysis.vectorize.

The schedule caches inputs (cache_after) and outputs (cache_before / cache_fork),
except tensors that must stay in global memory (the layout op's output and offsets,
block scales); transforms the reference, propagates to every tensor, binds the parallel
types, vectorizes the innermost axis of the input caches and outputs that the analysis
found vectorizable, and inlines as much as is legal.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Collection
from dataclasses import dataclass
from typing import TYPE_CHECKING

from engine.analysis.logical_map import consumers_of, logical_map, producers_of
from engine.analysis.replay import loop_maps_frozen
from engine.analysis.vectorize import VectorizeResult, vectorization_factor
from engine.errors import ScheduleError
from engine.ir import exprs as ex
from engine.ir.aten_exprs import ATEN_ONLY
from engine.ir.iterdomain import IterDomain, ParallelType
from engine.ir.quant_exprs import BlockQuantizationOp, CutlassNvfp4GroupedMmaOp
from engine.ir.scalar import same_scalar
from engine.ir.tensorview import MemoryType, TensorView, verification_deferred
from engine.schedule import tools
from engine.schedule.base import Scheduler, SchedulerType
from engine.schedule.params import HeuristicParams, LaunchParams
from engine.schedule.registry import register
from engine.schedule.tools import ceil_div, note_transform, prev_pow2

if TYPE_CHECKING:
    from engine.ir.fusion import Fusion
    from engine.schedule.runtime_info import SchedulerRuntimeInfo
    from engine.trace import Trace

THREADS_X = 128
GRID_Y_LIMIT = 65535
VECTOR_BYTES = 16


@dataclass(frozen=True)
class PointwiseParams(HeuristicParams):
    tag: str = "Pointwise heuristics"
    break_point: int = 0
    split_block: bool = False
    split_grid_y_dim: bool = False
    flip_grid_binding: bool = False
    vectorization_factor: int = 1
    unroll_factor_inner: int = 1
    unroll_factor_outer: int = 1
    # Inputs and outputs (names before caching) whose innermost axis the vectorization
    # analysis found contiguous with the reference's: the schedule vectorizes their
    # global reads and writes. Not part of nvFuser's printout.
    vectorized_tensors: tuple[str, ...] = ()
    # Elements of one quantization block when the fusion has a BlockQuantizationOp (0
    # otherwise): the schedule gives each thread whole blocks of the last logical axis.
    # Not part of nvFuser's printout.
    block_size: int = 0

    def __str__(self) -> str:
        lp = self.lparams
        s = "\n===== Pointwise Parameters ========\n"
        s += ("Tag: " if self.tag else "") + f"{self.tag} Pointwise Characteristics:\n"
        s += f" Gridx: {lp.gdimx} BlckY: {lp.bdimy} BlckX: {lp.bdimx}\n"
        if self.break_point:
            s += f"2D Schedule\n  Bcast break point: {self.break_point}\n"
            if self.split_block:
                s += "Split block into y-dim\n"
            if self.split_grid_y_dim:
                s += "  Split y grid dim\n"
        s += f"vectorization_factor: {self.vectorization_factor}\n"
        s += f"unroll_factor_outer: {self.unroll_factor_outer}\n"
        s += f"unroll_factor_inner: {self.unroll_factor_inner}\n"
        if self.flip_grid_binding:
            s += "Flip BIDx/BIDy bindings\n"
        s += "====================================\n"
        return s


# The layout op's output and offsets and block scales stay in global memory; the rule
# (and the layout op's buffer check, applied by the registry to every scheduler) is
# shared by all schedulers in tools.
global_only = tools.global_only
layout_op_buffer_reason = tools.layout_op_buffer_reason


# ---- compile-time checks ---------------------------------------------------------------

_UNSUPPORTED = (ex.MatmulOp, ex.LinearOp, CutlassNvfp4GroupedMmaOp, *ATEN_ONLY)


def _concrete(tv: TensorView) -> list[IterDomain]:
    # Reduction axes count: a reduction output's reduced axes map to its input's, as in
    # nvFuser's compute-at map (pointwise refuses reductions later, with its own reason).
    return [i for i in tv.domain.logical if not i.is_broadcast]


def covers_inputs(fusion: Fusion, ref: TensorView) -> bool:
    """Whether every concrete axis of every input maps to an axis of `ref` (nvFuser's
    DomainMap::isValidReference): otherwise propagating `ref`'s schedule leaves those
    axes unscheduled. Axes are followed through logical maps; a reshape is crossed as
    a whole (its output covered means its input is). Global-only tensors (offsets) and
    inputs read only as an indexing op's lookup table are not required to map."""
    # A tensor is walked again whenever its coverage grows: its edges and axes are
    # found once per walk.
    concrete: dict[TensorView, set[IterDomain]] = {}
    edges: dict[TensorView, list[tuple[TensorView, dict[IterDomain, IterDomain] | None]]] = {}

    def concrete_of(tv: TensorView) -> set[IterDomain]:
        got = concrete.get(tv)
        if got is None:
            got = concrete[tv] = set(_concrete(tv))
        return got

    # The inputs that must be covered, each with the axes it still lacks: coverage only
    # grows, so the walk stops once none is left (what it would cover after that cannot
    # change the answer).
    lacking: dict[TensorView, set[IterDomain]] = {}
    # Lookup tables are global-only too, but one also read elementwise must be covered.
    keep = global_only(fusion) - tools.lookup_inputs(fusion)
    lookup_only = tools.INDEXING_OPS
    for tv in fusion.inputs:
        if not isinstance(tv, TensorView) or tv in keep or not _concrete(tv):
            continue
        uses = fusion.uses_of(tv)
        if uses and all(isinstance(e, lookup_only) and e.inputs[0] is tv for e in uses):
            continue
        if not uses:
            continue
        lacking[tv] = set(_concrete(tv))
    if not lacking:
        return True

    def reached(tv: TensorView, have: set[IterDomain]) -> bool:
        """Note `tv`'s coverage; whether every input is now covered."""
        need = lacking.get(tv)
        if need is not None and need <= have:
            del lacking[tv]
        return not lacking

    covered: dict[TensorView, set[IterDomain]] = {ref: set(concrete_of(ref))}
    if reached(ref, covered[ref]):
        return True
    queue = deque([ref])
    while queue:
        src = queue.popleft()
        have = covered[src]
        full = have >= concrete_of(src)
        out = edges.get(src)
        if out is None:
            out = edges[src] = _coverage_edges(src)
        for nb, m in out:
            if m is None:  # across a reshape: all or nothing
                got = set(concrete_of(nb)) if full else set()
            else:
                got = {m[i] for i in have if i in m}
            old = covered.get(nb, set())
            if not got <= old:
                covered[nb] = now = old | got
                queue.append(nb)
                if reached(nb, now):
                    return True
    return False


def _coverage_edges(src: TensorView) -> list[tuple[TensorView, dict[IterDomain, IterDomain] | None]]:
    """covers_inputs' edges out of `src`: each consumer, then each producer, with the map
    from src's logical ids to the neighbour's (None across a reshape)."""
    consumers = consumers_of(src)
    out: list[tuple[TensorView, dict[IterDomain, IterDomain] | None]] = []
    for nb in [*consumers, *producers_of(src)]:
        is_consumer = nb in consumers
        consumer = nb if is_consumer else src
        if isinstance(consumer.definition, ex.ViewOp):
            out.append((nb, None))
        elif is_consumer:
            out.append((nb, logical_map(src, nb, map_broadcast=False)))
        else:
            out.append((nb, {c: p for p, c in logical_map(nb, src, map_broadcast=False).items()}))
    return out


def find_reference(fusion: Fusion) -> TensorView | None:
    """The output with the most logical axes (the first on ties) whose axes cover every
    input's, as nvFuser's findReferenceTensorView; fusion inputs and global-only tensors
    cannot lead."""
    keep = global_only(fusion)
    best: TensorView | None = None
    for out in fusion.outputs:
        if not isinstance(out, TensorView) or out in fusion.inputs or out in keep:
            continue
        if (best is None or out.ndim > best.ndim) and covers_inputs(fusion, out):
            best = out
    return best


# Shared with every scheduler (nvFuser's rejectScheduleForMemoryPromotion).
memory_promotion_reason = tools.memory_promotion_reason


def conflicting_reshapes(fusion: Fusion) -> bool:
    """Whether tensors that share their axes (connected by any op but a reshape) are
    reshaped to different shapes: transform propagation from one reference cannot
    replay both (nvFuser's requiresForwardViewReplay, by shapes rather than by exact
    IterDomain sets: conservative where a broadcast joins two tensors)."""
    parent: dict[TensorView, TensorView] = {}

    def find(t: TensorView) -> TensorView:
        while parent.setdefault(t, t) is not t:
            t = parent[t]
        return t

    views: list[ex.ViewOp] = []
    for e in fusion.exprs():
        if isinstance(e, ex.ViewOp):
            views.append(e)
            continue
        tvs = [v for v in [*e.inputs, *e.outputs] if isinstance(v, TensorView)]
        for t in tvs[1:]:
            parent[find(t)] = find(tvs[0])
    shapes: dict[TensorView, set[tuple[str, ...]]] = {}
    for e in views:
        shape = tuple(i.extent.inline() for i in e.output.domain.logical)
        shapes.setdefault(find(e.input), set()).add(shape)
    return any(len(v) > 1 for v in shapes.values())


def reshape_schedule_reason(fusion: Fusion) -> str | None:
    """With a reshape, whether the 1-D schedule gives every tensor a loop its consumers
    share. Transform propagation carries the reference's flattened loop across a reshape
    from the full row-major merge of one side's axes to the other's; a tensor whose axes
    reach the reshape in another order (a permute of the reshaped tensor between the
    reference and the reshape) cannot be flattened both ways, and would be read by its
    consumers at elements other threads computed. The schedule is tried on a copy (the
    verdict never changes the fusion) and refused, naming the tensor, when a local
    tensor with consumers keeps a parallel axis outside its inlined loops; the
    segmenter then splits the fusion. None when it schedules consistently."""
    if not any(isinstance(e, ex.ViewOp) for e in fusion.exprs()):
        return None
    if any(isinstance(e, BlockQuantizationOp) for e in fusion.exprs()):
        return None  # the block schedule is not the flattened one (and takes no reshape)
    # Most trials succeed: tried first with one verification at the end (see
    # verification_deferred); a trial that fails in any way is made again step by step,
    # whose first error (or crash) is the verdict's.
    copy, _ = fusion.clone()
    try:
        # The verification at the end asks for the loop maps that inlining computed
        # (they are keyed by what they depend on: the trial may change the schedule).
        with loop_maps_frozen(), verification_deferred():
            _trial_schedule(copy)
        return _unscheduled_reason(fusion, copy)
    except Exception:  # noqa: BLE001 - any failure: the verified trial below says what it is
        pass
    finally:
        copy.release()  # the trial is not read again (see Fusion.release)
    copy, _ = fusion.clone()
    try:
        return _trial_schedule_reason(fusion, copy)
    finally:
        copy.release()


def _trial_schedule(copy: Fusion) -> None:
    schedule_pointwise(copy, PointwiseParams(lparams=LaunchParams(bdimx=THREADS_X)))


def _trial_schedule_reason(fusion: Fusion, copy: Fusion) -> str | None:
    """reshape_schedule_reason's trial: the 1-D schedule on `copy` (a clone of `fusion`)."""
    try:
        _trial_schedule(copy)
    except (ValueError, ScheduleError) as e:
        return f"the 1-D schedule cannot cross the reshapes: {e}"
    return _unscheduled_reason(fusion, copy)


def _unscheduled_reason(fusion: Fusion, copy: Fusion) -> str | None:
    """After the trial on `copy`: a local tensor with consumers that keeps a parallel axis
    outside its inlined loops, as the verdict names it, or None."""
    names = {t.short_name for t in fusion.tensors() if isinstance(t, TensorView)}

    def name(tv: TensorView) -> str:
        # The copy's caches are not in the user's fusion: name them by what they copy.
        d = tv.definition
        if tv.short_name in names or not isinstance(d, ex.LoadStoreOp):
            return tv.short_name
        if isinstance(d.inputs[0], TensorView) and d.inputs[0].short_name in names:
            return f"the cache of {d.inputs[0].short_name}"
        return tv.short_name

    for tv in copy.tensors():
        if (not isinstance(tv, TensorView) or tv in copy.inputs
                or tv.memory_type != MemoryType.Local or not consumers_of(tv)):
            continue
        outside = [i for i in tv.domain.loop[tv.compute_at_pos:]
                   if not i.is_broadcast and (i.parallel_type.is_thread_dim or i.parallel_type.is_block_dim)]
        if outside:
            readers = [c for c in consumers_of(tv) if c.short_name in names] or consumers_of(tv)
            return (f"the 1-D schedule cannot cross the reshapes: {name(tv)} is not inlined "
                    f"into {', '.join(c.short_name for c in readers)} (their loops differ: "
                    "reshaped and permuted axes flatten in different orders), so it would be "
                    "read at elements other threads computed")
    return None


def has_reduction(fusion: Fusion) -> bool:
    for e in fusion.exprs():
        if isinstance(e, (ex.ReductionOp, ex.WelfordOp)):
            return True
        for o in e.outputs:
            if isinstance(o, TensorView) and any(i.is_reduction for i in o.domain.logical):
                return True
    return False


def _concrete_last(tv: TensorView) -> IterDomain:
    return [i for i in tv.domain.logical if not i.is_reduction][-1]


def block_quantization_size(fusion: Fusion) -> int:
    """The block size of the fusion's BlockQuantizationOps (0 when there are none)."""
    sizes = {e.block_size for e in fusion.exprs() if isinstance(e, BlockQuantizationOp)}
    if len(sizes) > 1:
        raise ValueError(f"block quantizations of different block sizes: {sorted(sizes)}")
    return sizes.pop() if sizes else 0


def block_quantization_reference_reason(fusion: Fusion) -> str | None:
    """The block schedule splits the reference's last logical axis into blocks, so that
    axis must be every quantization's last (K) axis: the reference must be a quantized
    output (an output of another shape could put a different axis last)."""
    qs = [e for e in fusion.exprs() if isinstance(e, BlockQuantizationOp)]
    if not qs:
        return None
    if len({e.block_size for e in qs}) > 1:
        return "block quantizations of different block sizes"
    ref = find_reference(fusion)
    if ref is None or not any(ref is e.quantized for e in qs):
        return ("block quantization needs its quantized output to be the reference "
                f"(found {ref.short_name if ref is not None else 'none'})")
    ref_k = _concrete_last(ref)
    for e in qs[1:]:
        other = e.quantized
        assert isinstance(other, TensorView)
        if other.ndim != ref.ndim or not same_scalar(_concrete_last(other).extent, ref_k.extent):
            return "block quantizations of different shapes"
    return None


def non_terminal_block_quantize(fusion: Fusion) -> TensorView | None:
    for e in fusion.exprs():
        if isinstance(e, BlockQuantizationOp) and e.block_scales not in fusion.outputs:
            return e.block_scales
    return None


# ---- heuristics helpers -------------------------------------------------------------------

def _bytes(tv: TensorView) -> int:
    # fp4 packs two values a byte; heuristics count whole bytes as nvFuser's byte sizes.
    return max(1, tv.dtype.bits // 8)


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
    n = len([i for i in ref.domain.logical if not i.is_reduction])
    inputs = [t for t in fusion.inputs if isinstance(t, TensorView) and fusion.uses_of(t)]
    reached = tools.dims_present(ref, inputs, broadcasts=True)
    present = tools.dims_present(ref, inputs)
    right = set(range(bp, n))

    def unaligned(t: TensorView) -> bool:
        return bp > 0 and not any(d < bp for d in reached[t])

    return [t for t in inputs if not right <= present[t] and (t.short_name in vectorized or unaligned(t))]


def _io(fusion: Fusion, exclude: set[TensorView]) -> list[TensorView]:
    out: list[TensorView] = []
    for v in [*fusion.inputs, *fusion.outputs]:
        if isinstance(v, TensorView) and v not in out and v not in exclude:
            out.append(v)
    return out


@register
class PointwiseScheduler(Scheduler):
    type = SchedulerType.pointwise

    def reject_compile_time(self, fusion: Fusion) -> str | None:
        # The layout op's global-buffer rule is checked by the registry before this, for
        # every scheduler (nvFuser's checkCanSchedule).
        unsupported = sorted({type(e).__name__ for e in fusion.exprs() if isinstance(e, _UNSUPPORTED)})
        if unsupported:
            return (f"Has unsupported ops: {', '.join(unsupported)} "
                    "(evaluated by the expr_eval scheduler in this engine)")
        ref = find_reference(fusion)
        if ref is None:
            return "cannot find reference tensor"
        reached = tools.connected_tensors(ref)
        apart = next((o for o in fusion.outputs if isinstance(o, TensorView) and o not in reached), None)
        if apart is not None:
            # Propagation from the reference never reaches it: every thread would write it whole.
            return f"output {apart.short_name} shares no tensor with the reference {ref.short_name}"
        why = memory_promotion_reason(fusion)
        if why is not None:
            return why
        if conflicting_reshapes(fusion):
            return "Fusion requires view being reversible."
        if has_reduction(fusion):
            return "no support for reduction ops"
        if non_terminal_block_quantize(fusion) is not None:
            return "no support for block quantization where block scales is not a fusion output"
        why = block_quantization_reference_reason(fusion)
        if why is not None:
            return why
        return reshape_schedule_reason(fusion)

    def reject_runtime(self, fusion: Fusion, info: SchedulerRuntimeInfo) -> str | None:
        # nvFuser's canScheduleRunTime asks for a vector of at least 2 and no split grid
        # y, because its runtime function quantizes a block with 2-8 threads of 8-2
        # grouped elements each. This engine's runtime function (nvfp4QuantizeBlock)
        # quantizes a whole block in one thread, and the schedule is 1-D over blocks,
        # so neither limit applies; the last axis must hold whole blocks.
        for e in fusion.exprs():
            if not isinstance(e, BlockQuantizationOp):
                continue
            assert isinstance(e.inputs[0], TensorView)
            k = info.extent(_concrete_last(e.inputs[0]))
            if k % e.block_size:
                return (f"Block Quantization Op needs the last axis ({k}) of "
                        f"{e.inputs[0].short_name} to be a multiple of the block size "
                        f"{e.block_size}.")
        return None

    # ---- heuristics ------------------------------------------------------------------
    def compute_heuristics(
        self, fusion: Fusion, info: SchedulerRuntimeInfo, trace: Trace | None = None
    ) -> PointwiseParams:
        lines: list[str] = []
        index_type = "int" if info.index_type().name == "Int32" else "int64_t"
        ref = find_reference(fusion)
        if ref is None:
            raise ValueError("pointwise heuristics need a reference output")
        keep = global_only(fusion)
        dev = info.device
        ref_ids = [i for i in ref.domain.logical if not i.is_reduction]
        elems = [info.extent(i) for i in ref_ids]
        n_elems = math.prod(elems)
        lines.append(f"reference {ref.short_name} sizes {elems} ({n_elems} elements); "
                     f"device {dev.name}: {dev.sm_count} SMs")
        if n_elems == 0 or all(i.is_broadcast for i in ref_ids):
            lines.append("zero-size or zero-dimensional reference: default parameters")
            return self._done(PointwiseParams(index_type=index_type, derivation=tuple(lines)),
                              trace)

        io = _io(fusion, keep)
        vec0 = vectorization_factor(fusion, ref, info, 0, keep)
        n_vec_io = len(vec0.vectorizable)
        # The widest vectorizable tensor bounds the vector (nvFuser's
        # max_dtype_size_bit_for_vectorization): a 0-d scale input does not.
        max_bits = max([t.dtype.bits for t in vec0.vectorizable], default=8)
        max_vu = ceil_div(VECTOR_BYTES * 8 // max_bits, max(prev_pow2(n_vec_io) >> 2, 1))
        lines.append(f"vector/unroll budget: 16 bytes / {max_bits} bits (widest vectorizable "
                     f"tensor) over {n_vec_io} vectorizable tensors -> {max_vu}")
        wave = dev.sm_count * THREADS_X
        if n_elems < wave and max_vu > 1:
            max_vu = min(max_vu, ceil_div(n_elems, wave))
            lines.append(f"fewer elements than a wave ({wave}): budget -> {max_vu}")

        block = block_quantization_size(fusion)
        if block:
            return self._done(self._block_heuristics(fusion, ref, info, block, index_type,
                                                     lines, keep), trace)
        bp, flip, split_block, bdimx, bdimy, gdim_left, gdim_right = self._break_point(
            fusion, ref, info, io, elems, n_elems, max_vu, lines)

        vec = vec0 if bp == 0 else vectorization_factor(fusion, ref, info, bp, keep)
        lines.extend(f"  {x}" for x in vec.derivation)
        # A vector must stay a power of two that divides the extent, whatever the budget.
        v = min(vec.factor, prev_pow2(max_vu))
        if v < vec.factor:
            lines.append(f"vectorization factor limited by the budget -> {v}")
        unroll_inner = 1
        if v == 1 and bp == 0 and max_vu > 1:
            # nvFuser unrolls instead when nothing vectorizes.
            unroll_inner = max_vu
            lines.append(f"not vectorized: unroll by {unroll_inner}")
        split_grid_y = (gdim_right if flip else gdim_left) > GRID_Y_LIMIT
        if split_grid_y:
            lines.append(f"grid y extent above {GRID_Y_LIMIT}: split grid y")
        if bp == 0:
            gdimx = ceil_div(n_elems, v * unroll_inner * THREADS_X)
            lines.append(f"1-D schedule: {gdimx} blocks of {THREADS_X} threads x {v * unroll_inner}")
        lp = LaunchParams(bdimx=bdimx, bdimy=bdimy if split_block else -1)
        params = PointwiseParams(
            lparams=lp, index_type=index_type, break_point=bp, split_block=split_block,
            split_grid_y_dim=split_grid_y, flip_grid_binding=flip, vectorization_factor=v,
            unroll_factor_inner=unroll_inner, derivation=tuple(lines),
            vectorized_tensors=tuple(t.short_name for t in vec.vectorizable) if v > 1 else (),
        )
        return self._done(params, trace, vec)

    def _block_heuristics(self, fusion: Fusion, ref: TensorView, info: SchedulerRuntimeInfo,
                          block: int, index_type: str, lines: list[str],
                          keep: set[TensorView]) -> PointwiseParams:
        """Block quantization: a 1-D schedule over blocks, [BIDx, TIDx(128), block].

        Each thread quantizes whole blocks of the last axis (this engine's runtime
        function takes a block's 16 values at once), so the vector only subdivides a
        block: the largest power of two that the analysis allows, that fits 16 bytes of
        the widest vectorizable tensor and divides the block. No unroll (the runtime
        function is called once per block), no wave-based budget (a thread's work is a
        block whatever the size), no break point.
        """
        n_blocks = math.prod(info.extent(i) for i in ref.domain.logical
                             if not i.is_reduction) // block
        vec = vectorization_factor(fusion, ref, info, 0, keep)
        lines.extend(f"  {x}" for x in vec.derivation)
        max_bits = max([t.dtype.bits for t in vec.vectorizable if t.dtype.bits >= 8], default=8)
        v = min(vec.factor, VECTOR_BYTES * 8 // max_bits, block)
        v = math.gcd(prev_pow2(max(v, 1)), block)
        gdimx = ceil_div(n_blocks, THREADS_X)
        lines.append(f"block quantization: {n_blocks} blocks of {block} elements, one per "
                     f"thread; 1-D schedule of {gdimx} blocks of {THREADS_X} threads; each "
                     f"block read in vectors of {v} (16 bytes of {max_bits} bits, the "
                     "analysis, and the block size bound it)")
        return PointwiseParams(
            lparams=LaunchParams(bdimx=THREADS_X), index_type=index_type,
            vectorization_factor=v, derivation=tuple(lines), block_size=block,
            vectorized_tensors=tuple(t.short_name for t in vec.vectorizable) if v > 1 else (),
        )

    def _break_point(self, fusion: Fusion, ref: TensorView, info: SchedulerRuntimeInfo,
                     io: list[TensorView], elems: list[int], n_elems: int, max_vu: int,
                     lines: list[str]) -> tuple[int, bool, bool, int, int, int, int]:
        """nvFuser's 2-D search: the break point that moves the fewest bytes, if it saves
        at least 10% over 1-D. Returns (bp, flip, split_block, bdimx, bdimy, gdim_left,
        gdim_right)."""
        dev = info.device
        none = (0, False, False, THREADS_X, 1, 1, 1)
        if n_elems * 2 <= dev.sm_count * THREADS_X:
            lines.append("little parallelism: 1-D schedule")
            return none
        if any(isinstance(e, ex.ViewOp) for e in fusion.exprs()):
            # A break inside a reshaped group of axes would split what the reshape merged;
            # without nvFuser's view-disjoint sets the engine keeps such fusions 1-D. The
            # flattened loop is also what propagation carries across a reshape, in either
            # direction (engine.analysis.replay.linear_id), so every tensor shares it.
            lines.append("reshape in the fusion: 1-D schedule")
            return none
        present = tools.dims_present(ref, io)
        dtype_sum = sum(_bytes(t) for t in io)
        transfer_1d = 1
        for e in elems:
            transfer_1d *= e * dtype_sum
        best = none
        best_cost: int | None = None
        for bp in range(1, len(elems)):
            right = math.prod(elems[bp:])
            left = n_elems // right if right else 0
            if left <= 1:
                continue
            lhs = sum(_bytes(t) for t in io if any(d < bp for d in present[t]))
            rhs = sum(_bytes(t) for t in io if any(d >= bp for d in present[t]))
            cost, right_bytes = 1, 1
            for e in elems[:bp]:
                cost *= e * lhs
            for e in elems[bp:]:
                right_bytes *= e * rhs
            cost *= right_bytes
            if (best_cost is not None and cost >= best_cost) or cost * 10 >= transfer_1d * 9:
                continue
            if ceil_div(right, max_vu) <= dev.warp_size:
                continue
            flip = lhs <= rhs and dev.l2_cache_bytes < right_bytes * 2
            bdimx = min(ceil_div(right, max_vu), THREADS_X)
            bdimy = THREADS_X // bdimx if left > dev.sm_count else 1
            best = (bp, flip, bdimy > 1, bdimx, bdimy, ceil_div(left, bdimy),
                    ceil_div(right, bdimx * max_vu))
            best_cost = cost
            lines.append(f"break point {bp}: left {left} x {lhs} B, right {right} x {rhs} B, "
                         f"cost {cost} < 90% of 1-D {transfer_1d}")
        if best[0] == 0:
            lines.append("no break point saves 10% of the 1-D transfer: 1-D schedule")
        return best

    def _done(self, params: PointwiseParams, trace: Trace | None,
              vec: VectorizeResult | None = None) -> PointwiseParams:
        if trace is not None:
            for line in params.derivation:
                trace.event("heuristic", "pointwise", line)
            trace.event("heuristic", "pointwise", str(params).strip(),
                        break_point=params.break_point,
                        vectorization_factor=params.vectorization_factor,
                        unroll_factor_inner=params.unroll_factor_inner,
                        split_grid_y_dim=params.split_grid_y_dim,
                        flip_grid_binding=params.flip_grid_binding,
                        vectorizable=[t.short_name for t in (vec.vectorizable if vec else ())])
        return params

    # ---- schedule ---------------------------------------------------------------------
    def schedule(self, fusion: Fusion, params: HeuristicParams | None, trace: Trace | None = None) -> None:
        if not isinstance(params, PointwiseParams):
            raise TypeError(f"the pointwise scheduler needs PointwiseParams, got {params!r}")
        schedule_pointwise(fusion, params, trace)


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
