"""Shape ops: broadcast, squeeze, set and segment_set (more shape ops join this module)."""

from __future__ import annotations

from collections.abc import Sequence

from engine.errors import FusionDefinitionError
from engine.ir.exprs import BroadcastOp, LoadStoreOp, SqueezeOp
from engine.ir.iterdomain import IterDomain, IterType
from engine.ir.tensorview import TensorView
from engine.ops.common import check_tensor, copy_id, new_tv, no_reductions, norm_dims

__all__ = ["broadcast", "broadcast_in_dim", "segment_set", "set", "squeeze"]


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

    Axes of size 1 that map to a larger output extent are expanded afterwards.
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


def _maybe_expand(tv: TensorView, shape: Sequence[object]) -> TensorView:
    from engine.ir.scalar import Scalar

    needs = False
    for i, s in zip(no_reductions(tv), shape):
        if i.is_broadcast and not (isinstance(s, int) and s in (1, -1)):
            if isinstance(s, Scalar) and s.is_const and s.value == 1:
                continue
            needs = True
    if not needs:
        return tv
    from engine.ops import expand  # defined with the other shape ops

    return expand(tv, list(shape))


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


def set_(arg: TensorView) -> TensorView:  # `set` in __all__ (nvFuser's name)
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


