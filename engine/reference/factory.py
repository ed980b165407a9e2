"""Reference rules of the ops that make tensors from scalars: full, iota and the random
draws (Philox, as the kernels draw)."""

from __future__ import annotations

import math

import torch

from engine import philox
from engine.dtypes import DataType, to_torch
from engine.ir import exprs as ex
from engine.reference.rules import as_dtype, cast_tensor, handles, number, out_dtype


@handles(ex.FullOp)
def _full(expr, args, ctx):
    (fill,) = args
    dtype = out_dtype(expr)
    sizes = [int(ctx.scalar(s)) for s in expr.shape]
    if dtype.is_low_precision_float and dtype.bits < 16:
        # fp8/fp4 values go through the same cast rule as the generated code.
        return [cast_tensor(torch.full(sizes, float(fill), dtype=torch.float32, device=ctx.device), dtype)]
    return [torch.full(sizes, fill, dtype=to_torch(dtype), device=ctx.device)]


@handles(ex.IotaOp)
def _iota(expr, args, ctx):
    length, start, step = args
    dtype = out_dtype(expr)
    work = torch.float64 if dtype.is_float else torch.int64
    r = torch.arange(int(length), dtype=work, device=ctx.device) * step + start
    return [as_dtype(r, dtype)]


@handles(ex.RNGOp)
def _rng(expr, args, ctx):
    dtype = out_dtype(expr)
    sizes = [int(ctx.scalar(s)) for s in expr.shape]
    a, b = (float(number(x)) for x in args[:2])
    seed, offset = (int(number(x)) for x in args[2:4]) if len(args) > 2 else (0, expr.rng_id)
    narrow = dtype in (DataType.Half, DataType.BFloat16)
    raw = narrow and expr.dist == "uniform"
    values = philox.draw(expr.dist, math.prod(sizes), seed, offset, dtype == DataType.Double, a, b, raw)
    out = torch.from_numpy(values).reshape(sizes).to(ctx.device)
    if not narrow:
        return [out]
    out = out.to(to_torch(dtype))
    if raw:
        # nvFuser's half/bfloat16 uniform: a draw that rounds up to `b` becomes `a`.
        out = out.masked_fill(out == torch.tensor(b, dtype=torch.float32).to(out.dtype).item(), a)
    return [out]
