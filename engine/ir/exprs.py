"""Op expressions of the fusion IR and their nvFuser listing lines.

Each class holds what the op needs (operands as graph edges, the rest as
attributes) and prints itself as nvFuser's `Fusion::printMath` does. Shape and
dtype inference live in `engine.ops`; semantics in `engine.reference`.

This module gathers the expression classes, one module per family:

- pointwise_exprs: unary, binary and ternary ops;
- reduction_exprs: reductions and Welfords (and their rfactor'ed first halves);
- shape_exprs: broadcast, squeeze, expand, view, set, slice, pad and cat;
- factory_exprs: full, iota and random numbers;
- indexing_exprs: select, index_select and gather;
- matmul_exprs: matmul, linear and scaled dot-product attention;
- expr_text: the pieces of an op line that the families share.

The ATen-only ops (aten_exprs) and the nvfp4 recipe's ops (quant_exprs) have modules of
their own, not gathered here.
"""

from __future__ import annotations

from engine.ir.base import Expr, Val
from engine.ir.expr_text import (
    flags_str,
    ind,
    list_str,
    operand,
    scalar_str,
    two_lines,
    typed_value,
)
from engine.ir.factory_exprs import FullOp, IotaOp, RNGOp
from engine.ir.indexing_exprs import GatherOp, IndexSelectOp, SelectOp
from engine.ir.matmul_exprs import LinearOp, MatmulOp, RFactorLinearOp, RFactorMatmulOp, SdpaBwdOp, SdpaFwdOp
from engine.ir.pointwise_exprs import BinaryOp, TernaryOp, UnaryOp
from engine.ir.reduction_exprs import ReductionOp, RFactorReductionOp, RFactorWelfordOp, WelfordOp
from engine.ir.shape_exprs import (
    BroadcastOp,
    CatOp,
    ExpandOp,
    LoadStoreOp,
    PadOp,
    SliceOp,
    SqueezeOp,
    ViewOp,
)
from engine.ir.unary_text import cast_func, unary_text

__all__ = [
    "BinaryOp", "BroadcastOp", "CatOp", "ExpandOp", "Expr", "FullOp", "GatherOp", "IndexSelectOp",
    "IotaOp", "LinearOp", "LoadStoreOp", "MatmulOp", "PadOp", "RFactorLinearOp", "RFactorMatmulOp",
    "RFactorReductionOp", "RFactorWelfordOp",
    "RNGOp", "ReductionOp", "SdpaBwdOp", "SdpaFwdOp", "SelectOp", "SliceOp", "SqueezeOp", "TernaryOp",
    "UnaryOp", "Val", "ViewOp", "WelfordOp", "cast_func", "flags_str", "ind", "list_str", "operand",
    "scalar_str", "two_lines", "typed_value", "unary_text",
]
