"""Reference rules of the indexing ops: select, index_select and gather."""

from __future__ import annotations

import torch

from engine.ir import exprs as ex
from engine.reference.rules import handles


@handles(ex.SelectOp)
def _select(expr, args, ctx):
    x, index = args
    if isinstance(index, torch.Tensor):
        index = index.item()
    return [x.select(expr.dim, int(index))]


@handles(ex.IndexSelectOp)
def _index_select(expr, args, ctx):
    x, index = args
    return [torch.index_select(x, expr.dim, index.reshape(-1).long())]


@handles(ex.GatherOp)
def _gather(expr, args, ctx):
    x, index = args
    if expr.exact_sizes:
        return [torch.take_along_dim(x, index.long(), dim=expr.dim)]
    return [torch.gather(x, expr.dim, index.long())]
