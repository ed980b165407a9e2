"""Forwarding: cheap exprs that start at fusion inputs or factories are recomputed in every
segment that needs them instead of passing their result through global memory.

nvFuser's SegmentCandidateFinder::forwardInputs sets aside chains of unary ops that start
at a fusion input with a single use (here broadcast and expand continue a chain too); seed 003 ("Forward full op") extends the starting
points to factory outputs (`full`; here also iota, and zeros/ones, which are `full`)
that are not fusion outputs. The end of each chain, or the factory output itself, is then
treated like a fusion input while groups are merged, and the chain is replicated into each
group that reads it when segmentation ends.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from engine.analysis.view_chains import is_view
from engine.ir import exprs as ex
from engine.ir.base import Expr, Val
from engine.ir.dependencies import downstream_tvs
from engine.ir.fusion import Fusion
from engine.ir.tensorview import TensorView
from engine.trace import Trace

FACTORY_EXPRS: tuple[type[Expr], ...] = (ex.FullOp, ex.IotaOp, ex.RNGOp)
# Ops a chain may continue through: unary ops, and broadcast/expand, which move no data
# (seed 003's segments both recompute `broadcast` and `expand` of the cos/sin inputs);
# reshapes and permutes too, kept only where _views_kept says.
_FORWARDED_OPS: tuple[type[Expr], ...] = (ex.UnaryOp, ex.BroadcastOp, ex.ExpandOp)


@dataclass
class Forwarding:
    """Forwarded vals (treated as inputs while merging) and the exprs that compute each."""

    chains: dict[Val, list[Expr]] = field(default_factory=dict)  # forwarded val -> its exprs, in order

    @property
    def excluded(self) -> set[Expr]:
        return {e for chain in self.chains.values() for e in chain}

    def exprs_for(self, vals: Sequence[Val]) -> list[Expr]:
        """The replicated exprs a group reading `vals` needs, in order, without repeats."""
        out: dict[Expr, None] = {}
        for v in vals:
            for e in self.chains.get(v, []):
                out[e] = None
        return list(out)


def _is_view(e: Expr) -> bool:
    return isinstance(e, ex.ViewOp) or (isinstance(e, ex.LoadStoreOp) and e.is_permute)


def _viewed_output(fusion: Fusion, v: TensorView) -> bool:
    """Whether a fusion output is a view of `v` (views and slices only): a host view of the
    input then, which forwarded would be a copy a kernel writes."""
    outputs = set(fusion.outputs)
    stack, seen = [v], set()
    while stack:
        t = stack.pop()
        if t in outputs:
            return True
        if t in seen:
            continue
        seen.add(t)
        stack += [u.outputs[0] for u in fusion.uses_of(t)
                  if (is_view(u) or isinstance(u, ex.SliceOp)) and isinstance(u.outputs[0], TensorView)]
    return False


def _views_kept(fusion: Fusion, chain: list[Expr], v: Val, why: str) -> tuple[list[Expr], Val, str]:
    """`chain` cut before its first reshape or permute unless it permutes, no reduction
    reads what it computes and no output is a view of it. A permuted view of an input that
    crosses a segment boundary is a transposing copy a kernel writes, where recomputed it is
    only the readers' indexing (a fused QKV projection split into heads: the whole
    [B, S, 3*H*D] input was written again, permuted, for the kernel of the k heads). A
    reshape alone crosses as a host view (no copy), as does an output that is a view of the
    permuted input (litGPT's v heads), and a reshaped input a reduction reads is kept apart
    by the segmenter (engine.segment.boundaries): forwarded, their readers were split into
    more kernels."""
    k = next((i for i, e in enumerate(chain) if _is_view(e)), None)
    if k is None:
        return chain, v, why
    permutes = any(isinstance(e, ex.LoadStoreOp) and e.is_permute for e in chain)
    if permutes and isinstance(v, TensorView) and not _viewed_output(fusion, v) and not any(
            isinstance(t.definition, (ex.ReductionOp, ex.WelfordOp)) for t in downstream_tvs(v)):
        return chain, v, why
    if k == 0:
        return [], v, why
    return chain[:k], chain[k - 1].output, ("its views are forwarded only where they permute, no "
                                            "output is a view of them and no reduction reads them")


def _name(v: Val) -> str:
    return getattr(v, "short_name", "?")


def find_forwarding(
    fusion: Fusion,
    enabled: bool,
    keep_in_memory: set[Val],
    trace: Trace | None = None,
) -> Forwarding:
    """Chains to forward. `keep_in_memory` are tensors that must stay segment inputs or
    outputs (seed 000/004 boundaries): no chain may compute one."""
    fwd = Forwarding()
    if not enabled:
        if trace is not None:
            trace.event("forward", "fusion", "forwarding is off: every tensor a segment reads "
                        "from another segment passes through global memory", enabled=False)
        return fwd
    outputs = set(fusion.outputs)

    def next_unary(v: Val) -> tuple[Expr | None, str]:
        uses = fusion.uses_of(v)
        if len(uses) != 1:
            return None, f"{len(uses)} uses"
        u = uses[0]
        if not (isinstance(u, _FORWARDED_OPS) or _is_view(u)):
            return None, f"its use {type(u).__name__} is not a unary op or view"
        if u.output in outputs:
            return None, f"{_name(u.output)} is a fusion output"
        if u.output in keep_in_memory:
            return None, f"{_name(u.output)} must stay in global memory"
        return u, ""

    starts: list[tuple[Val, Expr | None]] = [(v, None) for v in fusion.inputs if isinstance(v, TensorView)]
    for e in fusion.exprs():
        if isinstance(e, FACTORY_EXPRS):
            out = e.output
            if out in outputs:
                if trace is not None:
                    trace.event("forward", _name(out), f"{_name(out)} ({e.op_name}) is not forwarded: "
                                "it is a fusion output", forwarded=False, op=e.op_name)
                continue
            if out in keep_in_memory:
                continue
            starts.append((out, e))

    for start, factory in starts:
        chain: list[Expr] = [factory] if factory is not None else []
        v = start
        why = ""
        while True:
            u, why = next_unary(v)
            if u is None:
                break
            chain.append(u)
            v = u.output
        chain, v, why = _views_kept(fusion, chain, v, why)
        if not chain:
            # An input whose single use is not unary (or with several uses) stays an
            # ordinary input: nothing to recompute.
            continue
        fwd.chains[v] = chain
        if trace is not None:
            ops = ", ".join(f"{type(e).__name__}({e.name})" for e in chain)
            what = f"{_name(start)} ({factory.op_name})" if factory is not None else f"input {_name(start)}"
            trace.event(
                "forward", _name(v),
                f"{_name(v)} is recomputed in every segment that reads it (from {what}: {ops}) "
                f"instead of passed through global memory; the chain stops because {why}",
                forwarded=True, start=_name(start), exprs=[e.name for e in chain],
                factory=factory is not None,
            )
    return fwd
