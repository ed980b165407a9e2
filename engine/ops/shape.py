"""Shape ops: broadcast, squeeze, set, segment_set, expand, reshape, permute, slice, pad, cat."""

from __future__ import annotations

from collections.abc import Sequence

from engine.dtypes import DataType, promote
from engine.errors import FusionDefinitionError
from engine.ir.exprs import (
    BroadcastOp,
    CatOp,
    ExpandOp,
    LoadStoreOp,
    PadOp,
    SliceOp,
    SqueezeOp,
    ViewOp,
)
from engine.ir.iterdomain import IterDomain, IterType, Merge, Resize, Split
from engine.ir.scalar import Scalar, as_scalar, binary, same_scalar, smax, smin
from engine.ir.scalar import unary as scalar_unary
from engine.ir.tensorview import TensorView
from engine.ops.common import check_tensor, copy_id, full_extent, new_tv, no_reductions, norm_dim, norm_dims

__all__ = [
    "broadcast", "broadcast_in_dim", "cat", "expand", "pad", "permute", "reshape",
    "segment_set", "set", "slice", "squeeze",
]


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
    target = _shape_scalar(op, tv, s, k)
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
    if not isinstance(s, (int, Scalar)) or isinstance(s, bool) or same_scalar(_shape_scalar("expand", tv, s, 0),
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
    if isinstance(s, bool) or not (i.is_broadcast or _is_one(i.extent)):
        return False
    if isinstance(s, int):
        return s not in (1, -1)
    return isinstance(s, Scalar) and not _is_one(s)


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




# ---- helpers ------------------------------------------------------------------------------

ShapeEntry = int | Scalar


def _shape_scalar(op: str, tv: TensorView | None, s: object, k: int) -> Scalar:
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


def _root_copy(fusion, i: IterDomain, rfactor: bool = False) -> IterDomain:
    """The root IterDomain of a resized or reshaped axis: an expanded broadcast becomes a
    plain iteration over its expanded extent, since the transform reads every element."""
    if i.expanded_extent is not None:
        return IterDomain(fusion, i.expanded_extent, IterType.Iteration, is_rfactor=rfactor)
    return IterDomain(fusion, i.extent, i.iter_type, is_rfactor=rfactor)


def _is_one(s: Scalar) -> bool:
    return s.is_const and s.value == 1


def _shape_str(xs: Sequence[object]) -> str:
    return "[" + ", ".join(x.inline() if isinstance(x, Scalar) else str(x) for x in xs) + "]"


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
            f"expand: {tv.short_name} has rank {len(src)} but shape {_shape_str(shape)} has "
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
        target = _shape_scalar("expand", tv, s, k)
        if target.is_const and target.value < 0:
            raise FusionDefinitionError(f"expand: shape entry {k} is {target.value}; sizes must be >= 0 or -1")
        if i.is_broadcast:
            if _is_one(target):
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


# ---- reshape -------------------------------------------------------------------------------

def _factors(s: Scalar) -> tuple[int, dict[object, int]] | None:
    """A product of a constant and opaque factors, so that extents compare by value
    (`i0 * 4` equals `4 * i0`). None for an expression that is not a product."""
    if s.is_const:
        return (int(s.value), {})
    if s.is_symbol:
        return (1, {s: 1})
    if s.op == "mul":
        a, b = (_factors(x) for x in s.operands)
        if a is None or b is None:
            return None
        counts = dict(a[1])
        for key, n in b[1].items():
            counts[key] = counts.get(key, 0) + n
        return (a[0] * b[0], counts)
    return (1, {s: 1})


def _mul_factors(a, b):
    counts = dict(a[1])
    for key, n in b[1].items():
        counts[key] = counts.get(key, 0) + n
    return (a[0] * b[0], counts)


def _divides(a, b) -> bool:
    """a divides b, as products of a constant and symbols."""
    if a[0] == 0 or b[0] % a[0] != 0:
        return False
    return all(b[1].get(key, 0) >= n for key, n in a[1].items())


def _product(xs: Sequence[Scalar]) -> Scalar:
    out: Scalar = as_scalar(1)
    for x in xs:
        out = binary("mul", out, x)
    return out


def _resolve_new_shape(tv: TensorView, in_ext: list[Scalar], new_shape: Sequence[object]) -> list[Scalar]:
    out: list[Scalar | None] = []
    infer = None
    for k, s in enumerate(new_shape):
        if isinstance(s, int) and not isinstance(s, bool) and s == -1:
            if infer is not None:
                raise FusionDefinitionError(f"reshape: new_shape {_shape_str(new_shape)} has more than one -1")
            infer = k
            out.append(None)
            continue
        if isinstance(s, Scalar) and s.dtype.is_float:
            # nvFuser's reshape casts every new size to Index (a size worked out through
            # reciprocal is a float scalar in Thunder's traces); the cast truncates.

            s = scalar_unary("cast", s, DataType.Index)
        sc = _shape_scalar("reshape", tv, s, k)
        if sc.is_const and sc.value < 0:
            raise FusionDefinitionError(f"reshape: new_shape entry {k} is {sc.value}; sizes must be >= 0 or -1")
        out.append(sc)
    known = [s for s in out if s is not None]
    total_in = _product(in_ext)
    total_known = _product(known)
    if infer is not None:
        if total_in.is_const and total_known.is_const:
            if total_known.value == 0 or total_in.value % total_known.value:
                raise FusionDefinitionError(
                    f"reshape: {tv.short_name} of shape {_shape_str(in_ext)} has no -1 size that "
                    f"makes {_shape_str(new_shape)}"
                )
            out[infer] = as_scalar(total_in.value // total_known.value)
        else:
            out[infer] = binary("div", total_in, total_known)
    elif total_in.is_const and total_known.is_const and total_in.value != total_known.value:
        raise FusionDefinitionError(
            f"reshape: {tv.short_name} of shape {_shape_str(in_ext)} ({total_in.value} elements) "
            f"cannot be reshaped to {_shape_str(new_shape)} ({total_known.value} elements)"
        )
    return [s for s in out if s is not None]


def _plan_reshape(src: list[IterDomain], in_ext: list[Scalar], out_ext: list[Scalar]):
    """Walk both shapes left to right as nvFuser's view analysis does: equal axes are kept,
    size-1 broadcasts are squeezed, new size-1 axes are broadcast, and the rest forms
    groups of input axes whose product equals a group of output axes (merged, then split).
    Returns (plan, squeezed input dims); plan entries are ("keep", i, j), ("bcast", j)
    and ("group", [i...], [j...])."""
    n, m = len(in_ext), len(out_ext)
    fi = [_factors(s) for s in in_ext]
    fo = [_factors(s) for s in out_ext]
    plan: list[tuple] = []
    squeezed: list[int] = []

    def squeezable(i: int) -> bool:
        return src[i].is_broadcast and src[i].expanded_extent is None

    if n and m and any(s.is_const and s.value == 0 for s in (*in_ext, *out_ext)):
        # No elements: sizes need not pair up ([0, 6] -> [3, 0, 2]); one group of all axes.
        return [("group", list(range(n)), list(range(m)))], squeezed

    i = j = 0
    while i < n or j < m:
        if i < n and j < m and _is_one(in_ext[i]) and _is_one(out_ext[j]):
            plan.append(("keep", i, j))
            i, j = i + 1, j + 1
        elif i < n and squeezable(i):
            squeezed.append(i)
            i += 1
        elif j < m and _is_one(out_ext[j]):
            plan.append(("bcast", j))
            j += 1
        elif i < n and j < m and same_scalar(in_ext[i], out_ext[j]):
            plan.append(("keep", i, j))
            i, j = i + 1, j + 1
        elif i < n and j < m:
            gi, gj = [i], [j]
            pi, pj = fi[i], fo[j]
            i, j = i + 1, j + 1
            while pi is None or pj is None or pi != pj:
                more_in = i < n
                more_out = j < m
                if pi is not None and pj is not None and _divides(pi, pj) and more_in:
                    take_in = True
                elif pi is not None and pj is not None and _divides(pj, pi) and more_out:
                    take_in = False
                else:
                    # Products that do not nest (e.g. 2 vs 3, or symbolic sizes): take
                    # everything that is left, still squeezing and broadcasting size-1 axes.
                    for k in range(i, n):
                        (squeezed if squeezable(k) else gi).append(k)
                    for k in range(j, m):
                        if _is_one(out_ext[k]):
                            plan.append(("bcast", k))
                        else:
                            gj.append(k)
                    i, j = n, m
                    break
                if take_in:
                    if squeezable(i):
                        squeezed.append(i)
                    else:
                        gi.append(i)
                        pi = fi[i] if pi is None or fi[i] is None else _mul_factors(pi, fi[i])
                    i += 1
                else:
                    if _is_one(out_ext[j]):
                        # A new size-1 axis inside a group is a broadcast, not a split by 1.
                        plan.append(("bcast", j))
                    else:
                        gj.append(j)
                        pj = fo[j] if pj is None or fo[j] is None else _mul_factors(pj, fo[j])
                    j += 1
            plan.append(("group", gi, gj))
        elif i < n:
            # Trailing input axes whose product is one (symbolic ones cannot be told apart).
            if plan and plan[-1][0] == "group":
                plan[-1][1].append(i)
            elif plan and plan[-1][0] in ("bcast", "keep"):
                # [i0] -> [1, 1] or [8, i5] -> [8]: the element count makes the leftover axes
                # 1 long at run time; the last output axis is its input merged with them
                # (nvFuser decides this only at concretization, with the sizes in hand).
                last = plan.pop()
                plan.append(("group", ([last[1]] if last[0] == "keep" else []) + [i], [last[-1]]))
            else:
                raise FusionDefinitionError(f"reshape: input axis {i} has no place in the new shape")
            i += 1
        else:
            raise FusionDefinitionError(f"reshape: output axis {j} has no input axes")
    return plan, squeezed


def reshape(
    arg: TensorView,
    new_shape: Sequence[ShapeEntry],
    *rest: Sequence[ShapeEntry],
    original_shape: Sequence[ShapeEntry] | None = None,
) -> TensorView:
    """Reshape to `new_shape` (one entry may be -1). Also accepts the old frontend's
    reshape(arg, original_shape, new_shape).

    Like nvFuser, the ViewOp output has a root domain of copies of the input axes; axes
    that take part in a merge or split are replaced there by rfactor clones, and the
    logical axes derived from them by Merge/Split carry the rf flag.
    """
    tv = check_tensor("reshape", arg)
    if rest:
        if len(rest) > 1:
            raise FusionDefinitionError("reshape: takes (arg, new_shape) or (arg, original_shape, new_shape)")
        original_shape, new_shape = new_shape, rest[0]
    src = no_reductions(tv)
    if original_shape is not None and len(original_shape) != len(src):
        raise FusionDefinitionError(
            f"reshape: original_shape {_shape_str(original_shape)} does not match the rank "
            f"{len(src)} of {tv.short_name}"
        )
    in_ext = [full_extent(i) for i in src]
    out_ext = _resolve_new_shape(tv, in_ext, new_shape)
    plan, squeezed = _plan_reshape(src, in_ext, out_ext)
    fusion = tv.fusion

    cur = tv
    if squeezed:
        cur = squeeze(cur, squeezed)
    # Input positions after the squeeze.
    remap = {}
    for k in range(len(src)):
        if k not in squeezed:
            remap[k] = len(remap)

    if any(p[0] == "group" for p in plan):
        csrc = no_reductions(cur)
        root = [copy_id(fusion, i) for i in csrc]
        logical: list[IterDomain] = []
        for p in plan:
            if p[0] == "keep":
                logical.append(root[remap[p[1]]])
            elif p[0] == "group":
                logical += _view_group(fusion, root, [remap[g] for g in p[1]], [out_ext[j] for j in p[2]])
        out = new_tv(fusion, logical, cur.dtype, root=root)
        ViewOp(fusion, out, cur, out_ext)
        cur = out
    elif not squeezed and not any(p[0] == "bcast" for p in plan):
        cur = set_(cur)

    flags = _bcast_flags(plan)
    if any(flags):
        cur = broadcast(cur, flags)
    return cur


def _bcast_flags(plan: list[tuple]) -> list[bool]:
    """Broadcast flags by output position (a group's new size-1 axes sit among its outputs)."""
    m = 0
    bcast = set()
    for p in plan:
        if p[0] == "bcast":
            bcast.add(p[1])
            m = max(m, p[1] + 1)
        elif p[0] == "keep":
            m = max(m, p[2] + 1)
        else:
            m = max(m, *(j + 1 for j in p[2]))
    return [j in bcast for j in range(m)]


def _view_group(fusion, root: list[IterDomain], dims: list[int], targets: list[Scalar]) -> list[IterDomain]:
    """Merge root axes `dims` and split the result into `targets`, in nvFuser's order of
    creation: each root axis is swapped for an rfactor clone just before it is used."""

    def rf_clone(d: int) -> IterDomain:
        c = _root_copy(fusion, root[d], rfactor=True)
        root[d] = c
        return c

    merged = rf_clone(dims[0])
    for d in dims[1:]:
        inner = rf_clone(d)
        m = Merge(merged, inner)
        m.out.is_rfactor = True
        merged = m.out
    outs: list[IterDomain] = []
    zeros = [k for k, t in enumerate(targets) if t.is_const and t.value == 0]
    if zeros:
        # No elements ([0, 6] -> [3, 0, 2]): splitting by the 0 size would divide by it, so
        # the other sizes are split off and the remainder is the 0-size axis.
        if len(zeros) > 1:
            raise FusionDefinitionError(f"reshape: more than one 0 size in {_shape_str(targets)} is not "
                                        "supported")
        by_pos: dict[int, IterDomain] = {}
        for k, t in enumerate(targets):
            if k != zeros[0]:
                s = Split(merged, t, inner_split=False)
                s.outer.is_rfactor = True
                s.inner.is_rfactor = True
                by_pos[k] = s.outer
                merged = s.inner
        merged.extent = targets[zeros[0]]
        by_pos[zeros[0]] = merged
        return [by_pos[k] for k in range(len(targets))]
    if all(t.is_const for t in targets) or not all(t.is_const for t in targets[1:]):
        # nvFuser's view splits off the outer sizes one by one (outer splits).
        for t in targets[:-1]:
            s = Split(merged, t, inner_split=False)
            s.outer.is_rfactor = True
            s.inner.is_rfactor = True
            outs.append(s.outer)
            merged = s.inner
        _take_given_extent(merged, targets[-1])
        outs.append(merged)
        return outs
    # A symbolic leading size with constant trailing ones ([-1, 12]): split the constants
    # off the inside so that every constant stays a plain factor.
    for t in reversed(targets[1:]):
        s = Split(merged, t, inner_split=True)
        s.outer.is_rfactor = True
        s.inner.is_rfactor = True
        outs.insert(0, s.inner)
        merged = s.outer
    _take_given_extent(merged, targets[0])
    outs.insert(0, merged)
    return outs


def _take_given_extent(i: IterDomain, target: Scalar) -> None:
    """The split's remainder is ceilDiv(total, factors); when the user gave that size as a
    scalar input, use it, as nvFuser's dynamic reshape does, so a size that does not
    match the element count fails at run time instead of being silently replaced."""
    if target.is_symbol:
        i.extent = target


# ---- slice and pad --------------------------------------------------------------------------

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
            f"pad: pad_widths {_shape_str(pad_widths)} of {tv.short_name} must have an even "
            f"number of entries, at most {2 * rank}"
        )
    widths: list[tuple[Scalar, Scalar]] = [(as_scalar(0), as_scalar(0))] * rank
    for p in range(len(pad_widths) // 2):
        left = _shape_scalar("pad", tv, pad_widths[2 * p], 2 * p)
        right = _shape_scalar("pad", tv, pad_widths[2 * p + 1], 2 * p + 1)
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
            r = _root_copy(fusion, i)
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
        from engine.ops.arith import cast

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
