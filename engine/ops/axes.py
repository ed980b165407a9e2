"""Shape ops on axes: broadcast and broadcast_in_dim add axes, squeeze drops size-1 ones,
expand widens broadcasts without copying, permute reorders; set and segment_set copy."""

from __future__ import annotations

from collections.abc import Sequence

from engine.errors import FusionDefinitionError
from engine.ir.exprs import BroadcastOp, ExpandOp, LoadStoreOp, SqueezeOp
from engine.ir.iterdomain import IterDomain, IterType
from engine.ir.scalar import Scalar, same_scalar
from engine.ir.tensorview import TensorView
from engine.ops.common import (
    ShapeEntry,
    check_tensor,
    copy_id,
    full_extent,
    is_one,
    new_tv,
    no_reductions,
    norm_dims,
    shape_scalar,
    shape_str,
)


def broadcast(arg: TensorView, is_broadcast_dim: Sequence[bool]) -> TensorView:
    """Insert new size-1 axes where `is_broadcast_dim` is true (nvFuser's broadcast)."""
    tv = check_tensor("broadcast", arg)
    flags = [bool(f) for f in is_broadcast_dim]
    src = no_reductions(tv)
    if len(flags) - sum(flags) != len(src):
        raise FusionDefinitionError(
            f"broadcast: {tv.short_name} has rank {len(src)} but flags {flags} keep "
            f"{len(flags) - sum(flags)} axes"
        )
    fusion = tv.fusion
    it = iter(src)
    ids = [IterDomain(fusion, 1, IterType.Broadcast) if f else copy_id(fusion, next(it)) for f in flags]
    out = new_tv(fusion, ids, tv.dtype)
    if not any(flags):
        LoadStoreOp(fusion, out, tv)
        return out
    BroadcastOp(fusion, out, tv, flags)
    return out


def broadcast_in_dim(arg: TensorView, shape: Sequence[object], broadcast_dims: Sequence[int]) -> TensorView:
    """Place the input's axes at `broadcast_dims` of an output of rank len(shape).

    Axes of size 1 that map to a larger output extent are expanded afterwards (nvFuser's
    broadcast, then expand: see expand for which axes those are).
    """
    tv = check_tensor("broadcast_in_dim", arg)
    rank = len(shape)
    src = no_reductions(tv)
    if len(broadcast_dims) != len(src):
        raise FusionDefinitionError(
            f"broadcast_in_dim: {tv.short_name} has rank {len(src)} but broadcast_dims "
            f"{list(broadcast_dims)} has {len(broadcast_dims)} entries"
        )
    dims = norm_dims("broadcast_in_dim", broadcast_dims, rank, tv)
    if dims != sorted(dims):
        raise FusionDefinitionError(f"broadcast_in_dim: broadcast_dims {list(broadcast_dims)} must increase")
    out = broadcast(tv, [k not in dims for k in range(rank)])
    return _maybe_expand(out, shape)


def _check_extent(op: str, tv: TensorView, i: IterDomain, s: object, k: int) -> None:
    """An iteration axis of a size the fusion's inputs give keeps its extent under expand and
    broadcast_in_dim: a different constant size is refused now, a size that may differ is
    checked once sizes are known (Fusion.extent_checks). (An axis of a size only the run
    settles is concretized instead: see _settled_at_run_time.)"""
    if isinstance(s, int) and not isinstance(s, bool) and s == -1:
        return
    target = shape_scalar(op, tv, s, k)
    if same_scalar(target, i.extent):
        return
    if target.is_const and i.extent.is_const:
        raise FusionDefinitionError(
            f"{op}: axis {k} of {tv.short_name} ({i}) is not a broadcast and cannot be expanded to "
            f"{target.value}")
    tv.fusion.extent_checks.append((i.extent, target, f"{op}: axis {k} of {tv.short_name}"))


def _settled_at_run_time(tv: TensorView, i: IterDomain, s: object) -> bool:
    """Whether expanding iteration axis `i` to `s` is decided when the sizes are known, as
    nvFuser decides for a Symbolic IterDomain (the output of a slice, pad, cat or reshape, or
    a factory's axis, whose extent is not a constant): expanded where the extent is 1, kept
    where it is the size asked for, refused otherwise. `i`'s extent is then an expression or
    a scalar input, not the size of an input tensor's axis: those are Iteration in nvFuser,
    whose expand keeps them, their extent the size asked for."""
    if i.is_broadcast or i.extent.is_const or (isinstance(s, int) and s == -1):
        return False
    if not isinstance(s, (int, Scalar)) or isinstance(s, bool) or same_scalar(shape_scalar("expand", tv, s, 0),
                                                                              i.extent):
        return False
    sizes = {id(j.extent) for x in tv.fusion.inputs if isinstance(x, TensorView) for j in x.domain.logical}
    return id(i.extent) not in sizes


def _maybe_expand(tv: TensorView, shape: Sequence[object]) -> TensorView:
    needs = False
    for k, (i, s) in enumerate(zip(no_reductions(tv), shape)):
        if _expands(i, s) or _settled_at_run_time(tv, i, s):
            needs = True
        elif not i.is_broadcast:
            _check_extent("broadcast_in_dim", tv, i, s, k)
    if not needs:
        return tv
    return expand(tv, list(shape))


def _expands(i: IterDomain, s: object) -> bool:
    """Whether expand makes axis `i` an expanded broadcast for shape entry `s`: nvFuser expands
    an axis whose extent is 1, a broadcast's or a constant 1 of any iter type (a slice or a
    reshape to size 1), to any size but -1 (kept) and 1."""
    if isinstance(s, bool) or not (i.is_broadcast or is_one(i.extent)):
        return False
    if isinstance(s, int):
        return s not in (1, -1)
    return isinstance(s, Scalar) and not is_one(s)


def squeeze(arg: TensorView, dims: Sequence[int], squeeze_expanded: bool = False) -> TensorView:
    """Remove the given size-1 axes."""
    tv = check_tensor("squeeze", arg)
    src = no_reductions(tv)
    ds = set(norm_dims("squeeze", dims, len(src), tv))
    for d in ds:
        i = src[d]
        ok = i.is_broadcast or (i.extent.is_const and i.extent.value == 1)
        if not ok or (i.expanded_extent is not None and not squeeze_expanded):
            raise FusionDefinitionError(
                f"squeeze: axis {d} of {tv.short_name} ({i}) is not of size 1"
            )
    fusion = tv.fusion
    ids = [copy_id(fusion, i) for k, i in enumerate(src) if k not in ds]
    out = new_tv(fusion, ids, tv.dtype)
    SqueezeOp(fusion, out, tv, [k in ds for k in range(len(src))])
    return out


def set_(arg: TensorView) -> TensorView:  # `set` in engine.ops.shape's __all__ (nvFuser's name)
    tv = check_tensor("set", arg)
    out = new_tv(tv.fusion, [copy_id(tv.fusion, i) for i in no_reductions(tv)], tv.dtype)
    LoadStoreOp(tv.fusion, out, tv)
    return out


def segment_set(arg: TensorView) -> TensorView:
    """A copy that the segmenter always cuts at."""
    tv = check_tensor("segment_set", arg)
    out = new_tv(tv.fusion, [copy_id(tv.fusion, i) for i in no_reductions(tv)], tv.dtype)
    LoadStoreOp(tv.fusion, out, tv, kind="SegmenterSet")
    return out


# ---- expand --------------------------------------------------------------------------------

def expand(arg: TensorView, shape: Sequence[ShapeEntry]) -> TensorView:
    """Expand broadcast axes to `shape` without copying (-1 keeps an axis as it is).

    An expanded axis stays a broadcast of extent 1 that carries its expanded extent,
    printed `bS39{1 ex 32}`, as nvFuser's expand does. As there, an axis whose extent is the
    constant 1 expands whatever its iter type (`iS5{1}` from a slice or a reshape becomes
    `bS{1 ex 2}`). An axis whose extent only the run settles (_settled_at_run_time) takes the
    size asked for and is listed in the op's `concretized` axes: at the bound sizes it is
    expanded where its input's extent is 1 (nvFuser's concretization of a Symbolic expand).
    Any other iteration axis keeps its extent, which must be the size asked for (checked at
    once when both are constants, else when the sizes are bound).
    """
    tv = check_tensor("expand", arg)
    src = no_reductions(tv)
    if len(shape) != len(src):
        raise FusionDefinitionError(
            f"expand: {tv.short_name} has rank {len(src)} but shape {shape_str(shape)} has "
            f"{len(shape)} entries"
        )
    fusion = tv.fusion
    ids: list[IterDomain] = []
    extents: list[Scalar] = []
    concretized: list[int] = []
    for k, (i, s) in enumerate(zip(src, shape)):
        if isinstance(s, int) and not isinstance(s, bool) and s == -1:
            ids.append(copy_id(fusion, i))
            extents.append(full_extent(i))
            continue
        target = shape_scalar("expand", tv, s, k)
        if target.is_const and target.value < 0:
            raise FusionDefinitionError(f"expand: shape entry {k} is {target.value}; sizes must be >= 0 or -1")
        if i.is_broadcast:
            if is_one(target):
                ids.append(IterDomain(fusion, 1, IterType.Broadcast))
            else:
                ids.append(IterDomain(fusion, 1, IterType.Broadcast, expanded_extent=target))
            extents.append(target)
            continue
        if _expands(i, target):
            ids.append(IterDomain(fusion, 1, IterType.Broadcast, expanded_extent=target))
            extents.append(target)
            continue
        if _settled_at_run_time(tv, i, target):
            ids.append(IterDomain(fusion, target, IterType.Iteration))
            extents.append(target)
            concretized.append(k)
            continue
        _check_extent("expand", tv, i, target, k)
        ids.append(copy_id(fusion, i))
        extents.append(i.extent)
    out = new_tv(fusion, ids, tv.dtype)
    ExpandOp(fusion, out, tv, extents, concretized)
    return out


# ---- permute -------------------------------------------------------------------------------

def permute(arg: TensorView, dims: Sequence[int]) -> TensorView:
    """Output axis k is input axis dims[k]. The output's root domain holds copies of the
    input axes in input order and its logical domain is that root permuted, which is what
    makes the LoadStoreOp print as `Set.Permute(`."""
    tv = check_tensor("permute", arg)
    src = no_reductions(tv)
    if len(dims) != len(src):
        raise FusionDefinitionError(
            f"permute: dims {list(dims)} has {len(dims)} entries for {tv.short_name} of rank {len(src)}"
        )
    ds = norm_dims("permute", dims, len(src), tv)
    fusion = tv.fusion
    root = [copy_id(fusion, i) for i in src]
    out = new_tv(fusion, [root[d] for d in ds], tv.dtype, root=root)
    LoadStoreOp(fusion, out, tv)
    return out
