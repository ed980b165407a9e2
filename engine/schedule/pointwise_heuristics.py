"""The pointwise scheduler's heuristics (PointwiseParams), after nvFuser's non-TMA
pointwise heuristics.

128 threads in x; the vector/unroll budget is 16 bytes of the widest input, fewer with
many tensors or with less than a wave of work; a break point splits the reference into
a left (grid y) and right (grid x, threads, vector) part when that moves at least 10%
fewer bytes than a 1-D schedule, because broadcast inputs are then read once per row or
column; grid y is split beyond 65535. The vector width comes from
engine.analysis.vectorize. With block quantization the schedule is 1-D over blocks.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from engine.analysis.vectorize import VectorizeResult, vectorization_factor
from engine.ir import exprs as ex
from engine.ir.iterdomain import IterDomain
from engine.ir.quant_exprs import BlockQuantizationOp
from engine.ir.tensorview import TensorView
from engine.schedule import tools
from engine.schedule.params import HeuristicParams, LaunchParams
from engine.schedule.pointwise_reference import find_reference, schedule_axes
from engine.schedule.tools import ceil_div, global_only, prev_pow2

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


def block_quantization_size(fusion: Fusion) -> int:
    """The block size of the fusion's BlockQuantizationOps (0 when there are none)."""
    sizes = {e.block_size for e in fusion.exprs() if isinstance(e, BlockQuantizationOp)}
    if len(sizes) > 1:
        raise ValueError(f"block quantizations of different block sizes: {sorted(sizes)}")
    return sizes.pop() if sizes else 0


def _bytes(tv: TensorView) -> int:
    # fp4 packs two values a byte; heuristics count whole bytes as nvFuser's byte sizes.
    return max(1, tv.dtype.bits // 8)


def _io(fusion: Fusion, exclude: set[TensorView]) -> list[TensorView]:
    out: list[TensorView] = []
    for v in [*fusion.inputs, *fusion.outputs]:
        if isinstance(v, TensorView) and v not in out and v not in exclude:
            out.append(v)
    return out


def compute_pointwise_heuristics(
    fusion: Fusion, info: SchedulerRuntimeInfo, trace: Trace | None = None
) -> PointwiseParams:
    """PointwiseParams for `fusion` at these sizes; the derivation goes to `trace`."""
    lines: list[str] = []
    index_type = "int" if info.index_type().name == "Int32" else "int64_t"
    ref = find_reference(fusion)
    if ref is None:
        raise ValueError("pointwise heuristics need a reference output")
    keep = global_only(fusion)
    dev = info.device
    ref_ids = schedule_axes(fusion, ref)
    elems = [info.extent(i) for i in ref_ids]
    n_elems = math.prod(elems)
    lines.append(f"reference {ref.short_name} sizes {elems} ({n_elems} elements); "
                 f"device {dev.name}: {dev.sm_count} SMs")
    if any(a is not b for a, b in zip(ref_ids, (i for i in ref.domain.logical if not i.is_reduction))):
        lines.append(f"axes in the reference's memory order: {', '.join(str(i) for i in ref_ids)}")
    if n_elems == 0 or all(i.is_broadcast for i in ref_ids):
        lines.append("zero-size or zero-dimensional reference: default parameters")
        return _done(PointwiseParams(index_type=index_type, derivation=tuple(lines)),
                          trace)

    io = _io(fusion, keep)
    vec0 = vectorization_factor(fusion, ref, info, 0, keep, axes=ref_ids)
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
        return _done(_block_heuristics(fusion, ref, info, block, index_type,
                                                 lines, keep), trace)
    bp, flip, split_block, bdimx, bdimy, gdim_left, gdim_right = _break_point(
        fusion, ref, ref_ids, info, io, elems, n_elems, max_vu, lines)

    vec = vec0 if bp == 0 else vectorization_factor(fusion, ref, info, bp, keep, axes=ref_ids)
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
    return _done(params, trace, vec)


def _block_heuristics(fusion: Fusion, ref: TensorView, info: SchedulerRuntimeInfo,
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


def _break_point(fusion: Fusion, ref: TensorView, ref_ids: list[IterDomain], info: SchedulerRuntimeInfo,
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
        # direction (engine.ir.transform_replay.linear_id), so every tensor shares it.
        lines.append("reshape in the fusion: 1-D schedule")
        return none
    present = tools.dims_present(ref, io, axes=ref_ids)
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


def _done(params: PointwiseParams, trace: Trace | None,
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
