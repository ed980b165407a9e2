"""rfactor: split one reduction into two, as nvFuser's TensorView::rFactor.

T2 = sum(T1) with T2's loop [iS0, rS5{ceilDiv(i2, 4)}, rS6{4}] and rfactor([1]) becomes
  T3 = reduction(T1)   root (iS, rS{i2}), logical (iS, rS5{..}rf, iS6{4}rf)
  T2 = reduction(T3)   logical (iS, rS{4})
The producer's root->logical transforms are the splits and merges that T2's
reduction axes had; the first reduction therefore works on a reshaped (and, for a
split that does not divide, padded) view of its input. RFactorReductionOp (in
engine.ir.exprs) marks that reduction so that the reference evaluator reshapes before
reducing; it prints as any reduction does.

A Welford (avg, var_sum, count) is rfactored the same way for all three outputs:
RFactorWelfordOp computes partial (avg, var_sum, count) over the rfactored axes, and
a WelfordOp with three inputs combines the partials over the remaining axes (Chan's
parallel update), as nvFuser's rFactor of a WelfordOp.

A matmul or linear, whose output carries the contracted K as a reduction axis, is rfactored
once K has been split, as nvFuser's rFactor of a MatmulOp or LinearOp (the row-parallel
matmul of its multi-device tests: out.outer_split(-1, d); local = out.rfactor(axes=[-1])):
  T3 = matmul(T0, T1)   root [iM, iN, rK], logical [iM, iN, iS{d}rf, rS{K/d}rf]  (RFactorMatmulOp)
  T2 = sum(T3)          logical [iM, iN, rS{d}]
Each kept index of T3 is the sum of products over its part of K, which T2 adds up. A
linear's bias is no part of the partials: it is added once, after the sum, by a tensor that
takes T2's place among the fusion's outputs and in its uses (ADD_BIAS, installed by
engine.ops.matmul, as the ir layer builds no broadcast or cast itself).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from engine.errors import ScheduleError
from engine.ir.exprs import (
    LinearOp,
    MatmulOp,
    ReductionOp,
    RFactorLinearOp,
    RFactorMatmulOp,
    RFactorReductionOp,
    RFactorWelfordOp,
    WelfordOp,
)
from engine.ir.iterdomain import IdTransform, IterDomain, IterType, Merge, Split, transforms_between
from engine.ir.tensordomain import TensorDomain
from engine.ir.tensorview_base import MemoryType, TensorViewBase
from engine.ir.transactions import verify_around
from engine.ir.transform_replay import loop_transforms, replay_onto

if TYPE_CHECKING:
    from engine.ir.tensorview import TensorView

# (sum, bias) -> sum + bias, cast back to the sum's dtype: installed by engine.ops.matmul.
ADD_BIAS: Callable[[TensorView, TensorView], TensorView] | None = None


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
    """rfactor `tv`'s reduction at loop `axes`; returns the new producer of `tv`.

    A Welford's three outputs (avg, var_sum, count) are rfactored together, as nvFuser's
    rFactor of a WelfordOp: each gets a partial producer (RFactorWelfordOp), and the
    op that defined them combines the partials (a WelfordOp with three inputs).
    """
    expr = tv.definition
    name = tv.short_name
    if isinstance(expr, WelfordOp):
        return _rfactor_welford(tv, expr, axes)
    if isinstance(expr, (MatmulOp, LinearOp)):
        return _rfactor_matmul(tv, expr, axes)
    if not isinstance(expr, ReductionOp) or isinstance(expr, RFactorReductionOp):
        raise ScheduleError(f"{name}: rfactor needs a tensor defined by a reduction (sum, max, min, prod), "
                            "a Welford, a matmul or a linear")
    producer, c_domain = _split_domains(tv, axes)
    fusion = tv.fusion
    inp, op, init = expr.input, expr.op, expr.init
    fusion.remove_expr(expr)
    RFactorReductionOp(fusion, op, producer, inp, init)
    tv.domain = c_domain
    ReductionOp(fusion, op, tv, producer, init)
    verify_around([producer, tv])
    return producer


def _rfactor_matmul(tv: TensorView, expr: MatmulOp | LinearOp, axes: Sequence[int]) -> TensorView:
    """The partial matmul (or linear) over the rfactored part of K, then `tv` = its sum over
    the rest of K (and a linear's bias added after that sum)."""
    name = tv.short_name
    op = expr.op_name
    if isinstance(expr, (RFactorMatmulOp, RFactorLinearOp)):
        raise ScheduleError(f"{name}: rfactor of a partial {op} (the first half of an rfactor) is not supported")
    if tv is not expr.output:
        raise ScheduleError(f"{name}: rfactor of a tensor the {op} does not output")
    red = [i for i in tv.domain.logical if i.is_reduction]
    if len(red) != 1:
        raise ScheduleError(f"{name}: rfactor of a {op} needs the one reduction axis K of its output, "
                            f"found {len(red)}")
    if red[0] in tv.domain.loop:
        raise ScheduleError(f"{name}: rfactor of a {op} needs its reduction axis {red[0]} split first "
                            f"(e.g. {name}.outer_split(-1, d), then rfactor(axes=[-1]))")
    bias = expr.inputs[2] if isinstance(expr, LinearOp) and expr.has_bias else None
    if bias is not None and ADD_BIAS is None:
        raise ScheduleError(f"{name}: rfactor of a linear with a bias needs engine.ops loaded")
    producer, c_domain = _split_domains(tv, axes)
    fusion = tv.fusion
    a, b = expr.inputs[:2]
    uses = list(fusion.uses_of(tv))
    fusion.remove_expr(expr)
    (RFactorLinearOp if isinstance(expr, LinearOp) else RFactorMatmulOp)(fusion, producer, a, b)
    tv.domain = c_domain
    ReductionOp(fusion, "add", tv, producer, 0)  # matmul and linear take floats only
    done = [producer, tv]
    if bias is not None:
        assert ADD_BIAS is not None
        # Left without a mesh: a multi-device fusion's propagation gives them tv's layout.
        final = ADD_BIAS(tv, bias)
        for use in uses:
            fusion.replace_input_of(use, tv, final)
        if any(v is tv for v in fusion.outputs):
            fusion.replace_output(tv, final)
        done.append(final)
    verify_around(done)
    return producer


def _rfactor_welford(tv: TensorView, expr: WelfordOp, axes: Sequence[int]) -> TensorView:
    name = tv.short_name
    if isinstance(expr, RFactorWelfordOp) or len(expr.inputs) != 1:
        raise ScheduleError(f"{name}: rfactor of a Welford that already combines partial results "
                            "is not supported")
    outs = [o for o in expr.outputs if isinstance(o, TensorViewBase)]
    _sync_siblings(tv, outs)
    split = [_split_domains(o, axes) for o in outs]
    for o, (p, _) in zip(outs, split):
        if [i.is_reduction for i in p.domain.loop] != [i.is_reduction for i in split[0][0].domain.loop]:
            raise ScheduleError(f"{name}: Welford sibling {o.short_name} has a different loop domain")
    fusion = tv.fusion
    inp = expr.input
    fusion.remove_expr(expr)
    producers = [p for p, _ in split]
    RFactorWelfordOp(fusion, *producers, inp)
    for o, (_, c_domain) in zip(outs, split):
        o.domain = c_domain
    WelfordOp(fusion, *outs, *producers)
    verify_around([*producers, *outs])
    return producers[outs.index(tv)]


def _sync_siblings(tv: TensorView, outs: list[TensorView]) -> None:
    """Give untransformed Welford siblings `tv`'s loop transforms and parallel types.

    Propagation already replays a scheduler's transforms onto all three outputs; a
    user who split only one (fd.sched.split(avg, ...)) gets the others replayed here,
    as the three must be rfactored at the same loop axes.
    """
    ts = loop_transforms(tv)
    shape = [type(t) for t in ts]
    for o in outs:
        if o is tv or ([type(t) for t in loop_transforms(o)] == shape and o.nloop == tv.nloop):
            continue
        if loop_transforms(o):
            raise ScheduleError(f"{tv.short_name}: Welford sibling {o.short_name} has different "
                                "loop transforms; rfactor needs the same on all three outputs")
        o._require_not_inlined("rfactor")
        loop, rmap = replay_onto(ts, tv.domain.loop, dict(zip(tv.domain.logical, o.domain.logical)),
                                 o.domain.logical)
        o.domain.loop = loop
        for i in tv.domain.loop:
            if i in rmap:
                rmap[i].parallel_type = i.parallel_type


def _split_domains(tv: TensorView, axes: Sequence[int]) -> tuple[TensorView, TensorDomain]:
    """The rfactor producer of `tv` (not yet defined) and `tv`'s new domain."""

    name = tv.short_name
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
    producer = type(tv)(  # a TensorView, made as the class of `tv` (TensorView is above this module)
        fusion,
        TensorDomain(p_logical, root=None if root == p_logical else root, loop=p_loop),
        tv.dtype,
        MemoryType.Local,
    )
    mesh = tv.__dict__.get("device_mesh")
    if mesh is not None:  # on the devices of the tensor it computes for, as nvFuser's rFactor
        producer.device_mesh = mesh

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

    return producer, TensorDomain(c_logical, loop=c_loop)
