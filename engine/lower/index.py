"""Indexing: from loop indices to every IterDomain of a tensor, with value ranges.

Kernels are specialised to the sizes they are compiled for, so every extent is a
number. An index is known for a tensor's loop ids (the loop variables, thread and
block indices); it then flows backward through splits, merges and resizes to the
root and logical ids and forward to the allocation ids. Each index carries the
range [lo, hi) it can take, which decides where predicates are needed.

A producer is indexed from its consumer: ids that the loop map pairs with the
consumer's (logical->root across the op, then matching transforms) take the
consumer's index, and the producer's own transforms derive the rest. Broadcast ids
of a producer take index 0 unless an inlined loop promoted them to the consumer's
extent.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from engine.analysis.view_interference import view_transforms
from engine.errors import CompileError
from engine.ir.base import Expr
from engine.ir.exprs import SqueezeOp, ViewOp
from engine.ir.iterdomain import (
    IdTransform,
    IterDomain,
    Merge,
    Resize,
    Split,
    Swizzle,
    SwizzleType,
    swizzle_extent_error,
    transforms_between,
)
from engine.ir.logical_map import consumers_of, pairwise_logical_map
from engine.ir.loop_map import loop_map
from engine.ir.scalar import Scalar
from engine.ir.tensorview import TensorView
from engine.lower import cexpr
from engine.lower.kexpr import And, Cmp
from engine.lower.loops import in_tvs
from engine.lower.split_chains import SplitStep, same_source


@dataclass(frozen=True)
class Ix:
    """An index (a typed expression, engine.lower.kexpr) and the half-open range of values it takes.

    `parts` remembers that the index is `outer * factor + inner` with inner in [0, factor)
    (a split's input): dividing or taking the remainder by a multiple of `factor` then
    leaves `inner` alone, so a vectorized or unrolled position stays a trailing `+ v`.

    `dividend` holds the indices that can be negative (a pad's `x - left`) this one was
    derived from: a quotient or remainder of one (a merge's inputs, a split's outputs), or
    an index combined from those. The range [lo, hi) is that of floor division, but C's `/`
    and `%` truncate toward zero, so `(x - 6144) / 96` is 0 for x - 6144 in [-95, -1] and a
    test `q >= 0` would let those through. A negative dividend lies before its axis, so the
    lower bound is tested on the dividends themselves (lower_bound_test). Where they are not
    negative, the index is exact; elsewhere it only stays in its range (a quotient or remainder
    taken through `parts` differs there from C's), and nothing reads through it.
    """

    term: cexpr.Term
    lo: int
    hi: int
    parts: tuple[cexpr.Term, cexpr.Term, int] | None = None
    dividend: tuple[cexpr.Term, ...] = ()


def lower_bound_test(ix: Ix, wrap: Callable[[cexpr.Term], cexpr.Term]) -> Cmp | And:
    """The C test that `ix` is not below its axis (ix >= 0), exact under C's truncating
    division: on the undivided indices where `ix` was derived from ones that can be negative."""
    tests = tuple(Cmp(wrap(d), ">=", 0) for d in _origins(ix))
    return tests[0] if len(tests) == 1 else And(tests)


def _origins(ix: Ix) -> tuple[cexpr.Term, ...]:
    """The indices whose being >= 0 makes `ix` >= 0 (and exact): its dividends, or itself."""
    return ix.dividend or ((ix.term,) if ix.lo < 0 else ())


def _combined(o: Ix, i: Ix, n: int) -> Ix:
    """o * n + i (a split's input, a merge's output), remembering the split parts when i is
    inside [0, n), and the dividends of both."""
    parts = (o.term, i.term, n) if i.lo >= 0 and i.hi <= n else None
    dividend = tuple(dict.fromkeys(_origins(o) + _origins(i)))
    return Ix(cexpr.add(cexpr.mul(o.term, n), i.term), o.lo * n + i.lo, (o.hi - 1) * n + i.hi, parts,
              dividend)


def _shifted(x: Ix, by: int) -> Ix:
    """x + by (a resize's offset). Split parts survive a shift by a multiple of their factor:
    (o * f + i) + k * f = (o + k) * f + i."""
    parts = None
    if x.parts is not None and by % x.parts[2] == 0:
        o, i, f = x.parts
        parts = (cexpr.add(o, by // f), i, f)
    lo, term = x.lo + by, cexpr.add(x.term, by)
    dividend = x.dividend + (term,) if x.dividend and lo < 0 else x.dividend
    return Ix(term, lo, x.hi + by, parts, dividend)


def _div_mod(x: Ix, n: int) -> tuple[Ix, Ix]:
    """x / n and x % n, simplified through x's split parts when n is a multiple of the factor."""
    if n == 0:
        # A merge whose inner axis is empty at these sizes (a slice or an input of extent
        # 0): the merged axis has no elements either, and its own bound predicates every
        # access off. x stays whole in the inner index, so its range still exceeds the
        # inner extent (0) and any bound test on the inner axis fails too.
        return Ix(0, 0, 1), Ix(x.term, x.lo, x.hi)
    outer_hi = _floordiv(x.hi - 1, n) + 1
    inner_hi = min(n, x.hi) if x.lo >= 0 else n
    if x.lo < 0:
        # Truncated in C: see Ix.dividend. A divided index keeps the first dividends (floor
        # division composes: floor(floor(x / a) / b) >= 0 exactly where x >= 0). C's
        # remainder of a negative dividend is negative (down to -(n - 1)), so its range
        # starts there and a checked remainder is tested too. Through split parts the
        # quotient and remainder are exact where x >= 0 and inside the same ranges elsewhere.
        d = _origins(x)
        if x.parts is not None and n % x.parts[2] == 0:
            o, i, f = x.parts
            rem = cexpr.mod(o, n // f)
            return (Ix(cexpr.div(o, n // f), _floordiv(x.lo, n), outer_hi, dividend=d),
                    Ix(cexpr.add(cexpr.mul(rem, f), i), max(x.lo, 1 - n), inner_hi, (rem, i, f), d))
        return (Ix(cexpr.div(x.term, n), _floordiv(x.lo, n), outer_hi, dividend=d),
                Ix(cexpr.mod(x.term, n), max(x.lo, 1 - n), inner_hi, dividend=d))
    if x.parts is not None:
        o, i, f = x.parts
        if n % f == 0:
            q = n // f
            rem = cexpr.mod(o, q)
            inner = cexpr.add(cexpr.mul(rem, f), i)
            return (Ix(cexpr.div(o, q), _floordiv(x.lo, n), outer_hi),
                    Ix(inner, 0, inner_hi, (rem, i, f)))
    return (Ix(cexpr.div(x.term, n), _floordiv(x.lo, n), outer_hi),
            Ix(cexpr.mod(x.term, n), 0, inner_hi))


class Extents:
    """Iteration counts of IterDomains at the compiled sizes, with broadcast promotion."""

    def __init__(self, env: Mapping[Scalar, int | float]) -> None:
        self.env = env
        self.promoted: dict[IterDomain, int] = {}
        self._memo: dict[IterDomain, int] = {}
        self._transforms: dict[TensorView, list[IdTransform]] = {}
        self.same_source: dict[tuple[IterDomain, IterDomain], bool] = {}  # see same_source
        self.chains: dict[IterDomain, tuple[IterDomain, list[SplitStep]]] = {}  # see split_chain
        # Reshapes' root->logical transforms (see note_views and same_split_source).
        self.views: set[IdTransform] = set()
        self.view_chains: dict[IterDomain, tuple[IterDomain, list[SplitStep]]] = {}

    def note_views(self, exprs: Sequence[Expr]) -> None:
        """Record the splits and merges by which the reshapes among `exprs` make their
        outputs' logical ids."""
        for e in exprs:
            if isinstance(e, ViewOp) and isinstance(e.output, TensorView):
                self.views.update(view_transforms(e.output))

    def transforms(self, tv: TensorView) -> list[IdTransform]:
        """tv_transforms(tv), once per tensor: the schedule is final while lowering, and
        every index of `tv` propagates through them."""
        got = self._transforms.get(tv)
        if got is None:
            got = self._transforms[tv] = tv_transforms(tv)
        return got

    def value(self, s: Scalar) -> int:
        try:
            return int(s.evaluate(self.env))
        except KeyError as e:
            raise CompileError(f"extent {s.inline()} is not known at compile time: {e}") from None

    def of(self, i: IterDomain) -> int:
        # Asked about a hundred thousand times per compile: one lookup per dict (no
        # extent is None).
        got = self.promoted.get(i)
        if got is not None:
            return got
        got = self._memo.get(i)
        if got is None:
            got = self._compute(i)
            self._memo[i] = got
        return got

    def _compute(self, i: IterDomain) -> int:
        t = i.definition
        if isinstance(t, Split):
            n, f = self.of(t.in_id), self.value(t.factor)
            rest = -(-n // f)
            if t.inner_split:
                return rest if i is t.outer else f
            return f if i is t.outer else rest
        if isinstance(t, Merge):
            return self.of(t.outer) * self.of(t.inner)
        if isinstance(t, Resize):
            return self.value(t.left) + self.of(t.in_id) + self.value(t.right)
        if isinstance(t, Swizzle):
            return self.of(t.inputs[t.outputs.index(i)])
        if i.expanded_extent is not None:
            return self.value(i.expanded_extent)
        return self.value(i.extent)

    def promote(self, exprs: list[Expr]) -> None:
        """Broadcast ids inlined into a concrete loop iterate that loop's extent.

        Promotions chain along inlining, so every consumer is promoted before its
        producers: tensors are visited in reverse order of definition (fusion inputs
        last). Visiting the readers of each expression instead would promote a tensor
        read late (by the last of several ops) from a consumer not yet promoted, and a merged broadcast kept the expanded extent alone (3 of 192),
        which then bounded the predicate of every producer inlined with it. A broadcast
        inlined into consumers of different extents (one that stays a broadcast, one
        that concretizes it) runs the largest one's loop.
        """
        order: list[TensorView] = []
        for expr in reversed(exprs):
            order += [o for o in expr.outputs if isinstance(o, TensorView) and o not in order]
        for expr in reversed(exprs):
            order += [p for p in in_tvs(expr) if p not in order]
        for p in order:
            if p.compute_at_pos == 0:
                continue
            shared = _ancestors(p, p.domain.loop[: p.compute_at_pos])
            found: dict[IterDomain, int] = {}
            for c in consumers_of(p):
                for pid, cid in loop_map(p, c).items():
                    if pid.is_broadcast and pid in shared and pid not in self.promoted:
                        found[pid] = max(found.get(pid, 1), self.of(cid))
            got = {pid: n for pid, n in found.items() if n != 1}
            if got:
                self.promoted.update(got)
                self._memo.clear()
        self._memo.clear()


def _ancestors(tv: TensorView, ids: list[IterDomain]) -> set[IterDomain]:
    out = set(ids)
    for t in transforms_between(tv.domain.maybe_root, ids):
        out.update(t.inputs)
        out.update(t.outputs)
    return out


def tv_transforms(tv: TensorView) -> list[IdTransform]:
    """Every transform among the tensor's root, logical, allocation and loop ids."""
    dom = tv.domain
    found: dict[int, IdTransform] = {}
    for target in (dom.logical, dom.loop, dom.maybe_allocation):
        for t in transforms_between(dom.maybe_root, target):
            found[id(t)] = t
    # Loop ids may also lead to allocation ids (an allocation set from the loop domain).
    for t in transforms_between(dom.loop, dom.maybe_allocation):
        found[id(t)] = t
    return sorted(found.values(), key=lambda t: min(o.name for o in t.outputs))


def propagate(tv: TensorView, known: dict[IterDomain, Ix], ext: Extents) -> dict[IterDomain, Ix]:
    """Fill in the index of every id of `tv` reachable from `known` (which it extends)."""
    # Each pass goes over the transforms not settled yet, in order: a transform with both
    # sides known never fills anything again.
    pending = ext.transforms(tv)
    changed = True
    while changed:
        changed = False
        unsettled = []
        for t in pending:
            outs = all(o in known for o in t.outputs)
            ins = all(i in known for i in t.inputs)
            if outs and not ins:
                _backward(t, known, ext)
                changed = True
            elif ins and not outs:
                _forward(t, known, ext)
                changed = True
            elif not outs:
                unsettled.append(t)
        pending = unsettled
    return known


def _backward(t: IdTransform, k: dict[IterDomain, Ix], ext: Extents) -> None:
    if isinstance(t, Split):
        k.setdefault(t.in_id, _combined(k[t.outer], k[t.inner], ext.of(t.inner)))
    elif isinstance(t, Merge):
        outer, inner = _div_mod(k[t.out], ext.of(t.inner))
        k.setdefault(t.outer, outer)
        k.setdefault(t.inner, inner)
    elif isinstance(t, Resize):
        k.setdefault(t.in_id, _shifted(k[t.out], -ext.value(t.left)))
    elif isinstance(t, Swizzle):
        x, y = _swizzle(t, k[t.out_x], k[t.out_y], ext, inverse=True)
        k.setdefault(t.in_x, x)
        k.setdefault(t.in_y, y)
    else:
        raise CompileError(f"code generation does not support {t.kind} transforms ({t})")


def _forward(t: IdTransform, k: dict[IterDomain, Ix], ext: Extents) -> None:
    if isinstance(t, Split):
        outer, inner = _div_mod(k[t.in_id], ext.of(t.inner))
        k.setdefault(t.outer, outer)
        k.setdefault(t.inner, inner)
    elif isinstance(t, Merge):
        k.setdefault(t.out, _combined(k[t.outer], k[t.inner], ext.of(t.inner)))
    elif isinstance(t, Resize):
        k.setdefault(t.out, _shifted(k[t.in_id], ext.value(t.left)))
    elif isinstance(t, Swizzle):
        x, y = _swizzle(t, k[t.in_x], k[t.in_y], ext, inverse=False)
        k.setdefault(t.out_x, x)
        k.setdefault(t.out_y, y)
    else:
        raise CompileError(f"code generation does not support {t.kind} transforms ({t})")


def _swizzle(t: Swizzle, x: Ix, y: Ix, ext: Extents, inverse: bool) -> tuple[Ix, Ix]:
    """The other side's (x, y) of a swizzle. Both indices must stay inside the axes: a
    permutation of a row says nothing about an index beyond it."""
    n = ext.of(t.in_y)
    why = swizzle_extent_error(t.swizzle_type, ext.of(t.in_x), n)
    if why is not None:
        raise CompileError(f"cannot index {t}: {why}")
    if x.lo < 0 or x.hi > n or y.lo < 0 or y.hi > n:
        raise CompileError(f"cannot index {t}: its indices may leave the axes "
                           f"([{x.lo}, {x.hi}) and [{y.lo}, {y.hi}) for extent {n})")
    if t.swizzle_type == SwizzleType.XOR:  # its own inverse
        term = cexpr.xor(y.term, x.term)
    elif inverse:
        term = cexpr.mod(cexpr.add(cexpr.sub(y.term, x.term), n), n)
    else:
        term = cexpr.mod(cexpr.add(x.term, y.term), n)
    return x, Ix(term, 0, n)


def _floordiv(a: int, b: int) -> int:
    return a // b


def _merged_beside_broadcast(i: IterDomain) -> IterDomain | None:
    """The other input of the merge of a broadcast that made `i`, if one did."""
    t = i.definition
    if not isinstance(t, Merge) or t.outer.is_broadcast == t.inner.is_broadcast:
        return None
    return t.inner if t.outer.is_broadcast else t.outer


def producer_known(producer: TensorView, consumer: TensorView, c_index: dict[IterDomain, Ix],
                   ext: Extents) -> dict[IterDomain, Ix]:
    """Seed a producer's indices from its consumer's through the loop map."""
    known: dict[IterDomain, Ix] = {}
    for pid, cid in loop_map(producer, consumer).items():
        if pid.is_broadcast and pid not in ext.promoted:
            known[pid] = Ix(0, 0, 1)
        elif cid in c_index and ext.of(pid) == ext.of(cid) and same_source(pid, cid, ext):
            # Unequal extents: the consumer merged a broadcast into this axis (the loop map
            # forwards such merges); the index then comes through the consumer's merge.
            # The same holds for split outputs of equal extent whose split inputs differ
            # (a split of x in the loop of a split of x merged with an expanded broadcast):
            # the consumer's loop index then counts the larger merged space, not x's.
            known[pid] = c_index[cid]
        elif (kept := _merged_beside_broadcast(cid)) is not None and kept in c_index \
                and ext.of(pid) == ext.of(kept) and same_source(pid, kept, ext):
            # The loop map forwarded pid to the consumer's merge of pid's image with a
            # broadcast that pid's tensor lacks: that image is indexed as pid is (inside a
            # loop that stops short of the consumer's logical ids, only it is known).
            known[pid] = c_index[kept]
    # An axis the loop map forwarded to a larger (merged) consumer id keeps the op's own
    # logical pairing, which the consumer's indices always determine.
    for pid, cid in pairwise_logical_map(producer, consumer).items():
        if pid not in known and cid in c_index and ext.of(pid) == ext.of(cid):
            known[pid] = c_index[cid]
    for pid in producer.domain.logical:
        if pid.is_broadcast and pid not in known:
            known[pid] = Ix(0, 0, 1)
    for pid in _squeezed_units(producer, consumer, ext):
        known.setdefault(pid, Ix(0, 0, 1))
    return known


def _squeezed_units(producer: TensorView, consumer: TensorView, ext: Extents) -> list[IterDomain]:
    """Iteration axes of one element that `consumer`, a squeeze of `producer`, drops (a
    slice of one row of an axis leaves one). The consumer has no index for them, and 0 is
    their only element. Inlined, the producer's own loop over the axis gave it; an axis
    past the producer's compute-at position (a vectorized slice is inlined before its
    vector, the squeezed axis after it: rope_bwd_qkv_pad_squeeze_cat_half at S=2048) is
    indexed by the reader alone, which found nothing ('cannot index T57 on its axis
    iS270{1}rf')."""
    d = consumer.definition
    if not isinstance(d, SqueezeOp) or d.inputs[0] is not producer:
        return []
    ids = [i for i in producer.domain.logical if not i.is_reduction]
    return [i for i, f in zip(ids, d.flags, strict=True) if f and not i.is_broadcast and ext.of(i) == 1]
