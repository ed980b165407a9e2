"""The transpose scheduler: two groups of inputs/outputs whose innermost dims differ,
moved through 32x32 shared-memory tiles.

Follows nvFuser's non-TMA transpose scheduler (csrc/scheduler/transpose*.cpp):

- Grouping (nvFuser's TransposeDomainMap::groupInputsOutputsByInnerDim): every
  fusion input (with uses) and output is put in the group of its innermost
  allocation dim. Two innermost dims are "the same" when they are linked through
  the fusion by exact (non-broadcast) producer-consumer maps, permutes, resizes and
  the innermost path of a reshape (a split's inner output, a merge's inner input).
  Outputs are grouped first, then inputs; groups are sorted by size, largest first.
- reference1 is the largest tensor of group 1, reference2 of group 2. Tiles are
  made on reference1 at the positions of both innermost dims: [..., I1/t1, ..,
  I2/t2, ..., t1, t2]; the outer dims are merged into one BIDx axis, with an
  Unswitch axis of 1 inside it, and propagated to the whole fusion.
- Group 2 (and the caches of its inputs, which go to shared memory) then merges
  the tile as (t1, t2) and group 1 and everything else as (t2, t1), each split as
  [Unroll, TIDx, Vectorize]. The shared-memory cache is where the two thread
  layouts meet: it is computed at the block level (ca_pos 2) and read back
  transposed. Its allocation domain is set from its loop domain (seed 001's rule):
  what a block allocates is then the ids right of ca_pos, i.e. one t1 x t2 tile.

Simplifications, each documented where it applies: the virtual inner-most dims
that nvFuser builds for small transpose dims (split_before_tiling,
dims_merged_with_1/2) are not built (a small inner dim is tiled as it is and the
tile is predicated); vectorization factors are computed here per group (see
_group_vectorize_factor): engine.analysis.vectorize answers for one reference's
innermost region, while each transpose group needs its own inner dim's factor.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from engine.analysis.logical_map import consumers_of, frozen_fact, pairwise_logical_map, producers_of
from engine.analysis.replay import transforms_between
from engine.ir import exprs as ex
from engine.ir.fusion import Fusion
from engine.ir.iterdomain import IterDomain, Merge, ParallelType, Resize, Split, SwizzleType
from engine.ir.tensorview import MemoryType, TensorView
from engine.schedule import tools
from engine.schedule.base import Scheduler, SchedulerType
from engine.schedule.params import HeuristicParams, LaunchParams
from engine.schedule.pointwise import covers_inputs
from engine.schedule.registry import register
from engine.schedule.runtime_info import SchedulerRuntimeInfo
from engine.schedule.tools import has_reduction, note_transform, prev_pow2
from engine.trace import Trace

MAX_THREADS_PER_BLOCK = 128  # nvFuser's TransposeParams::getMaxThreadsPerBlock
DEFAULT_TILE_SIZE = 32  # nvFuser's TransposeParams::getDefaultTileSize
LARGE_TILE_SIZE = 64  # this engine's tiles for large transposes (see compute_heuristics)
LARGE_TILE_WAVES = 8  # ... when the 64x64 tiles fill the SMs this many times over
HUGE_TILE_SIZE = 128  # ... and for large transposes of 2-byte (or narrower) tensors
HUGE_TILE_SMEM = 64 * 1024  # ... while group 2's shared-memory tiles fit in this many bytes
BANK_ROW_BYTES = 128  # 32 four-byte banks: rows of a multiple of this start on the same bank
# Inputs whose tile rows are shorter than this many bytes prefetch this many into L2 (sm80+).
L2_PREFETCH_BYTES = 256


@dataclass(frozen=True)
class TransposeParams(HeuristicParams):
    tile_size1: int = DEFAULT_TILE_SIZE
    tile_size2: int = DEFAULT_TILE_SIZE
    vectorize_factor1: int = 1
    vectorize_factor2: int = 1
    # Positions in reference1's logical domain of the two groups' innermost dims.
    inner_most_dim1: int = -1
    inner_most_dim2: int = -1
    # nvFuser's virtual inner-most dims for small transpose dims; never filled here
    # (see the module docstring), kept so that the printout has nvFuser's shape.
    split_before_tiling: tuple[tuple[int, int], ...] = ()
    dims_merged_with_1: tuple[int, ...] = ()
    dims_merged_with_2: tuple[int, ...] = ()
    group1: tuple[str, ...] = ()
    group2: tuple[str, ...] = ()
    reference1: str = ""
    reference2: str = ""
    # Inputs whose vector loads prefetch L2_PREFETCH_BYTES into L2 (engine-only, not nvFuser's).
    l2_prefetch: tuple[str, ...] = ()
    # Xor-swizzle the shared-memory tiles (engine-only; see _swizzle_tile).
    swizzle: bool = False

    def threads_per_block(self) -> int:
        elems = self.tile_size1 * self.tile_size2
        vectors = min(-(-elems // self.vectorize_factor1), -(-elems // self.vectorize_factor2))
        cap = MAX_THREADS_PER_BLOCK * max(1, elems // (2 * DEFAULT_TILE_SIZE * DEFAULT_TILE_SIZE))
        return min(cap, vectors)

    def __str__(self) -> str:
        # Line for line nvFuser's TransposeParams::toString.
        bdimx = self.lparams.bdimx
        lines = ["", "===== Transpose Parameters ========",
                 ("Tag: " if self.tag else "") + f"{self.tag} Transpose Characteristics:",
                 f" BlckX: {bdimx}",
                 f" input tile size: {self.tile_size1}",
                 f" output tile size: {self.tile_size2}"]
        per_tile = self.tile_size1 * self.tile_size2
        lines.append(f" elements per tile: {per_tile}")
        per_thread = per_tile // bdimx if bdimx > 0 else 0
        lines.append(f" elements per thread: {per_thread}")
        if self.vectorize_factor1 > 1:
            lines.append(f"Vectorize group 1, Factor: {self.vectorize_factor1}")
        if per_thread // self.vectorize_factor1 > 1:
            lines.append(f"Unroll group 1, Factor: {per_thread // self.vectorize_factor1}")
        if self.vectorize_factor2 > 1:
            lines.append(f"Vectorize group 2, Factor: {self.vectorize_factor2}")
        if per_thread // self.vectorize_factor2 > 1:
            lines.append(f"Unroll group 2, Factor: {per_thread // self.vectorize_factor2}")
        if self.split_before_tiling or self.dims_merged_with_1 or self.dims_merged_with_2:
            lines.append("Virtual inner-most dim:")
            if self.split_before_tiling:
                lines.append("  " + ", ".join(f"split({a}, {b})" for a, b in self.split_before_tiling))
            if self.dims_merged_with_1:
                lines.append("  merge " + ", ".join(map(str, self.dims_merged_with_1)) + " with innermost1")
            if self.dims_merged_with_2:
                lines.append("  merge " + ", ".join(map(str, self.dims_merged_with_2)) + " with innermost2")
        lines.append("====================================")
        return "\n".join(lines) + "\n"


# ---- inner-dim grouping (shared with the resize scheduler) ------------------------------------

class _UnionFind:
    def __init__(self) -> None:
        self.parent: dict[IterDomain, IterDomain] = {}

    def find(self, i: IterDomain) -> IterDomain:
        parent = self.parent
        p = parent.setdefault(i, i)
        # Every parent is itself a key (a root when it was linked), so the walk only reads.
        while p is not (q := parent[p]):
            p = q
        parent[i] = p
        return p

    def union(self, a: IterDomain, b: IterDomain) -> None:
        # find(a) and find(b), inline: the checks union every pair of every pairwise map.
        parent = self.parent
        ra = parent.setdefault(a, a)
        while ra is not (q := parent[ra]):
            ra = q
        parent[a] = ra
        rb = parent.setdefault(b, b)
        while rb is not (q := parent[rb]):
            rb = q
        parent[b] = rb
        if ra is not rb:
            parent[rb] = ra


def inner_dim_map(fusion: Fusion) -> _UnionFind:
    """IterDomains that are the same innermost dim wherever they appear.

    Broadcast axes never join a concrete one (an innermost broadcast is not an
    innermost dim). Through a reshape only the innermost path is followed: the
    inner output of a split and the output of a merge with its inner input.
    """
    uf = _UnionFind()
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


def has_non_unique_broadcast(fusion: Fusion) -> bool:
    """nvFuser's hasNonUniqueBcast: a broadcast axis that meets concrete axes of two
    different sizes (not exact-mapped to each other), so that no single loop can
    stand for it. Exact classes here: producer-consumer maps without broadcast
    pairs; a broadcast class collects the exact classes of the concrete axes its
    members meet across an op. Once per verdict (the resize scheduler asks too)."""
    return frozen_fact(fusion, "non_unique_broadcast", _has_non_unique_broadcast)


def _has_non_unique_broadcast(fusion: Fusion) -> bool:
    exact = _UnionFind()
    pairs: list[tuple[IterDomain, IterDomain]] = []
    for tv in fusion.tensors():
        for p in producers_of(tv):
            for a, b in pairwise_logical_map(p, tv, map_broadcast=True).items():
                if a.is_broadcast == b.is_broadcast:
                    exact.union(a, b)
                else:
                    pairs.append((a, b))
    targets: dict[IterDomain, set[IterDomain]] = {}
    for a, b in pairs:
        bc, conc = (a, b) if a.is_broadcast else (b, a)
        targets.setdefault(exact.find(bc), set()).add(exact.find(conc))
    return any(len(t) > 1 for t in targets.values())


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


def _position_in(tv: TensorView, target: IterDomain, uf: _UnionFind) -> int:
    """Position in tv's logical domain (no reductions) of the id linked to `target`."""
    root = uf.find(target)
    ids = [i for i in tv.domain.logical if not i.is_reduction]
    for k, i in enumerate(ids):
        if uf.find(i) is root:
            return k
    return -1


# ---- the scheduler ----------------------------------------------------------------------------

def _crosses_view_p2c(reference: TensorView) -> bool:
    """Whether propagating from `reference` goes producer-to-consumer into a reshape.

    nvFuser's TransposeViewPropagator dry run; here it also matters because this
    engine's propagation cannot carry a loop schedule from a reshape's input onto
    its output.
    """
    seen = {reference}
    queue = [reference]
    while queue:
        src = queue.pop(0)
        for c in consumers_of(src):
            if c in seen:
                continue
            if isinstance(c.definition, ex.ViewOp):
                return True
            seen.add(c)
            queue.append(c)
        for p in producers_of(src):
            if p not in seen:
                seen.add(p)
                queue.append(p)
    return False


def _group_vectorize_factor(
    group: list[TensorView], info: SchedulerRuntimeInfo, inner_extent: int, max_factor: int
) -> tuple[int, str]:
    """Largest power of two up to `max_factor` that every tensor of the group allows.

    A local stand-in for nvFuser's getVectorizationFactorTransposeGroup: the inner
    extent (of reference1's tile dim) must divide by it, each input must be
    contiguous on its innermost dim (stride 1) and aligned to the vector's bytes.
    """
    # Vector widths are powers of two.
    factor = prev_pow2(max(max_factor, 1))
    why = [f"max {max_factor} -> {factor}"]
    while factor > 1 and inner_extent % factor:
        factor //= 2
    why.append(f"inner extent {inner_extent} -> {factor}")
    for tv in group:
        strides = info.strides(tv)
        if strides is not None:
            inner = innermost_alloc_id(tv)
            logical = [i for i in tv.domain.logical if not i.is_reduction]
            if inner in logical and strides[logical.index(inner)] != 1:
                factor = 1
                why.append(f"{tv.short_name} inner stride != 1 -> 1")
                continue
        size = tv.dtype.bits // 8 or 1
        align = info.alignment(tv)
        while factor > 1 and align % (factor * size):
            factor //= 2
    why.append(f"alignment -> {factor}")
    return factor, ", ".join(why)


@register
class TransposeScheduler(Scheduler):
    type = SchedulerType.transpose

    def reject_compile_time(self, fusion: Fusion) -> str | None:
        for tv in fusion.tensors():
            if tv.dtype.bits % 8:
                return "Does not support sub-byte data types."
        for e in fusion.exprs():
            if isinstance(e, (ex.SelectOp, ex.IndexSelectOp, ex.GatherOp)):
                inp = e.inputs[0]
                assert isinstance(inp, TensorView)
                ids = [i for i in inp.domain.logical if not i.is_reduction]
                dim = getattr(e, "dim", None)
                if dim is not None and innermost_alloc_id(inp) is ids[dim]:
                    name = type(e).__name__
                    return (f"{name} on inner dim is not supported by transpose scheduler yet."
                            "In transpose scheduler, we want to leave the select dim alone, "
                            "instead of creating a tile for it.")
        if has_reduction(fusion):
            return "no support for reduction ops"
        why = tools.memory_promotion_reason(fusion)
        if why is not None:
            return why
        if has_non_unique_broadcast(fusion):
            return "Broadcasting dimension might be broadcasting to multiple sizes."
        groups = group_inputs_outputs_by_inner_dim(fusion)
        if len(groups) < 2:
            return "cannot find two mismatching inner most dimensions"
        ref1, ref2 = find_reference_for(fusion, groups[0]), find_reference_for(fusion, groups[1])
        if ref1 is None or ref2 is None:
            return "cannot find two mismatching inner most dimensions"
        inner2 = innermost_alloc_id(ref2)
        if inner2 is None or _position_in(ref1, inner2, inner_dim_map(fusion)) < 0:
            return "cannot find two mismatching inner most dimensions"
        return None

    def _layout(self, fusion: Fusion) -> tuple[list[list[TensorView]], TensorView, TensorView, int, int]:
        groups = group_inputs_outputs_by_inner_dim(fusion)
        uf = inner_dim_map(fusion)
        ref1, ref2 = find_reference_for(fusion, groups[0]), find_reference_for(fusion, groups[1])
        assert ref1 is not None and ref2 is not None  # reject_compile_time found both
        i1, i2 = innermost_alloc_id(ref1), innermost_alloc_id(ref2)
        assert i1 is not None and i2 is not None
        return groups, ref1, ref2, _position_in(ref1, i1, uf), _position_in(ref1, i2, uf)

    def reject_runtime(self, fusion: Fusion, info: SchedulerRuntimeInfo) -> str | None:
        _, ref1, _, pos1, pos2 = self._layout(fusion)
        if pos1 < 0 or pos2 < 0:
            return ("Transpose scheduler requires exact mapping on inner most dimension "
                    "on reference tensor.")
        shape = info.sizes(ref1)
        n_elems = 1
        for s in shape:
            n_elems *= s
        tile_elems = DEFAULT_TILE_SIZE * DEFAULT_TILE_SIZE
        if info.device.sm_count * tile_elems > n_elems:
            return "Transpose scheduler does not perform well on small problem sizes."
        inner1, inner2 = shape[pos1], shape[pos2]
        if inner1 * inner2 < tile_elems:
            inner = inner1 * inner2
            for k in range(pos2 + 1, pos1):
                inner *= shape[k]
            if inner < tile_elems:
                return ("Inner transpose of small dimensions should be scheduled by the "
                        "pointwise scheduler because it provides better memory coalescing")
        if n_elems // inner1 < DEFAULT_TILE_SIZE or n_elems // inner2 < DEFAULT_TILE_SIZE:
            return ("Splitting of inner most dim for the creation of virtual inner most dim "
                    "is disabled due to indexing bug, skipping this case at runtime for now"
                    "See: https://github.com/csarofeen/pytorch/issues/1964")
        if any(isinstance(e, ex.ViewOp) for e in fusion.exprs()) and _crosses_view_p2c(ref1):
            return "transpose scheduler could potentially trigger incoherent transform propagation"
        return None

    def compute_heuristics(
        self, fusion: Fusion, info: SchedulerRuntimeInfo, trace: Trace | None = None
    ) -> TransposeParams:
        groups, ref1, ref2, pos1, pos2 = self._layout(fusion)
        shape = info.sizes(ref1)
        n_elems = 1
        for s in shape:
            n_elems *= s
        derivation: list[str] = [f"reference1 {ref1.short_name} shape {shape}, {n_elems} elements",
                                 f"innermost dim of group 1 at {pos1}, of group 2 at {pos2}"]
        io = [t for t in io_tensors(fusion)]
        max_dtype = max((t.dtype.bits // 8 for t in io), default=1) or 1
        t1 = t2 = _tile_size(shape[pos1], shape[pos2], n_elems, info.device.sm_count,
                             max_dtype, len(groups[1]), derivation)
        n_io = len(groups[0]) + len(groups[1])
        # nvFuser: 16 bytes per access, less when many tensors are unrolled (registers),
        # never below a full wave of tiles, never more than a warp per tile.
        max_unroll = -(-(16 // max_dtype) // max(prev_pow2(n_io) >> 2, 1))
        max_unroll = min(max_unroll, -(-n_elems // (info.device.sm_count * t1 * t2)))
        max_unroll = min(max_unroll, -(-(t1 * t2) // 32))
        derivation.append(f"max unroll/vectorize {max_unroll} (16 bytes / {max_dtype}-byte dtype, "
                          f"{n_io} io tensors, {info.device.sm_count} SMs)")
        v1, why1 = _group_vectorize_factor(groups[0], info, shape[pos1], max_unroll)
        v2, why2 = _group_vectorize_factor(groups[1], info, shape[pos2], max_unroll)
        derivation += [f"vectorize_factor1 {v1}: {why1}", f"vectorize_factor2 {v2}: {why2}"]
        prefetch = _l2_prefetch(groups, t1, t2, fusion)
        if prefetch:
            # A 64-wide bf16 tile row is 128 bytes: the prefetch brings in the neighbouring
            # tile's half of each 256-byte DRAM burst, which a later block then reads from L2.
            derivation.append(f"inputs {', '.join(prefetch)} read tile rows shorter than {L2_PREFETCH_BYTES} bytes: "
                              f"their loads prefetch {L2_PREFETCH_BYTES} bytes into L2")
        if shape[pos1] < t1 or shape[pos2] < t2:
            derivation.append("a transpose dim is smaller than the tile: nvFuser would build a "
                              "virtual inner-most dim; here the tile is predicated instead")
        swizzle = _swizzle_fits(t1, t2, v1, v2)
        derivation.append(
            f"swizzle the shared-memory tiles: {'yes' if swizzle else 'no'} (rows per thread {v1}, "
            f"{t1 // v1} row groups, {t2 // v2} vectors per row: equal powers of two are Xor-swizzled, "
            f"where a row spans a multiple of {BANK_ROW_BYTES} bytes)")
        params = TransposeParams(
            tag="Transpose heuristics", tile_size1=t1, tile_size2=t2, swizzle=swizzle,
            vectorize_factor1=v1, vectorize_factor2=v2, inner_most_dim1=pos1, inner_most_dim2=pos2,
            group1=tuple(t.short_name for t in groups[0]), group2=tuple(t.short_name for t in groups[1]),
            reference1=ref1.short_name, reference2=ref2.short_name, l2_prefetch=prefetch,
            index_type="int" if info.index_type().name == "Int32" else "int64_t",
        )
        bdimx = params.threads_per_block()
        derivation.append(f"threads per block {bdimx} = min({MAX_THREADS_PER_BLOCK} per 2048 tile elements, "
                          "tile elements / vector)")
        params = replace(params, lparams=LaunchParams(bdimx=bdimx), derivation=tuple(derivation))
        if trace is not None:
            for line in derivation:
                trace.event("heuristic", "transpose", line)
        return params

    def schedule(self, fusion: Fusion, params: HeuristicParams | None, trace: Trace | None = None) -> None:
        assert isinstance(params, TransposeParams)
        _schedule_transpose(fusion, params, trace)


def _tile_size(n1: int, n2: int, n_elems: int, sms: int, max_dtype: int, n_smem: int,
               derivation: list[str]) -> int:
    """The tile's side: larger tiles move more bytes per block where the tensor fills the
    SMs many times over."""
    for side, measured in ((HUGE_TILE_SIZE, max_dtype <= 2 and n_smem * HUGE_TILE_SIZE ** 2 * max_dtype
                            <= HUGE_TILE_SMEM), (LARGE_TILE_SIZE, True)):
        if measured and n1 >= side and n2 >= side and n_elems >= LARGE_TILE_WAVES * sms * side * side:
            # A larger tile keeps more bytes in flight per thread with fewer blocks: 64x64
            # tiles on 256 threads, against nvFuser's 32x32 on 128, and 128x128 on 1024
            # threads, which needs the swizzled shared-memory tile (unswizzled, its bank
            # conflicts make it slower than 64x64).
            derivation.append(f"both transposed dims >= {side} and at least {LARGE_TILE_WAVES} waves of "
                              f"{side}x{side} tiles: tiles {side}x{side} "
                              f"(nvFuser: {DEFAULT_TILE_SIZE}x{DEFAULT_TILE_SIZE})")
            return side
    return DEFAULT_TILE_SIZE


def _tile_and_flatten(ref1: TensorView, pos1: int, pos2: int, p: TransposeParams) -> None:
    """[..., I1, .., I2, ...] -> [BIDx, US(1), t1, t2] on reference1 (no reductions here)."""
    ref1.split(pos1, p.tile_size1)
    ref1.reorder({pos1 + 1: -1})
    ref1.split(pos2, p.tile_size2)
    ref1.reorder({pos2 + 1: -1})
    # [..., I1/t1, .., I2/t2, ..., t1, t2]: merge everything left of the tiles.
    while ref1.nloop > 3:
        ref1.merge(0, 1)
    ref1.split(0, 1)
    ref1.axis(0).parallelize(ParallelType.grid_x)
    ref1.axis(1).parallelize(ParallelType.unswitch)


def _schedule_tile(ref: TensorView, first: int, vec: int, threads: int) -> None:
    """Merge the two tile axes (`first` outer) and split [Unroll, TIDx, Vectorize]."""
    n = ref.nloop
    if first != n - 2:
        ref.reorder({n - 2: n - 1, n - 1: n - 2})
    ref.merge(n - 2)
    ref.split(n - 2, vec)
    ref.split(n - 2, threads)
    if vec > 1:
        ref.axis(-1).parallelize(ParallelType.vectorize)
    ref.axis(-2).parallelize(ParallelType.block_x)
    ref.axis(-3).parallelize(ParallelType.unroll)


def _swizzle_tile(s: TensorView, p: TransposeParams, threads: int, trace: Trace | None) -> None:
    """Group 2's tile schedule on a shared-memory tile [.., t1, t2], with its vectors of
    each row Xor-swizzled by the row's group of vectorize_factor1 rows.

    Group 1 reads the tile down its columns: a thread reads vectorize_factor1 rows of one
    column, and a warp's lanes read consecutive row groups. Where a row spans a multiple
    of 128 bytes, every row starts on the same bank and those reads conflict (8-way for
    64x64 bf16, 16-way for 128x128). Swizzling puts row group g's vector c at position
    c ^ g: the lanes' columns land in different vectors, so on different banks, while each
    thread of group 2 still writes whole vectors."""
    v1, v2 = p.vectorize_factor1, p.vectorize_factor2
    s.split(-2, v1)
    s.split(-1, v2)
    s.swizzle(SwizzleType.XOR, -4, -2)
    s.merge(-4)
    s.merge(-3)
    s.merge(-2)
    s.split(-1, v2)
    s.split(-2, threads)
    if v2 > 1:
        s.axis(-1).parallelize(ParallelType.vectorize)
    s.axis(-2).parallelize(ParallelType.block_x)
    s.axis(-3).parallelize(ParallelType.unroll)
    note_transform(trace, s.short_name, f"row groups of {v1} Xor-swizzle the {p.tile_size2 // v2} vectors of "
          f"{v2} in each tile row: group 1's column reads spread over the banks")


def _swizzle_fits(t1: int, t2: int, v1: int, v2: int) -> bool:
    """Whether the tile's row groups (of v1 rows) and its vectors per row (of v2) are equal
    powers of two, as an Xor swizzle of the two needs."""
    if t1 % v1 or t2 % v2 or t1 // v1 != t2 // v2:
        return False
    n = t2 // v2
    return n >= 2 and not n & (n - 1)


def _swizzled(s: TensorView, p: TransposeParams) -> bool:
    """Whether to swizzle shared tile `s`: asked for (and still fitting the tile after
    heuristic overrides), its rows start on one bank, and it holds the whole tile: its
    last two loop axes are iteration axes of the tile's sides. A tile axis of an
    expanded input (stride 0, say a [N, 1 ex H] statistic read against [N, H]) is a
    broadcast, its rows one element; a tensor without the other tile dim (a [B, S]
    statistic read against [B, S, H]) has one tile axis only."""
    return p.swizzle and _swizzle_fits(p.tile_size1, p.tile_size2, p.vectorize_factor1, p.vectorize_factor2) \
        and (p.tile_size2 * s.dtype.bits // 8) % BANK_ROW_BYTES == 0 \
        and s.nloop >= 2 and all(_is_tile_axis(s.axis(k), t) for k, t in ((-2, p.tile_size1), (-1, p.tile_size2)))


def _is_tile_axis(i: IterDomain, side: int) -> bool:
    return not i.is_broadcast and i.extent.is_const and i.extent.value == side


def _l2_prefetch(groups: list[list[TensorView]], t1: int, t2: int, fusion: Fusion) -> tuple[str, ...]:
    """Fusion inputs (read in tile rows of t1 elements for group 1, t2 for group 2) whose rows
    are shorter than L2_PREFETCH_BYTES; none that is also an output."""
    names = []
    for group, row in ((groups[0], t1), (groups[1], t2)):
        for tv in group:
            if tv in fusion.inputs and tv not in fusion.outputs and row * tv.dtype.bits // 8 < L2_PREFETCH_BYTES:
                names.append(tv.short_name)
    return tuple(names)


def _inputs_missing_reference_axes(fusion: Fusion, ref: TensorView) -> list[TensorView]:
    """Inputs without a concrete axis for some of `ref`'s (a [N] weight or a [B, M]
    statistic of a [B, M, N] transpose). Their caches would run inside the reference's
    tile loops, promoted through the broadcast, on axes of their own: group 1's vector,
    or, in shared memory for group 2, a tile that lacks one of its sides. Neither can be
    indexed there (as for the pointwise scheduler's uncacheable_inputs), so such inputs
    are read from global memory by their consumers."""
    inputs = [t for t in fusion.inputs if isinstance(t, TensorView) and fusion.uses_of(t)]
    present = tools.dims_present(ref, inputs)
    n = len([i for i in ref.domain.logical if not i.is_reduction])
    return [t for t in inputs if len(present[t]) < n]


def _schedule_transpose(fusion: Fusion, p: TransposeParams, trace: Trace | None) -> None:
    groups = group_inputs_outputs_by_inner_dim(fusion)
    group1, group2 = groups[0], groups[1]
    ref1, ref2 = find_reference_for(fusion, group1), find_reference_for(fusion, group2)
    assert ref1 is not None and ref2 is not None  # reject_compile_time found both
    uf = inner_dim_map(fusion)
    i1, i2 = innermost_alloc_id(ref1), innermost_alloc_id(ref2)
    assert i1 is not None and i2 is not None
    pos1, pos2 = _position_in(ref1, i1, uf), _position_in(ref1, i2, uf)

    # Inputs that tools.cache_inputs leaves uncached (global-only tensors, seeds 000
    # and 004) have no cache, so none of their consumers may be put in shared memory.
    why = ("it lacks an axis of the reference, and its cache could not be indexed in the tile's "
           "loops; its consumers read it from global memory")
    uncached = dict.fromkeys(_inputs_missing_reference_axes(fusion, ref1), why)
    made = tools.cache_inputs(fusion, trace=trace, unindexable=uncached)
    cached_inputs = {c.definition.inputs[0]: [c] for c in made if c.definition is not None}
    outputs_before = [o for o in fusion.outputs if isinstance(o, TensorView)]
    tools.cache_and_fork_outputs(fusion, trace=trace)
    # cache_fork puts a new tensor among the outputs; keep the groups on what is an output now.
    renamed = dict(zip(outputs_before, [o for o in fusion.outputs if isinstance(o, TensorView)]))
    group1 = [renamed.get(t, t) for t in group1]
    group2 = [renamed.get(t, t) for t in group2]
    ref1, ref2 = renamed.get(ref1, ref1), renamed.get(ref2, ref2)

    # Shared memory holds group 2's side of the tile: its inputs' caches (a separate
    # cache when the existing one feeds more than one consumer, as nvFuser) and the
    # local producers of its outputs. An input's cache is written as group 2 reads it and
    # read in group 1's tile order; an output's producer is written by group 1's side
    # (its operands are group 1's registers) and read in group 2's order, so it takes
    # group 1's schedule, as nvFuser's cached outputs do (step 4 propagates to them).
    in_smem: list[TensorView] = []
    out_smem: list[TensorView] = []
    for tv in group2:
        if tv in fusion.inputs:
            caches = cached_inputs.get(tv) or []
            if not caches:
                continue
            cache = caches[0]
            if len(consumers_of(cache)) > 1:
                cache = tv.cache_after()
            in_smem.append(cache)
        elif tv.definition is not None:
            prod = producers_of(tv)
            if len(prod) == 1 and isinstance(tv.definition, ex.LoadStoreOp) and prod[0] not in fusion.inputs:
                out_smem.append(prod[0])
    smem = [*in_smem, *out_smem]
    for s in smem:
        s.set_memory_type(MemoryType.Shared)
        note_transform(trace, s.short_name, "shared memory: group 2's side of the transpose tile")
    group2_and_smem = [*group2, *in_smem]

    # Step 1-2: tiles on reference1, propagated everywhere.
    _tile_and_flatten(ref1, pos1, pos2, p)
    tools.propagate(ref1)
    # Parallel types cross slices and pads (as in every step below): an output on the other
    # side of one from the reference would keep none, its loop nest run whole by every thread.
    tools.parallelize_all_like(ref1, across_resize=True)
    note_transform(trace, ref1.short_name, f"tiled {p.tile_size1}x{p.tile_size2} at dims {pos1} and {pos2}, "
          "outer dims merged into BIDx with an unswitch axis")

    threads = p.lparams.bdimx
    everything = fusion.tensors()
    # Step 3: group 2 merges the tile as (t1, t2): its innermost dim t2 is fastest.
    # A swizzled tile takes its own schedule (a swizzle is not propagated).
    swizzled = [s for s in in_smem if _swizzled(s, p)]
    _schedule_tile(ref2, ref2.nloop - 2, p.vectorize_factor2, threads)
    except1 = [t for t in everything if t not in group1 and t not in swizzled]
    tools.propagate(ref2, except1)
    group2_like = [t for t in group2_and_smem if t not in swizzled]
    tools.parallelize_all_like(ref2, selected=group2_like,
                               parallel_types=[ParallelType.block_x, ParallelType.grid_x,
                                               ParallelType.unswitch, ParallelType.unroll],
                               across_resize=True)
    if p.vectorize_factor2 > 1:
        tools.parallelize_all_like(ref2, selected=group2_like,
                                   parallel_types=[ParallelType.vectorize])
    for s in swizzled:
        _swizzle_tile(s, p, threads, trace)

    # Step 4: group 1 and everything between merge the tile as (t2, t1).
    _schedule_tile(ref1, ref1.nloop - 1, p.vectorize_factor1, threads)
    except2 = [t for t in everything if t not in group2_and_smem]
    tools.propagate(ref1, except2)
    tools.parallelize_all_like(ref1, selected=except2,
                               parallel_types=[ParallelType.block_x, ParallelType.grid_x,
                                               ParallelType.unswitch], across_resize=True)
    # Unroll and vectorize only at global memory: group 1 and its inputs' caches.
    g1_caches = [c for t in group1 if t in fusion.inputs for c in (cached_inputs.get(t) or [])[:1]]
    g1_io = [*group1, *g1_caches]
    tools.parallelize_all_like(ref1, selected=g1_io, parallel_types=[ParallelType.unroll])
    if p.vectorize_factor1 > 1:
        tools.parallelize_all_like(ref1, selected=g1_io, parallel_types=[ParallelType.vectorize])
    note_transform(trace, ref1.short_name, f"group 1 tile (t2, t1) -> [Unroll, TIDx {threads}, "
          f"Vectorize {p.vectorize_factor1}]")
    note_transform(trace, ref2.short_name, f"group 2 tile (t1, t2) -> [Unroll, TIDx {threads}, "
          f"Vectorize {p.vectorize_factor2}]")

    for tv in fusion.inputs:
        if isinstance(tv, TensorView) and tv.short_name in p.l2_prefetch:
            tv.l2_prefetch = L2_PREFETCH_BYTES
            note_transform(trace, tv.short_name, f"vector loads prefetch {L2_PREFETCH_BYTES} bytes into L2")

    # Step 5: fusion inputs are read where their consumers say; they carry no schedule.
    for tv in (ref1, ref2):
        if tv in fusion.inputs:
            for i in tv.domain.loop:
                if not i.parallel_type.is_device_dim:
                    i.parallelize(ParallelType.serial)
    tools.inline_most(fusion)
    for s in smem:
        s.set_allocation_as_loop()
        note_transform(trace, s.short_name, f"allocation domain from the loop domain (ca_pos {s.compute_at_pos}): "
              "a block allocates the ids right of ca_pos, one tile")


__all__ = ["TransposeParams", "TransposeScheduler", "group_inputs_outputs_by_inner_dim",
           "has_non_unique_broadcast",
           "find_reference_for", "innermost_alloc_id", "inner_dim_map", "io_tensors"]
