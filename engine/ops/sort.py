"""Sorting ops: argsort and topk (nvFuser's ArgsortOp and TopKOp), evaluated by torch in
expr_eval segments (engine.ir.aten_exprs). Indices are int64."""

from __future__ import annotations

from engine.dtypes import DataType
from engine.errors import FusionDefinitionError
from engine.ir.aten_exprs import ArgsortOp, TopKOp
from engine.ir.iterdomain import IterDomain
from engine.ir.tensorview import TensorView
from engine.ops.common import (
    check_tensor,
    full_extent,
    integer_scalar,
    materialized_id,
    new_tv,
    no_reductions,
    norm_dim,
)

__all__ = ["argsort", "topk"]


def _flag(op: str, name: str, v: object) -> bool:
    if not isinstance(v, bool):
        raise FusionDefinitionError(f"{op}: {name} must be True or False, got {v!r}")
    return v


def _sortable(op: str, arg: object, dim: object) -> tuple[TensorView, int]:
    tv = check_tensor(op, arg)
    if tv.dtype.is_complex:
        raise FusionDefinitionError(f"{op}: complex input {tv.short_name} cannot be ordered")
    if isinstance(dim, bool) or not isinstance(dim, int):
        raise FusionDefinitionError(f"{op}: dim must be an int, got {dim!r}")
    return tv, norm_dim(op, dim, len(no_reductions(tv)), tv)


def argsort(arg: TensorView, dim: int, descending: bool = False, stable: bool = False) -> TensorView:
    """The int64 indices that sort `arg` along `dim`."""
    tv, d = _sortable("argsort", arg, dim)
    fusion = tv.fusion
    out = new_tv(fusion, [materialized_id(fusion, i) for i in no_reductions(tv)], DataType.Int)
    ArgsortOp(fusion, out, tv, d, _flag("argsort", "descending", descending), _flag("argsort", "stable", stable))
    return out


def topk(arg: TensorView, k: object, dim: int = -1, largest: bool = True,
         sorted: bool = False) -> tuple[TensorView, TensorView]:  # noqa: A002 - nvFuser's argument name
    """(values, int64 indices) of the k largest (or smallest) elements along `dim`; axis
    `dim` of both has extent k. With sorted=False any order is allowed: this engine
    returns them sorted."""
    tv, d = _sortable("topk", arg, dim)
    kval = integer_scalar("topk", "k", k)
    src = no_reductions(tv)
    ext = full_extent(src[d])
    if kval.is_const and ext.is_const and not 0 <= kval.value <= ext.value:
        raise FusionDefinitionError(f"topk: k = {kval.value} is out of range for axis {d} of {tv.short_name} "
                                    f"({ext.value} elements)")
    fusion = tv.fusion
    ids = [IterDomain(fusion, kval) if j == d else materialized_id(fusion, i) for j, i in enumerate(src)]
    values = new_tv(fusion, ids, tv.dtype)
    indices = new_tv(fusion, [materialized_id(fusion, i) for i in ids], DataType.Int)
    TopKOp(fusion, values, indices, tv, kval, d, _flag("topk", "largest", largest), _flag("topk", "sorted", sorted))
    return values, indices
