"""Reference rules of matmul and linear."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from engine.dtypes import to_torch
from engine.errors import ExecutionError
from engine.ir import exprs as ex
from engine.ir.base import Expr
from engine.ir.iterdomain import transforms_between
from engine.reference.reductions import relayout
from engine.reference.rules import Context, as_dtype, handles, out_dtype, up


def _aten_gemm_ok(expr: Expr, ts: Sequence[torch.Tensor]) -> bool:
    """Whether a matmul or linear runs as ATen runs it for nvFuser: on CUDA, operands and
    output of one 16-bit float dtype, where cuBLAS accumulates in float and rounds once (the
    float upcast below gives the same values through a float GEMM at a fraction of the speed
    and four more kernels)."""
    dt = ts[0].dtype
    return (dt in (torch.float16, torch.bfloat16) and all(t.is_cuda and t.dtype == dt for t in ts)
            and to_torch(out_dtype(expr)) == dt)


@handles(ex.MatmulOp)
def _matmul(expr, args, ctx):
    a, b = args
    if _aten_gemm_ok(expr, args):
        return [torch.matmul(a, b)]
    return [as_dtype(torch.matmul(up(a), up(b)), out_dtype(expr))]


@handles(ex.LinearOp)
def _linear(expr, args, ctx):
    if args[1].dim() > 2:
        return [_blocked_linear(expr, args)]
    if _aten_gemm_ok(expr, args):
        return [torch.nn.functional.linear(*args)]
    a, w = up(args[0]), up(args[1])
    bias = up(args[2]) if len(args) == 3 else None
    return [as_dtype(torch.nn.functional.linear(a, w, bias), out_dtype(expr))]


def _blocked_linear(expr, args):
    """A weight [E..., N, K] (bias [E..., N]): one linear of its flattened [E * N, K], its
    output's [..., E, N] moved to [E..., ..., N]."""
    a, w = args[0], args[1]
    lead, (n, k) = list(w.shape[:-2]), w.shape[-2:]
    bias = args[2].reshape(-1) if len(args) == 3 and args[2].dim() else (args[2] if len(args) == 3 else None)
    flat = [a, w.reshape(-1, k)] + ([bias] if bias is not None else [])
    y = torch.nn.functional.linear(*flat) if _aten_gemm_ok(expr, args) else \
        as_dtype(torch.nn.functional.linear(*(up(t) for t in flat)), out_dtype(expr))
    y = y.reshape(*a.shape[:-1], *lead, n)
    b = a.dim() - 1
    return y.permute(*range(b, b + len(lead)), *range(b), y.dim() - 1).contiguous()


# einsum letters: the parts of K, then a weight's leading axes (m and n are M and N).
_PART_LETTERS = "abcdefghijkl"
_LEAD_LETTERS = "opqrstuvwxyz"


def _k_parts(expr: Expr) -> tuple[list[Any], Any]:
    """The parts of K in the output's logical order, and K itself (its root id)."""
    out = expr.output
    dom = out.domain
    root = list(dom.maybe_root)
    parts = [i for i in dom.logical if i not in root]
    if len(parts) > len(_PART_LETTERS):
        raise ExecutionError(f"{out.short_name}: K is split into more than {len(_PART_LETTERS)} parts")
    return parts, next(i for i in root if i.is_reduction)


def _parts_last(x: torch.Tensor, k_dim: int, expr: Expr, ctx: Context) -> tuple[torch.Tensor, str]:
    """Operand `x` with its K axis (at `k_dim`) moved last and cut into the parts of the
    output's K (zeros where a split does not divide: they add nothing), in the output's
    order; with the einsum letters of those parts."""
    parts, k = _k_parts(expr)
    dom = expr.output.domain
    x = x.movedim(k_dim, -1)
    lead = [None] * (x.dim() - 1)
    x, dims = relayout(x, [*lead, k], transforms_between(dom.maybe_root, dom.logical), 0, ctx,
                       expr.output.short_name)
    n = len(lead)
    x = x.permute(*range(n), *(dims.index(p) for p in parts))
    return x, _PART_LETTERS[:len(parts)]


def _kept(expr: Expr) -> str:
    """The einsum letters of the parts of K the output keeps."""
    parts, _ = _k_parts(expr)
    return "".join(_PART_LETTERS[j] for j, p in enumerate(parts) if not p.is_reduction)


@handles(ex.RFactorMatmulOp)
def _rfactor_matmul(expr, args, ctx):
    """The partial sums of an rfactor'ed matmul: each kept part of K summed alone."""
    a, b = (up(t) for t in args)
    a, pa = _parts_last(a, a.dim() - 1, expr, ctx)
    b, pb = _parts_last(b, 0 if b.dim() == 1 else b.dim() - 2, expr, ctx)
    m = "m" if args[0].dim() > 1 else ""
    n = "n" if args[1].dim() > 1 else ""
    spec = f"...{m}{pa},...{n}{pb}->...{m}{n}{_kept(expr)}"
    return [as_dtype(torch.einsum(spec, a, b), out_dtype(expr))]


@handles(ex.RFactorLinearOp)
def _rfactor_linear(expr, args, ctx):
    """The partial sums of an rfactor'ed linear (no bias: it is added after their sum)."""
    a, w = (up(t) for t in args[:2])
    a, pa = _parts_last(a, a.dim() - 1, expr, ctx)
    w, pw = _parts_last(w, w.dim() - 1, expr, ctx)
    nd = args[1].dim()
    lead = _LEAD_LETTERS[:max(0, nd - 2)]
    n = "n" if nd > 1 else ""
    spec = f"...{pa},{lead}{n}{pw}->{lead}...{n}{_kept(expr)}"
    return [as_dtype(torch.einsum(spec, a, w), out_dtype(expr))]
