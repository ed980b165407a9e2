"""Tools every scheduler uses: caching inputs and outputs, propagation, parallelization,
inlining. Thin, named steps over the TensorView primitives so that what a scheduler does
reads as a list, and a user can do the same by hand with `fd.sched`."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence

from engine.analysis.logical_map import (
    consumers_of,
    logical_map,
    pairwise_logical_map,
    producers_of,
    tensor_edges,
)
from engine.analysis.replay import transforms_between
from engine.errors import ScheduleError
from engine.ir import exprs as ex
from engine.ir.aten_exprs import aten_only, aten_only_name
from engine.ir.fusion import Fusion
from engine.ir.iterdomain import IterDomain, Merge, ParallelType, Resize, Split
from engine.ir.propagate import inline_all_at as _inline_all_at
from engine.ir.propagate import inline_most as _inline_most
from engine.ir.propagate import parallelize_like as _parallelize_like
from engine.ir.propagate import propagate_max_info as _propagate_max_info
from engine.ir.propagate import transform_like as _transform_like
from engine.ir.quant_exprs import BlockQuantizationOp, PreprocessGroupedMatmulInputSf
from engine.ir.tensorview import TensorView
from engine.trace import Trace

# A predicate that says a tensor must not be cached or forked. Schedulers may pass
# their own (e.g. resize keeps inputs read by a pad); the global-only tensors below are
# kept whatever they pass.
Keep = Callable[[TensorView], bool]


def _never(_: TensorView) -> bool:
    return False


# ---- small helpers every scheduler uses ------------------------------------------------------

def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def next_pow2(n: int) -> int:
    """The smallest power of two >= n (1 for n <= 1)."""
    return 1 if n <= 1 else 1 << (n - 1).bit_length()


def prev_pow2(n: int) -> int:
    """The largest power of two <= n (1 for n <= 1)."""
    return 1 if n <= 1 else 1 << (n.bit_length() - 1)


def has_reduction(fusion: Fusion) -> bool:
    """Whether `fusion` reduces: a reduction or Welford op, or a tensor made in it whose
    logical domain has a reduction axis."""
    return any(isinstance(e, (ex.ReductionOp, ex.WelfordOp)) for e in fusion.exprs()) or any(
        i.is_reduction for t in fusion.tensors() if t not in fusion.inputs for i in t.domain.logical
    )


def note_transform(trace: Trace | None, subject: str, message: str, **data: object) -> None:
    """A "transform" event on `subject` (a tensor's short name, or the scheduler's), when
    there is a trace."""
    if trace is not None:
        trace.event("transform", subject, message, **data)


# ---- which reference axes a tensor has -----------------------------------------------------

def dims_present(ref: TensorView, io: Sequence[TensorView], broadcasts: bool = False) -> dict[TensorView, set[int]]:
    """For each of `io`, the reference logical positions it has a concrete axis for
    (reached through logical maps without broadcast-to-concrete pairs); with `broadcasts`,
    those it has any axis for, a broadcast of its own logical domain included."""
    ref_ids = [i for i in ref.domain.logical if not i.is_reduction]
    maps: dict[TensorView, dict[int, IterDomain]] = {
        ref: {k: i for k, i in enumerate(ref_ids) if broadcasts or not i.is_broadcast}}
    queue = [ref]
    while queue:
        src = queue.pop(0)
        for nb in [*consumers_of(src), *producers_of(src)]:
            if nb in maps:
                continue
            if nb in consumers_of(src):
                m = logical_map(src, nb, map_broadcast=broadcasts)
            else:
                m = {c: p for p, c in logical_map(nb, src, map_broadcast=broadcasts).items()}
            maps[nb] = {k: m[i] for k, i in maps[src].items() if i in m and (broadcasts or not m[i].is_broadcast)}
            queue.append(nb)
    return {tv: set(maps.get(tv, {})) for tv in io}


# ---- tensors that must stay in global memory ----------------------------------------------

# Ops that read their first input (the lookup table) at positions taken from data.
INDEXING_OPS = (ex.SelectOp, ex.IndexSelectOp, ex.GatherOp)


def lookup_inputs(fusion: Fusion) -> set[TensorView]:
    """Fusion inputs read as the lookup table of select, index_select or gather
    (take_along_axis). A thread reads such a table at an index that comes from data,
    i.e. at elements that another thread would have loaded into its registers, so the
    table is read from global memory directly (nvFuser's cacheInputs skips
    isTorchGatherLookupTv / isIndexSelectLookupTv and inputs of SelectOp)."""
    return {e.inputs[0] for e in fusion.exprs()
            if isinstance(e, INDEXING_OPS) and isinstance(e.inputs[0], TensorView)
            and e.inputs[0] in fusion.inputs}


def global_only(fusion: Fusion) -> set[TensorView]:
    """Tensors that no scheduler may cache, fork, vectorize or keep as persistent buffers:
    the layout op's output and offsets (seed 000) and block scales (seed 004), which
    runtime functions read and write in global memory with their own indexing, and the
    lookup tables of indexing ops (`lookup_inputs`), read at data-dependent positions.
    """
    keep: set[TensorView] = lookup_inputs(fusion)
    for e in fusion.exprs():
        if isinstance(e, PreprocessGroupedMatmulInputSf):
            keep.update(v for v in (e.output, e.input_offsets, e.output_offsets)
                        if isinstance(v, TensorView))
        elif isinstance(e, BlockQuantizationOp) and isinstance(e.block_scales, TensorView):
            keep.add(e.block_scales)
    return keep


def global_only_keep(fusion: Fusion) -> Keep:
    """`global_only` as a Keep predicate, computed once from the fusion as it is now
    (before caching adds tensors), so that every scheduler shares one rule."""
    kept = global_only(fusion)
    return lambda tv: tv in kept


def aten_only_reason(fusion: Fusion) -> str | None:
    """Ops that no generated kernel computes (engine.ir.aten_exprs.aten_only): every kernel
    scheduler refuses a fusion holding one, as nvFuser's checkCanSchedule does, so the
    segmenter leaves each to an expr_eval segment of its own."""
    names = sorted({aten_only_name(e) for e in fusion.exprs() if aten_only(e)})
    if names:
        return f"Has unsupported ops: {', '.join(names)} (evaluated by the expr_eval scheduler in this engine)"
    return None


def layout_op_buffer_reason(fusion: Fusion) -> str | None:
    """Seed 000: the layout op's runtime function reads both offsets and writes its
    output in global memory, so the offsets must be fusion (segment) inputs and the
    output a fusion output that nothing in the fusion reads. A reason naming the
    tensor, or None. The registry applies it before every scheduler's own checks, as
    nvFuser's checkCanSchedule does."""
    for e in fusion.exprs():
        if not isinstance(e, PreprocessGroupedMatmulInputSf):
            continue
        for what, v in (("input_offsets", e.input_offsets), ("output_offsets", e.output_offsets)):
            if v not in fusion.inputs:
                return (f"{what} {v.short_name} of PreprocessGroupedMatmulInputSf must be a "
                        "fusion input: its runtime function reads it from global memory")
        out = e.output
        if out not in fusion.outputs or fusion.uses_of(out):
            return (f"output {out.short_name} of PreprocessGroupedMatmulInputSf must be a "
                    "fusion output with no uses: its runtime function writes it to global memory")
    return None


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


def _has_resized_logical(tv: TensorView) -> bool:
    dom = tv.domain
    return dom.root is not None and any(
        isinstance(t, Resize) for t in transforms_between(dom.root, dom.logical))


def memory_promotion_reason(fusion: Fusion) -> str | None:
    """nvFuser's rejectScheduleForMemoryPromotion, which every kernel scheduler (no_op,
    reduction, persistent, transpose, pointwise) applies: select, index_select and
    gather, and ops whose output is resized (pad, slice), must read a fusion input.
    Their first input is read at elements other threads own (a data-dependent index, or
    a shifted position), which only works from global memory; an intermediate computed
    in the same kernel lives in registers. The segmenter then cuts before such an op,
    so its first input arrives through global memory. A `full` is the exception: every
    element is its fill value, which the lowering reads directly (pipeline.constant_fulls)."""
    for e in fusion.exprs():
        indexing = isinstance(e, INDEXING_OPS)
        resized = any(isinstance(o, TensorView) and _has_resized_logical(o) for o in e.outputs)
        first = e.inputs[0]
        constant = resized and isinstance(getattr(first, "definition", None), ex.FullOp)
        if (indexing or resized) and first not in fusion.inputs and not constant:
            return f"First input of {type(e).__name__} must be fusion input."
    return None


def _either(a: Keep, b: Keep) -> Keep:
    return lambda tv: a(tv) or b(tv)


def read_by_resize(fusion: Fusion, tv: TensorView) -> bool:
    """Whether a slice or pad reads `tv`. Such an op reads its input at shifted
    positions (a pad's output element i reads input element i - left), i.e. at elements
    another thread's iteration of the unpadded domain would own, so every scheduler
    reads such an input from global memory where the op needs it (nvFuser's
    scheduler_utils::cacheInputs skips inputs used by SliceOp, SelectOp and PadOp)."""
    return any(isinstance(e, (ex.SliceOp, ex.PadOp)) for e in fusion.uses_of(tv))


def cache_inputs(fusion: Fusion, keep: Keep = _never, trace: Trace | None = None,
                 unindexable: Mapping[TensorView, str] | None = None) -> list[TensorView]:
    """`cache_after` every tensor input that has uses; returns the caches.

    An input that cannot be cached (kept by `keep` or global-only, read by a slice or
    pad, one in `unindexable`, whose cache the scheduler's loops could not index, with
    why, or refused by the primitive, e.g. read by a cat) is read from global memory
    directly; the trace says why, once. Without this a cache of a padded input would keep
    the unpadded loop domain, which transform propagation from the (padded) reference
    cannot reach across the pad's Resize: a whole tensor per thread, never inlined.
    """
    keep = _either(global_only_keep(fusion), keep)
    caches = []
    for tv in [v for v in fusion.inputs if isinstance(v, TensorView)]:
        if not fusion.uses_of(tv):
            continue
        if keep(tv):
            note_transform(trace, tv.short_name, "input not cached: it must stay in global memory")
            continue
        if read_by_resize(fusion, tv):
            note_transform(trace, tv.short_name, "input not cached: a slice or pad reads it from global memory")
            continue
        if unindexable and tv in unindexable:
            note_transform(trace, tv.short_name, f"input not cached: {unindexable[tv]}")
            continue
        try:
            caches.append(tv.cache_after())
        except ScheduleError as e:
            note_transform(trace, tv.short_name, f"input not cached: {e}")
    return caches


def cache_and_fork_outputs(fusion: Fusion, keep: Keep = _never, trace: Trace | None = None) -> list[TensorView]:
    """Give each computed output a local producer: cache_before, or cache_fork when the
    output is also read inside the fusion. Returns the local tensors. Outputs kept by
    `keep` or global-only are written directly by their definition."""
    keep = _either(global_only_keep(fusion), keep)
    caches = []
    for tv in [v for v in fusion.outputs if isinstance(v, TensorView)]:
        if tv.definition is None or tv in fusion.inputs:
            continue
        if keep(tv):
            note_transform(trace, tv.short_name, "output not cached: written directly")
            continue
        try:
            if fusion.uses_of(tv):
                tv.cache_fork()
                caches.append(tv)  # tv itself is now the local value its uses read
            else:
                caches.append(tv.cache_before())
        except ScheduleError as e:
            note_transform(trace, tv.short_name, f"output not cached: {e}")
    return caches


def connected_tensors(tv: TensorView) -> set[TensorView]:
    """The tensors joined to `tv` by producer-consumer edges (fusion inputs included): the
    part of the fusion that propagation from `tv` can reach."""
    seen = {tv}
    stack = [tv]
    while stack:
        t = stack.pop()
        for n in [*producers_of(t), *consumers_of(t)]:
            if n not in seen:
                seen.add(n)
                stack.append(n)
    return seen


def propagate(reference: TensorView, selected: Sequence[TensorView] | None = None) -> None:
    """Replay the reference's loop transforms onto every (selected) tensor."""
    _transform_like(reference, selected)


def propagate_max_info(reference: TensorView, selected: Sequence[TensorView] | None = None,
                       parallel: bool = True) -> None:
    """Replay the reference's transforms along the tree that carries the most of its axes
    (nvFuser's MaxLogicalDomainInfoSpanningTree); parallel types follow the same tree."""
    _propagate_max_info(reference, list(selected) if selected is not None else None, parallel)


def parallelize_all_like(
    reference: TensorView,
    pos: int = -1,
    selected: Sequence[TensorView] | None = None,
    parallel_types: Iterable[ParallelType] | None = None,
    across_resize: bool = False,
) -> None:
    _parallelize_like(reference, pos, selected, parallel_types, across_resize)


def inline_most(fusion: Fusion, selected: Sequence[TensorView] | None = None) -> None:
    _inline_most(fusion, selected)


def inline_at(reference: TensorView, pos: int = -1, best_effort: bool = True,
              selected: Sequence[TensorView] | None = None) -> None:
    _inline_all_at(reference, pos, best_effort, selected)
