"""The resize scheduler's transforms: every tensor's loop domain built from its alignment
with the reference (engine.schedule.resize_walk), flattened and split as the reference:
[BIDx, TIDx(128), V]; vectorized where global memory is touched, and inlined.
"""

from __future__ import annotations

from engine.errors import ScheduleError
from engine.ir.fusion import Fusion
from engine.ir.iterdomain import IterDomain, ParallelType
from engine.ir.logical_map import consumers_of
from engine.ir.tensorview import TensorView
from engine.ir.verify import verify
from engine.schedule import tools
from engine.schedule.resize_alignment import Alignment, ConflictError
from engine.schedule.resize_axes import LoopBuilder, derives_from_inner
from engine.schedule.resize_components import component_leads
from engine.schedule.resize_exclusive import make_resizes_exclusive
from engine.schedule.resize_heuristics import BDIMX, MAX_GDIMX, ResizeParams
from engine.schedule.resize_recompute import recompute_for
from engine.schedule.resize_reference import reference_tensor
from engine.schedule.resize_walk import align
from engine.schedule.tools import note_transform
from engine.trace import Trace


def _apply_alignment(tv: TensorView, al: Alignment, n_ref: int) -> list[int]:
    """Resize, split, merge and reorder tv's loop domain into the reference's axis order.

    Returns the reference axes tv has, in order; tv's own unmapped axes go last.
    """
    builder = LoopBuilder(tv)
    for k in sorted(al):
        al[k] = (builder.build(al[k]), ())
    verify(tv)
    present = [k for k in range(n_ref) if k in al]
    mapped = [al[k][0] for k in present]
    rest = [i for i in tv.domain.loop if i not in mapped]
    order = [tv.domain.loop.index(i) for i in [*mapped, *rest]]
    if order != list(range(tv.nloop)):
        tv.reorder(order)
    return present


def _private_caches(fusion: Fusion, tv: TensorView, trace: Trace | None) -> None:
    """One cache of input `tv` per op that reads it: its readers need it under different
    resizes (shifted by a slice or pad), which one cache could not serve, and each cache
    is then a (vectorizable) copy aligned like its only reader."""
    uses = fusion.uses_of(tv)
    if len(uses) < 2 or tools.read_by_resize(fusion, tv) or tools.global_only_keep(fusion)(tv):
        return
    try:
        cache = tv.cache_after()
    except ScheduleError as e:
        note_transform(trace, tv.short_name, f"input not cached: {e}")
        return
    readers = [c for u in uses for c in u.outputs if isinstance(c, TensorView)]
    for reader in readers[1:]:
        recompute_for(fusion, cache, reader)
    note_transform(trace, tv.short_name, f"input cached once per reader ({len(readers)}): they need it "
          "under different resizes")


def schedule_resize(fusion: Fusion, p: ResizeParams, trace: Trace | None) -> None:
    # Inputs read by a slice or pad stay in global memory, read where the op needs them
    # (tools.cache_inputs, as nvFuser's cacheInputs); inputs whose readers need them under
    # different resizes get a cache per reader.
    ref = reference_tensor(fusion)
    assert ref is not None
    shared: set[TensorView] = set()
    apart = False
    try:
        make_resizes_exclusive(fusion, ref, trace, shared)
    except ConflictError as c:
        # As the verdict did: each component aligned with its own lead.
        found = component_leads(fusion, ref, trace, shared)
        apart = True
        note_transform(trace, ref.short_name, f"aligned apart: {len(found)} parts that meet only at fusion "
                       f"inputs ({', '.join(t.short_name for t, _ in found)}), each with its own lead, as "
                       f"one alignment fails ({c})")
    tools.cache_inputs(fusion, keep=lambda t: t in shared, trace=trace)
    for tv in [v for v in fusion.inputs if v in shared]:
        _private_caches(fusion, tv, trace)
    tools.cache_and_fork_outputs(fusion, trace=trace)
    ref = reference_tensor(fusion)
    assert ref is not None
    alignment = align(fusion, ref, through_inputs=not apart)
    vec = p.vectorization_factor
    inputs = [v for v in fusion.inputs if isinstance(v, TensorView)]
    # Private copies of a producer without inputs (a `full` sliced twice, made exclusive
    # above) can leave an output in a component of its own, which the reference's walk
    # never reaches: it is aligned with itself, else every thread would write it whole.
    components = [(ref, alignment)]
    reached = set(alignment)
    for out in fusion.outputs:
        if isinstance(out, TensorView) and out not in reached and out not in inputs:
            own = align(fusion, out, through_inputs=not apart)
            components.append((out, own))
            reached |= own.keys()
            note_transform(trace, out.short_name, f"shares no tensor with the reference {ref.short_name}: "
                  "its tensors are aligned with it")
    scheduled: list[TensorView] = []
    for lead, tv, al in [(lead, tv, al) for lead, found in components for tv, al in found.items()]:
        if tv in inputs:
            continue
        present = _apply_alignment(tv, al, lead.ndim)
        n = len(present)
        # [ref axes..., own axes...]: vectorize split of the innermost reference axis (in the
        # reference's component, whose tensors the heuristic's factor was found for, and in
        # the components aligned apart, whose inputs and outputs it was found for as well).
        vectorized = (vec > 1 and (lead is ref or apart) and bool(present)
                      and present[-1] == lead.ndim - 1)
        if vectorized:
            tv.split(n - 1, vec)
        # Flatten the reference axes (all but the vector) into one.
        for _ in range(n - 1):
            tv.merge(0, 1)
        if n >= 1:
            tv.split(0, BDIMX)
            tv.axis(1).parallelize(ParallelType.block_x)
            if p.split_grid_x_dim:
                tv.split(0, MAX_GDIMX)
                tv.axis(1).parallelize(ParallelType.grid_x)
            else:
                tv.axis(0).parallelize(ParallelType.grid_x)
        scheduled.append(tv)
        note_transform(trace, tv.short_name, "aligned with the reference "
              f"{lead.short_name} (resizes moved onto its loop domain) and scheduled "
              f"[BIDx, TIDx({BDIMX})" + (f", V({vec})]" if vectorized else "]"))
    if vec > 1:
        # Vectorize where global memory is touched: input caches (or the slice/pad
        # that reads an input directly) and outputs, when their innermost axis is
        # the reference's.
        targets: list[TensorView] = []
        for v in fusion.outputs:
            if isinstance(v, TensorView) and v not in inputs:
                targets.append(v)
        for i in inputs:
            targets += [c for c in consumers_of(i) if c not in targets]
        owners = {tv: (lead, al) for lead, found in components[:None if apart else 1] for tv, al in found.items()}
        for tv in targets:
            lead, al = owners.get(tv, (ref, None))
            if al is None or tv not in scheduled:
                continue
            k = lead.ndim - 1
            logical = [i for i in tv.domain.logical if not i.is_reduction]
            node = al[k][0] if k in al else None
            # Through a merge (the reference's axis is a reshape of several of tv's) only
            # where the analysis showed tv's innermost run holds whole vectors.
            whole = all(n in p.contiguous for n in _globals_of(fusion, tv, inputs))
            if isinstance(node, IterDomain) and logical and derives_from_inner(node, logical[-1], whole):
                tv.axis(_vec_axis(tv)).parallelize(ParallelType.vectorize)
                note_transform(trace, tv.short_name, f"vectorized by {vec}")
    tools.inline_most(fusion)


def _globals_of(fusion: Fusion, tv: TensorView, inputs: list[TensorView]) -> list[str]:
    """The global tensors whose memory tv's vector touches: the inputs it reads, and tv
    itself where it is an output."""
    d = tv.definition
    names = [v.short_name for v in (d.inputs if d is not None else ()) if v in inputs]
    return names + ([tv.short_name] if tv in fusion.outputs else [])


def _vec_axis(tv: TensorView) -> int:
    """Position of the vectorize split's inner axis: right after the TIDx axis."""
    for k, i in enumerate(tv.domain.loop):
        if i.parallel_type == ParallelType.block_x:
            return k + 1
    raise ScheduleError(f"{tv.short_name}: no TIDx axis to vectorize after")
