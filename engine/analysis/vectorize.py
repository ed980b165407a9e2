"""How wide the innermost loop of a pointwise schedule may be vectorized.

The analysis follows nvFuser's vectorize_helper in spirit, reduced to this engine:

1. The reference tensor's innermost logical axes (from the break point on, broadcast
   axes of extent 1 left out) form a *region*: the elements one vectorized loop walks.
2. The region is carried to every tensor of the fusion, breadth-first from the
   reference: through pointwise, broadcast, permute, slice/pad/cat edges by the logical
   map (broadcast against concrete axes does not map: a broadcast input repeats
   values, it is not contiguous along that axis); through a reshape by element count
   (a reshape keeps row-major order, so the innermost E elements of one side are the
   innermost E elements of the other: whole axes while their extent product divides
   E, then the gcd with the next axis as a partial axis: a per-head norm's [N, H, D]
   reference reaches its [N, H*D] input as D elements of the H*D axis, a region of a
   partial axis alone, which still makes the input vectorizable). A block quantization maps
   its input to the quantized output; its block scales (K / 16 innermost) do not
   continue the region.
3. Each fusion input and output whose innermost allocation axis starts the region is
   vectorizable. Its contiguous inner extent is the product of region axes met in
   allocation order, innermost first, while each is contiguous (declared contiguity,
   and for inputs the runtime stride equals the elements inside it). Its factor is the
   largest power of two that divides that extent and fits 16 bytes of its dtype,
   lowered until its pointer alignment (SchedulerRuntimeInfo.alignment) and every
   outer stride are multiples of the vector. Tensors whose innermost axis is not the
   region's (a transposed input, a broadcast repeated along it), or whose innermost axis
   steps over elements (a stride above one: a view of every other element), are read
   unvectorized and do not limit the factor.
4. Resize (pad, slice, cat's pads): a vector must not straddle the boundary between
   the padded and the original elements. A resized axis with `inner` region elements
   inside it has boundaries at left*inner, (left+extent)*inner, so the factor must
   divide gcd(|left|*inner, extent*inner, |right|*inner). An innermost resized axis
   (inner = 1) gives nvFuser's gcd with the pad offsets; a resized outer axis over a
   large inner extent does not limit the factor (seed 002's RoPE concat).

The factor is the minimum over the vectorizable tensors and the resize constraints.
Every step is recorded in `derivation`.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from engine.ir import exprs as ex
from engine.ir.fusion import Fusion
from engine.ir.iterdomain import IterDomain, Resize, transforms_between
from engine.ir.logical_map import consumers_of, logical_map, producers_of
from engine.ir.tensorview import TensorView

if TYPE_CHECKING:
    # Annotations only: the scheduler (a layer above) hands its runtime info in.
    from engine.schedule.runtime_info import SchedulerRuntimeInfo

VECTOR_BYTES = 16


@dataclass
class _Region:
    """Region axes of one tensor, innermost first, and a partial next axis: `partial`
    elements of `partial_id` continue the region (after a reshape projection)."""

    ids: list[IterDomain]
    partial_id: IterDomain | None = None
    partial: int = 1


@dataclass(frozen=True)
class VectorizeResult:
    factor: int
    per_tensor: dict[str, int] = field(default_factory=dict)
    vectorizable: tuple[TensorView, ...] = ()
    derivation: tuple[str, ...] = ()
    # Inputs and outputs the region does not reach: none of their axes is the vector's.
    apart: tuple[TensorView, ...] = ()


def _size1(i: IterDomain) -> bool:
    return i.is_broadcast and i.expanded_extent is None


def _inner_logical(tv: TensorView) -> list[IterDomain]:
    """Logical axes innermost first, without reductions and extent-1 broadcasts."""
    return [i for i in reversed(tv.domain.logical) if not i.is_reduction and not _size1(i)]


def _pow2_dividing(n: int, cap: int) -> int:
    v = 1
    while v * 2 <= cap and n % (v * 2) == 0:
        v *= 2
    return v


def _translate(region: _Region, m: dict[IterDomain, IterDomain]) -> _Region:
    out: list[IterDomain] = []
    for i in region.ids:
        j = m.get(i)
        if j is None or _size1(j):
            return _Region(out)
        out.append(j)
    pid = m.get(region.partial_id) if region.partial_id is not None else None
    if pid is None:
        return _Region(out)
    return _Region(out, pid, region.partial)


def _project_reshape(region: _Region, src: TensorView, dst: TensorView,
                     info: SchedulerRuntimeInfo) -> _Region:
    """Carry a region across a reshape by element count (row-major order is kept)."""
    inner = _inner_logical(src)
    n = 0
    while n < len(region.ids) and n < len(inner) and region.ids[n] is inner[n]:
        n += 1
    if n == 0 and not (region.ids == [] and inner and region.partial_id is inner[0]):
        return _Region([])
    e = 1
    for i in region.ids[:n]:
        e *= info.extent(i)
    if n == len(region.ids) and region.partial_id is not None and n < len(inner) \
            and region.partial_id is inner[n]:
        e *= region.partial
    ids: list[IterDomain] = []
    cum = 1
    for i in _inner_logical(dst):
        ext = info.extent(i)
        if e % (cum * ext) == 0:
            ids.append(i)
            cum *= ext
            continue
        g = math.gcd(e // cum, ext)
        return _Region(ids, i, g) if g > 1 else _Region(ids)
    return _Region(ids)


def _edge(src: TensorView, dst: TensorView, region: _Region,
          info: SchedulerRuntimeInfo) -> _Region:
    if dst in consumers_of(src):
        producer, consumer = src, dst
    else:
        producer, consumer = dst, src
    expr = consumer.definition
    if isinstance(expr, ex.ViewOp):
        return _project_reshape(region, src, dst, info)
    pc = logical_map(producer, consumer, map_broadcast=False)
    m = pc if src is producer else {c: p for p, c in pc.items()}
    return _translate(region, m)


def _resize_constraints(tv: TensorView, region: _Region, info: SchedulerRuntimeInfo,
                        lines: list[str]) -> int:
    """gcd of the element offsets of every resize boundary inside the region (0: none)."""
    dom = tv.domain
    if dom.root is None:
        return 0
    g_all = 0
    order = [*region.ids, *([region.partial_id] if region.partial_id is not None else [])]
    for t in transforms_between(dom.root, dom.logical):
        if not isinstance(t, Resize) or t.out not in order:
            continue
        k = order.index(t.out)
        inner = 1
        for i in region.ids[:k]:
            inner *= info.extent(i)
        left, right = abs(info.value(t.left)), abs(info.value(t.right))
        ext = info.extent(t.in_id)
        g = math.gcd(math.gcd(left * inner, ext * inner), right * inner)
        lines.append(
            f"{tv.short_name}: resize {t.in_id} by {left} and {right} over {inner} inner "
            f"element(s): vector must divide gcd({left * inner}, {ext * inner}, {right * inner}) = {g}"
        )
        g_all = math.gcd(g_all, g)
    return g_all


def _strides_in_alloc(tv: TensorView, info: SchedulerRuntimeInfo) -> list[int | None]:
    """Runtime strides of an input in allocation order (None for non-inputs)."""
    strides = info.strides(tv)
    alloc = [i for i in tv.domain.maybe_allocation if not i.is_reduction]
    if strides is None:
        return [None] * len(alloc)
    logical = [i for i in tv.domain.logical if not i.is_reduction]
    return [strides[logical.index(i)] if i in logical else None for i in alloc]


def _tensor_factor(tv: TensorView, region: _Region, info: SchedulerRuntimeInfo,
                   lines: list[str]) -> int | None:
    """This tensor's largest vector; None when its innermost axis is not the region's, 0 when
    it steps over elements (both read unvectorized, without limiting the others)."""
    dom = tv.domain
    pairs = [(i, c) for i, c in zip(dom.maybe_allocation, dom.contiguity) if not i.is_reduction]
    strides = _strides_in_alloc(tv, info)
    rows = [(i, c, s) for (i, c), s in zip(pairs, strides) if not _size1(i)]
    rows.reverse()  # innermost first
    if not rows or rows[0][0] is not (region.ids[0] if region.ids else region.partial_id):
        return None
    i0, c0, s0 = rows[0]
    if c0 is not True and s0 is not None and s0 != 1 and info.extent(i0) > 1:
        # The innermost axis steps over elements (a view of every other element): read one
        # element at a time, as a transposed input; the rest keep their vectors.
        lines.append(f"{tv.short_name}: innermost axis {i0} has stride {s0}; read unvectorized")
        return 0
    extent = 1
    k = 0
    used = 0
    why = "all region axes contiguous"
    for i, c, s in rows:
        ext = info.extent(i)
        contiguous = c is True and (s is None or ext == 1 or s == extent) and not i.is_broadcast
        if k < len(region.ids):
            if i is not region.ids[k]:
                why = f"{i} is not the next region axis"
                break
            if not contiguous:
                why = f"{i} is not contiguous"
                break
            extent *= ext
            k += 1
            used += 1
        elif i is region.partial_id and region.partial > 1 and contiguous:
            extent *= region.partial
            used += 1
            why = f"{region.partial} elements of {i} continue the region"
            break
        else:
            break
    bits = tv.dtype.bits
    cap = max(1, VECTOR_BYTES * 8 // bits) if bits else 1
    v = _pow2_dividing(extent, cap)
    notes = [f"contiguous inner extent {extent} ({why})",
             f"{VECTOR_BYTES} bytes of {tv.dtype.cuda_name} -> at most {cap}",
             f"largest power of two dividing the extent -> {v}"]
    align = info.alignment(tv)
    while v > 1 and v * bits > align * 8:
        v //= 2
    notes.append(f"pointer alignment {align} bytes -> {v}")
    # A size-1 axis is never stepped over, so its stride (arbitrary in torch) does not matter.
    outer = [s for (i, _, s) in rows[used:] if s is not None and info.extent(i) != 1]
    while v > 1 and any(s % v for s in outer):
        v //= 2
    if outer:
        notes.append(f"outer strides {outer[::-1]} -> {v}")
    lines.append(f"{tv.short_name}: " + "; ".join(notes))
    return v


def vectorization_factor(
    fusion: Fusion,
    reference: TensorView,
    info: SchedulerRuntimeInfo,
    break_point: int = 0,
    exclude: Collection[TensorView] = (),
    max_factor: int | None = None,
    axes: Sequence[IterDomain] | None = None,
) -> VectorizeResult:
    """The vector width (elements) for the innermost loop of a schedule of `reference`
    whose axes from `break_point` on are merged into that loop; `axes`: the reference's
    axes in the order the schedule merges them (default: logical order)."""
    lines: list[str] = []
    ordered = list(axes) if axes is not None else [i for i in reference.domain.logical if not i.is_reduction]
    ref_ids = ordered[break_point:]
    ref_region = _Region([i for i in reversed(ref_ids) if not _size1(i)])
    lines.append(
        f"reference {reference.short_name}, break point {break_point}: region "
        + (", ".join(str(i) for i in reversed(ref_region.ids)) or "(empty)")
    )
    regions: dict[TensorView, _Region] = {reference: ref_region}
    queue = [reference]
    while queue:
        src = queue.pop(0)
        for nb in [*consumers_of(src), *producers_of(src)]:
            if nb in regions:
                continue
            r = _edge(src, nb, regions[src], info)
            if not r.ids and r.partial <= 1:
                continue
            regions[nb] = r
            queue.append(nb)

    factor = 64  # above any dtype's 16-byte vector; the tensors below limit it
    g_resize = 0
    for tv, r in regions.items():
        g_resize = math.gcd(g_resize, _resize_constraints(tv, r, info, lines))

    io: list[TensorView] = []
    for v in [*fusion.inputs, *fusion.outputs]:
        if isinstance(v, TensorView) and v not in io and v not in exclude:
            io.append(v)
    per: dict[str, int] = {}
    vectorizable: list[TensorView] = []
    apart = tuple(tv for tv in io if tv not in regions)
    for tv in io:
        r = regions.get(tv)
        f = _tensor_factor(tv, r, info, lines) if r is not None else None
        if f is None:
            lines.append(f"{tv.short_name}: innermost axis is not the reference's; read unvectorized")
        if not f:
            continue
        per[tv.short_name] = f
        vectorizable.append(tv)
        factor = min(factor, f)
    if not vectorizable:
        factor = 1
    if g_resize:
        factor = math.gcd(factor, g_resize)
        lines.append(f"resize boundaries -> {factor}")
    if max_factor is not None and factor > max_factor:
        factor = _pow2_dividing(factor, max_factor)
        lines.append(f"capped at {max_factor} -> {factor}")
    lines.append(f"vectorization factor {factor}")
    return VectorizeResult(factor, per, tuple(vectorizable), tuple(lines), apart)

