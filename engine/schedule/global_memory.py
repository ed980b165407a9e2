"""Tensors that must stay in global memory, and the rules every scheduler applies to them.

Runtime functions read and write some tensors in global memory with their own indexing (the
layout op's output and offsets, block scales); indexing ops read their lookup table at
positions taken from data, and slices and pads read their input at shifted positions: at
elements that another thread would own. No scheduler caches, forks or vectorizes such
tensors (`global_only`, `read_by_resize`). A fusion that would compute such a tensor, or
read it again, inside a kernel is refused: by every scheduler for the layout op
(`layout_op_buffer_reason`, which the registry applies), by every kernel scheduler for the
indexing and resize ops (`memory_promotion_reason`)."""

from __future__ import annotations

from engine.ir import exprs as ex
from engine.ir.fusion import Fusion
from engine.ir.indexing_exprs import INDEXING_OPS as INDEXING_OPS
from engine.ir.iterdomain import Resize, transforms_between
from engine.ir.quant_exprs import BlockQuantizationOp, PreprocessGroupedMatmulInputSf
from engine.ir.tensorview import TensorView


def lookup_inputs(fusion: Fusion) -> set[TensorView]:
    """Fusion inputs read as the lookup table of select, index_select or gather
    (take_along_axis). A thread reads such a table at an index that comes from data,
    i.e. at elements that another thread would have loaded into its registers, so the
    table is read from global memory directly (nvFuser's cacheInputs skips
    isTorchGatherLookupTv / isIndexSelectLookupTv and inputs of SelectOp)."""
    return {e.inputs[0] for e in fusion.exprs()
            if isinstance(e, INDEXING_OPS) and isinstance(e.inputs[0], TensorView)
            and e.inputs[0] in fusion.inputs}


def global_only(fusion: Fusion) -> set[TensorView]:
    """Tensors that no scheduler may cache, fork, vectorize or keep as persistent buffers:
    the layout op's output and offsets (seed 000) and block scales (seed 004), which
    runtime functions read and write in global memory with their own indexing, and the
    lookup tables of indexing ops (`lookup_inputs`), read at data-dependent positions.
    """
    return lookup_inputs(fusion) | runtime_buffers(fusion)


def runtime_buffers(fusion: Fusion) -> set[TensorView]:
    """The tensors runtime functions read and write in global memory with their own
    indexing: the layout op's output and offsets (seed 000), block scales (seed 004)."""
    keep: set[TensorView] = set()
    for e in fusion.exprs():
        if isinstance(e, PreprocessGroupedMatmulInputSf):
            keep.update(v for v in (e.output, e.input_offsets, e.output_offsets)
                        if isinstance(v, TensorView))
        elif isinstance(e, BlockQuantizationOp) and isinstance(e.block_scales, TensorView):
            keep.add(e.block_scales)
    return keep


def layout_op_buffer_reason(fusion: Fusion) -> str | None:
    """Seed 000: the layout op's runtime function reads both offsets and writes its
    output in global memory, so the offsets must be fusion (segment) inputs and the
    output a fusion output that nothing in the fusion reads. A reason naming the
    tensor, or None. The registry applies it before every scheduler's own checks, as
    nvFuser's checkCanSchedule does."""
    for e in fusion.exprs():
        if not isinstance(e, PreprocessGroupedMatmulInputSf):
            continue
        for what, v in (("input_offsets", e.input_offsets), ("output_offsets", e.output_offsets)):
            if v not in fusion.inputs:
                return (f"{what} {v.short_name} of PreprocessGroupedMatmulInputSf must be a "
                        "fusion input: its runtime function reads it from global memory")
        out = e.output
        if out not in fusion.outputs or fusion.uses_of(out):
            return (f"output {out.short_name} of PreprocessGroupedMatmulInputSf must be a "
                    "fusion output with no uses: its runtime function writes it to global memory")
    return None


def _has_resized_logical(tv: TensorView) -> bool:
    dom = tv.domain
    return dom.root is not None and any(
        isinstance(t, Resize) for t in transforms_between(dom.root, dom.logical))


def memory_promotion_reason(fusion: Fusion) -> str | None:
    """nvFuser's rejectScheduleForMemoryPromotion, which every kernel scheduler (no_op,
    reduction, persistent, transpose, pointwise) applies: select, index_select and
    gather, and ops whose output is resized (pad, slice), must read a fusion input.
    Their first input is read at elements other threads own (a data-dependent index, or
    a shifted position), which only works from global memory; an intermediate computed
    in the same kernel lives in registers. The segmenter then cuts before such an op,
    so its first input arrives through global memory. A `full` is the exception: every
    element is its fill value, which the lowering reads directly (pipeline.constant_fulls)."""
    for e in fusion.exprs():
        indexing = isinstance(e, INDEXING_OPS)
        resized = any(isinstance(o, TensorView) and _has_resized_logical(o) for o in e.outputs)
        first = e.inputs[0]
        constant = resized and isinstance(getattr(first, "definition", None), ex.FullOp)
        if (indexing or resized) and first not in fusion.inputs and not constant:
            return f"First input of {type(e).__name__} must be fusion input."
    return None


def read_by_resize(fusion: Fusion, tv: TensorView) -> bool:
    """Whether a slice or pad reads `tv`. Such an op reads its input at shifted
    positions (a pad's output element i reads input element i - left), i.e. at elements
    another thread's iteration of the unpadded domain would own, so every scheduler
    reads such an input from global memory where the op needs it (nvFuser's
    scheduler_utils::cacheInputs skips inputs used by SliceOp, SelectOp and PadOp)."""
    return any(isinstance(e, (ex.SliceOp, ex.PadOp)) for e in fusion.uses_of(tv))
