"""Scaled dot-product attention: nvFuser's sdpfa_fwd and sdpfa_bwd (ATen's flash attention
forward and backward). Both run as expr_eval segments, evaluated by torch, as nvFuser
evaluates them with ATen; no kernel is generated for them.

dropout_p is kept as given: a fusion with dropout inside attention is defined, segmented,
scheduled and compiled like any other, and only running its attention is refused (by the
reference evaluator's rule, which the expr_eval segment runs too): nvFuser runs it through
ATen's flash attention, whose dropout mask comes from torch's CUDA generator, which the
reference cannot reproduce. The philox_seed / philox_offset outputs exist for the
frontend's signature (int64 [2] and [], zeros); nvFuser's are uint64.
"""

from __future__ import annotations

from engine.dtypes import DataType
from engine.errors import FusionDefinitionError
from engine.ir.exprs import SdpaBwdOp, SdpaFwdOp
from engine.ir.iterdomain import IterDomain
from engine.ir.scalar import Scalar, as_scalar
from engine.ir.tensorview import TensorView
from engine.ops.common import check_tensor, copy_id, new_tv, no_reductions, real_scalar

__all__ = ["sdpfa_bwd", "sdpfa_fwd"]


def sdpfa_fwd(query: TensorView, key: TensorView, value: TensorView, *args: object, bias: object = None,
              mask: object = None, dropout_p: object = None, is_causal: object = None, scale: object = None,
              ) -> tuple[TensorView, TensorView, TensorView, TensorView]:
    """(output, log_sumexp, philox_seed, philox_offset) of attention over query [N, H, L, E],
    key [N, H, S, E] and value [N, H, S, Ev] (each may have one more leading axis, as
    nvFuser's device axis: [D, N, H, L, E]); scale defaults to 1/sqrt(E). The arguments
    after value come in either frontend's order: (dropout_p, is_causal, scale), or
    nvfuser_direct's (bias, mask, dropout_p, is_causal, scale); bias is added to the
    scores and a False in the bool mask drops a score."""
    named = {"bias": bias, "mask": mask, "dropout_p": dropout_p, "is_causal": is_causal, "scale": scale}
    names = list(named)
    if len(args) > 3 or any(isinstance(a, TensorView) for a in args[:2]):
        order = names  # nvfuser_direct: bias and mask come first
    else:
        order = names[2:]
    if len(args) > len(order):
        raise FusionDefinitionError(f"sdpfa_fwd: at most {3 + len(order)} positional arguments, got {3 + len(args)}")
    for name, a in zip(order, args):
        if named[name] is not None:
            raise FusionDefinitionError(f"sdpfa_fwd: {name} given twice")
        named[name] = a
    q, k, v = _qkv("sdpfa_fwd", query, key, value)
    fusion = q.fusion
    dq, dv = no_reductions(q), no_reductions(v)
    out = new_tv(fusion, [copy_id(fusion, i) for i in dq[:-1]] + [copy_id(fusion, dv[-1])], q.dtype)
    lse = new_tv(fusion, [copy_id(fusion, i) for i in dq[:-1]], DataType.Float)
    seed = new_tv(fusion, [IterDomain(fusion, 2)], DataType.Int)
    offset = new_tv(fusion, [], DataType.Int)
    SdpaFwdOp(fusion, [out, lse, seed, offset], q, k, v, _dropout("sdpfa_fwd", named["dropout_p"]),
              _causal("sdpfa_fwd", named["is_causal"]), _scale("sdpfa_fwd", named["scale"]),
              _score_term("bias", named["bias"], None), _score_term("mask", named["mask"], DataType.Bool))
    return out, lse, seed, offset


def _score_term(what: str, t: object, dtype: DataType | None) -> TensorView | None:
    """bias or mask: a tensor broadcasting against the scores [N, H, L, S]."""
    if t is None:
        return None
    tv = check_tensor("sdpfa_fwd", t, what)
    if len(no_reductions(tv)) > 4:
        raise FusionDefinitionError(f"sdpfa_fwd: {what} {tv.short_name} has more than 4 axes (a bias or mask "
                                    "over 5-D attention is not supported)")
    if dtype is not None and tv.dtype != dtype:
        raise FusionDefinitionError(f"sdpfa_fwd: {what} {tv.short_name} must be {dtype.cuda_name}, "
                                    f"got {tv.dtype.cuda_name}")
    return tv


def sdpfa_bwd(grad_output: TensorView, query: TensorView, key: TensorView, value: TensorView,
              output: TensorView, log_sumexp: TensorView, dropout_p: object, is_causal: object,
              philox_seed: TensorView, philox_offset: TensorView, scale: object = None,
              ) -> tuple[TensorView, TensorView, TensorView]:
    """(grad_query, grad_key, grad_value) of sdpfa_fwd's output, given its grad_output."""
    q, k, v = _qkv("sdpfa_bwd", query, key, value)
    named = {"grad_output": grad_output, "output": output, "log_sumexp": log_sumexp,
             "philox_seed": philox_seed, "philox_offset": philox_offset}
    g, o, lse, seed, offset = (check_tensor("sdpfa_bwd", t, what) for what, t in named.items())
    rank = len(no_reductions(q))
    for what, t in (("grad_output", g), ("output", o)):
        if t.dtype != q.dtype or len(no_reductions(t)) != rank:
            raise FusionDefinitionError(f"sdpfa_bwd: {what} {t.short_name} must be a {rank}-D {q.dtype.cuda_name} "
                                        "tensor like query")
    if len(no_reductions(lse)) != rank - 1:
        raise FusionDefinitionError(f"sdpfa_bwd: log_sumexp {lse.short_name} must be {rank - 1}-D "
                                    "(query's axes but the last: [N, H, L])")
    fusion = q.fusion
    grads = [new_tv(fusion, [copy_id(fusion, i) for i in no_reductions(t)], t.dtype) for t in (q, k, v)]
    scale_s = _scale("sdpfa_bwd", scale)
    ins = [g, q, k, v, o, lse, _dropout("sdpfa_bwd", dropout_p), _causal("sdpfa_bwd", is_causal), seed, offset]
    SdpaBwdOp(fusion, grads, ins + ([scale_s] if scale_s is not None else []))
    return grads[0], grads[1], grads[2]


def _qkv(op: str, query: object, key: object, value: object) -> tuple[TensorView, TensorView, TensorView]:
    q, k, v = (check_tensor(op, t, what) for what, t in (("query", query), ("key", key), ("value", value)))
    if not q.dtype.is_float or len({q.dtype, k.dtype, v.dtype}) != 1:
        raise FusionDefinitionError(f"{op}: query, key and value must share one floating dtype "
                                    f"(got {q.dtype.cuda_name}, {k.dtype.cuda_name}, {v.dtype.cuda_name})")
    rank = len(no_reductions(q))
    for what, t in (("query", q), ("key", k), ("value", v)):
        if len(no_reductions(t)) not in (4, 5) or len(no_reductions(t)) != rank:
            raise FusionDefinitionError(f"{op}: {what} {t.short_name} must be 4-D ([N, H, seq, head]), or 5-D with "
                                        f"a leading axis (a device axis: [D, N, H, seq, head]) like the query, "
                                        f"got {len(no_reductions(t))}-D")
    return q, k, v


def _dropout(op: str, p: object) -> Scalar:
    return real_scalar(op, "dropout_p", 0.0 if p is None else p)


def _causal(op: str, c: object) -> Scalar:
    s = as_scalar(bool(c), DataType.Bool) if c is None or isinstance(c, bool) else c
    if not isinstance(s, Scalar) or not s.dtype.is_bool:
        raise FusionDefinitionError(f"{op}: is_causal must be a bool, got {c!r}")
    return s


def _scale(op: str, s: object) -> Scalar | None:
    return None if s is None else real_scalar(op, "scale", s)
