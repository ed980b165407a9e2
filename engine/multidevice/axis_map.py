"""Which axes of a producer and a consumer are the same across one expr, for sharding.

The IR's logical map (engine.ir.logical_map), expanded broadcasts mapped like the axes
they span, with two additions that only device
layouts need: attention (sdpfa_fwd / sdpfa_bwd, run by ATen as a whole) keeps its batch and
head axes (and a leading device axis before them), so heads sharded over devices stay sharded through it (each device attends over
its own heads, as nvFuser's head-parallel attention); the query's sequence axis also maps to
the output's and the log-sum-exp's.
"""

from __future__ import annotations

from engine.ir import exprs as ex
from engine.ir.iterdomain import IterDomain, Merge, Split, transforms_between
from engine.ir.logical_map import logical_map, pairwise_logical_map
from engine.ir.tensorview import TensorView


def _dims(tv: TensorView) -> list[IterDomain]:
    return [i for i in tv.domain.logical if not i.is_reduction]


def _attention_map(producer: TensorView, consumer: TensorView) -> dict[IterDomain, IterDomain]:
    e = consumer.definition
    if not isinstance(e, (ex.SdpaFwdOp, ex.SdpaBwdOp)) or not any(producer is v for v in e.inputs):
        return {}
    p, c = _dims(producer), _dims(consumer)
    lead = len(_dims(e.inputs[1])) - 2  # the axes before the sequence: [D,] N, H
    if len(p) < lead or len(c) < lead:
        return {}  # philox seed and offset: scalars as tensors
    n = lead + 1 if _same_sequence(e, producer, consumer) and len(p) > lead and len(c) > lead else lead
    return {p[k]: c[k] for k in range(n) if not p[k].is_broadcast and not c[k].is_broadcast}


def _same_sequence(e: ex.Expr, producer: TensorView, consumer: TensorView) -> bool:
    """Whether the third axis is the same sequence on both sides: the query's (and, backward,
    grad_output's and output's) for the output, log-sum-exp and grad_query; the key's for
    grad_key; the value's for grad_value."""
    ins = e.inputs
    if isinstance(e, ex.SdpaFwdOp):
        return producer is ins[0]
    gq, gk, gv = e.outputs[:3]
    if consumer is gq:
        return any(producer is ins[k] for k in (0, 1, 4))
    return (consumer is gk and producer is ins[2]) or (consumer is gv and producer is ins[3])


def whole_axis(i: IterDomain) -> bool:
    """An axis with one element per position: not a plain broadcast (an expanded one is)."""
    return not i.is_broadcast or i.has_expanded_extent


def device_map(producer: TensorView, consumer: TensorView) -> dict[IterDomain, IterDomain]:
    """Producer logical IterDomain -> consumer logical IterDomain; plain broadcasts unmapped,
    expanded ones mapped (they span the axis, and are cut over devices as it is)."""
    m = logical_map(producer, consumer, map_broadcast=False)
    if not m:
        return _attention_map(producer, consumer)
    for p, c in logical_map(producer, consumer, map_broadcast=True).items():
        if p not in m and whole_axis(p) and whole_axis(c):
            m[p] = c
    e = consumer.definition
    if isinstance(e, ex.ViewOp) and e.inputs[0] is producer or isinstance(e, _RFACTORED):
        m.update(_split_in_consumer(producer, consumer))
    return m


# Ops whose output's root->logical transforms split K (engine.ir.rfactor): K maps to its
# outer part, as a reshape's split axis does.
_RFACTORED = (ex.RFactorMatmulOp, ex.RFactorLinearOp)


def _split_in_consumer(producer: TensorView, consumer: TensorView) -> dict[IterDomain, IterDomain]:
    """A reshape that splits an axis in two or merges two, where blocks of the axis stay
    blocks: the producer's axis maps to the outer part of a split (attention's
    [b, s, h * e] -> [b, s, h, e]: contiguous blocks of columns are whole heads, where h
    divides) and to the merge of it as the outer input ([b, s, h, e] -> [b, s, h * e]:
    whole heads are contiguous blocks of columns). An inner input of a merge maps to
    nothing: its blocks are strided in the merged axis. The K an rfactor'ed matmul splits
    ([M, N, rK] -> [M, N, iS{d}, rS{K/d}]) maps to its outer part in the same way: a block
    of K is one index of it, however the inner part is split further."""
    partial_k = isinstance(consumer.definition, _RFACTORED)
    logical = set(consumer.domain.logical)
    transforms = transforms_between(consumer.domain.maybe_root, consumer.domain.logical)
    out: dict[IterDomain, IterDomain] = {}
    for p, r in pairwise_logical_map(producer, consumer, map_broadcast=False).items():
        uses = [t for t in transforms if r in t.inputs]
        if len(uses) != 1:
            continue
        t = uses[0]
        if isinstance(t, Split) and t.outputs[0] in logical and (t.outputs[1] in logical or partial_k):
            out[p] = t.outputs[0]
        elif isinstance(t, Merge) and t.inputs[0] is r and t.outputs[0] in logical:
            out[p] = t.outputs[0]
    return out
