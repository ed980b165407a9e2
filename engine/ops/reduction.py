"""Reductions: sum, max, min, prod (mean, var and welford join this module)."""

from __future__ import annotations

from collections.abc import Sequence

from engine.dtypes import DataType
from engine.errors import FusionDefinitionError
from engine.ir.exprs import ReductionOp
from engine.ir.iterdomain import IterDomain, IterType
from engine.ir.tensorview import TensorView
from engine.ops.arith import cast
from engine.ops.common import check_tensor, copy_id, new_tv, no_reductions, norm_dims
from engine.ops.shape import broadcast

__all__ = ["max", "min", "prod", "reduce", "sum"]


def _init_value(op: str, dtype: DataType) -> float | int | bool:
    if op == "add":
        return False if dtype.is_bool else 0
    if op == "mul":
        return True if dtype.is_bool else 1
    big = float("inf") if dtype.is_float else (2**31 - 1 if dtype == DataType.Int32 else 2**63 - 1)
    if dtype.is_bool:
        return op == "min"
    return -big - (0 if dtype.is_float else 1) if op == "max" else big


def reduce(
    op: str,
    arg: TensorView,
    dims: Sequence[int] | int | None = None,
    keepdim: bool = False,
    dtype: DataType | None = None,
) -> TensorView:
    """A reduction over `dims` (all axes when None); keepdim re-broadcasts them."""
    name = {"add": "sum", "mul": "prod"}.get(op, op)
    tv = check_tensor(name, arg)
    src = no_reductions(tv)
    if dims is None:
        dims = list(range(len(src)))
    elif isinstance(dims, int):
        dims = [dims]
    ds = norm_dims(name, dims, len(src), tv)
    if dtype is not None and dtype != tv.dtype:
        tv = cast(tv, dtype)
        src = no_reductions(tv)
    elif dtype is None and op in ("add", "mul") and (tv.dtype.is_integer or tv.dtype.is_bool):
        # PyTorch sums integers and bools in int64.
        tv = cast(tv, DataType.Int) if tv.dtype != DataType.Int else tv
        src = no_reductions(tv)
    fusion = tv.fusion
    ids: list[IterDomain] = []
    for k, i in enumerate(src):
        if k in ds:
            extent = i.expanded_extent if i.expanded_extent is not None else i.extent
            ids.append(IterDomain(fusion, extent, IterType.Reduction))
        else:
            ids.append(copy_id(fusion, i))
    out = new_tv(fusion, ids, tv.dtype)
    ReductionOp(fusion, op, out, tv, _init_value(op, tv.dtype))
    if keepdim:
        out = broadcast(out, [k in ds for k in range(len(src))])
    return out


def sum(arg: TensorView, dims: Sequence[int] | int | None = None, keepdim: bool = False,  # noqa: A001
        dtype: DataType | None = None) -> TensorView:
    return reduce("add", arg, dims, keepdim, _null(dtype))


def max(arg: TensorView, dims: Sequence[int] | int | None = None, keepdim: bool = False,  # noqa: A001
        dtype: DataType | None = None) -> TensorView:
    return reduce("max", arg, dims, keepdim, _null(dtype))


def min(arg: TensorView, dims: Sequence[int] | int | None = None, keepdim: bool = False,  # noqa: A001
        dtype: DataType | None = None) -> TensorView:
    return reduce("min", arg, dims, keepdim, _null(dtype))


def prod(arg: TensorView, dims: Sequence[int] | int | None = None, keepdim: bool = False,
         dtype: DataType | None = None) -> TensorView:
    return reduce("mul", arg, dims, keepdim, _null(dtype))


def _null(dtype: DataType | None) -> DataType | None:
    # nvFuser's python frontend passes DataType.Null for "keep the input's type".
    if dtype is not None and not isinstance(dtype, DataType):
        raise FusionDefinitionError(f"reduction dtype must be a DataType, got {dtype!r}")
    return None if dtype == DataType.Null else dtype
