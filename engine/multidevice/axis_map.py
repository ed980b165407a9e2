"""Which axes of a producer and a consumer are the same across one expr, for sharding.

The IR's logical map (engine.analysis.logical_map) with two additions that only device
layouts need: attention (sdpfa_fwd / sdpfa_bwd, run by ATen as a whole) keeps its batch and
head axes, so heads sharded over devices stay sharded through it (each device attends over
its own heads, as nvFuser's head-parallel attention); the query's sequence axis also maps to
the output's and the log-sum-exp's.
"""

from __future__ import annotations

from engine.analysis.logical_map import logical_map
from engine.ir import exprs as ex
from engine.ir.iterdomain import IterDomain
from engine.ir.tensorview import TensorView


def _dims(tv: TensorView) -> list[IterDomain]:
    return [i for i in tv.domain.logical if not i.is_reduction]


def _attention_map(producer: TensorView, consumer: TensorView) -> dict[IterDomain, IterDomain]:
    e = consumer.definition
    if not isinstance(e, (ex.SdpaFwdOp, ex.SdpaBwdOp)) or not any(producer is v for v in e.inputs):
        return {}
    p, c = _dims(producer), _dims(consumer)
    if len(p) < 2 or len(c) < 2:
        return {}  # philox seed and offset: scalars as tensors
    n = 3 if _same_sequence(e, producer, consumer) and len(p) >= 3 and len(c) >= 3 else 2
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


def device_map(producer: TensorView, consumer: TensorView) -> dict[IterDomain, IterDomain]:
    """Producer logical IterDomain -> consumer logical IterDomain, broadcasts unmapped."""
    return logical_map(producer, consumer, map_broadcast=False) or _attention_map(producer, consumer)
