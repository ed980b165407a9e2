"""Reference rules of scaled dot-product attention (sdpfa_fwd, sdpfa_bwd): ATen's flash
attention where it applies, else the math path in float32."""

from __future__ import annotations

import math
from typing import Any

import torch

from engine.dtypes import to_torch
from engine.errors import ExecutionError
from engine.ir import exprs as ex
from engine.ir.base import Expr
from engine.reference.rules import handles, number, out_dtype, short_names, up


def _attention_probs(q: torch.Tensor, k: torch.Tensor, lse: torch.Tensor | None, causal: bool,
                     scale: float, bias: torch.Tensor | None = None,
                     mask: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """(softmax probabilities, log-sum-exp) of scale * q k^T (+ bias) in float32; a causal
    mask keeps key j <= query i (top-left aligned, as torch's is_causal), a bool mask keeps
    its True scores. With `lse` given (the backward), the probabilities are recomputed from
    it, as flash attention does."""
    s = torch.matmul(q, k.transpose(-2, -1)) * scale
    if bias is not None:
        s = s + up(bias)
    if mask is not None:
        s = s.masked_fill(~mask.bool(), float("-inf"))
    if causal:
        keep = torch.ones(s.shape[-2], s.shape[-1], dtype=torch.bool, device=s.device).tril()
        s = s.masked_fill(~keep, float("-inf"))
    if lse is None:
        lse = torch.logsumexp(s, dim=-1)
    return torch.exp(s - lse[..., None]), lse


def _sdpa_flags(expr, args, n_tensors: int) -> tuple[bool, float]:
    """(is_causal, scale) of an attention op whose tensors are args[:n_tensors], followed by
    dropout_p, is_causal and, when the op has one, the scale last. Attention with dropout is
    refused (refuse_attention_dropout)."""
    dropout_p, causal = number(args[n_tensors]), bool(number(args[n_tensors + 1]))
    if float(dropout_p) != 0.0:
        raise ExecutionError(refuse_attention_dropout(expr, dropout_p))
    q = args[1] if isinstance(expr, ex.SdpaBwdOp) else args[0]
    scale = float(number(args[-1])) if expr.scale is not None else 1.0 / math.sqrt(q.shape[-1])
    return causal, scale


def refuse_attention_dropout(expr: Expr, dropout_p: Any) -> str:
    """Why attention with dropout does not run: nvFuser runs it through ATen's flash attention,
    whose dropout mask comes from torch's CUDA generator (the philox_seed and philox_offset it
    returns); the reference cannot draw the same mask, so no result could be checked."""
    name = "sdpfa_bwd" if isinstance(expr, ex.SdpaBwdOp) else "sdpfa_fwd"
    return (f"{name} producing {short_names(expr.outputs)}: dropout_p = {dropout_p}: attention with dropout is not "
            "run: flash attention draws its dropout mask from torch's CUDA generator, which the reference "
            "evaluator cannot reproduce, so its result could not be checked (the fusion still compiles: "
            "its IR, segments, schedules and kernels can be shown)")


def _flash_ok(*ts: torch.Tensor) -> bool:
    """Whether ATen's flash attention takes these (as nvFuser calls it): CUDA fp16/bf16 of one
    dtype on sm80 or newer, one head size, a multiple of 8 up to 256."""
    q = ts[0]
    if not all(t.is_cuda and t.dtype == q.dtype for t in ts) or q.dtype not in (torch.float16, torch.bfloat16):
        return False
    e = q.shape[-1]
    return (all(t.shape[-1] == e for t in ts) and e % 8 == 0 and e <= 256
            and torch.cuda.get_device_capability(q.device) >= (8, 0))


def _flash_fwd(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool,
               scale: float) -> tuple[torch.Tensor, torch.Tensor] | None:
    """(output, log-sum-exp) from ATen's flash attention, or None where it does not apply (the
    math path then runs: on the GPU it holds the whole score matrix in float32)."""
    if not _flash_ok(q, k, v):
        return None
    lead = q.shape[:-3]  # a leading device axis: merged into the batch for ATen's 4-D kernel
    q, k, v = (t.reshape(-1, *t.shape[-3:]) for t in (q, k, v))
    try:
        got = torch.ops.aten._scaled_dot_product_flash_attention(q, k, v, 0.0, causal, False, scale=scale)
    except RuntimeError:
        return None
    return got[0].contiguous().reshape(*lead, *got[0].shape[-3:]), got[1].reshape(*lead, *got[1].shape[-2:])


def _flash_bwd(g: torch.Tensor, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, o: torch.Tensor,
               lse: torch.Tensor, causal: bool, scale: float) -> tuple[torch.Tensor, ...] | None:
    if not _flash_ok(g, q, k, v, o) or lse.dtype != torch.float32:
        return None
    # Dense inputs have no cumulative sequence lengths (None, as the forward returns them);
    # without dropout the RNG state is not read.
    rng = torch.zeros(2, dtype=torch.uint64, device=q.device)
    shapes = [t.shape for t in (q, k, v)]
    g, q, k, v, o = (t.reshape(-1, *t.shape[-3:]) for t in (g, q, k, v, o))
    lse = lse.reshape(-1, *lse.shape[-2:])
    try:
        got = torch.ops.aten._scaled_dot_product_flash_attention_backward(
            g, q, k, v, o, lse.contiguous(), None, None, q.shape[-2], k.shape[-2], 0.0, causal, rng,
            torch.zeros((), dtype=torch.uint64, device=q.device), scale=scale)
    except RuntimeError:
        return None
    return tuple(t.contiguous().reshape(shape) for t, shape in zip(got[:3], shapes))


@handles(ex.SdpaFwdOp)
def _sdpa_fwd(expr, args, ctx):
    extra = dict(zip([n for n in ("scale", "bias", "mask") if expr.attributes[f"has_{n}"]], args[5:]))
    scale_arg = [extra["scale"]] if "scale" in extra else []
    causal, scale = _sdpa_flags(expr, [*args[:5], *scale_arg], 3)
    seed = torch.zeros(2, dtype=torch.int64, device=ctx.device)
    offset = torch.zeros((), dtype=torch.int64, device=ctx.device)
    flash = None if "bias" in extra or "mask" in extra else _flash_fwd(*args[:3], causal, scale)
    if flash is not None:
        return [flash[0], flash[1], seed, offset]
    q, k, v = (up(t) for t in args[:3])
    p, lse = _attention_probs(q, k, None, causal, scale, extra.get("bias"), extra.get("mask"))
    out = torch.matmul(p, v).to(to_torch(out_dtype(expr)))
    return [out, lse.float(), seed, offset]


@handles(ex.SdpaBwdOp)
def _sdpa_bwd(expr, args, ctx):
    causal, scale = _sdpa_flags(expr, [*args[:8], *args[10:]], 6)
    flash = _flash_bwd(*args[:6], causal, scale)
    if flash is not None:
        return list(flash)
    g, q, k, v, o, lse = (up(t) for t in args[:6])
    p, _ = _attention_probs(q, k, lse, causal, scale)
    grad_v = torch.matmul(p.transpose(-2, -1), g)
    grad_p = torch.matmul(g, v.transpose(-2, -1))
    grad_s = p * (grad_p - (g * o).sum(dim=-1, keepdim=True))
    grad_q = torch.matmul(grad_s, k) * scale
    grad_k = torch.matmul(grad_s.transpose(-2, -1), q) * scale
    return [t.to(to_torch(out_dtype(expr, n))) for n, t in enumerate((grad_q, grad_k, grad_v))]
