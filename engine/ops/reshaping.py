"""reshape: nvFuser's view analysis. Equal axes are kept, size-1 axes squeezed or broadcast,
and groups of input axes with equal products are merged and split into the new sizes."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from engine.dtypes import DataType
from engine.errors import FusionDefinitionError
from engine.ir.exprs import ViewOp
from engine.ir.iterdomain import IterDomain, Merge, Split
from engine.ir.scalar import Scalar, as_scalar, binary, same_scalar
from engine.ir.scalar import unary as scalar_unary
from engine.ir.tensorview import TensorView
from engine.ops.axes import broadcast, set_, squeeze
from engine.ops.common import (
    ShapeEntry,
    check_tensor,
    copy_id,
    full_extent,
    is_one,
    new_tv,
    no_reductions,
    root_copy,
    shape_scalar,
    shape_str,
)


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
                raise FusionDefinitionError(f"reshape: new_shape {shape_str(new_shape)} has more than one -1")
            infer = k
            out.append(None)
            continue
        if isinstance(s, Scalar) and s.dtype.is_float:
            # nvFuser's reshape casts every new size to Index (a size worked out through
            # reciprocal is a float scalar in Thunder's traces); the cast truncates.

            s = scalar_unary("cast", s, DataType.Index)
        sc = shape_scalar("reshape", tv, s, k)
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
                    f"reshape: {tv.short_name} of shape {shape_str(in_ext)} has no -1 size that "
                    f"makes {shape_str(new_shape)}"
                )
            out[infer] = as_scalar(total_in.value // total_known.value)
        else:
            out[infer] = binary("div", total_in, total_known)
    elif total_in.is_const and total_known.is_const and total_in.value != total_known.value:
        raise FusionDefinitionError(
            f"reshape: {tv.short_name} of shape {shape_str(in_ext)} ({total_in.value} elements) "
            f"cannot be reshaped to {shape_str(new_shape)} ({total_known.value} elements)"
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

    if not all(s.is_const for s in (*in_ext, *out_ext)):
        # Symbolic sizes do not nest, so the walk below would merge all that follows the
        # first pair it cannot match. Trailing axes of the same size are the same axes in
        # row-major order whatever the leading ones are ([b, s, n] -> [-1, n] keeps n): they
        # are kept, and only the axes before them are planned.
        t = 0
        while (t < n - 1 and t < m - 1 and not is_one(in_ext[n - 1 - t])
               and same_scalar(in_ext[n - 1 - t], out_ext[m - 1 - t]) and not squeezable(n - 1 - t)):
            t += 1
        if t:
            head, head_squeezed = _plan_reshape(src[:n - t], in_ext[:n - t], out_ext[:m - t])
            return head + [("keep", n - t + k, m - t + k) for k in range(t)], head_squeezed

    i = j = 0
    while i < n or j < m:
        if i < n and j < m and is_one(in_ext[i]) and is_one(out_ext[j]):
            plan.append(("keep", i, j))
            i, j = i + 1, j + 1
        elif i < n and squeezable(i):
            squeezed.append(i)
            i += 1
        elif j < m and is_one(out_ext[j]):
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
                        if is_one(out_ext[k]):
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
                    if is_one(out_ext[j]):
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
            f"reshape: original_shape {shape_str(original_shape)} does not match the rank "
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
        c = root_copy(fusion, root[d], rfactor=True)
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
            raise FusionDefinitionError(f"reshape: more than one 0 size in {shape_str(targets)} is not "
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


def replan_view(view: ViewOp, value_of: Callable[[Scalar], int]) -> TensorView | None:
    """The reshape `view` planned again at the sizes `value_of` binds, as nvFuser concretizes
    a reshape of symbolic sizes once it knows them; None when that plan is not finer.

    Sizes that do not nest as symbols ([i5, i6, i7, i8] to [i0 * i2, i3, i4], where the
    symbols are equal only at run time) made one group of every axis (a merge of all, then
    splits), which joins axes a reduction schedule keeps apart; at the bound sizes the
    plan keeps the axes that match and merges or splits only those that do not. The new
    view keeps the symbolic extents (the compiled fusion is specialised to the sizes)."""
    src = no_reductions(view.input)
    in_ext = [full_extent(i) for i in src]
    out_ext = [full_extent(i) for i in no_reductions(view.output)]
    if all(s.is_const for s in (*in_ext, *out_ext)):
        return None
    in_v = [int(value_of(s)) for s in in_ext]
    out_v = [int(value_of(s)) for s in out_ext]
    if any(v in (0, 1) for v in (*in_v, *out_v)):
        return None  # squeezes and broadcasts at these sizes: left as defined
    plan, squeezed = _plan_reshape(src, [as_scalar(v) for v in in_v], [as_scalar(v) for v in out_v])
    before, _ = _plan_reshape(src, in_ext, out_ext)
    if squeezed or len(plan) <= len(before) or any(p[0] == "bcast" for p in plan):
        return None
    fusion = view.fusion
    root = [copy_id(fusion, i) for i in src]
    logical: list[IterDomain] = []
    for p in plan:
        if p[0] == "keep":
            logical.append(root[p[1]])
        else:
            logical += _view_group(fusion, root, p[1], [out_ext[j] for j in p[2]])
    out = new_tv(fusion, logical, view.input.dtype, root=root)
    ViewOp(fusion, out, view.input, view.attributes.get("new_shape"))
    return out
