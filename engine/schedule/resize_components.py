"""The resize scheduler's parts that meet only at fusion inputs, each aligned with a lead
of its own.

The alignment walk goes from the reference through every edge, fusion inputs included:
one part of a fusion reaches another through an input they both read (a RoPE's q and k
rotations through one cos and sin). Entered from an input's plain index space, the other
part is then walked from its producers towards its slices and pads, against the direction
its resizes propagate, and its conflicts may not resolve. When they do not, each part
that meets the others only at fusion inputs (a component) is aligned on its own, from its
own output: the reference's component first, then each output no earlier walk reached.
Tensors made from fusion inputs alone by ops without a resize (a broadcast of cos to the
heads, its cast) count as inputs here: where parts share one, each part gets its own copy
(`copies_per_part`). The schedule then flattens and splits every component's loops like
its lead's ([BIDx, TIDx]), all in one kernel; inputs read by several components are read
from global memory by each (no shared cache would belong to one component).
"""

from __future__ import annotations

from dataclasses import dataclass

import networkx as nx

from engine.ir import exprs as ex
from engine.ir.fusion import Fusion
from engine.ir.logical_map import producers_of
from engine.ir.tensorview import TensorView
from engine.schedule.resize_alignment import Alignment
from engine.schedule.resize_exclusive import make_resizes_exclusive
from engine.schedule.resize_recompute import recomputable, recompute_for
from engine.schedule.tools import note_transform
from engine.trace import Trace


def _input_made(fusion: Fusion) -> set[TensorView]:
    """Tensors other than outputs computed from fusion inputs alone by recomputable ops
    without a resize."""
    inputs, outputs = set(fusion.inputs), set(fusion.outputs)
    made: set[TensorView] = set()
    for e in fusion.exprs():
        if isinstance(e, (ex.SliceOp, ex.PadOp)) or len(e.outputs) != 1:
            continue
        out = e.outputs[0]
        if (isinstance(out, TensorView) and out not in outputs and recomputable(fusion, out)
                and all(v in inputs or v in made for v in e.inputs if isinstance(v, TensorView))):
            made.add(out)
    return made


def _parts(fusion: Fusion, made: set[TensorView]) -> dict[TensorView, int]:
    """Each tensor's part: tensors joined by ops, apart from inputs and `made` tensors."""
    inputs = set(fusion.inputs)
    g: nx.Graph = nx.Graph()
    for e in fusion.exprs():
        ts = [v for v in (*e.inputs, *e.outputs)
              if isinstance(v, TensorView) and v not in inputs and v not in made]
        g.add_nodes_from(ts)
        g.add_edges_from(zip(ts, ts[1:]))
    return {t: k for k, c in enumerate(nx.connected_components(g)) for t in c}


# Ops that change no value: a part made of them alone is a view of an input, which the
# host gives without a kernel (engine.segment's no-kernel segments).
_VIEW_OPS = (ex.ViewOp, ex.LoadStoreOp, ex.SliceOp, ex.SqueezeOp, ex.BroadcastOp, ex.ExpandOp)


@dataclass(frozen=True)
class Part:
    """A part of a fusion: its lead (its output with the most dims, first on ties), the
    fusion inputs and outputs it neither reads nor writes, and whether it only views an
    input (every op of it one of _VIEW_OPS)."""

    lead: TensorView
    others: list[TensorView]
    views_only: bool


def parts_apart(fusion: Fusion) -> list[Part]:
    """The parts of `fusion` that hold outputs, in the order of their first output."""
    part = _parts(fusion, _input_made(fusion))
    computes = {part[o] for e in fusion.exprs() if not isinstance(e, _VIEW_OPS)
                for o in e.outputs[:1] if isinstance(o, TensorView) and o in part}
    outs = [v for v in fusion.outputs if isinstance(v, TensorView) and v in part]
    found: list[Part] = []
    for k in dict.fromkeys(part[v] for v in outs):
        own = {t for t, j in part.items() if j == k}
        lead = max((v for v in outs if part[v] == k), key=lambda v: (v.ndim, -outs.index(v)))
        read: set[TensorView] = set()
        stack = list(own)
        while stack:
            for p in producers_of(stack.pop()):
                if p not in own and p not in read:
                    read.add(p)
                    stack.append(p)
        others = [v for v in (*fusion.inputs, *fusion.outputs)
                  if isinstance(v, TensorView) and v not in own and v not in read]
        found.append(Part(lead, others, k not in computes))
    return found


def copies_per_part(fusion: Fusion) -> int:
    """Give each part (tensors joined by ops, apart from inputs and input-made tensors) its
    own copies of the input-made tensors that several parts read; returns how many copies
    were made."""
    made = _input_made(fusion)
    part = _parts(fusion, made)
    copies = 0
    # Consumers first: an input-made consumer is in one part by the time its producer is seen.
    for tv in reversed([e.outputs[0] for e in fusion.exprs() if e.outputs and e.outputs[0] in made]):
        readers = [c for u in fusion.uses_of(tv) for c in u.outputs if isinstance(c, TensorView)]
        parts = [part.get(c) for c in readers]
        if len({p for p in parts if p is not None}) > 1:
            first = next(p for p in parts if p is not None)
            for c, p in zip(readers, parts):
                if p is not None and p != first:
                    copy = recompute_for(fusion, tv, c)
                    assert copy is not None  # input-made tensors are recomputable
                    part[copy] = p
                    copies += 1
            part[tv] = first
        else:
            known = next((p for p in parts if p is not None), None)
            if known is not None:
                part[tv] = known
    return copies


def component_leads(fusion: Fusion, ref: TensorView, trace: Trace | None = None,
                    shared_inputs: set[TensorView] | None = None) -> list[tuple[TensorView, Alignment]]:
    """Copy the input-made tensors that parts share (copies_per_part), then make every
    component's resizes exclusive, walking each from its lead (`ref`, then the
    outputs in order that no earlier walk reached); returns the leads and their components'
    alignments. Raises ConflictError when a component's conflicts do not resolve.
    `shared_inputs` receives the inputs each walk finds read under different alignments
    (see align) and those that tensors of several components read."""
    n = copies_per_part(fusion)
    if n:
        note_transform(trace, ref.short_name, f"{n} tensors made from fusion inputs alone are copied "
                       "for each part that reads them")
    inputs = set(fusion.inputs)
    outs = [ref, *(v for v in fusion.outputs if isinstance(v, TensorView) and v is not ref and v not in inputs)]
    found: list[tuple[TensorView, Alignment]] = []
    reached: set[TensorView] = set()
    for lead in outs:
        if lead in reached:
            continue
        al = make_resizes_exclusive(fusion, lead, trace, shared_inputs, through_inputs=False)
        found.append((lead, al))
        reached |= al.keys()
    if shared_inputs is not None:
        shared_inputs |= _inputs_across(fusion, found)
    return found


def _inputs_across(fusion: Fusion, found: list[tuple[TensorView, Alignment]]) -> set[TensorView]:
    """The fusion inputs that tensors of more than one component read."""
    part = {t: k for k, (_, al) in enumerate(found) for t in al if t not in fusion.inputs}
    out: set[TensorView] = set()
    for i in fusion.inputs:
        if not isinstance(i, TensorView):
            continue
        readers = {part.get(c) for e in fusion.uses_of(i) for c in e.outputs if isinstance(c, TensorView)}
        if len(readers - {None}) > 1:
            out.add(i)
    return out


__all__ = ["Part", "component_leads", "copies_per_part", "parts_apart"]
