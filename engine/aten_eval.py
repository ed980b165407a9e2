"""torch semantics of the ops that only ATen evaluates (engine.ir.aten_exprs): the reference
evaluator's handlers, which are also what their expr_eval segments run.

Where nvFuser allows any order (topk with sorted=False, argsort with stable=False) the
result is the sorted, stable one, so a run on the GPU and the reference on the CPU agree.
Low-precision floats are scanned, accumulated and multiplied in float and rounded once.
"""

from __future__ import annotations

import torch

from engine.errors import ExecutionError
from engine.ir import aten_exprs as ax
from engine.reference.rules import as_dtype, handles, number, out_dtype, up

# ATen scans an axis other than the innermost with one thread per scan, each walking the
# axis alone: with fewer scans than this the GPU idles, and the axis is moved innermost
# (scanned by whole blocks) and back.
_FEW_SCANS = 16384


def _scan_kernel(kind: str, x: torch.Tensor, d: int) -> torch.Tensor:
    if kind == "cumsum":
        return torch.cumsum(x, d, dtype=x.dtype)
    if kind == "cumprod":
        return torch.cumprod(x, d, dtype=x.dtype)
    return (torch.cummax if kind == "cummax" else torch.cummin)(x, d).values


def scan(kind: str, x: torch.Tensor, d: int) -> torch.Tensor:
    """`kind` (cumsum, cumprod, cummax, cummin) of `x` along axis `d`."""
    d %= max(1, x.dim())
    n = x.shape[d] if x.dim() else 1
    if x.is_cuda and d != x.dim() - 1 and n > 32 and x.numel() // max(1, n) < _FEW_SCANS:
        inner = _scan_kernel(kind, x.movedim(d, -1).contiguous(), -1)
        return inner.movedim(-1, d).contiguous()
    return _scan_kernel(kind, x, d)


@handles(ax.ScanOp)
def _scan(expr, args, ctx):
    x, init = up(args[0]), number(args[1])
    r = scan(expr.kind, x, expr.dim)
    # The identity start (0 for a sum, 1 for a product) changes nothing: no kernel for it.
    if expr.kind == "cumsum" and init != 0:
        r = r + init
    elif expr.kind == "cumprod" and init != 1:
        r = r * init
    elif expr.kind == "cummax" and not _beyond(r, init, low=True):
        r = torch.clamp(r, min=init)
    elif expr.kind == "cummin" and not _beyond(r, init, low=False):
        r = torch.clamp(r, max=init)
    return [as_dtype(r, out_dtype(expr))]


def _beyond(r: torch.Tensor, v: float, low: bool) -> bool:
    """Whether `v` is at or past the end of `r`'s dtype (below every value when `low`):
    a clamp to it changes nothing."""
    if r.dtype == torch.bool:
        return v <= 0 if low else v >= 1
    info = torch.finfo(r.dtype) if r.dtype.is_floating_point else torch.iinfo(r.dtype)
    edge = (-float("inf") if low else float("inf")) if r.dtype.is_floating_point else (info.min if low else info.max)
    return v <= edge if low else v >= edge


@handles(ax.TopKOp)
def _topk(expr, args, ctx):
    x, k = args[0], int(number(args[1]))
    if not 0 <= k <= x.shape[expr.dim]:
        raise ExecutionError(f"topk: k = {k} is out of range for axis {expr.dim} ({x.shape[expr.dim]} elements)")
    values, indices = torch.topk(x, k, dim=expr.dim, largest=expr.largest, sorted=True)
    return [values, indices]


@handles(ax.ArgsortOp)
def _argsort(expr, args, ctx):
    return [torch.argsort(args[0], dim=expr.dim, descending=expr.descending, stable=True)]


def _indices(op: str, index: torch.Tensor, size: int) -> torch.Tensor:
    """int64 indices, refused (naming the op) where one falls outside [-size, size)."""
    index = index.long()
    if index.numel():
        # One reduction and one wait for the device (the check needs the values on the host).
        lo, hi = torch.stack(torch.aminmax(index)).tolist()
        if lo < -size or hi >= size:
            raise ExecutionError(f"{op}: an index is out of range for an axis of {size} elements "
                                 f"(min {lo}, max {hi})")
    return index


@handles(ax.ScatterOp)
def _scatter(expr, args, ctx):
    x, index, src = args
    index = _indices("scatter", index, x.shape[expr.dim])
    if isinstance(src, torch.Tensor) and src.dim() == x.dim():
        return [torch.scatter(x, expr.dim, index, src.to(x.dtype))]
    return [torch.scatter(x, expr.dim, index, number(src))]


@handles(ax.IndexPutAccumulateOp)
def _index_put_accumulate(expr, args, ctx):
    acc, index, value = args
    index = _indices("index_put_accumulate", index, acc.shape[0])
    r = up(acc).index_put((index,), up(value).to(up(acc).dtype), accumulate=True)
    return [as_dtype(r, out_dtype(expr))]


@handles(ax.GroupedMmaOp)
def _grouped_mm(expr, args, ctx):
    a, b, offsets = args
    ends = [int(e) for e in offsets.tolist()]
    split = a.shape[-1] if (a.dim(), b.dim()) == (2, 2) else (b.shape[-1] if a.dim() == 3 else a.shape[0])
    if any(e < s for s, e in zip([0, *ends], ends)) or (ends and ends[-1] > split):
        raise ExecutionError(f"grouped_mm: offsets {ends} must be non-decreasing and at most {split}")
    groups = a.shape[0] if a.dim() == 3 else (b.shape[0] if b.dim() == 3 else len(ends))
    if len(ends) != groups:
        raise ExecutionError(f"grouped_mm: {len(ends)} offsets for {groups} groups")
    a, b = up(a), up(b)
    starts = [0, *ends[:-1]]
    if (a.dim(), b.dim()) == (2, 2):
        out = torch.stack([a[:, s:e] @ b[s:e, :] for s, e in zip(starts, ends)])
    else:
        shape = (a.shape[1], b.shape[-1]) if a.dim() == 3 else (a.shape[0], b.shape[-1])
        out = torch.zeros(shape, dtype=a.dtype, device=a.device)
        for g, (s, e) in enumerate(zip(starts, ends)):
            if a.dim() == 3:
                out[:, s:e] = a[g] @ b[:, s:e]
            else:
                out[s:e] = a[s:e] @ b[g]
    return [as_dtype(out, out_dtype(expr))]

