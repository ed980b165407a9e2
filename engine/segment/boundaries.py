"""Tensors that must cross a segment boundary (seeds 000 and 004).

- Seed 000: the layout op (PreprocessGroupedMatmulInputSf) runs as a runtime function that
  reads both offsets and writes its output in global memory with its own indexing. When
  the offsets are computed inside the fusion the segmenter cuts there, so they become
  segment inputs; its output becomes a segment output. Only the grouped matmul may read
  that output, as its scale1: any other use is an error naming the use.
- Seed 004: block scales of a BlockQuantizationOp must be a (segment) output (the
  pointwise scheduler refuses them otherwise); when the fusion reads them, the segment
  that quantizes writes them to global memory as a segment output whether or not their
  readers share its segment. (nvFuser cuts before the readers; this engine keeps the
  layout op with the quantization, since its pointwise scheduler finds no reference in a
  layout op alone.)
- A reshape that only splits axes of a fusion input and leads to a reduction (a per-head
  RMSNorm reading [B, S, H * D] as [B, S, H, D]), when the fusion is segmented: nvFuser's
  reduction scheduler takes such a reshape, this engine's does not, and a group of the
  reshape with the ops after it blocks every merge towards the normalization. Apart, it is
  a view of the input without a kernel, and the normalization a kernel of its own; after
  merging, it joins its only reader where that kernel's scheduler takes it (a persistent
  one takes split-only reshapes: engine.segment.level_merge._absorb_input_views).
"""

from __future__ import annotations

from engine.analysis.view_interference import split_only
from engine.ir import exprs as ex
from engine.ir.base import Val
from engine.ir.dependencies import downstream_tvs
from engine.ir.fusion import Fusion
from engine.ir.quant_exprs import BlockQuantizationOp, PreprocessGroupedMatmulInputSf
from engine.ir.tensorview import TensorView
from engine.ops.quantize import check_layout_op_uses as check_use
from engine.trace import Trace


def check_layout_op_uses(fusion: Fusion) -> None:
    """Refuse any read of the layout op's output other than the grouped matmul's scale1
    (FusionDefinitionError naming the use), as nvFuser's segmenter checks."""
    for e in fusion.exprs():
        if isinstance(e, PreprocessGroupedMatmulInputSf):
            for use in fusion.uses_of(e.output):
                check_use(use)


def boundary_vals(fusion: Fusion, trace: Trace | None = None) -> tuple[dict[Val, str], dict[Val, str]]:
    """(cut, forced): tensors that no segment may both compute and read, and tensors that
    the segment computing them must output; each with the reason."""
    out: dict[Val, str] = {}
    forced: dict[Val, str] = {}
    for e in fusion.exprs():
        if isinstance(e, PreprocessGroupedMatmulInputSf):
            for what, v in (("input_offsets", e.input_offsets), ("output_offsets", e.output_offsets)):
                if isinstance(v, TensorView) and v.definition is not None:
                    out[v] = (f"{what} {v.short_name} of PreprocessGroupedMatmulInputSf is read by its "
                              "runtime function from global memory: it must be a segment input")
            if fusion.uses_of(e.output):
                out[e.output] = (f"output {e.output.short_name} of PreprocessGroupedMatmulInputSf is "
                                 "written by its runtime function to global memory: it must be a "
                                 "segment output")
        elif isinstance(e, BlockQuantizationOp):
            s = e.block_scales
            if isinstance(s, TensorView) and fusion.uses_of(s):
                forced[s] = (f"block scales {s.short_name} of BlockQuantizationOp are read inside the "
                             "fusion: they must be a segment output")
    if trace is not None:
        for v, why in out.items():
            trace.event("boundary", v.short_name, why, tensor=v.short_name, rule="cut")
        for v, why in forced.items():
            trace.event("boundary", v.short_name, why, tensor=v.short_name, rule="output")
    return out, forced


def input_views_before_reductions(fusion: Fusion, trace: Trace | None = None) -> dict[Val, str]:
    """Outputs of split-only reshapes of fusion inputs that a reduction reads (through any
    ops): each must cross a segment boundary, the reshape a segment with no kernel."""
    out: dict[Val, str] = {}
    for e in fusion.exprs():
        if not (isinstance(e, ex.ViewOp) and e.inputs[0] in fusion.inputs and split_only(e)):
            continue
        if any(isinstance(t.definition, (ex.ReductionOp, ex.WelfordOp)) for t in downstream_tvs(e.output)):
            out[e.output] = (f"{e.output.short_name} splits axes of input {e.inputs[0].short_name} and a "
                             "reduction reads it: a view without a kernel, apart from the reduction's segment")
            if trace is not None:
                trace.event("boundary", e.output.short_name, out[e.output], tensor=e.output.short_name,
                            rule="input_view")
    return out
