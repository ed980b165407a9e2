"""rfactor: split one reduction into two, as nvFuser's TensorView::rFactor.

T2 = sum(T1) with T2's loop [iS0, rS5{ceilDiv(i2, 4)}, rS6{4}] and rfactor([1]) becomes
  T3 = reduction(T1)   root (iS, rS{i2}), logical (iS, rS5{..}rf, iS6{4}rf)
  T2 = reduction(T3)   logical (iS, rS{4})
The producer's root->logical transforms are the splits and merges that T2's
reduction axes had; the first reduction therefore works on a reshaped (and, for a
split that does not divide, padded) view of its input. RFactorReductionOp marks that
reduction so that the reference evaluator reshapes before reducing; it prints as any
reduction does. Importing this module registers its reference rule.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from engine.errors import ScheduleError
from engine.ir.exprs import ReductionOp
from engine.ir.iterdomain import IdTransform, IterDomain, IterType, Merge, Split
from engine.ir.tensorview import MemoryType, TensorDomain, TensorView, _verify_around
from engine.reference import Context, as_dtype, handles, up


class RFactorReductionOp(ReductionOp):
    """A reduction whose output's logical domain is a transformed view of its root."""


def _apply(t: IdTransform, m: dict[IterDomain, IterDomain]) -> list[IterDomain]:
    """Replay `t` on the ids that `m` maps its inputs to; map and return its outputs."""
    if isinstance(t, Split):
        s = Split(m[t.in_id], t.factor, t.inner_split)
        m[t.outer], m[t.inner] = s.outer, s.inner
        return [s.outer, s.inner]
    assert isinstance(t, Merge)
    g = Merge(m[t.outer], m[t.inner])
    m[t.out] = g.out
    return [g.out]


def rfactor(tv: TensorView, axes: Sequence[int]) -> TensorView:
    from engine.analysis.replay import transforms_between

    expr = tv.definition
    name = tv.short_name
    if not isinstance(expr, ReductionOp) or isinstance(expr, RFactorReductionOp):
        raise ScheduleError(f"{name}: rfactor needs a tensor defined by a reduction (sum, max, min, prod)")
    tv._require_not_inlined("rfactor")
    if tv.domain.allocation is not None or tv.domain.has_root:
        raise ScheduleError(f"{name}: rfactor of a tensor with an allocation or root domain is not supported")
    if not axes:
        raise ScheduleError(f"{name}: rfactor needs at least one axis")
    loop = tv.domain.loop
    pos = sorted({tv._pos(a) for a in axes})
    logical = tv.domain.logical
    ts = transforms_between(logical, loop)
    if any(not isinstance(t, (Split, Merge)) for t in ts):
        raise ScheduleError(f"{name}: rfactor through a resize or swizzle is not supported")
    origin: dict[IterDomain, frozenset[IterDomain]] = {i: frozenset([i]) for i in logical}
    for t in ts:
        o = frozenset().union(*(origin[x] for x in t.inputs))
        for out in t.outputs:
            origin[out] = o
    red = frozenset(i for i in logical if i.is_reduction)

    def kind(i: IterDomain) -> str:
        o = origin[i]
        return "red" if o <= red else ("mixed" if o & red else "iter")

    for i in loop:
        if kind(i) == "mixed":
            raise ScheduleError(f"{name}: rfactor of {i}, which mixes reduction and other axes")
    rf_loop = [loop[k] for k in pos]
    for i in rf_loop:
        if kind(i) != "red" or not i.is_reduction:
            raise ScheduleError(f"{name}: rfactor axis {i} is not a reduction axis")
    red_loop = [i for i in loop if kind(i) == "red"]
    if len(rf_loop) == len(red_loop):
        raise ScheduleError(f"{name}: rfactor must leave at least one reduction axis to the consumer")
    rf_set = set(rf_loop)
    red_ts = [t for t in ts if all(kind(x) == "red" for x in t.inputs)]
    iter_ts = [t for t in ts if all(kind(x) == "iter" for x in t.inputs)]
    fusion = tv.fusion

    # The producer: root copies the logical domain; reduction ids are transformed into
    # the logical domain (marked rf), the rest follows as loop transforms.
    m: dict[IterDomain, IterDomain] = {}
    root: list[IterDomain] = []
    for i in logical:
        c = IterDomain(fusion, i.extent, i.iter_type, expanded_extent=i.expanded_extent)
        if i in red_loop:  # an untransformed reduction axis is its own logical id
            c.is_rfactor = True
        m[i] = c
        root.append(c)
    for t in red_ts:
        for out in _apply(t, m):
            out.is_rfactor = True
    for i in red_loop:
        m[i].iter_type = IterType.Reduction if i in rf_set else IterType.Iteration
    p_logical: list[IterDomain] = []
    emitted: set[IterDomain] = set()
    for i in logical:
        if not i.is_reduction:
            p_logical.append(m[i])
            continue
        for j in red_loop:
            if i in origin[j] and j not in emitted:
                emitted.add(j)
                p_logical.append(m[j])
    for t in iter_ts:
        _apply(t, m)
    p_loop = [m[i] for i in loop]
    for i in loop:
        m[i].parallel_type = i.parallel_type
    producer = TensorView(
        fusion,
        TensorDomain(p_logical, root=None if root == p_logical else root, loop=p_loop),
        tv.dtype,
        MemoryType.Local,
    )

    # The consumer (tv keeps its name): one id per non-reduced producer logical id,
    # reduction again where it came from a reduction.
    kept_red = {m[j] for j in red_loop if j not in rf_set}
    q: dict[IterDomain, IterDomain] = {}
    c_logical: list[IterDomain] = []
    for d in p_logical:
        if d.is_reduction:
            continue
        it = IterType.Reduction if d in kept_red else d.iter_type
        n = IterDomain(fusion, d.extent, it, expanded_extent=d.expanded_extent)
        q[d] = n
        c_logical.append(n)
    cm: dict[IterDomain, IterDomain] = {i: q[m[i]] for i in logical if not i.is_reduction}
    cm.update({j: q[m[j]] for j in red_loop if j not in rf_set})
    for t in iter_ts:
        _apply(t, cm)
    c_loop = [cm[i] for i in loop if i not in rf_set]
    for i in loop:
        if i not in rf_set:
            cm[i].parallel_type = i.parallel_type

    inp, op, init = expr.input, expr.op, expr.init
    fusion.remove_expr(expr)
    RFactorReductionOp(fusion, op, producer, inp, init)
    tv.domain = TensorDomain(c_logical, loop=c_loop)
    ReductionOp(fusion, op, tv, producer, init)
    _verify_around([producer, tv])
    return producer


# ---- reference rule -----------------------------------------------------------------------------

def _pad_to(x: torch.Tensor, dim: int, size: int, fill: Any) -> torch.Tensor:
    extra = size - x.shape[dim]
    if extra <= 0:
        return x
    shape = list(x.shape)
    shape[dim] = extra
    # The padding holds the reduction's initial value, so it changes no result.
    return torch.cat([x, torch.full(shape, fill, dtype=x.dtype, device=x.device)], dim=dim)


def view_as_logical(x: torch.Tensor, tv: TensorView, fill: Any, ctx: Context) -> torch.Tensor:
    """`x`, indexed by `tv`'s root ids, re-laid out by its root->logical splits and merges."""
    from engine.analysis.replay import transforms_between

    dom = tv.domain
    dims = list(dom.maybe_root)
    for t in transforms_between(dom.maybe_root, dom.logical):
        if isinstance(t, Split):
            d = dims.index(t.in_id)
            f = int(ctx.scalar(t.factor))
            rest = -(-x.shape[d] // f)
            x = _pad_to(x, d, rest * f, fill)
            outer, inner = (rest, f) if t.inner_split else (f, rest)
            x = x.reshape(*x.shape[:d], outer, inner, *x.shape[d + 1 :])
            dims[d : d + 1] = [t.outer, t.inner]
        elif isinstance(t, Merge):
            order = [k for k, i in enumerate(dims) if i is not t.outer and i is not t.inner]
            k = min(dims.index(t.outer), dims.index(t.inner))
            order[k:k] = [dims.index(t.outer), dims.index(t.inner)]
            x = x.permute(order)
            dims = [dims[j] for j in order]
            x = x.reshape(*x.shape[:k], x.shape[k] * x.shape[k + 1], *x.shape[k + 2 :])
            dims[k : k + 2] = [t.out]
        else:
            raise ScheduleError(f"{tv.short_name}: cannot evaluate {t.kind} in a root->logical view")
    return x.permute([dims.index(i) for i in dom.logical])


@handles(RFactorReductionOp)
def _rfactor_reduction(expr: RFactorReductionOp, args: list[Any], ctx: Context) -> list[Any]:
    out = expr.output
    x = view_as_logical(up(args[0]), out, expr.init, ctx)
    dims = [k for k, i in enumerate(out.domain.logical) if i.is_reduction]
    if expr.op == "add":
        r = torch.sum(x, dim=dims)
    elif expr.op == "max":
        r = torch.amax(x, dim=dims)
    elif expr.op == "min":
        r = torch.amin(x, dim=dims)
    else:
        r = x
        for d in sorted(dims, reverse=True):
            r = torch.prod(r, dim=d)
    return [as_dtype(r, out.dtype)]
