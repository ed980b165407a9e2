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
"""

from __future__ import annotations

from engine.ir.base import Val
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
