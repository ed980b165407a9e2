"""Factory ops: full, zeros, ones, iota. They read no tensor, so they build in the fusion
being defined (the current fusion)."""

from __future__ import annotations

from collections.abc import Sequence

from engine.dtypes import DataType
from engine.errors import FusionDefinitionError
from engine.ir.base import current_fusion
from engine.ir.exprs import FullOp, IotaOp
from engine.ir.fusion import Fusion
from engine.ir.iterdomain import IterDomain, IterType
from engine.ir.scalar import Scalar, as_scalar
from engine.ir.tensorview import TensorView
from engine.ops.common import new_tv

__all__ = ["full", "iota", "ones", "zeros"]


def defining_fusion(op: str) -> Fusion:
    try:
        return current_fusion()
    except RuntimeError:
        raise FusionDefinitionError(f"{op}: no fusion is being defined (use `with FusionDefinition() as fd:`)") from None


def check_dtype(op: str, dtype: object) -> DataType:
    if not isinstance(dtype, DataType) or dtype in (DataType.Null, DataType.Index):
        raise FusionDefinitionError(f"{op}: dtype must be a tensor DataType, got {dtype!r}")
    return dtype


def shape_extent(op: str, s: object, k: int) -> Scalar:
    if isinstance(s, Scalar):
        if not s.dtype.is_integer:
            raise FusionDefinitionError(f"{op}: shape entry {k} is a {s.dtype.cuda_name} scalar, not an integer")
        if s.is_const and s.value < 0:
            raise FusionDefinitionError(f"{op}: shape entry {k} is {s.value}; sizes must be >= 0")
        return s
    if isinstance(s, bool) or not isinstance(s, int) or s < 0:
        raise FusionDefinitionError(f"{op}: shape entry {k} must be an int >= 0 or a Scalar, got {s!r}")
    return as_scalar(s)


def _fill_scalar(op: str, value: object, dtype: DataType) -> Scalar:
    if isinstance(value, Scalar):
        return value
    if isinstance(value, bool) or isinstance(value, (int, float)):
        if dtype.is_bool:
            return as_scalar(bool(value), dtype)
        if dtype.is_integer:
            return as_scalar(int(value), dtype)
        if dtype.is_complex:
            raise FusionDefinitionError(f"{op}: complex fill values are not supported")
        return as_scalar(float(value), dtype)
    raise FusionDefinitionError(f"{op}: fill_value must be a number or Scalar, got {value!r}")


def full(shape: Sequence[int | Scalar], fill_value: object, dtype: DataType) -> TensorView:
    """A tensor of `shape` filled with `fill_value`; size-1 axes are broadcasts (as nvFuser)."""
    fusion = defining_fusion("full")
    dtype = check_dtype("full", dtype)
    extents = shape_extents("full", shape)
    out = new_tv(fusion, factory_ids(fusion, extents), dtype)
    FullOp(fusion, out, extents, _fill_scalar("full", fill_value, dtype))
    return out


def shape_extents(op: str, shape: object) -> list[Scalar]:
    """A factory's `shape` argument (ints and integer Scalars) as extents."""
    if not isinstance(shape, (list, tuple)):
        raise FusionDefinitionError(f"{op}: shape must be a list, got {shape!r}")
    return [shape_extent(op, s, k) for k, s in enumerate(shape)]


def factory_ids(fusion: Fusion, extents: Sequence[Scalar]) -> list[IterDomain]:
    """A factory output's axes: size-1 axes are broadcasts (as nvFuser makes them)."""
    return [
        IterDomain(fusion, 1, IterType.Broadcast) if e.is_const and e.value == 1 else IterDomain(fusion, e)
        for e in extents
    ]


def zeros(shape: Sequence[int | Scalar], dtype: DataType) -> TensorView:
    return full(shape, 0, dtype)


def ones(shape: Sequence[int | Scalar], dtype: DataType) -> TensorView:
    return full(shape, 1, dtype)


def iota(
    length: int | Scalar,
    start: int | float | Scalar | None = None,
    step: int | float | Scalar | None = None,
    dtype: DataType = DataType.Int,
) -> TensorView:
    """[start, start + step, ...] of `length` elements (integer or floating dtype); start
    and step default to 0 and 1 (None, as the python frontend passes them)."""
    start = 0 if start is None else start
    step = 1 if step is None else step
    fusion = defining_fusion("iota")
    dtype = check_dtype("iota", dtype)
    if not (dtype.is_integer or dtype.is_float) or dtype.is_low_precision_float and dtype.bits < 16:
        raise FusionDefinitionError(f"iota: dtype must be an integer or floating type, got {dtype.cuda_name}")
    n = shape_extent("iota", length, 0)
    start_s = start if isinstance(start, Scalar) else _fill_scalar("iota", start, dtype)
    step_s = step if isinstance(step, Scalar) else _fill_scalar("iota", step, dtype)
    out = new_tv(fusion, [IterDomain(fusion, n)], dtype)
    IotaOp(fusion, out, n, start_s, step_s)
    return out
