"""Reference rules of matmul and linear."""

from __future__ import annotations

from collections.abc import Sequence

import torch

from engine.dtypes import to_torch
from engine.ir import exprs as ex
from engine.ir.base import Expr
from engine.reference.rules import as_dtype, handles, out_dtype, up


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
