"""Reference rules of the shape ops: broadcast, squeeze, set (and permute), expand, reshape,
slice, pad and cat."""

from __future__ import annotations

import torch

from engine.analysis.view_chains import views_only_to_outputs
from engine.dtypes import to_torch
from engine.errors import ExecutionError
from engine.ir import exprs as ex
from engine.ir.tensorview import TensorView
from engine.reference.rules import Context, cast_tensor, handles, out_dtype, up
from engine.shape_rules import expand_mismatch, reshape_mismatch


@handles(ex.BroadcastOp)
def _broadcast(expr, args, ctx):
    (x,) = args
    for k, f in enumerate(expr.flags):
        if f:
            x = x.unsqueeze(k)
    return [x]


@handles(ex.SqueezeOp)
def _squeeze(expr, args, ctx):
    (x,) = args
    dims = [k for k, f in enumerate(expr.flags) if f]
    for d in sorted(dims, reverse=True):
        x = x.select(d, 0) if x.shape[d] != 1 else x.squeeze(d)
    return [x]


@handles(ex.LoadStoreOp)
def _set(expr, args, ctx):
    (x,) = args
    out = expr.output
    if out.domain.has_root:
        root = [i for i in out.domain.root if not i.is_reduction]
        logical = [i for i in out.domain.logical if not i.is_reduction]
        perm = [root.index(i) for i in logical]
        return [x.permute(perm)]
    if views_only_to_outputs(expr.fusion, out) and (expr.kind == "SegmenterSet" or out not in expr.fusion.outputs):
        # Only views of outputs follow (engine.preseg.views_of_outputs_apart; a set that
        # broadcast_in_dim put before its expand): they are views of this buffer, not of a
        # copy, as nvFuser's LoadStoreOp::evaluate gives them. A set that is itself an
        # output stays a copy.
        return [x]
    return [x.clone() if isinstance(x, torch.Tensor) else x]


def logical_sizes(tv: TensorView, ctx: Context) -> list[int]:
    """The sizes torch sees for a tensor: expanded broadcasts count their expanded extent."""
    return [
        int(ctx.scalar(i.expanded_extent if i.expanded_extent is not None else i.extent))
        for i in tv.domain.logical if not i.is_reduction
    ]


@handles(ex.ExpandOp)
def _expand(expr, args, ctx):
    (x,) = args
    logical = [i for i in expr.output.domain.logical if not i.is_reduction]
    sizes = [int(ctx.scalar(i.expanded_extent)) if i.expanded_extent is not None else -1 for i in logical]
    for k in expr.attributes.get("concretized", ()):
        # Expanded where the input has one element, kept where it has the size asked for.
        sizes[k] = int(ctx.scalar(expr.shape[k]))
        why = expand_mismatch(expr, k, x.shape[k], sizes[k])
        if why is not None:
            raise ExecutionError(why)
    # torch's expand makes stride-0 views, the same thing as nvFuser's expanded broadcast.
    return [x.expand(sizes)]


@handles(ex.ViewOp)
def _view(expr, args, ctx):
    (x,) = args
    asked = None if expr.new_shape is None else [int(ctx.scalar(s)) for s in expr.new_shape]
    # Symbolic input sizes: only now are the element counts known (nvFuser checks at
    # concretization: "Total element counts across view operation must match").
    why = reshape_mismatch(expr, list(x.shape), asked)
    if why is not None:
        raise ValueError(why)
    return [x.reshape(logical_sizes(expr.output, ctx))]


@handles(ex.SliceOp)
def _slice(expr, args, ctx):
    (x,) = args
    index = tuple(
        slice(int(ctx.scalar(a)), int(ctx.scalar(b)), int(ctx.scalar(c))) for a, b, c in expr.ranges
    )
    return [x[index]]


@handles(ex.PadOp)
def _pad(expr, args, ctx):
    x, value = args
    flat: list[int] = []
    # torch.nn.functional.pad takes (left, right) of the last axis first.
    for left, right in reversed(expr.widths):
        flat += [int(ctx.scalar(left)), int(ctx.scalar(right))]
    if isinstance(value, torch.Tensor):
        value = value.item()
    dtype = out_dtype(expr)
    work = up(x)
    out = torch.nn.functional.pad(work, flat, mode="constant", value=float(value) if work.is_floating_point() else value)
    return [cast_tensor(out, dtype) if out.dtype != to_torch(dtype) else out]


@handles(ex.CatOp)
def _cat(expr, args, ctx):
    d = expr.dim
    out = torch.empty(logical_sizes(expr.output, ctx), dtype=args[0].dtype, device=args[0].device)
    for (left, length), x in zip(expr.spans, args):
        # Each padded input owns the region its pad added around it.
        a, n = int(ctx.scalar(left)), int(ctx.scalar(length))
        out.narrow(d, a, n).copy_(x.narrow(d, a, n))
    return [out]
