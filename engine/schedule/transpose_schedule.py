"""The transpose scheduler's transforms, as nvFuser's non-TMA transpose schedule.

Tiles are made on reference1 at the positions of both innermost dims: [..., I1/t1, ..,
I2/t2, ..., t1, t2]; the outer dims are merged into one BIDx axis, with an Unswitch axis
of 1 inside it, and propagated to the whole fusion. Group 2 (and the caches of its inputs,
which go to shared memory) then merges the tile as (t1, t2) and group 1 and everything
else as (t2, t1), each split as [Unroll, TIDx, Vectorize]. The shared-memory cache is
where the two thread layouts meet: it is computed at the block level (ca_pos 2) and read
back transposed. Its allocation domain is set from its loop domain (seed 001's rule):
what a block allocates is then the ids right of ca_pos, i.e. one t1 x t2 tile.
"""

from __future__ import annotations

from engine.ir import exprs as ex
from engine.ir.fusion import Fusion
from engine.ir.iterdomain import IterDomain, ParallelType, SwizzleType
from engine.ir.logical_map import consumers_of, producers_of
from engine.ir.tensorview import MemoryType, TensorView
from engine.schedule import tools
from engine.schedule.tools import note_transform
from engine.schedule.transpose_groups import (
    find_reference_for,
    group_inputs_outputs_by_inner_dim,
    inner_dim_map,
    innermost_alloc_id,
    position_in,
)
from engine.schedule.transpose_heuristics import (
    BANK_ROW_BYTES,
    L2_PREFETCH_BYTES,
    TransposeParams,
    swizzle_fits,
)
from engine.trace import Trace


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


def _swizzled(s: TensorView, p: TransposeParams) -> bool:
    """Whether to swizzle shared tile `s`: asked for (and still fitting the tile after
    heuristic overrides), its rows start on one bank, and it holds the whole tile: its
    last two loop axes are iteration axes of the tile's sides. A tile axis of an
    expanded input (stride 0, say a [N, 1 ex H] statistic read against [N, H]) is a
    broadcast, its rows one element; a tensor without the other tile dim (a [B, S]
    statistic read against [B, S, H]) has one tile axis only."""
    return p.swizzle and swizzle_fits(p.tile_size1, p.tile_size2, p.vectorize_factor1, p.vectorize_factor2) \
        and (p.tile_size2 * s.dtype.bits // 8) % BANK_ROW_BYTES == 0 \
        and s.nloop >= 2 and all(_is_tile_axis(s.axis(k), t) for k, t in ((-2, p.tile_size1), (-1, p.tile_size2)))


def _is_tile_axis(i: IterDomain, side: int) -> bool:
    return not i.is_broadcast and i.extent.is_const and i.extent.value == side


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


def schedule_transpose(fusion: Fusion, p: TransposeParams, trace: Trace | None) -> None:
    groups = group_inputs_outputs_by_inner_dim(fusion)
    group1, group2 = groups[0], groups[1]
    ref1, ref2 = find_reference_for(fusion, group1), find_reference_for(fusion, group2)
    assert ref1 is not None and ref2 is not None  # TransposeScheduler.reject_compile_time found both
    uf = inner_dim_map(fusion)
    i1, i2 = innermost_alloc_id(ref1), innermost_alloc_id(ref2)
    assert i1 is not None and i2 is not None
    pos1, pos2 = position_in(ref1, i1, uf), position_in(ref1, i2, uf)

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
