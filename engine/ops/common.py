"""Shared pieces of op builders: operand checks, output domains, broadcasting, shape entries."""

from __future__ import annotations

from collections.abc import Sequence

from engine.dtypes import DataType
from engine.errors import FusionDefinitionError
from engine.ir.base import Val, current_fusion
from engine.ir.fusion import Fusion
from engine.ir.iterdomain import IterDomain, IterType
from engine.ir.scalar import Scalar, as_scalar
from engine.ir.tensorview import TensorDomain, TensorView

Operand = TensorView | Scalar | int | float | bool


def fusion_of(*vals: object) -> Fusion:
    for v in vals:
        if isinstance(v, TensorView):
            return v.fusion
    return current_fusion()


def no_reductions(tv: TensorView) -> list[IterDomain]:
    return [i for i in tv.domain.logical if not i.is_reduction]


def check_tensor(op: str, x: object, what: str = "input") -> TensorView:
    if not isinstance(x, TensorView):
        raise FusionDefinitionError(f"{op}: {what} must be a tensor, got {_describe(x)}")
    return x


def to_val(x: Operand, dtype: DataType | None = None) -> Val:
    if isinstance(x, (TensorView, Scalar)):
        return x
    if isinstance(x, (bool, int, float)):
        if dtype is None:
            dtype = DataType.Bool if isinstance(x, bool) else (
                DataType.Int if isinstance(x, int) else DataType.Double)
        return as_scalar(x, dtype)
    raise FusionDefinitionError(f"expected a tensor or a number, got {_describe(x)}")


def _describe(x: object) -> str:
    return getattr(x, "short_name", None) or type(x).__name__


def norm_dim(op: str, dim: int, rank: int, tv: TensorView | None = None) -> int:
    d = dim + rank if dim < 0 else dim
    if not 0 <= d < rank:
        who = f" of {tv.short_name}" if tv is not None else ""
        raise FusionDefinitionError(f"{op}: dim {dim} is out of range for rank {rank}{who}")
    return d


def norm_dims(op: str, dims: Sequence[int], rank: int, tv: TensorView | None = None) -> list[int]:
    out = [norm_dim(op, d, rank, tv) for d in dims]
    if len(set(out)) != len(out):
        raise FusionDefinitionError(f"{op}: dims {list(dims)} repeat an axis")
    return out


def new_tv(fusion: Fusion, ids: Sequence[IterDomain], dtype: DataType, **domain_kw) -> TensorView:
    return TensorView(fusion, TensorDomain(ids, **domain_kw), dtype)


def copy_id(fusion: Fusion, i: IterDomain, iter_type: IterType | None = None) -> IterDomain:
    """A fresh output IterDomain mapped to `i` (same extent, serial)."""
    return IterDomain(
        fusion, i.extent, iter_type or i.iter_type, expanded_extent=i.expanded_extent
    )


def full_extent(i: IterDomain) -> Scalar:
    """The number of elements along `i`: an expanded broadcast's expanded extent."""
    return i.expanded_extent if i.has_expanded_extent else i.extent


def materialized_id(fusion: Fusion, i: IterDomain) -> IterDomain:
    """copy_id, except that an expanded broadcast becomes an iteration axis of its expanded
    extent: ops that torch evaluates (engine.ir.aten_exprs) return every element stored."""
    if i.has_expanded_extent:
        return IterDomain(fusion, i.expanded_extent, IterType.Iteration)
    return copy_id(fusion, i)


def root_copy(fusion: Fusion, i: IterDomain, rfactor: bool = False) -> IterDomain:
    """The root IterDomain of a resized or reshaped axis: an expanded broadcast becomes a
    plain iteration over its expanded extent, since the transform reads every element."""
    if i.expanded_extent is not None:
        return IterDomain(fusion, i.expanded_extent, IterType.Iteration, is_rfactor=rfactor)
    return IterDomain(fusion, i.extent, i.iter_type, is_rfactor=rfactor)


def pointwise_ids(op: str, fusion: Fusion, tvs: Sequence[TensorView]) -> list[IterDomain]:
    """Output axes of a pointwise op over same-rank tensors, broadcasting size-1 axes."""
    doms = [no_reductions(t) for t in tvs]
    out = []
    for k, axis in enumerate(zip(*doms)):
        concrete = [i for i in axis if not i.is_broadcast]
        if not concrete:
            expanded = next((i.expanded_extent for i in axis if i.expanded_extent is not None), None)
            out.append(IterDomain(fusion, 1, IterType.Broadcast, expanded_extent=expanded))
            continue
        first = concrete[0]
        for other in concrete[1:]:
            a, b = first.extent, other.extent
            if a.is_const and b.is_const and a.value != b.value:
                names = ", ".join(t.short_name for t in tvs)
                raise FusionDefinitionError(
                    f"{op}: shapes of {names} do not broadcast at axis {k}: "
                    f"{a.inline()} vs {b.inline()}"
                )
        out.append(IterDomain(fusion, _pick_extent(concrete), IterType.Iteration))
    return out


def _pick_extent(ids: Sequence[IterDomain]) -> Scalar:
    # Prefer a constant extent: it is the most informative for printing and checks.
    for i in ids:
        if i.extent.is_const:
            return i.extent
    return ids[0].extent


def real_scalar(op: str, what: str, v: object) -> Scalar:
    """A real-valued scalar argument (eps, momentum, scale, ...): a number (as a double), or a
    Scalar that is neither bool nor complex."""
    if isinstance(v, Scalar) and not (v.dtype.is_bool or v.dtype.is_complex):
        return v
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return as_scalar(float(v), DataType.Double)
    raise FusionDefinitionError(f"{op}: {what} must be a real number, got {v!r}")


def integer_scalar(op: str, what: str, v: object) -> Scalar:
    """An integer argument as a Scalar: an int, or an integer Scalar."""
    if isinstance(v, Scalar):
        if not v.dtype.is_integer:
            raise FusionDefinitionError(f"{op}: {what} must be an integer scalar, got a {v.dtype.cuda_name} one")
        return v
    if isinstance(v, bool) or not isinstance(v, int):
        raise FusionDefinitionError(f"{op}: {what} must be an int or an integer Scalar, got {v!r}")
    return as_scalar(v, DataType.Int)


# A size in a shape argument (expand, reshape, pad widths, slice indices).
ShapeEntry = int | Scalar


def shape_scalar(op: str, tv: TensorView | None, s: object, k: int) -> Scalar:
    """A shape entry (int or Scalar) as an Index scalar; rejects anything else."""
    if isinstance(s, Scalar):
        if not (s.dtype.is_integer or s.dtype == DataType.Index):
            raise FusionDefinitionError(
                f"{op}: shape entry {k} is a {s.dtype.cuda_name} scalar, not an integer"
            )
        return s
    if isinstance(s, bool) or not isinstance(s, int):
        who = f" of {tv.short_name}" if tv is not None else ""
        raise FusionDefinitionError(f"{op}: shape entry {k}{who} must be an int or a Scalar, got {s!r}")
    return as_scalar(s)


def is_one(s: Scalar) -> bool:
    return s.is_const and s.value == 1


def shape_str(xs: Sequence[object]) -> str:
    return "[" + ", ".join(x.inline() if isinstance(x, Scalar) else str(x) for x in xs) + "]"
