"""A region's fusion as one device runs it: each sharded axis at its local extent, no device
parallelization left, so that the single-device pipeline (segment, schedule, lower) takes it
as any other fusion.

A constant extent `n` of an axis split over `d` devices becomes `n / d` (a logical device
axis becomes 1); a symbolic extent gets a symbol of its own for its sharded uses (the
unsharded ones keep the original, which stays the whole size), bound from the local tensors
as every extent is.
"""

from __future__ import annotations

from typing import Any

from engine.ir import exprs as ex
from engine.ir.fusion import Fusion
from engine.ir.iterdomain import IterDomain, ParallelType, Split
from engine.ir.logical_map import root_to_logical
from engine.ir.scalar import Scalar, as_scalar, binary
from engine.ir.tensorview import TensorView
from engine.multidevice.mesh import DEVICE_TYPES
from engine.multidevice.sharding import MultiDeviceError, check_partial_k, mesh_of, shardings
from engine.ops.common import full_extent


def _local_extent(tv: TensorView, i: IterDomain, d: int, split: bool, fresh: dict[tuple[int, bool], Scalar],
                  fusion: Fusion, parts: dict[Scalar, tuple[Scalar, int]]) -> Scalar:
    e = full_extent(i)
    c = e.value if e.is_const else None
    if c is not None:
        c = int(c)
        if not split:
            if c != d:
                raise MultiDeviceError(f"{tv.short_name}: {i} is parallelized over {d} devices without a split, so "
                                       f"its extent must be {d}")
            return as_scalar(1)
        if c % d:
            raise MultiDeviceError(f"{tv.short_name}: {i} of extent {c} does not split evenly over {d} devices")
        return as_scalar(c // d)
    if not split:
        return as_scalar(1)
    key = (id(e), split)
    if key not in fresh:
        fresh[key] = fusion.new_symbol(e.dtype)
        parts[fresh[key]] = (e, d)
    return fresh[key]


def localize(fusion: Fusion) -> dict[Scalar, tuple[Scalar, int]]:
    """Rewrite `fusion` (a region's standalone copy) in place to its single-device form.
    Returns each new symbol with the whole extent it is a part of and the number of parts."""
    fresh: dict[tuple[int, bool], Scalar] = {}
    parts: dict[Scalar, tuple[Scalar, int]] = {}
    localized: set[int] = set()
    for tv in [v for v in fusion.vals() if isinstance(v, TensorView)]:
        mesh = mesh_of(tv)
        if mesh is None:
            continue
        dom = tv.domain
        r2l = root_to_logical(tv) if dom.root is not None else {}
        l2r = {lo: ro for ro, lo in r2l.items()}
        partial_k = isinstance(tv.definition, (ex.RFactorMatmulOp, ex.RFactorLinearOp))
        if partial_k:
            check_partial_k(tv)
        for s in shardings(tv):
            d = mesh.extent(s.pt)
            new = _local_extent(tv, s.logical, d, s.split, fresh, fusion, parts)
            if s.logical.has_expanded_extent:
                s.logical.expanded_extent = new  # expanded to this device's part
                localized.add(id(s.logical))
                continue
            s.logical.extent = new
            localized.add(id(s.logical))
            root = l2r.get(s.logical)
            if root is not None and root is not s.logical:
                root.extent = new
            elif s.logical not in dom.maybe_root and _outer_of_split(s.logical):
                # The outer part of a split between root and logical (an rfactor'ed
                # matmul's K, a reshape's heads): the split shrinks with it.
                _localize_split(s.logical, new)
        _plain_loop(tv)
        tv.device_mesh = None
    for e in fusion.exprs():
        if not isinstance(e, ex.ViewOp):
            continue
        _localize_view_root(e, localized)
        if e.new_shape is not None:
            # The sizes asked for, at this device's extents where the axis is sharded.
            dims = [i for i in e.output.domain.logical if not i.is_reduction]
            e.attributes["new_shape"] = [i.extent if id(i) in localized else old
                                         for i, old in zip(dims, e.new_shape)]
    fusion.changed()
    return parts


def _outer_of_split(i: IterDomain) -> bool:
    t = i.definition
    return isinstance(t, Split) and t.outer is i


def _localize_view_root(e: ex.ViewOp, localized: set[int]) -> None:
    """A reshape's root axes are its input's logical axes, one for one: where the input's
    is this device's part, so is the root's (a head split of a column-sharded projection
    kept the whole h*dh as the root of its [b, s, h/d, dh])."""
    src = [i for i in e.input.domain.logical if not i.is_reduction]
    root = [i for i in e.output.domain.maybe_root if not i.is_reduction]
    if len(src) != len(root):
        return
    for p, r in zip(src, root):
        if id(p) in localized and r is not p:
            r.extent = p.extent
            localized.add(id(r))


def _localize_split(part: IterDomain, new: Scalar) -> None:
    """`part`, the outer part of a split between root and logical (an rfactor'ed matmul's K,
    [rK] -> [iS{d}, rS{K/d}]; a reshape's heads, [h*dh] -> [h, dh]), is now `new` long on
    this device: the split and the root axis it cuts shrink with it, so that the root is the
    part this device holds."""
    t = part.definition
    assert isinstance(t, Split)
    if not t.inner_split:
        t.factor = new
    t.in_id.extent = t.inner.extent if new.is_const and new.value == 1 else binary("mul", new, t.inner.extent)


def _logical_of(i: IterDomain, logical: list[IterDomain]) -> IterDomain | None:
    while i not in logical:
        t = i.definition
        if t is None or not t.inputs:
            return None
        i = t.inputs[0]
    return i


def _plain_loop(tv: TensorView) -> None:
    """Loop domain back to the logical one, device types cleared; an allocation domain made
    of device splits becomes the order of the logical axes it came from."""
    dom = tv.domain
    logical = dom.logical
    for i in logical:
        if i.parallel_type in DEVICE_TYPES or i.parallel_type == ParallelType.stream:
            i.parallel_type = ParallelType.serial
    dom.loop = list(logical)
    dom.loop_only = []
    if dom.allocation is not None and any(i not in logical for i in dom.allocation):
        order: list[Any] = []
        for i in dom.allocation:
            lo = _logical_of(i, logical)
            if lo is not None and lo not in order:
                order.append(lo)
        if order == list(logical) or len(order) != len(logical):
            dom.allocation = None
        else:
            dom.allocation = order
        dom.contiguity = dom.default_contiguity()
