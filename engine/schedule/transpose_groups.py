"""The transpose scheduler's groups (nvFuser's TransposeDomainMap): fusion inputs and
outputs grouped by their innermost dim, each group's reference, and where the two groups'
innermost dims lie in reference1. The resize scheduler asks for the groups too: it refuses
transpose-like fusions.

Two innermost dims are "the same" when they are linked through the fusion by exact
(non-broadcast) producer-consumer maps, permutes, resizes and the innermost path of a
reshape (a split's inner output, a merge's inner input).
"""

from __future__ import annotations

from engine.ir.fusion import Fusion
from engine.ir.iterdomain import IterDomain, Merge, Resize, Split, transforms_between
from engine.ir.logical_map import frozen_fact, pairwise_logical_map, producers_of
from engine.ir.tensorview import TensorView
from engine.schedule.id_classes import UnionFind
from engine.schedule.pointwise_reference import covers_inputs


def inner_dim_map(fusion: Fusion) -> UnionFind:
    """IterDomains that are the same innermost dim wherever they appear.

    Broadcast axes never join a concrete one (an innermost broadcast is not an
    innermost dim). Through a reshape only the innermost path is followed: the
    inner output of a split and the output of a merge with its inner input.
    """
    uf = UnionFind()
    for tv in fusion.tensors():
        for p in producers_of(tv):
            for a, b in pairwise_logical_map(p, tv, map_broadcast=False).items():
                uf.union(a, b)
        if tv.domain.root is None:
            continue

        for t in transforms_between(tv.domain.root, tv.domain.logical):
            if isinstance(t, Resize):
                uf.union(t.in_id, t.out)
            elif isinstance(t, Split):
                uf.union(t.in_id, t.inner)
            elif isinstance(t, Merge):
                uf.union(t.inner, t.out)
    return uf


def innermost_alloc_id(tv: TensorView) -> IterDomain | None:
    """The innermost allocation id that is neither broadcast nor reduction."""
    for i in reversed(tv.domain.maybe_allocation):
        if not (i.is_broadcast or i.is_reduction):
            return i
    return None


def io_tensors(fusion: Fusion) -> list[TensorView]:
    """Outputs first, then inputs that have uses (nvFuser's grouping order)."""
    out: list[TensorView] = []
    for v in fusion.outputs:
        if isinstance(v, TensorView) and v not in out:
            out.append(v)
    for v in fusion.inputs:
        if isinstance(v, TensorView) and fusion.uses_of(v) and v not in out:
            out.append(v)
    return out


def group_inputs_outputs_by_inner_dim(fusion: Fusion) -> list[list[TensorView]]:
    """nvFuser's groupInputsOutputsByInnerDim; [] when some tensor has no innermost dim.
    Once per verdict (the resize scheduler asks too); the lists are the caller's own."""
    groups = frozen_fact(fusion, "inner_dim_groups", _group_inputs_outputs_by_inner_dim)
    return [list(g) for g in groups]


def _group_inputs_outputs_by_inner_dim(fusion: Fusion) -> list[list[TensorView]]:
    uf = inner_dim_map(fusion)
    groups: dict[IterDomain, list[TensorView]] = {}
    for tv in io_tensors(fusion):
        i = innermost_alloc_id(tv)
        if i is None:
            return []
        groups.setdefault(uf.find(i), []).append(tv)
    # Stable sort by size: ties keep the order in which groups were met (outputs first).
    return sorted(groups.values(), key=len, reverse=True)


def find_reference_for(fusion: Fusion, group: list[TensorView]) -> TensorView | None:
    """The tensor of the group with the most logical dims (first on ties) among those whose
    axes cover every input's concrete axes (nvFuser's TransposeDomainMap::findReferenceFor
    takes valid references only); None when no tensor of the group does.

    A tensor with a broadcast where the fusion has a concrete axis cannot lead: a bool mask
    [B, S, 1 ex H] (stride 0 on H) has S innermost, but its H is no axis to tile. Such a
    group leaves no second valid group, so the fusion is no transpose (where_bool_expanded_
    mask_slice: one pointwise kernel, as nvFuser's)."""
    valid = [t for t in group if covers_inputs(fusion, t)]
    if not valid:
        return None
    return max(valid, key=lambda t: (t.ndim, -valid.index(t)))


def position_in(tv: TensorView, target: IterDomain, uf: UnionFind) -> int:
    """Position in tv's logical domain (no reductions) of the id linked to `target`."""
    root = uf.find(target)
    ids = [i for i in tv.domain.logical if not i.is_reduction]
    for k, i in enumerate(ids):
        if uf.find(i) is root:
            return k
    return -1


def transpose_layout(fusion: Fusion) -> tuple[list[list[TensorView]], TensorView, TensorView, int, int]:
    """The groups, reference1 and reference2, and the positions in reference1 of the two
    groups' innermost dims (-1 where one is not found)."""
    groups = group_inputs_outputs_by_inner_dim(fusion)
    uf = inner_dim_map(fusion)
    ref1, ref2 = find_reference_for(fusion, groups[0]), find_reference_for(fusion, groups[1])
    assert ref1 is not None and ref2 is not None  # TransposeScheduler.reject_compile_time found both
    i1, i2 = innermost_alloc_id(ref1), innermost_alloc_id(ref2)
    assert i1 is not None and i2 is not None
    return groups, ref1, ref2, position_in(ref1, i1, uf), position_in(ref1, i2, uf)
