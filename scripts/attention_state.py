"""Inputs of an attention backward that hold the forward's state: the GPU tests and the
real-size sweep take a script's sdpfa_bwd saved output and log-sum-exp from its forward."""

from __future__ import annotations

import torch

from engine.reference import evaluate


def attention_state_from_the_forward(fd: object, xs: list[object]) -> list[object]:
    """`xs` with each sdpfa_bwd's saved output and log-sum-exp replaced by those of the forward
    (sdpfa_fwd of its query, key and value, with its dropout, causality and scale, evaluated
    by the reference as on the device) where all five are fusion inputs. Drawn at random they
    are no attention state: at [1, 32, 2048, 128] (sdpa_bwd_gqa_repeat_sum_permute_cat_qkv_
    grad_bf16) scale * q.k - lse reaches 131, exp() overflows in the backward, and the grads'
    infinities summed over the GQA repeats give NaN or -inf by the order of the additions."""
    from engine import FusionDefinition
    from engine.dtypes import from_torch
    from engine.ir.exprs import SdpaBwdOp

    fusion = fd.fusion  # type: ignore[attr-defined]
    at = {id(v): k for k, v in enumerate(fusion.inputs)}
    xs = list(xs)

    def value(s: object) -> object:
        return xs[at[id(s)]] if id(s) in at else s.value  # type: ignore[attr-defined]

    for e in fusion.exprs():
        if not isinstance(e, SdpaBwdOp):
            continue
        _grad, q, k, v, o, lse, dropout_p, causal = e.inputs[:8]
        if not all(id(t) in at for t in (q, k, v, o, lse)):
            continue
        qkv = [xs[at[id(t)]].contiguous() for t in (q, k, v)]  # type: ignore[union-attr]
        scale = None if e.scale is None else value(e.scale)
        with FusionDefinition() as f:
            ts = [f.define_tensor(shape=[-1] * 4, contiguity=[True] * 4, dtype=from_torch(x.dtype)) for x in qkv]
            out, logsumexp, _seed, _offset = f.ops.sdpfa_fwd(
                *ts, dropout_p=float(value(dropout_p)), is_causal=bool(value(causal)),
                scale=None if scale is None else float(scale))
            f.add_output(out)
            f.add_output(logsumexp)
        for t, got in zip((o, lse), evaluate(f.fusion, qkv)):
            old = xs[at[id(t)]]
            new = torch.empty_like(old)  # type: ignore[call-overload]
            new.copy_(got)
            xs[at[id(t)]] = new
    return xs
