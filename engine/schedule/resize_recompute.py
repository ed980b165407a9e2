"""Recomputation for the resize scheduler (nvFuser's RecomputeTv): copies of a tensor's
definition, so that consumers that need a tensor under different resizes each read their
own copy, and an output that the reference would otherwise make resized gets private
copies of its producers.

Recomputed ops are pointwise ops, casts, broadcasts, expands, squeezes, sets, permutes,
reshapes, slices, pads, cats and factory ops: ops of one output whose root->logical transforms
(a permute's reorder, a reshape's splits and merges, a slice's or pad's Resize) can be
replayed on fresh ids. A copy reads what the original read (or the copies given in
`swap`), so recomputing a chain back to the fusion inputs reads the inputs once more per
copy; on a GPU those reads of the same bytes mostly hit the caches.
"""

from __future__ import annotations

from engine.ir import exprs as ex
from engine.ir.fusion import Fusion
from engine.ir.iterdomain import IterDomain, Merge, Resize, Split, transforms_between
from engine.ir.logical_map import producers_of
from engine.ir.tensorview import TensorDomain, TensorView

_RECOMPUTABLE = (ex.UnaryOp, ex.BinaryOp, ex.TernaryOp, ex.BroadcastOp, ex.ExpandOp, ex.SqueezeOp,
                 ex.LoadStoreOp, ex.ViewOp, ex.SliceOp, ex.PadOp, ex.CatOp, ex.FullOp, ex.IotaOp, ex.RNGOp)


def recomputable(fusion: Fusion, tv: TensorView) -> bool:
    """Whether tv's definition can be copied: one of the ops above, producing tv alone,
    with only splits, merges and resizes between tv's root and logical domains."""
    e = tv.definition
    if e is None or not isinstance(e, _RECOMPUTABLE) or len(e.outputs) != 1 or tv in fusion.inputs:
        return False
    dom = tv.domain
    return dom.root is None or all(isinstance(t, (Split, Merge, Resize))
                                   for t in transforms_between(dom.root, dom.logical))


def _fresh(fusion: Fusion, i: IterDomain) -> IterDomain:
    return IterDomain(fusion, i.extent, i.iter_type, expanded_extent=i.expanded_extent,
                      is_rfactor=i.is_rfactor)


def _copy_domain(fusion: Fusion, tv: TensorView) -> TensorDomain:
    """Fresh ids for tv's root and logical domains, with its root->logical transforms
    replayed between them."""
    dom = tv.domain
    if dom.root is None:
        return TensorDomain([_fresh(fusion, i) for i in dom.logical])
    m = {r: _fresh(fusion, r) for r in dom.root}
    for t in transforms_between(dom.root, dom.logical):
        if isinstance(t, Split):
            s = Split(m[t.in_id], t.factor, t.inner_split)
            made = [(t.outer, s.outer), (t.inner, s.inner)]
        elif isinstance(t, Merge):
            made = [(t.out, Merge(m[t.outer], m[t.inner]).out)]
        else:
            assert isinstance(t, Resize)
            made = [(t.out, Resize(m[t.in_id], t.left, t.right, t.out.iter_type,
                                   is_rfactor=t.out.is_rfactor).out)]
        for old, new in made:
            new.iter_type, new.is_rfactor = old.iter_type, old.is_rfactor
            m[old] = new
    return TensorDomain([m[i] for i in dom.logical], root=[m[r] for r in dom.root])


def copy_of(fusion: Fusion, tv: TensorView, swap: dict[TensorView, TensorView]) -> TensorView:
    """A new tensor computed by a copy of tv's definition, reading `swap`'s copies."""
    e = tv.definition
    assert e is not None
    copy = TensorView(fusion, _copy_domain(fusion, tv), tv.dtype)
    clone = object.__new__(type(e))
    ex.Expr.__init__(clone, fusion, [swap.get(v, v) for v in e.inputs], [copy], **e.attributes)
    return copy


def recompute_for(fusion: Fusion, tv: TensorView, consumer: TensorView) -> TensorView | None:
    """nvFuser's RecomputeTv: a copy of tv's definition, read by `consumer` instead of tv;
    None when tv cannot be recomputed."""
    if not recomputable(fusion, tv):
        return None
    copy = copy_of(fusion, tv, {})
    for use in fusion.uses_of(tv):
        if consumer in use.outputs:
            fusion.replace_input_of(use, tv, copy)
    return copy


def privatize_producers(fusion: Fusion, tv: TensorView) -> bool:
    """Give `tv` its own copies of every producer back to the fusion inputs; False (the
    fusion unchanged) when one of them cannot be recomputed."""
    cone: set[TensorView] = set()
    stack = [p for p in producers_of(tv) if p not in fusion.inputs]
    while stack:
        p = stack.pop()
        if p in cone:
            continue
        if not recomputable(fusion, p):
            return False
        cone.add(p)
        stack.extend(q for q in producers_of(p) if q not in fusion.inputs)
    if not cone:
        return False
    copies: dict[TensorView, TensorView] = {}
    for e in fusion.exprs():  # topological: producers' copies exist before their readers'
        out = e.outputs[0] if e.outputs else None
        if out in cone:
            assert isinstance(out, TensorView)
            copies[out] = copy_of(fusion, out, copies)
    d = tv.definition
    assert d is not None
    for src, dst in copies.items():
        if src in d.inputs:
            fusion.replace_input_of(d, src, dst)
    return True


__all__ = ["copy_of", "privatize_producers", "recompute_for", "recomputable"]
