"""Resize ops: slice, pad and cat (a pad of each input, then a CatOp). A resized axis gets a
root copy and a Resize by (left, right), negative for a slice."""

from __future__ import annotations

from collections.abc import Sequence

from engine.dtypes import promote
from engine.errors import FusionDefinitionError
from engine.ir.exprs import CatOp, PadOp, SliceOp
from engine.ir.iterdomain import IterDomain, IterType, Resize
from engine.ir.scalar import Scalar, as_scalar, binary, same_scalar, smax, smin
from engine.ir.tensorview import TensorView
from engine.ops.arith import cast
from engine.ops.common import (
    ShapeEntry,
    check_tensor,
    copy_id,
    full_extent,
    new_tv,
    no_reductions,
    norm_dim,
    root_copy,
    shape_scalar,
    shape_str,
)


def _norm_index(x: ShapeEntry, extent: Scalar, start: Scalar | None = None) -> Scalar:
    """An index normalized as nvFuser's slice does when manual_normalization is off
    (NVIDIA/Fuser PR #460): a negative index counts from the end; a start is at least 0;
    a stop (given its normalized `start`) is at most the extent and at least the start,
    so a range never runs backwards. Constants fold; a symbolic extent or index keeps the
    clamps in the expression (max/min)."""
    index = _from_end(as_scalar(x) if isinstance(x, int) else x, extent)
    if start is None:
        return index if index.is_const and index.value >= 0 else smax(0, index)
    constant = x if isinstance(x, int) else x.value if x.is_const else None
    if constant is None or constant >= 0:
        index = smin(extent, index)  # a negative constant counted from the end is below it already
    if constant is not None and constant >= 0 and start.is_const and start.value == 0:
        return index  # min(extent, v >= 0) is never below 0
    return smax(start, index)


def _from_end(x: Scalar, extent: Scalar) -> Scalar:
    """x < 0 ? x + extent : x. A symbolic x has no comparison in the extent arithmetic;
    for an integer, min(1, max(0, -x)) is 1 exactly when x < 0."""
    if x.is_const:
        return binary("add", extent, x) if x.value < 0 else x
    negative = smin(1, smax(0, binary("sub", 0, x)))
    return binary("add", x, binary("mul", extent, negative))


def slice_(
    arg: TensorView,
    start_indices: Sequence[ShapeEntry],
    end_indices: Sequence[ShapeEntry],
    strides: Sequence[ShapeEntry] | None = None,
    manual_normalization: bool = False,
) -> TensorView:
    """arg[start:end:stride] per axis (stride 1 only, as nvFuser). Sliced axes get a root
    copy and a Resize with negative left/right (an rf axis); unsliced axes are copied."""
    tv = check_tensor("slice", arg)
    src = no_reductions(tv)
    rank = len(src)
    strides = [1] * rank if strides is None or len(strides) == 0 else list(strides)
    for name, xs in (("start_indices", start_indices), ("end_indices", end_indices), ("strides", strides)):
        if len(xs) != rank:
            raise FusionDefinitionError(
                f"slice: {tv.short_name} has rank {rank} but {name} has {len(xs)} entries"
            )
    fusion = tv.fusion
    resizes: list[tuple[Scalar, Scalar] | None] = []
    ranges = []
    for k, (i, a, b, st) in enumerate(zip(src, start_indices, end_indices, strides)):
        for what, x in (("start", a), ("end", b), ("stride", st)):
            if isinstance(x, bool) or not isinstance(x, (int, Scalar)):
                raise FusionDefinitionError(f"slice: {what} of axis {k} of {tv.short_name} must be an int or Scalar, got {x!r}")
        step = as_scalar(st) if isinstance(st, int) else st
        if not (step.is_const and step.value == 1):
            raise FusionDefinitionError(
                f"slice: {tv.short_name} axis {k}: only stride 1 is supported, got {step.inline()}"
            )
        ext = full_extent(i)
        if manual_normalization:
            start, stop = as_scalar(a) if isinstance(a, int) else a, as_scalar(b) if isinstance(b, int) else b
        else:
            start = _norm_index(a, ext)
            stop = _norm_index(b, ext, start)
        if start.is_const and start.value == 0 and same_scalar(stop, ext):
            resizes.append(None)  # the whole axis: copied, not resized
        else:
            resizes.append((binary("sub", 0, start), binary("sub", stop, ext)))
        ranges.append((start, stop, step))
    out = _resized_output(tv, resizes)
    SliceOp(fusion, out, tv, ranges)
    return out


def pad(arg: TensorView, pad_widths: Sequence[ShapeEntry], value: object = None) -> TensorView:
    """Pad with `value` (0 by default). pad_widths is in torch order: (left, right) of the
    last axis first; axes it does not reach are not padded."""
    tv = check_tensor("pad", arg)
    src = no_reductions(tv)
    rank = len(src)
    if len(pad_widths) % 2 or len(pad_widths) > 2 * rank:
        raise FusionDefinitionError(
            f"pad: pad_widths {shape_str(pad_widths)} of {tv.short_name} must have an even "
            f"number of entries, at most {2 * rank}"
        )
    widths: list[tuple[Scalar, Scalar]] = [(as_scalar(0), as_scalar(0))] * rank
    for p in range(len(pad_widths) // 2):
        left = shape_scalar("pad", tv, pad_widths[2 * p], 2 * p)
        right = shape_scalar("pad", tv, pad_widths[2 * p + 1], 2 * p + 1)
        widths[rank - 1 - p] = (left, right)
    return _pad(tv, widths, value)


def _pad(tv: TensorView, widths: list[tuple[Scalar, Scalar]], value: object) -> TensorView:
    fusion = tv.fusion
    if value is None:
        fill: Scalar = as_scalar(False if tv.dtype.is_bool else (0.0 if tv.dtype.is_float else 0), tv.dtype)
    elif isinstance(value, Scalar):
        fill = value
    elif isinstance(value, (bool, int, float)):
        fill = as_scalar(value, tv.dtype)
    else:
        raise FusionDefinitionError(f"pad: value for {tv.short_name} must be a number or Scalar, got {value!r}")
    resizes = [None if _is_zero(left) and _is_zero(right) else (left, right) for left, right in widths]
    out = _resized_output(tv, resizes)
    PadOp(fusion, out, tv, widths, fill)
    return out


def _resized_output(tv: TensorView, resizes: Sequence[tuple[Scalar, Scalar] | None]) -> TensorView:
    """The output of a slice or pad: axes with (left, right) get a root id and a Resize
    (nvFuser creates them in that order per axis, which fixes the numbering); others
    are copied. A root domain exists only when something was resized."""
    fusion = tv.fusion
    root: list[IterDomain] = []
    logical: list[IterDomain] = []
    for i, lr in zip(no_reductions(tv), resizes):
        if lr is None:
            c = copy_id(fusion, i)
            root.append(c)
            logical.append(c)
        else:
            r = root_copy(fusion, i)
            root.append(r)
            logical.append(Resize(r, lr[0], lr[1]).out)
    resized = any(a is not b for a, b in zip(root, logical))
    return new_tv(fusion, logical, tv.dtype, root=root if resized else None)


def _is_zero(s: Scalar) -> bool:
    return s.is_const and s.value == 0


# ---- cat ----------------------------------------------------------------------------------------

def cat(tensors: Sequence[TensorView], dim: int = 0, manual_padding: bool = False) -> TensorView:
    """Concatenate along `dim`. As nvFuser, each input is first padded to the output's
    extent (left by the inputs before it, right by those after), then a CatOp picks each
    element from the input whose unpadded region holds it. With manual_padding the inputs
    are such padded tensors already."""
    if not isinstance(tensors, (list, tuple)) or not tensors:
        raise FusionDefinitionError("cat: tensors must be a non-empty list of tensors")
    tvs = [check_tensor("cat", t, f"input {k}") for k, t in enumerate(tensors)]
    fusion = tvs[0].fusion
    rank = len(no_reductions(tvs[0]))
    for t in tvs[1:]:
        if len(no_reductions(t)) != rank:
            raise FusionDefinitionError(
                f"cat: {t.short_name} has rank {len(no_reductions(t))} but {tvs[0].short_name} has rank {rank}"
            )
    d = norm_dim("cat", dim, rank, tvs[0])
    dtype = tvs[0].dtype
    for t in tvs[1:]:
        dtype = promote(dtype, t.dtype)
    if dtype != tvs[0].dtype or any(t.dtype != dtype for t in tvs):
        tvs = [t if t.dtype == dtype else cast(t, dtype) for t in tvs]
    # Non-cat axes must agree.
    for k in range(rank):
        if k == d:
            continue
        ref = no_reductions(tvs[0])[k]
        for t in tvs[1:]:
            o = no_reductions(t)[k]
            a, b = full_extent(ref), full_extent(o)
            if a.is_const and b.is_const and a.value != b.value:
                raise FusionDefinitionError(
                    f"cat: axis {k} of {t.short_name} has extent {b.value} but {tvs[0].short_name} "
                    f"has {a.value}"
                )
    if manual_padding:
        padded = tvs
    else:
        exts = [full_extent(no_reductions(t)[d]) for t in tvs]
        padded = []
        left: Scalar = as_scalar(0)
        for k, (t, e) in enumerate(zip(tvs, exts)):
            # Right pad: the extents of the inputs after this one (constants when static).
            right = _sum(exts[k + 1:])
            widths = [(as_scalar(0), as_scalar(0))] * rank
            widths[d] = (left, right)
            padded.append(_pad(t, widths, None))
            left = binary("add", left, e)
    ids: list[IterDomain] = []
    for k in range(rank):
        axis = [no_reductions(t)[k] for t in padded]
        if k == d:
            ids.append(IterDomain(fusion, full_extent(axis[0]), IterType.Iteration))
            continue
        concrete = [i for i in axis if not i.is_broadcast]
        if concrete:
            ids.append(IterDomain(fusion, concrete[0].extent, IterType.Iteration))
        else:
            ids.append(copy_id(fusion, axis[0]))
    out = new_tv(fusion, ids, dtype)
    CatOp(fusion, out, padded, d, [_cat_span(t, d) for t in padded])
    return out


def _cat_span(tv: TensorView, dim: int) -> tuple[Scalar, Scalar]:
    """(start, length) of the region a padded cat input holds along `dim`: what its pad added
    around it; a tensor that was not padded holds all of it."""
    i = no_reductions(tv)[dim]
    t = i.definition
    if isinstance(t, Resize):
        return t.left, full_extent(t.in_id)
    return as_scalar(0), full_extent(i)


def _sum(xs: Sequence[Scalar]) -> Scalar:
    out: Scalar = as_scalar(0)
    for x in xs:
        out = binary("add", out, x)
    return out
