"""Inclusive scans along one axis: cumsum, cumprod, cummax and cummin (nvFuser's ScanOp).

The output has the input's shape and dtype (no upcast of low-precision inputs, and no
promotion of integers, as in nvFuser). `init` combines with the first element; without
it the op's identity is used. The scan runs as an expr_eval segment (torch), see
engine.ir.aten_exprs.
"""

from __future__ import annotations

from engine.dtypes import DataType
from engine.errors import FusionDefinitionError
from engine.ir.aten_exprs import ScanOp
from engine.ir.scalar import Scalar, as_scalar
from engine.ir.tensorview import TensorView
from engine.ops.common import check_tensor, materialized_id, new_tv, no_reductions, norm_dim

__all__ = ["cummax", "cummin", "cumprod", "cumsum"]


def cumsum(arg: TensorView, dim: int, init: object = None) -> TensorView:
    """Running sums along `dim`."""
    return _scan("cumsum", arg, dim, init)


def cumprod(arg: TensorView, dim: int, init: object = None) -> TensorView:
    """Running products along `dim`."""
    return _scan("cumprod", arg, dim, init)


def cummax(arg: TensorView, dim: int, init: object = None) -> TensorView:
    """Running maxima along `dim` (the values; torch.cummax's indices are not an output)."""
    return _scan("cummax", arg, dim, init)


def cummin(arg: TensorView, dim: int, init: object = None) -> TensorView:
    """Running minima along `dim` (the values)."""
    return _scan("cummin", arg, dim, init)


def _identity(kind: str, dtype: DataType) -> Scalar:
    if kind == "cumsum":
        return as_scalar(0 if not dtype.is_float else 0.0, dtype)
    if kind == "cumprod":
        return as_scalar(1 if not dtype.is_float else 1.0, dtype)
    if dtype.is_float:
        return as_scalar(float("-inf") if kind == "cummax" else float("inf"), dtype)
    if dtype.is_bool:
        return as_scalar(kind == "cummin", dtype)
    top = (1 << (dtype.bits - 1)) - 1
    return as_scalar(-top - 1 if kind == "cummax" else top, dtype)


def _scan(kind: str, arg: TensorView, dim: int, init: object) -> TensorView:
    tv = check_tensor(kind, arg)
    if tv.dtype.is_complex:
        raise FusionDefinitionError(f"{kind}: complex input {tv.short_name} is not supported")
    if tv.dtype.is_bool and kind in ("cumsum", "cumprod"):
        # The output keeps the input's dtype: running sums of bools have no bool result.
        raise FusionDefinitionError(f"{kind}: {tv.short_name} is bool; cast it to an integer type first")
    if isinstance(dim, bool) or not isinstance(dim, int):
        raise FusionDefinitionError(f"{kind}: dim must be an int, got {dim!r}")
    src = no_reductions(tv)
    d = norm_dim(kind, dim, len(src), tv)
    if init is None:
        start = _identity(kind, tv.dtype)
    elif isinstance(init, Scalar):
        start = init
    elif isinstance(init, (bool, int, float)):
        start = as_scalar(init, tv.dtype)
    else:
        raise FusionDefinitionError(f"{kind}: init must be a number or a scalar, got {type(init).__name__}")
    fusion = tv.fusion
    out = new_tv(fusion, [materialized_id(fusion, i) for i in src], tv.dtype)
    ScanOp(fusion, out, tv, start, d, kind)
    return out
