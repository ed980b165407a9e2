"""Memory order of a fusion's intermediate tensors, inferred from its inputs' (nvFuser's
allocation order inference, AllocationDomainPass, applied to intermediates).

An intermediate the engine allocates (one segment writes it, another reads it) is laid out in
logical order unless its allocation domain says otherwise. When the fusion's inputs are laid
out in another order (a channels-last [N, C, H, W] activation: C innermost in memory), a
kernel iterating its inputs in memory order would write such an intermediate across its
rows (a strided store of every element), and the kernel reading it back would be a
transpose. This pass gives each intermediate computed from a permuted input that input's
order, carried forward expression by expression: among the expression's tensor inputs that
have an order, the one with the most iteration axes is the reference; its allocation axes,
fastest first, are mapped to the output's logical axes until one does not map (broadcast and
reduction axes are skipped), and the output's allocation domain is its unmapped axes in
logical order, outermost, then the mapped ones in the reference's order (nvFuser's
mapAllocationDomain; an unmapped reduction axis keeps its place).

Fusion outputs keep the layout the definition gives them (the caller's contract), and
intermediates made by a transform between root and logical axes (a reshape, a pad or slice)
are left in logical order. A fusion whose inputs are all in logical order is not touched.
"""

from __future__ import annotations

from engine.ir.fusion import Fusion
from engine.ir.iterdomain import IterDomain
from engine.ir.logical_map import pairwise_logical_map
from engine.ir.tensorview import TensorView
from engine.trace import Trace


def _permuted(tv: TensorView) -> bool:
    alloc = tv.domain.allocation
    if alloc is None:
        return False
    logical = tv.domain.logical
    return set(map(id, alloc)) == set(map(id, logical)) and [id(i) for i in alloc] != [id(i) for i in logical]


def _iteration_axes(tv: TensorView) -> int:
    return sum(1 for i in tv.domain.logical if not (i.is_broadcast or i.is_reduction))


def mapped_order(ref: TensorView, target: TensorView) -> list[IterDomain] | None:
    """`target`'s allocation domain in the order of `ref`'s (its producer), or None when it
    would be its logical order."""
    pmap = pairwise_logical_map(ref, target)
    mapped: list[IterDomain] = []
    for pid in reversed(ref.domain.maybe_allocation):
        cid = pmap.get(pid)
        if cid is None:
            if pid.is_broadcast or pid.is_reduction:
                continue
            break
        if cid.is_reduction and not pid.is_reduction:
            continue
        if all(cid is not m for m in mapped):
            mapped.append(cid)
    logical = target.domain.logical
    unmapped = iter([i for i in logical if all(i is not m for m in mapped) and not i.is_reduction])
    inner = iter(reversed(mapped))
    out: list[IterDomain] = []
    for i in logical:
        if i.is_reduction and all(i is not m for m in mapped):
            out.append(i)
        else:
            out.append(next(unmapped, None) or next(inner))
    return None if all(a is b for a, b in zip(out, logical)) else out


def intermediates_in_input_order(fusion: Fusion, trace: Trace | None = None) -> None:
    """Each intermediate computed from a permuted input takes its memory order (module doc)."""
    ordered = {id(t) for t in fusion.inputs if isinstance(t, TensorView) and _permuted(t)}
    if not ordered:
        return
    outputs = {id(v) for v in fusion.outputs}
    for e in fusion.exprs():
        refs = [p for p in e.inputs if isinstance(p, TensorView) and id(p) in ordered]
        if not refs:
            continue
        ref = max(refs, key=_iteration_axes)
        for out in e.outputs:
            if (not isinstance(out, TensorView) or id(out) in outputs or out.domain.allocation is not None
                    or out.domain.root is not None):
                continue
            alloc = mapped_order(ref, out)
            if alloc is None:
                continue
            out.set_allocation_domain(alloc, True)
            ordered.add(id(out))
            if trace is not None:
                trace.event("concretize", out.short_name,
                            f"laid out in {ref.short_name}'s memory order: allocation "
                            f"[{', '.join(str(i) for i in alloc)}]", rule="intermediates_in_input_order")
