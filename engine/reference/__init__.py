"""The reference evaluator: runs any Fusion with torch ops. The ground truth.

Each Expr class maps to a handler `fn(expr, inputs, ctx) -> list[outputs]`; inputs
are torch tensors for TensorViews and Python numbers for scalars. Low-precision
floats are computed in float and rounded to the output type, as nvFuser does.

- `evaluator`: `evaluate` (a fusion's outputs for its inputs), input binding, extent checks;
- `layouts`: input layouts checked against their definitions, outputs given theirs;
- `rules`: the handler registry (`handles`, `HANDLERS`), the cast rules (`CASTS`) and the
  helpers handlers share;
- the handlers by op family: `pointwise`, `reductions`, `shape`, `factory`, `indexing`,
  `matmul`, `sdpa`; engine.aten_eval registers the ATen-only ops, engine.nvfp4 the
  quantization ops and the fp4/fp8 cast rules.

Callers that tests replace functions in (`evaluate`, `check_input_layouts`) call them through
this package.
"""

from engine.reference import factory, indexing, matmul, pointwise, reductions, sdpa, shape  # noqa: F401
from engine.reference.evaluator import bind_env, bind_input, check_extents, element_sizes, evaluate
from engine.reference.layouts import check_input_layout, check_input_layouts, finish_output
from engine.reference.pointwise import binary_fn, check_pointwise_sizes, unary_fn
from engine.reference.reductions import reduction_dims, view_as_logical
from engine.reference.rules import (
    CASTS,
    HANDLERS,
    Context,
    Handler,
    as_dtype,
    cast_tensor,
    handles,
    number,
    out_dtype,
    up,
)
from engine.reference.sdpa import _flash_bwd, _flash_fwd, refuse_attention_dropout
from engine.reference.shape import logical_sizes

__all__ = [
    "CASTS", "HANDLERS", "Context", "Handler", "_flash_bwd", "_flash_fwd", "as_dtype", "bind_env", "bind_input",
    "binary_fn", "cast_tensor", "check_extents", "check_input_layout", "check_input_layouts", "check_pointwise_sizes",
    "element_sizes", "evaluate", "finish_output", "handles", "logical_sizes", "number", "out_dtype",
    "reduction_dims", "refuse_attention_dropout", "unary_fn", "up", "view_as_logical",
]

# engine.aten_eval registers the ATen-only ops; engine.nvfp4 the seed ops' rules and the fp4/fp8 cast rules.
from engine import aten_eval as _aten_eval  # noqa: E402,F401
from engine import nvfp4 as _nvfp4  # noqa: E402,F401
