"""The resize scheduler's reference, and the slices and pads upstream of each output.

The reference is the output with the most logical dims. Every resize must lie between
the inputs and the reference: an output on another side of a resize than the reference
is refused when it cannot be given its own copies of the resized producers
(resize_between_outputs).
"""

from __future__ import annotations

from collections.abc import Iterator

from engine.ir import exprs as ex
from engine.ir.fusion import Fusion
from engine.ir.iterdomain import Resize
from engine.ir.logical_map import producers_of
from engine.ir.tensorview import TensorView


def reference_tensor(fusion: Fusion) -> TensorView | None:
    """The output with the most logical dims; on ties, the one downstream of the most
    slices and pads (every resize must lie between the inputs and the reference: an
    output upstream of a resize is then recomputed, see resize_exclusive), then the first."""
    outs = [v for v in fusion.outputs if isinstance(v, TensorView) and v not in fusion.inputs]
    if not outs:
        return None
    return max(outs, key=lambda v: (v.ndim, len(_upstream_resizes(v)), -outs.index(v)))


def _defined_upstream(tv: TensorView) -> Iterator[tuple[TensorView, ex.Expr]]:
    """`tv` and every tensor it is computed from that has a definition, each once with its
    definition, depth first."""
    seen: set[int] = set()
    stack = [tv]
    while stack:
        t = stack.pop()
        if id(t) in seen:
            continue
        seen.add(id(t))
        e = t.definition
        if e is None:
            continue
        yield t, e
        stack.extend(producers_of(t))


def _upstream_resizes(tv: TensorView) -> set[int]:
    """ids of the slice/pad exprs that `tv` depends on."""
    return {id(e) for _, e in _defined_upstream(tv) if isinstance(e, (ex.SliceOp, ex.PadOp))}


def _resize_of(tv: TensorView, exprs: set[int]) -> Resize | None:
    """A Resize in the root->logical domain of a slice/pad among `exprs` upstream of tv."""
    for t, e in _defined_upstream(tv):
        if id(e) in exprs:
            for i in t.domain.logical:
                if isinstance(i.definition, Resize):
                    return i.definition
    return None


def resize_between_outputs(fusion: Fusion, ref: TensorView) -> str | None:
    """nvFuser's reason when an output and the reference lie on different sides of a
    resize. nvFuser refuses every such fusion; this engine refuses only those whose
    outputs could not be given their own copies of the resized producers."""
    ref_resizes = _upstream_resizes(ref)
    for out in fusion.outputs:
        if not isinstance(out, TensorView) or out is ref:
            continue
        diff = ref_resizes ^ _upstream_resizes(out)
        if diff:
            rz = _resize_of(out, diff) or _resize_of(ref, diff)
            return ("Resize between reference and output not allowed. "
                    f"Reference: {ref}. Output: {out}. Resize: {rz}")
    return None
