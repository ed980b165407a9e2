"""Indexing ops: select, index_select, gather and take_along_axis (generated as kernels);
scatter and index_put_accumulate (evaluated by torch in expr_eval segments)."""

from __future__ import annotations

from engine.errors import FusionDefinitionError
from engine.ir.aten_exprs import IndexPutAccumulateOp, ScatterOp
from engine.ir.exprs import GatherOp, IndexSelectOp, SelectOp
from engine.ir.iterdomain import IterDomain, IterType
from engine.ir.scalar import Scalar, as_scalar
from engine.ir.tensorview import TensorView
from engine.ops.common import (
    check_tensor,
    copy_id,
    full_extent,
    materialized_id,
    new_tv,
    no_reductions,
    norm_dim,
    to_val,
)
from engine.ops.shape import broadcast

__all__ = ["gather", "index_put_accumulate", "index_select", "scatter", "select", "take_along_axis"]


def _check_index_tensor(op: str, index: object) -> TensorView:
    idx = check_tensor(op, index, "index")
    if not idx.dtype.is_integer:
        raise FusionDefinitionError(f"{op}: index {idx.short_name} must be an integer tensor, got {idx.dtype.cuda_name}")
    return idx


def select(arg: TensorView, index: int | Scalar, dim: int) -> TensorView:
    """arg.select(dim, index): the output drops axis `dim`."""
    tv = check_tensor("select", arg)
    src = no_reductions(tv)
    d = norm_dim("select", dim, len(src), tv)
    if isinstance(index, bool) or not isinstance(index, (int, Scalar)):
        raise FusionDefinitionError(f"select: index into {tv.short_name} must be an int or Scalar, got {index!r}")
    if isinstance(index, Scalar) and not index.dtype.is_integer:
        raise FusionDefinitionError(f"select: index into {tv.short_name} must be an integer, got {index.dtype.cuda_name}")
    ext = src[d].extent
    if isinstance(index, int) and ext.is_const and not -ext.value <= index < ext.value:
        raise FusionDefinitionError(f"select: index {index} is out of range for axis {d} of {tv.short_name} ({src[d]})")
    fusion = tv.fusion
    out = new_tv(fusion, [copy_id(fusion, i) for k, i in enumerate(src) if k != d], tv.dtype)
    SelectOp(fusion, out, tv, d, as_scalar(index) if isinstance(index, int) else index)
    return out


def index_select(arg: TensorView, index: TensorView, dim: int) -> TensorView:
    """torch.index_select: axis `dim` of the output has the extent of the 1-D `index`.

    The index is broadcast to the table's rank first (its axis at `dim`, broadcasts
    elsewhere), as nvFuser's indexSelect does (ops::maybeBroadcastIndexTv): a 1-D index
    has no axis for the output's other axes, so a schedule that merges them (the
    pointwise 1-D schedule) could not replay its loops on the index, which then stayed
    outside the loop nest, a whole copy of the index per thread. Broadcast, the index is
    inlined like any broadcast operand and each thread reads the one entry it uses. An
    index already in that form is taken as it is (nvFuser's isIndexAlreadyBroadcast)."""
    tv = check_tensor("index_select", arg)
    idx = _check_index_tensor("index_select", index)
    src = no_reductions(tv)
    d = norm_dim("index_select", dim, len(src), tv)
    idx = _index_at_rank(idx, d, len(src))
    fusion = tv.fusion
    index_id = no_reductions(idx)[d]
    ids = [copy_id(fusion, index_id) if k == d else copy_id(fusion, i) for k, i in enumerate(src)]
    out = new_tv(fusion, ids, tv.dtype)
    IndexSelectOp(fusion, out, tv, d, idx)
    return out


def _index_at_rank(idx: TensorView, dim: int, rank: int) -> TensorView:
    """index_select's index with `rank` axes: its own at `dim`, broadcasts elsewhere."""
    ids = no_reductions(idx)
    if len(ids) == rank and all(k == dim or i.is_broadcast for k, i in enumerate(ids)):
        return idx
    if len(ids) != 1:
        raise FusionDefinitionError(f"index_select: index {idx.short_name} must be 1-D, got rank {len(ids)}")
    if rank == 1:
        return idx
    return broadcast(idx, [k != dim for k in range(rank)])


def gather(arg: TensorView, index: TensorView, dim: int) -> TensorView:
    """torch.gather: the output has the shape of `index`, whose axes other than `dim` may
    not be larger than the input's."""
    return _gather("gather", arg, index, dim, exact=False)


def take_along_axis(arg: TensorView, index: TensorView, dim: int) -> TensorView:
    """numpy's take_along_axis: axes other than `dim` must match or broadcast."""
    return _gather("take_along_axis", arg, index, dim, exact=True)


def _gather(op: str, arg: TensorView, index: TensorView, dim: int, exact: bool) -> TensorView:
    tv = check_tensor(op, arg)
    idx = _check_index_tensor(op, index)
    src, isrc = no_reductions(tv), no_reductions(idx)
    if len(src) != len(isrc):
        raise FusionDefinitionError(
            f"{op}: index {idx.short_name} has rank {len(isrc)} but {tv.short_name} has rank {len(src)}"
        )
    d = norm_dim(op, dim, len(src), tv)
    fusion = tv.fusion
    ids: list[IterDomain] = []
    for k, (a, b) in enumerate(zip(src, isrc)):
        if k == d:
            ids.append(copy_id(fusion, b))
            continue
        ea, eb = a.extent, b.extent
        if exact:
            if a.is_broadcast and b.is_broadcast:
                ids.append(copy_id(fusion, b))
                continue
            if not a.is_broadcast and not b.is_broadcast and ea.is_const and eb.is_const and ea.value != eb.value:
                raise FusionDefinitionError(
                    f"{op}: axis {k} of index {idx.short_name} ({eb.value}) does not match "
                    f"{tv.short_name} ({ea.value})"
                )
            concrete = b if not b.is_broadcast else a
            ids.append(IterDomain(fusion, concrete.extent, IterType.Iteration))
        else:
            if ea.is_const and eb.is_const and not a.is_broadcast and eb.value > ea.value:
                raise FusionDefinitionError(
                    f"{op}: axis {k} of index {idx.short_name} ({eb.value}) is larger than "
                    f"{tv.short_name}'s ({ea.value})"
                )
            ids.append(copy_id(fusion, b))
    out = new_tv(fusion, ids, tv.dtype)
    # take_along_axis broadcasts the non-gathered axes; gather reads index-sized blocks.
    GatherOp(fusion, out, tv, d, idx, exact_sizes=exact)
    return out


def _same_extent(op: str, what: str, a: IterDomain, b: IterDomain, k: int, tv: TensorView, other: TensorView) -> None:
    ea, eb = full_extent(a), full_extent(b)
    if ea.is_const and eb.is_const and ea.value != eb.value:
        raise FusionDefinitionError(f"{op}: axis {k} of {what} {other.short_name} ({eb.value}) does not match "
                                    f"{tv.short_name} ({ea.value})")


def scatter(arg: TensorView, index: TensorView, src: object, dim: int) -> TensorView:
    """torch.scatter out of place: a copy of `arg` with src's elements (or the scalar src)
    written along `dim` where `index` points. index and a tensor src have arg's rank."""
    tv = check_tensor("scatter", arg)
    idx = _check_index_tensor("scatter", index)
    src_val = to_val(src, tv.dtype)
    out_ids = no_reductions(tv)
    d = norm_dim("scatter", dim, len(out_ids), tv)
    iids = no_reductions(idx)
    if len(iids) != len(out_ids):
        raise FusionDefinitionError(f"scatter: index {idx.short_name} has rank {len(iids)} but {tv.short_name} "
                                    f"has rank {len(out_ids)}")
    if isinstance(src_val, TensorView):
        sids = no_reductions(src_val)
        if len(sids) != len(out_ids):
            raise FusionDefinitionError(f"scatter: src {src_val.short_name} has rank {len(sids)} but "
                                        f"{tv.short_name} has rank {len(out_ids)}")
        for k, (i, s) in enumerate(zip(iids, sids)):
            ei, es = full_extent(i), full_extent(s)
            if ei.is_const and es.is_const and ei.value > es.value:
                raise FusionDefinitionError(f"scatter: axis {k} of index {idx.short_name} ({ei.value}) "
                                            f"is larger than src {src_val.short_name}'s ({es.value})")
    fusion = tv.fusion
    out = new_tv(fusion, [materialized_id(fusion, i) for i in out_ids], tv.dtype)
    ScatterOp(fusion, out, tv, d, idx, src_val)
    return out


def index_put_accumulate(acc: TensorView, index: TensorView, value: TensorView) -> TensorView:
    """torch.index_put(acc, (index,), value, accumulate=True): value[j] is added to row
    index[j] of acc; index is 1-D, value is [len(index), *acc.shape[1:]]."""
    tv = check_tensor("index_put_accumulate", acc, "acc")
    idx = _check_index_tensor("index_put_accumulate", index)
    val = check_tensor("index_put_accumulate", value, "value")
    aids, iids, vids = no_reductions(tv), no_reductions(idx), no_reductions(val)
    if len(iids) != 1:
        raise FusionDefinitionError(f"index_put_accumulate: index {idx.short_name} must be 1-D, got rank {len(iids)}")
    if not aids or len(vids) != len(aids):
        raise FusionDefinitionError(f"index_put_accumulate: value {val.short_name} has rank {len(vids)}; it must "
                                    f"have acc {tv.short_name}'s rank {len(aids)} (>= 1)")
    _same_extent("index_put_accumulate", "value", iids[0], vids[0], 0, idx, val)
    for k, (a, v) in enumerate(zip(aids[1:], vids[1:]), start=1):
        _same_extent("index_put_accumulate", "value", a, v, k, tv, val)
    fusion = tv.fusion
    out = new_tv(fusion, [materialized_id(fusion, i) for i in aids], tv.dtype)
    IndexPutAccumulateOp(fusion, out, tv, idx, val)
    return out
