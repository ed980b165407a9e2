"""Cutting a group out of the complete fusion: `cut_fusion` copies a group's exprs into a
standalone Fusion (what the schedulers are asked about while segmenting and what the compile
pipeline schedules), `referenced_symbols` finds the free scalars the group takes as inputs,
and `shareable_domains` / `unshare` let the segmenter's trial cuts share the complete
fusion's domains while it only reads them.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from engine.ir.base import Expr, Val
from engine.ir.fusion import Fusion
from engine.ir.graph_copy import copy_value
from engine.ir.scalar import Scalar, shareable_constant
from engine.ir.tensorview import TensorView


def referenced_symbols(exprs: Sequence[Expr], inputs: Sequence[TensorView],
                       memo: dict[object, tuple[Scalar, ...]] | None = None) -> list[Scalar]:
    """Free scalars a group needs that its tensor inputs do not bind: symbols in the
    extents of tensors it computes and in its exprs' scalar operands and attributes
    (slice ranges, pad widths, expand and full shapes). nvFuser passes these to a segment
    as scalar inputs (SegmentedGroup::finalize).

    `memo` keeps, per tensor and per expr, the non-constant scalars found in its extents
    or attributes, for a caller that asks about many groups of one fusion whose domains
    and attributes do not change meanwhile (the segmenter: every candidate group)."""
    bound: set[Scalar] = set()
    for tv in inputs:
        for i in tv.domain.logical:
            if i.is_reduction:
                continue
            e = i.expanded_extent if i.expanded_extent is not None else i.extent
            if e.is_symbol:
                bound.add(e)
    found: dict[Scalar, None] = {}

    def add(s: Scalar) -> None:
        if s.value is not None:
            return  # a constant (most extents at static sizes) has no free symbols
        for f in sorted(s.free_symbols(), key=lambda x: x.name if x.name is not None else -1):
            if f not in bound:
                found[f] = None

    def walk(x: Any) -> None:
        if isinstance(x, Scalar):
            add(x)
        elif isinstance(x, (list, tuple)):
            for y in x:
                walk(y)
        elif isinstance(x, dict):
            for y in x.values():
                walk(y)

    def tv_symbols(tv: TensorView) -> None:
        if memo is None:
            _tv_symbols(tv, add)
            return
        got = memo.get(tv)
        if got is None:
            got = memo[tv] = tuple(_tv_scalars(tv))
        for x in got:
            add(x)

    def attribute_symbols(e: Expr) -> None:
        if memo is None:
            walk(e.attributes)
            return
        got = memo.get(e)
        if got is None:
            got = memo[e] = tuple(x for x in _attribute_scalars(e.attributes) if x.value is None)
        for x in got:
            add(x)

    input_set = set(inputs)
    # Tensors whose extents were added already (a tensor is an output of one expr and
    # may be an input of several).
    seen: set[TensorView] = set()
    for tv in inputs:
        # An input whose extent is an expression of symbols (a cat's i0 + i0 made in
        # another segment) binds none of them; the heuristics still need its size.
        for i in tv.domain.logical:
            if not i.is_reduction:
                e = i.expanded_extent if i.expanded_extent is not None else i.extent
                if not e.is_symbol and not e.is_const:
                    add(e)
    for e in exprs:
        for v in e.inputs:
            if isinstance(v, Scalar):
                add(v)
            elif isinstance(v, TensorView) and v not in input_set and v not in seen:
                seen.add(v)
                tv_symbols(v)
        for v in e.outputs:
            if isinstance(v, TensorView) and v not in seen:
                seen.add(v)
                tv_symbols(v)
        attribute_symbols(e)
    return sorted(found, key=lambda s: s.name if s.name is not None else -1)


def _tv_symbols(tv: TensorView, add: Any) -> None:
    for x in _tv_scalars(tv):
        add(x)


def _tv_scalars(tv: TensorView) -> Iterator[Scalar]:
    """The non-constant extents of tv's ids, in the order referenced_symbols adds them."""
    dom = tv.domain
    ids = [*dom.maybe_root, *dom.logical, *dom.loop, *(dom.allocation or [])]
    for i in ids:
        if i.extent.value is None:  # constants (most extents at static sizes) add nothing
            yield i.extent
        if i.expanded_extent is not None and i.expanded_extent.value is None:
            yield i.expanded_extent


def _attribute_scalars(x: Any) -> Iterator[Scalar]:
    """The scalars among an expr's attributes, in the order referenced_symbols walks them."""
    if isinstance(x, Scalar):
        yield x
    elif isinstance(x, (list, tuple)):
        for y in x:
            yield from _attribute_scalars(y)
    elif isinstance(x, dict):
        for y in x.values():
            yield from _attribute_scalars(y)


def shareable_domains(exprs: Sequence[Expr], inputs: Sequence[Val],
                      memo: dict[object, tuple[Any, ...]] | None = None) -> dict[int, Any]:
    """The domains (and their ids) of the tensors `exprs` compute, by id, for a cut that only
    reads them (cut_fusion's `memo`): most of a cut's copy is these ids, their transforms
    and extents. A domain that holds an id of an input's domain is left out: cut_fusion
    edits the inputs' copies. Inputs' domains that cut_fusion leaves as they are (no root,
    no reduction axis: _plain_input changes nothing) and that share no id with a computed
    tensor are shared too. Only for a fusion without free symbols (see acceptance.Acceptance._static):
    the inputs' extents are then constants, as copies of them would be.

    `memo` keeps each tensor's domain and ids, for a caller that asks about many groups of
    one fusion whose domains do not change meanwhile (the segmenter)."""
    def ids_of(tv: TensorView) -> tuple[Any, ...]:
        got = memo.get(tv) if memo is not None else None
        if got is None:
            d = tv.domain
            ids = (*d.maybe_root, *d.logical, *d.loop, *(d.allocation or ()))
            got = (d, ids, frozenset(map(id, ids)))
            if memo is not None:
                memo[tv] = got
        return got

    input_ids: set[int] = set()
    for v in inputs:
        if isinstance(v, TensorView):
            input_ids |= ids_of(v)[2]
    shared: dict[int, Any] = {}
    computed_ids: set[int] = set()
    for e in exprs:
        for v in e.outputs:
            if not isinstance(v, TensorView) or id(v.domain) in shared:
                continue
            d, ids, keys = ids_of(v)
            computed_ids |= keys
            if not keys.isdisjoint(input_ids):
                continue
            shared[id(d)] = d
            for i in ids:
                shared[id(i)] = i
    for v in inputs:
        if not isinstance(v, TensorView) or not _plain_already(v):
            continue
        d, ids, keys = ids_of(v)
        if not keys.isdisjoint(computed_ids):
            continue  # a computed tensor's copy would hold one of its ids
        shared[id(d)] = d
        for i in ids:
            shared[id(i)] = i
    return shared


def _plain_already(tv: TensorView) -> bool:
    """Whether _plain_input leaves `tv`'s domain as it is."""
    d = tv.domain
    return d.root is None and not any(i.is_reduction for i in d.logical)


def unshare(sub: Fusion, memo: dict[int, Any], shared: dict[int, Any]) -> None:
    """Give a cut made with `shared` domains (and `memo`, the copy's memo) its own copies of
    them, the ones cut_fusion makes without sharing: before it is scheduled, which edits
    domains. The copies continue the same memo, so extents and transforms the cut copied
    already are the ones its domains use, as in one copy."""
    for k in shared:
        del memo[k]
    for v in sub.all_vals:
        if isinstance(v, TensorView) and id(v.domain) in shared:
            v.domain = copy_value(v.domain, memo)
    sub.__dict__.pop("ids_of", None)


def cut_fusion(
    complete: Fusion,
    exprs: Sequence[Expr],
    inputs: Sequence[Val],
    outputs: Sequence[Val],
    memo: dict[int, Any] | None = None,
    constant_memo: dict[Expr, bool] | None = None,
) -> tuple[Fusion, dict[Val, Val]]:
    """A standalone Fusion of `exprs` with `inputs` as its inputs and `outputs` as its
    outputs (all in global memory), and the map from the complete fusion's vals to it.

    Only the group's part of the graph is copied: every expr outside the group is mapped
    to nothing in the deep copy, which cuts the definitions of the group's inputs and the
    uses that leave the group. Inputs produced by reshape/resize get their logical domain
    as a plain root (nvFuser's convertInputRfactorsToRoots), since the transforms that
    made it happened in another segment.

    `memo`: the deep copy's memo to start from and fill. Objects it maps to themselves are
    shared with the complete fusion, not copied (shareable_domains); their ids then name
    the complete fusion as theirs, which the cut records as `ids_of` (see
    Fusion.__deepcopy__); unshare gives the cut its own copies. Exprs' attributes that
    hold only constants are shared then too. `constant_memo` keeps, per expr, whether its
    attributes do (attributes never change while segmenting).
    """
    keep = {id(e) for e in exprs}
    shell = Fusion()
    shell._counters = dict(complete._counters)
    sharing = bool(memo)
    if memo is None:
        memo = {}
    elif sharing:
        shell.ids_of = complete  # type: ignore[attr-defined]
    memo[id(complete)] = shell
    for e in complete.all_exprs:
        if id(e) not in keep:
            memo[id(e)] = None
    if sharing:
        # Domains are shared (see above): so are the exprs' constant attributes, which
        # are most of what remains to copy (slice ranges, pad widths, shapes).
        for e in exprs:
            attrs = e.attributes
            known = constant_memo.get(e) if constant_memo is not None else None
            if known is None:
                known = bool(attrs) and shareable_constant(attrs)
                if constant_memo is not None:
                    constant_memo[e] = known
            if known:
                memo[id(attrs)] = attrs
    new_exprs = [copy_value(e, memo) for e in exprs]
    new_in = [copy_value(v, memo) for v in inputs]
    new_out = [copy_value(v, memo) for v in outputs]
    val_map: dict[Val, Val] = {}
    for v in [*complete.all_vals, *inputs, *outputs]:
        c = memo.get(id(v))
        if c is not None and v not in val_map:
            val_map[v] = c
    for e in exprs:
        for v in [*e.inputs, *e.outputs]:
            c = memo.get(id(v))
            if c is not None:
                val_map.setdefault(v, c)
    live = {id(x) for x in new_exprs}
    for v in val_map.values():
        v.uses = [u for u in v.uses if u is not None]
        if v.definition is not None and id(v.definition) not in live:
            v.definition = None
    shell.all_exprs = list(new_exprs)
    shell.all_vals = list(dict.fromkeys(val_map.values()))
    if complete._zero is not None and id(complete._zero) in memo:
        shell._zero = memo[id(complete._zero)]
    for v in new_in:
        if isinstance(v, TensorView):
            _plain_input(v)
        shell.add_input(v)
    for v in new_out:
        shell.add_output(v)
    return shell, val_map


def _plain_input(tv: TensorView) -> None:
    dom = tv.domain
    if any(i.is_reduction for i in dom.logical):
        # A reduction output read by a later segment is a plain tensor there: its reduced
        # axes were consumed in the producing segment (nvFuser clears them as well).
        dom.logical = [i for i in dom.logical if not i.is_reduction]
        if dom.allocation is not None:
            dom.allocation = [i for i in dom.allocation if not i.is_reduction]
        dom.loop = [i for i in dom.loop if not i.is_reduction]
        dom.contiguity = dom.default_contiguity()
    if not dom.has_root:
        return
    for i in dom.logical:
        i.definition = None
        i.is_rfactor = False
    dom.root = None
    if dom.allocation is not None and set(map(id, dom.allocation)) != set(map(id, dom.logical)):
        dom.allocation = None
        dom.contiguity = dom.default_contiguity()
