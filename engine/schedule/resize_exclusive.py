"""The resize scheduler's conflicts resolved: tensors that two resize paths need
differently are recomputed (nvFuser's RecomputeTv, engine.schedule.resize_recompute)
until every tensor has one alignment with the reference, resuming the alignment walk
after each edit where the edit changed what it read.
"""

from __future__ import annotations

from engine.ir import exprs as ex
from engine.ir.base import Val
from engine.ir.fusion import Fusion
from engine.ir.tensorview import TensorView
from engine.schedule.resize_alignment import Alignment, ConflictError, PairwiseMaps
from engine.schedule.resize_axes import Derived, Entry
from engine.schedule.resize_recompute import privatize_producers, recompute_for
from engine.schedule.resize_walk import AlignWalk
from engine.schedule.tools import note_transform
from engine.trace import Trace


def _graph_state(fusion: Fusion) -> dict[int, tuple[ex.Expr, list[Val]]]:
    """The live exprs and their operand lists: what the neighbour lists of tensors are made
    of. The lists themselves, not copies: an expr is rewired by giving it a new operand
    list (Fusion.replace_input_of), never by editing its list."""
    return {id(e): (e, e.inputs) for e in fusion.exprs()}


def _touched(before: dict[int, tuple[ex.Expr, list[Val]]],
             fusion: Fusion) -> tuple[set[TensorView], set[TensorView]]:
    """The tensors whose producers, and those whose consumers, may differ from `before`
    (_graph_state of the fusion before an edit): the outputs, and the operands, of every
    expr that appeared, went dead or was rewired."""
    after = _graph_state(fusion)
    producers: set[TensorView] = set()
    consumers: set[TensorView] = set()
    for k in before.keys() | after.keys():
        b, a = before.get(k), after.get(k)
        if b is not None and a is not None and b[1] is a[1]:
            continue
        for e, operands in (x for x in (b, a) if x is not None):
            producers.update(v for v in e.outputs if isinstance(v, TensorView))
            consumers.update(v for v in operands if isinstance(v, TensorView))
    return producers, consumers


def _leaves(e: Entry, out: set[int]) -> None:
    node, _ = e
    if isinstance(node, Derived):
        for p in node.parts:
            _leaves(p, out)
    else:
        out.add(id(node))


def unmapped_output(fusion: Fusion, ref: TensorView, found: dict[TensorView, Alignment]) -> ConflictError | None:
    """An output reached by the alignment with an axis that no reference axis plays (a
    RoPE's k, over fewer heads than the reference q, reached through the cos and sin they
    share): its loop would run that axis serially beside the reference's, and the inputs
    the parts share could not be indexed for it. Its part is aligned apart instead."""
    for out in fusion.outputs:
        if not isinstance(out, TensorView) or out not in found or out in fusion.inputs or out is ref:
            continue
        covered: set[int] = set()
        for e in found[out].values():
            _leaves(e, covered)
        axis = next((i for i in out.domain.logical
                     if not i.is_broadcast and not i.is_reduction and id(i) not in covered), None)
        if axis is not None:
            return ConflictError(f"output {out.short_name} axis {axis} maps to no axis of the reference "
                                 f"{ref.short_name}")
    return None


def make_resizes_exclusive(fusion: Fusion, ref: TensorView, trace: Trace | None = None,
                           shared_inputs: set[TensorView] | None = None,
                           first: tuple[ConflictError, AlignWalk] | None = None,
                           through_inputs: bool = True) -> dict[TensorView, Alignment]:
    """Recompute tensors that two resize paths need differently until `align` succeeds.

    Each conflict recomputes the shared tensor for one of its consumers; the conflict
    then moves to its producers, and ends at fusion inputs, which are read from global
    memory wherever needed. Raises ConflictError when a tensor cannot be recomputed.
    `shared_inputs` receives what the successful alignment finds (see align), which the
    scheduler would otherwise align the unchanged fusion again for. `first`: the conflict
    that aligning `fusion` as it is raises and the walk that raised it, when the caller
    has found them already. `through_inputs`: as align's. Returns the alignments found.
    """
    limit = 4 * len(fusion.exprs()) + 8
    made_for: dict[TensorView, TensorView] = {}  # copy -> the consumer it was made for
    privatized: set[TensorView] = set()
    # One walk over all attempts: after each recompute it resumes before the first step
    # the edit changed (see AlignWalk), as a walk from scratch would go. The edges a
    # recompute leaves alone keep their maps (see PairwiseMaps).
    walk = (AlignWalk(fusion, ref, PairwiseMaps(), shared_inputs is not None, through_inputs)
            if first is None else first[1])
    for _ in range(limit):
        try:
            if first is not None:
                known, first = first[0], None
                raise known
            result = walk.run()
            unmapped = unmapped_output(fusion, ref, result)
            if unmapped is not None:
                raise unmapped
            if shared_inputs is not None and walk.shared:
                shared_inputs |= walk.shared
            return result
        except ConflictError as c:
            before = _graph_state(fusion)
            if c.output is not None:
                if c.output in privatized or not privatize_producers(fusion, c.output):
                    raise
                privatized.add(c.output)
                note_transform(trace, c.output.short_name, "its producers are recomputed for it: the "
                      "reference needs them under a resize")
                walk.rewind(_touched(before, fusion))
                continue
            if c.tensor is None or c.consumer is None or made_for.get(c.tensor) is c.consumer:
                raise  # a copy made for this consumer conflicts again: no copy can help
            copy = recompute_for(fusion, c.tensor, c.consumer)
            if copy is None:
                raise
            made_for[copy] = c.consumer
            note_transform(trace, copy.short_name, f"recomputes {c.tensor.short_name} for "
                  f"{c.consumer.short_name}: the two need it under different resizes")
            walk.rewind(_touched(before, fusion))
    raise ConflictError("resize inputs could not be made exclusive")
