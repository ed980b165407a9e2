"""Self mapping (nvFuser's hasSelfMapping): two concrete axes of one tensor that are one
axis of a tensor it is computed from, which no loop nest can index. The registry refuses such
a fusion for every kernel scheduler (`self_mapping_reason`); the segmenter skips the check for
a part of a fusion known to have none (`exact_self_mapping_reason`, `has_reshape_history`)."""

from __future__ import annotations

from collections.abc import Callable

from engine.ir import exprs as ex
from engine.ir.fusion import Fusion
from engine.ir.iterdomain import Merge, Split, transforms_between
from engine.ir.logical_map import pairwise_logical_map, tensor_edges
from engine.ir.tensorview import TensorView


class _Classes:
    """Union-find over IterDomains: `uf[i]` is the representative of i's class. Only
    equality of representatives is read, so any representative serves (networkx's
    weighted UnionFind gave the same classes, several times slower: every segmenter
    candidate asks)."""

    def __init__(self) -> None:
        self.parent: dict[object, object] = {}

    def __getitem__(self, i: object) -> object:
        parent = self.parent
        root = parent.setdefault(i, i)
        while parent[root] is not root:
            root = parent[root]
        while i is not root:  # path compression
            parent[i], i = root, parent[i]
        return root

    def union(self, a: object, b: object) -> None:
        ra, rb = self[a], self[b]
        if ra is not rb:
            self.parent[rb] = ra


def self_mapping_reason(fusion: Fusion) -> str | None:
    """nvFuser's hasSelfMapping ("Fusion has self mapping"): two concrete logical axes of
    one tensor in the same exact class, as `x + x[:, None]` (both axes of the sum are x's
    axis). No loop nest can index one buffer of x at both positions: a value inlined into
    both consumers would be computed at one of them only. Exact classes:
    producer-consumer maps without broadcast pairs, and root ids that stay one logical id
    (a permute, a split or merge with a size-1 part; a resize changes the extent).
    A reason naming the tensor and its axes, or None."""
    tvs = [t for t in fusion.tensors() if isinstance(t, TensorView)]
    uf = _exact_classes(fusion, tvs)
    return _same_class_axes(tvs, uf) or _reshaped_self_mapping(tvs, uf, _is_one)


def exact_self_mapping_reason(fusion: Fusion) -> str | None:
    """self_mapping_reason without its reshape part. When a fusion has no such self
    mapping, no fusion cut out of it has (see segment.cut.cut_fusion): a part's exact
    classes join fewer axes, and its tensors have the same or fewer logical axes."""
    tvs = [t for t in fusion.tensors() if isinstance(t, TensorView)]
    return _same_class_axes(tvs, _exact_classes(fusion, tvs))


def has_reshape_history(fusion: Fusion) -> bool:
    """Whether some tensor is a reshape's output with its root domain (the tensors that
    the reshape part of self_mapping_reason looks at)."""
    return any(isinstance(t.definition, ex.ViewOp) and t.domain.root is not None
               for t in fusion.tensors() if isinstance(t, TensorView))


def _is_one(x: object) -> bool:
    e = x.extent  # type: ignore[attr-defined]
    return bool(x.is_broadcast or (e.is_const and e.value == 1))  # type: ignore[attr-defined]


def _exact_classes(fusion: Fusion, tvs: list[TensorView]) -> _Classes:
    uf = _Classes()
    one = _is_one
    for p, c, _e in tensor_edges(fusion):
        for a, b in pairwise_logical_map(p, c, map_broadcast=False).items():
            uf.union(a, b)
    for tv in tvs:
        dom = tv.domain
        if dom.root is None:
            continue
        for t in transforms_between(dom.root, dom.logical):
            if isinstance(t, Split):
                if one(t.inner):
                    uf.union(t.in_id, t.outer)
                elif one(t.outer):
                    uf.union(t.in_id, t.inner)
            elif isinstance(t, Merge):
                if one(t.outer):
                    uf.union(t.inner, t.out)
                elif one(t.inner):
                    uf.union(t.outer, t.out)
    return uf


def _same_class_axes(tvs: list[TensorView], uf: _Classes) -> str | None:
    """The reason for the first tensor with two concrete axes in one exact class, or None."""
    for tv in tvs:
        seen: dict[int, int] = {}
        for k, i in enumerate(tv.domain.logical):
            if i.is_broadcast:
                continue
            r = id(uf[i])
            if r in seen:
                return (f"Fusion has self mapping: axes {seen[r]} and {k} of {tv.short_name} are the "
                        "same axis of a tensor it is computed from (as in x + x[:, None]); one loop "
                        "nest cannot index that tensor's buffer at both positions")
            seen[r] = k
    return None


def _reshaped_self_mapping(tvs: list[TensorView], uf: object, one: Callable[[object], bool]) -> str | None:
    """Self mapping through a reshape: two axes of one tensor that come from one axis of
    a tensor it is computed from, one of them through a reshape's merges and splits,
    as in x.reshape(2, 3)[:, :, None] + x. Exact classes
    (`uf`, as self_mapping_reason builds them) do not see through a reshape, so
    each reshape output class records the classes its merges and splits read; two axes
    conflict when those ancestries share a concrete class, unless the input or the
    output of one reshape has both: the axes of one side are one walk over the same
    elements (a reshape and its inverse added to their input, whose classes become
    each other's ancestors, are such a walk). A value computed once per loop iteration
    and read by both routes would be read at one element only."""
    def cls(i: object) -> int:
        return id(uf[i])  # type: ignore[index]

    parents: dict[int, set[int]] = {}
    walks: list[set[int]] = []
    for tv in tvs:
        dom = tv.domain
        if dom.root is None or not isinstance(tv.definition, ex.ViewOp):
            continue
        for side in (tv.definition.inputs[0], tv):
            if isinstance(side, TensorView):
                walks.append({cls(i) for i in side.domain.logical if not i.is_broadcast})
        for t in transforms_between(dom.root, dom.logical):
            if not isinstance(t, Split | Merge) or one(t.inner) or one(t.outer):
                continue  # a resize changes the extent; size-1 parts keep the class
            ins = {cls(i) for i in t.inputs if not i.is_broadcast}
            for o in t.outputs:
                parents.setdefault(cls(o), set()).update(ins)

    if not parents:
        return None
    memo: dict[int, set[int]] = {}

    def ancestry(c: int) -> set[int]:
        if c not in memo:
            out, stack = {c}, [c]
            while stack:
                for p in parents.get(stack.pop(), ()):
                    if p not in out:
                        out.add(p)
                        stack.append(p)
            memo[c] = out
        return memo[c]
    first: dict[int, tuple[int, str]] = {}  # a class -> its first tensor axis, for the message
    for n, tv in enumerate(tvs):
        for k, i in enumerate(tv.domain.logical):
            first.setdefault(cls(i), (n, f"axis {k} of {tv.short_name}"))
    for tv in tvs:
        axes = [(k, cls(i)) for k, i in enumerate(tv.domain.logical) if not i.is_broadcast]
        for n, (k1, c1) in enumerate(axes):
            for k2, c2 in axes[n + 1:]:
                if any(c1 in w and c2 in w for w in walks):
                    continue
                shared = ancestry(c1) & ancestry(c2)
                if shared:
                    src = min(first.get(c, (len(tvs), "one axis")) for c in shared)[1]
                    return (f"Fusion has self mapping through a reshape: axes {k1} and {k2} of "
                            f"{tv.short_name} both come from {src}, one of them through a "
                            "reshape's merges and splits (as in x.reshape(2, 3)[:, :, None] + x); "
                            "one loop nest cannot index that tensor's buffer at both positions")
    return None
