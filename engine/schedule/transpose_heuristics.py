"""The transpose scheduler's heuristics (TransposeParams): the tile size, each group's
vectorization factor, the threads per block, the inputs that prefetch into L2, and
whether the shared-memory tiles are swizzled.

Vectorization factors are computed here per group (see _group_vectorize_factor):
engine.analysis.vectorize answers for one reference's innermost region, while each
transpose group needs its own inner dim's factor.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from engine.ir.fusion import Fusion
from engine.ir.tensorview import TensorView
from engine.schedule.params import HeuristicParams, LaunchParams
from engine.schedule.runtime_info import SchedulerRuntimeInfo
from engine.schedule.tools import prev_pow2
from engine.schedule.transpose_groups import innermost_alloc_id, io_tensors, transpose_layout
from engine.trace import Trace

MAX_THREADS_PER_BLOCK = 128  # nvFuser's TransposeParams::getMaxThreadsPerBlock
DEFAULT_TILE_SIZE = 32  # nvFuser's TransposeParams::getDefaultTileSize
LARGE_TILE_SIZE = 64  # this engine's tiles for large transposes (see _tile_size)
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
    # (see engine.schedule.transpose), kept so that the printout has nvFuser's shape.
    split_before_tiling: tuple[tuple[int, int], ...] = ()
    dims_merged_with_1: tuple[int, ...] = ()
    dims_merged_with_2: tuple[int, ...] = ()
    group1: tuple[str, ...] = ()
    group2: tuple[str, ...] = ()
    reference1: str = ""
    reference2: str = ""
    # Inputs whose vector loads prefetch L2_PREFETCH_BYTES into L2 (engine-only, not nvFuser's).
    l2_prefetch: tuple[str, ...] = ()
    # Xor-swizzle the shared-memory tiles (engine-only; see transpose_schedule._swizzle_tile).
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


def swizzle_fits(t1: int, t2: int, v1: int, v2: int) -> bool:
    """Whether the tile's row groups (of v1 rows) and its vectors per row (of v2) are equal
    powers of two, as an Xor swizzle of the two needs."""
    if t1 % v1 or t2 % v2 or t1 // v1 != t2 // v2:
        return False
    n = t2 // v2
    return n >= 2 and not n & (n - 1)


def _l2_prefetch(groups: list[list[TensorView]], t1: int, t2: int, fusion: Fusion) -> tuple[str, ...]:
    """Fusion inputs (read in tile rows of t1 elements for group 1, t2 for group 2) whose rows
    are shorter than L2_PREFETCH_BYTES; none that is also an output."""
    names = []
    for group, row in ((groups[0], t1), (groups[1], t2)):
        for tv in group:
            if tv in fusion.inputs and tv not in fusion.outputs and row * tv.dtype.bits // 8 < L2_PREFETCH_BYTES:
                names.append(tv.short_name)
    return tuple(names)


def compute_transpose_heuristics(
    fusion: Fusion, info: SchedulerRuntimeInfo, trace: Trace | None = None
) -> TransposeParams:
    """TransposeParams for `fusion` at these sizes; the derivation goes to `trace`."""
    groups, ref1, ref2, pos1, pos2 = transpose_layout(fusion)
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
    swizzle = swizzle_fits(t1, t2, v1, v2)
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
