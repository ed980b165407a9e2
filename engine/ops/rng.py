"""Random-number factories: uniform, normal, rand_like, randn_like (nvFuser's RNG ops).

Each builds one RNGOp (engine/ir/exprs.py says how its numbers are drawn). Like full and
iota they read no tensor values; rand_like and randn_like take only their argument's shape
and dtype.
"""

from __future__ import annotations

from collections.abc import Sequence

from engine.dtypes import DataType
from engine.errors import FusionDefinitionError
from engine.ir.exprs import RNGOp
from engine.ir.scalar import Scalar, as_scalar
from engine.ir.tensorview import TensorView
from engine.ops.common import integer_scalar, new_tv
from engine.ops.factory import check_dtype, defining_fusion, factory_ids, shape_extents

__all__ = ["normal", "rand_like", "randn_like", "uniform"]

_FLOAT_TYPES = (DataType.Float, DataType.Double, DataType.Half, DataType.BFloat16)


def uniform(minval: float | Scalar, maxval: float | Scalar, shape: Sequence[int | Scalar],
            rng_seed: int | Scalar | None = None, rng_offset: int | Scalar | None = None,
            dtype: DataType = DataType.Float) -> TensorView:
    """Uniform numbers in [minval, maxval) of `shape`."""
    return _rng("uniform", "uniform", shape, (minval, maxval), rng_seed, rng_offset, dtype)


def normal(mean: float | Scalar, std: float | Scalar, shape: Sequence[int | Scalar],
           rng_seed: int | Scalar | None = None, rng_offset: int | Scalar | None = None,
           dtype: DataType = DataType.Float) -> TensorView:
    """Normal numbers (Box-Muller) of `mean` and `std`, of `shape`."""
    return _rng("normal", "normal", shape, (mean, std), rng_seed, rng_offset, dtype)


def rand_like(arg: TensorView, rng_seed: int | Scalar | None = None,
              rng_offset: int | Scalar | None = None, dtype: DataType | None = None) -> TensorView:
    """uniform(0, 1) in `arg`'s shape and dtype."""
    return _rng("rand_like", "uniform", _shape_of("rand_like", arg), (0.0, 1.0), rng_seed, rng_offset,
                dtype or arg.dtype)


def randn_like(arg: TensorView, rng_seed: int | Scalar | None = None,
               rng_offset: int | Scalar | None = None, dtype: DataType | None = None) -> TensorView:
    """normal(0, 1) in `arg`'s shape and dtype."""
    return _rng("randn_like", "normal", _shape_of("randn_like", arg), (0.0, 1.0), rng_seed, rng_offset,
                dtype or arg.dtype)


def _shape_of(op: str, arg: object) -> list[Scalar]:
    if not isinstance(arg, TensorView):
        raise FusionDefinitionError(f"{op}: the argument must be a tensor, got {arg!r}")
    ids = [i for i in arg.domain.logical if not i.is_reduction]
    return [i.expanded_extent if i.expanded_extent is not None else i.extent for i in ids]


def _rng(op: str, dist: str, shape: Sequence[int | Scalar], params: tuple[object, object],
         seed: object, offset: object, dtype: object) -> TensorView:
    fusion = defining_fusion(op)
    dtype = check_dtype(op, dtype)
    if dtype not in _FLOAT_TYPES:
        raise FusionDefinitionError(f"{op}: dtype must be float, double, half or bfloat16, got {dtype.cuda_name}")
    extents = shape_extents(op, shape)
    if (seed is None) != (offset is None):
        raise FusionDefinitionError(f"{op}: rng_seed and rng_offset must be given together")
    seed_s = None if seed is None else integer_scalar(op, "rng_seed", seed)
    offset_s = None if offset is None else integer_scalar(op, "rng_offset", offset)
    out = new_tv(fusion, factory_ids(fusion, extents), dtype)
    rng_id = sum(1 for e in fusion.all_exprs if isinstance(e, RNGOp))
    RNGOp(fusion, out, dist, extents, [_param(op, p) for p in params], seed_s, offset_s, rng_id)
    return out


def _param(op: str, p: object) -> Scalar:
    if isinstance(p, Scalar):
        if p.dtype.is_complex or p.dtype.is_bool:
            raise FusionDefinitionError(f"{op}: parameters must be real numbers, got a {p.dtype.cuda_name} scalar")
        return p
    if isinstance(p, bool) or not isinstance(p, (int, float)):
        raise FusionDefinitionError(f"{op}: parameters must be numbers or Scalars, got {p!r}")
    return as_scalar(float(p), DataType.Double)


