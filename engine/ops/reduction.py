"""Reductions: sum, max, min, prod; mean, var and var_mean as composites; welford."""

from __future__ import annotations

from collections.abc import Sequence

from engine.dtypes import DataType, compute_dtype
from engine.errors import FusionDefinitionError
from engine.ir.exprs import ReductionOp, WelfordOp
from engine.ir.fusion import Fusion
from engine.ir.iterdomain import IterDomain, IterType
from engine.ir.scalar import Scalar, as_scalar, binary, smax
from engine.ir.tensorview import TensorView
from engine.ops import arith
from engine.ops.arith import cast
from engine.ops.common import check_tensor, copy_id, new_tv, no_reductions, norm_dims
from engine.ops.shape import broadcast, set_, squeeze

__all__ = ["max", "mean", "min", "prod", "reduce", "sum", "var", "var_mean", "welford"]


def reduced_ids(fusion: Fusion, src: Sequence[IterDomain], dims: Sequence[int]) -> list[IterDomain]:
    """Output axes of a reduction: reduced axes iterate the input's (expanded) extent."""
    out = []
    for k, i in enumerate(src):
        if k in dims:
            extent = i.expanded_extent if i.expanded_extent is not None else i.extent
            out.append(IterDomain(fusion, extent, IterType.Reduction))
        else:
            out.append(copy_id(fusion, i))
    return out


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
    if not ds and src:
        # nvFuser refuses it too ("No reduction axis specified"); a ReductionOp without a
        # reduced axis would reach no scheduler.
        raise FusionDefinitionError(f"{name}: no axis of {tv.short_name} to reduce (dims is empty)")
    if dtype is not None and dtype != tv.dtype:
        tv = cast(tv, dtype)
        src = no_reductions(tv)
    elif dtype is None and op in ("add", "mul") and (tv.dtype.is_integer or tv.dtype.is_bool):
        # PyTorch sums integers and bools in int64.
        tv = cast(tv, DataType.Int) if tv.dtype != DataType.Int else tv
        src = no_reductions(tv)
    if not src:
        # A 0-dim tensor reduces to its one value: a copy, as nvFuser's reductionOpZeroDimTensor.
        return set_(tv)
    # As nvFuser's reductionOp, reducing only broadcast axes (none expanded) reduces nothing:
    # the result is their squeeze. (nvFuser squeezes the broadcast axes of any reduction; one
    # that also reduces real axes is kept whole here, where a squeeze before it would cut its
    # input off a view the segmenter leaves to the host.)
    if all(src[k].is_broadcast and src[k].expanded_extent is None for k in ds):
        out = squeeze(tv, ds)
    else:
        fusion = tv.fusion
        out = new_tv(fusion, reduced_ids(fusion, src, ds), tv.dtype)
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


# ---- composites ------------------------------------------------------------------------------

def _dims_list(op: str, tv: TensorView, dims: Sequence[int] | int | None) -> list[int]:
    rank = len(no_reductions(tv))
    if dims is None:
        return list(range(rank))
    if isinstance(dims, int):
        dims = [dims]
    return norm_dims(op, dims, rank, tv)


def reduced_count(tv: TensorView, dims: list[int]) -> Scalar:
    """Number of elements reduced: the product of the reduced extents (expanded ones count
    their expanded size, as torch sees them)."""
    n: Scalar = as_scalar(1)
    for d in dims:
        i = no_reductions(tv)[d]
        n = binary("mul", n, i.expanded_extent if i.expanded_extent is not None else i.extent)
    return n


def _float_input(op: str, arg: TensorView) -> tuple[TensorView, DataType]:
    """Statistics are computed in float (double stays double); the result returns to the
    input's floating type, as torch.mean/var do. Integer inputs are computed and returned
    in float."""
    tv = check_tensor(op, arg)
    if tv.dtype.is_complex:
        raise FusionDefinitionError(f"{op}: {tv.short_name} is complex; not supported")
    if tv.dtype.is_float:
        work = compute_dtype(tv.dtype)
        return (cast(tv, work) if work != tv.dtype else tv), tv.dtype
    return cast(tv, DataType.Float), DataType.Float


def _back(tv: TensorView, dtype: DataType) -> TensorView:
    return cast(tv, dtype) if tv.dtype != dtype else tv


def mean(arg: TensorView, dims: Sequence[int] | int | None = None, keepdim: bool = False,
         dtype: DataType | None = None) -> TensorView:
    """sum / count, as nvFuser's composite."""
    dtype = _null(dtype)
    x, out_dtype = _float_input("mean", arg)
    ds = _dims_list("mean", x, dims)
    s = reduce("add", x, ds, keepdim)
    out = arith.div(s, reduced_count(x, ds))
    return _back(out, dtype or out_dtype)


def _var_denominator(n: Scalar, correction: int | float) -> Scalar:
    # torch divides by max(0, N - correction).
    return smax(binary("sub", n, correction), 0)


def _check_correction(op: str, correction: object) -> int | float:
    if isinstance(correction, bool) or not isinstance(correction, (int, float)) or correction < 0:
        raise FusionDefinitionError(f"{op}: correction must be a number >= 0, got {correction!r}")
    return correction


def var(arg: TensorView, dims: Sequence[int] | int | None = None, correction: int | float = 1,
        keepdim: bool = False) -> TensorView:
    """Two-pass variance: sum((x - mean)^2) / max(0, N - correction)."""
    correction = _check_correction("var", correction)
    x, out_dtype = _float_input("var", arg)
    ds = _dims_list("var", x, dims)
    n = reduced_count(x, ds)
    m = arith.div(reduce("add", x, ds, keepdim=True), n)
    d = arith.sub(x, m)
    s = reduce("add", arith.mul(d, d), ds, keepdim)
    return _back(arith.div(s, _var_denominator(n, correction)), out_dtype)


def var_mean(arg: TensorView, dims: Sequence[int] | int | None = None, correction: int | float = 1,
             keepdim: bool = False) -> tuple[TensorView, TensorView]:
    """(var, mean) from one Welford reduction, as nvFuser's variance_mean."""
    correction = _check_correction("var_mean", correction)
    x, out_dtype = _float_input("var_mean", arg)
    ds = _dims_list("var_mean", x, dims)
    avg, var_sum, _n = welford(x, ds)
    v = arith.div(var_sum, _var_denominator(reduced_count(x, ds), correction))
    m = avg
    if keepdim:
        flags = [k in ds for k in range(len(no_reductions(x)))]
        v = broadcast(v, flags)
        m = broadcast(m, flags)
    return _back(v, out_dtype), _back(m, out_dtype)


def welford(arg: TensorView, dims: Sequence[int] | int) -> tuple[TensorView, TensorView, TensorView]:
    """Single-pass mean and M2: outputs (avg, var_sum, count); count is int64."""
    tv = check_tensor("welford", arg)
    if not tv.dtype.is_float:
        raise FusionDefinitionError(f"welford: {tv.short_name} must be a floating tensor, got {tv.dtype.cuda_name}")
    ds = _dims_list("welford", tv, dims)
    fusion = tv.fusion
    src = no_reductions(tv)

    def out_ids() -> list[IterDomain]:
        return reduced_ids(fusion, src, ds)

    work = compute_dtype(tv.dtype)
    avg = new_tv(fusion, out_ids(), work)
    var_sum = new_tv(fusion, out_ids(), work)
    n = new_tv(fusion, out_ids(), DataType.Int)
    WelfordOp(fusion, avg, var_sum, n, tv)
    return avg, var_sum, n
