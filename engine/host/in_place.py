"""Which aliased outputs (`add_output(out, alias_input=inp)`) a kernel may write straight into
their input's buffer, as nvFuser does, instead of into a fresh one copied back afterwards.

A kernel segment writes output `out` into input `inp` when nothing can read `inp` after the
write:
- the segment is pointwise: every tensor is indexed through the one loop nest, so element e
  of every same-shaped tensor belongs to one thread;
- in the scheduled segment, `inp` is read once, by a plain copy into a register cache, and
  everything computed from it is elementwise (unary, binary, ternary ops and plain copies of
  the same rank, no broadcast, no reduction, no resize, no permute): element e of `inp` feeds
  element e of its results only, loaded by that thread before it computes them;
- `out` has `inp`'s rank and no broadcast axis;
- no other step of the host program reads `inp` (no other kernel, host op or view of it),
  and `inp` is not itself a fusion output.
The sizes and strides are compared at run time (engine.host.launch): a fresh buffer is
allocated, and the output copied back, when they differ.
"""

from __future__ import annotations

from engine.host import hir
from engine.ir import exprs as ex
from engine.ir.base import Val
from engine.ir.fusion import Fusion
from engine.ir.tensorview import TensorView

_ELEMENTWISE = (ex.UnaryOp, ex.BinaryOp, ex.TernaryOp)


def in_place_writes(c: hir.HostIrContainer, aliases: dict[int, int]) -> dict[int, dict[int, int]]:
    """For the top-level steps of `c` (by index) that may write aliased outputs in place:
    {segment output position: segment input position}. `aliases`: fusion output index ->
    fusion input index."""
    steps = c.top_level
    out: dict[int, dict[int, int]] = {}
    for out_k, in_k in aliases.items():
        if not (0 <= out_k < len(c.outputs) and 0 <= in_k < len(c.inputs)):
            continue
        o, i = c.outputs[out_k], c.inputs[in_k]
        if not isinstance(o, TensorView) or not isinstance(i, TensorView) or any(v is i for v in c.outputs):
            continue
        readers = [k for k, s in enumerate(steps) if any(v is i for v in getattr(s, "inputs", ()))]
        if len(readers) != 1 or not isinstance(steps[readers[0]], hir.LaunchKernel):
            continue
        step = steps[readers[0]]
        seg = step.segment
        o_pos = [p for p, v in enumerate(step.outputs) if v is o]
        i_pos = [p for p, v in enumerate(step.inputs) if v is i]
        if seg.scheduler != "pointwise" or len(o_pos) != 1 or len(i_pos) != 1:
            continue
        if _elementwise_into(seg.fusion, seg.fusion.inputs[i_pos[0]], seg.fusion.outputs[o_pos[0]]):
            out.setdefault(readers[0], {})[o_pos[0]] = i_pos[0]
    return out


def _elementwise_into(fusion: Fusion, inp: Val, out: Val) -> bool:
    if not isinstance(inp, TensorView) or not isinstance(out, TensorView) or not _plain(inp, inp):
        return False
    if not _plain(out, inp):
        return False
    uses = fusion.uses_of(inp)
    if len(uses) != 1 or not _copy(uses[0]):
        return False
    todo, seen = [uses[0].outputs[0]], set()
    while todo:
        tv = todo.pop()
        if id(tv) in seen:
            continue
        seen.add(id(tv))
        if not _plain(tv, inp):
            return False
        for e in fusion.uses_of(tv):
            if not (isinstance(e, _ELEMENTWISE) or _copy(e)):
                return False
            todo.extend(v for v in e.outputs if isinstance(v, TensorView))
    return True


def _copy(e: ex.Expr) -> bool:
    return isinstance(e, ex.LoadStoreOp) and not e.is_permute


def _plain(tv: Val, like: TensorView) -> bool:
    """A tensor of `like`'s rank without broadcast or reduction axes."""
    return isinstance(tv, TensorView) and len(tv.domain.logical) == len(like.domain.logical) \
        and not any(d.is_broadcast or d.is_reduction for d in tv.domain.logical)
