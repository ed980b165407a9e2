"""Reference rules of the reductions: sums, products, max and min, Welford's mean and
variance, and their rfactored partials over a re-laid-out view of the input."""

from __future__ import annotations

from typing import Any

import torch

from engine.errors import ExecutionError
from engine.ir import exprs as ex
from engine.ir.iterdomain import Merge, Split, transforms_between
from engine.ir.tensorview import TensorView
from engine.reference.rules import Context, as_dtype, handles, up


def reduction_dims(tv: TensorView) -> list[int]:
    return [k for k, i in enumerate(tv.domain.logical) if i.is_reduction]


def _reduce(x: torch.Tensor, op: str, dims: list[int]) -> torch.Tensor:
    if not dims:
        return x.clone()
    if op == "add":
        return torch.sum(x, dim=dims)
    if op == "max":
        return torch.amax(x, dim=dims)
    if op == "min":
        return torch.amin(x, dim=dims)
    if op == "mul":
        for d in sorted(dims, reverse=True):
            x = torch.prod(x, dim=d)
        return x
    raise ExecutionError(f"unknown reduction op {op}")


@handles(ex.ReductionOp)
def _reduction(expr, args, ctx):
    out = expr.output
    return [as_dtype(_reduce(up(args[0]), expr.op, reduction_dims(out)), out.dtype)]


@handles(ex.RFactorReductionOp)
def _rfactor_reduction(expr, args, ctx):
    out = expr.output
    x = view_as_logical(up(args[0]), out, expr.init, ctx)
    return [as_dtype(_reduce(x, expr.op, reduction_dims(out)), out.dtype)]


def _pad_to(x: torch.Tensor, dim: int, size: int, fill: Any) -> torch.Tensor:
    extra = size - x.shape[dim]
    if extra <= 0:
        return x
    shape = list(x.shape)
    shape[dim] = extra
    # The padding holds the reduction's initial value, so it changes no result.
    return torch.cat([x, torch.full(shape, fill, dtype=x.dtype, device=x.device)], dim=dim)


def view_as_logical(x: torch.Tensor, tv: TensorView, fill: Any, ctx: Context) -> torch.Tensor:
    """`x`, indexed by `tv`'s root ids, re-laid out by its root->logical splits and merges."""
    dom = tv.domain
    x, dims = relayout(x, list(dom.maybe_root), transforms_between(dom.maybe_root, dom.logical), fill, ctx,
                       tv.short_name)
    return x.permute([dims.index(i) for i in dom.logical])


def relayout(x: torch.Tensor, dims: list[Any], transforms: list[Any], fill: Any,
             ctx: Context, name: str) -> tuple[torch.Tensor, list[Any]]:
    """`x`, whose axes are the ids `dims`, re-laid out by `transforms` (splits, padded with
    `fill` where they do not divide, and merges); returns it with the ids of its axes."""
    dims = list(dims)
    for t in transforms:
        if isinstance(t, Split):
            d = dims.index(t.in_id)
            f = int(ctx.scalar(t.factor))
            rest = -(-x.shape[d] // f)
            x = _pad_to(x, d, rest * f, fill)
            outer, inner = (rest, f) if t.inner_split else (f, rest)
            x = x.reshape(*x.shape[:d], outer, inner, *x.shape[d + 1 :])
            dims[d : d + 1] = [t.outer, t.inner]
        elif isinstance(t, Merge):
            order = [k for k, i in enumerate(dims) if i is not t.outer and i is not t.inner]
            k = min(dims.index(t.outer), dims.index(t.inner))
            order[k:k] = [dims.index(t.outer), dims.index(t.inner)]
            x = x.permute(order)
            dims = [dims[j] for j in order]
            x = x.reshape(*x.shape[:k], x.shape[k] * x.shape[k + 1], *x.shape[k + 2 :])
            dims[k : k + 2] = [t.out]
        else:
            raise ExecutionError(f"{name}: cannot evaluate {t.kind} in a root->logical view")
    return x, dims


@handles(ex.WelfordOp)
def _welford(expr, args, ctx):
    if len(args) == 3:
        return _welford_combine(expr, args)
    (x,) = args
    avg_tv, var_tv, n_tv = expr.outputs
    dims = reduction_dims(avg_tv)
    x = up(x)
    if dims:
        avg = x.mean(dim=dims)
        var_sum = ((x - x.mean(dim=dims, keepdim=True)) ** 2).sum(dim=dims)
        count = 1
        for d in dims:
            count *= x.shape[d]
    else:
        avg, var_sum, count = x.clone(), torch.zeros_like(x), 1
    n = torch.full(avg.shape, count, dtype=torch.int64, device=x.device)
    return [as_dtype(avg, avg_tv.dtype), as_dtype(var_sum, var_tv.dtype), n]


@handles(ex.RFactorWelfordOp)
def _rfactor_welford(expr, args, ctx):
    """Partial (avg, var_sum, count) over the rfactored axes of a reshaped view of the
    input. A split that does not divide pads the view; a mask of the real elements
    keeps the padding out of every partial (a partial of padding only is (0, 0, 0),
    Welford's initial value, which the combine ignores)."""
    (x,) = args
    avg_tv, var_tv, n_tv = expr.outputs
    x = up(x)
    dims = reduction_dims(avg_tv)
    view = view_as_logical(x, avg_tv, 0, ctx)
    valid = view_as_logical(torch.ones_like(x), avg_tv, 0, ctx)
    if not dims:
        return [as_dtype(view, avg_tv.dtype), as_dtype(torch.zeros_like(view), var_tv.dtype),
                valid.to(torch.int64)]
    count = valid.sum(dim=dims, keepdim=True)
    avg = (view * valid).sum(dim=dims, keepdim=True) / count.clamp(min=1)
    var_sum = (((view - avg) ** 2) * valid).sum(dim=dims)
    return [as_dtype(_drop_dims(avg, dims), avg_tv.dtype),
            as_dtype(var_sum, var_tv.dtype), _drop_dims(count, dims).to(torch.int64)]


def _drop_dims(x: torch.Tensor, dims: list[int]) -> torch.Tensor:
    for d in sorted(dims, reverse=True):
        x = x.squeeze(d)
    return x


def _welford_combine(expr, args):
    """Combine partial (avg, var_sum, count) over the reduced axes (Chan et al.):
    N = sum n, avg = sum(n avg) / N, var_sum = sum var_sum + sum n (avg_i - avg)^2."""
    avg_tv, var_tv, n_tv = expr.outputs
    a, m, n = up(args[0]), up(args[1]), args[2]
    dims = reduction_dims(avg_tv)
    if not dims:
        return [as_dtype(a.clone(), avg_tv.dtype), as_dtype(m.clone(), var_tv.dtype),
                n.to(torch.int64).clone()]
    nf = n.to(a.dtype)
    total = nf.sum(dim=dims, keepdim=True)
    avg = (nf * a).sum(dim=dims, keepdim=True) / total.clamp(min=1)
    var_sum = m.sum(dim=dims) + (nf * (a - avg) ** 2).sum(dim=dims)
    return [as_dtype(_drop_dims(avg, dims), avg_tv.dtype), as_dtype(var_sum, var_tv.dtype),
            n.to(torch.int64).sum(dim=dims)]
