"""Matrix-product expressions: matmul, linear and scaled dot-product attention (forward and
backward)."""

from __future__ import annotations

from collections.abc import Sequence

from engine.ir.base import Expr, Val
from engine.ir.expr_text import ind


class MatmulOp(Expr):
    op_name = "matmul"

    def __init__(self, fusion, out: Val, a: Val, b: Val) -> None:
        super().__init__(fusion, [a, b], [out])

    def to_string(self, indent: int = 0) -> str:
        i1 = ind(indent + 1)
        a, b = self.inputs
        return f"{ind(indent)}{self.output}\n{i1} = matmul({a},\n{i1}          {b})\n"


class RFactorMatmulOp(MatmulOp):
    """The first half of an rfactor'ed matmul (engine.ir.rfactor): its output's root is the
    matmul's [..., M, N, rK] and its logical domain splits K into the parts it keeps
    ([..., M, N, iK/d, rK/d] for an outer split by d and axes=[-1]): each kept index is the
    partial sum of products over its part of K, which the reduction after it adds up."""


class SdpaFwdOp(Expr):
    """Scaled dot-product attention, forward (nvFuser's sdpfa_fwd; ATen's flash attention):
    outputs (output [N, H, L, Ev], log_sumexp [N, H, L] float, philox_seed, philox_offset)
    of inputs (query [N, H, L, E], key [N, H, S, E], value [N, H, S, Ev], dropout_p,
    is_causal, then those of scale, bias (added to the scores) and mask (bool: False drops
    a score) that are given; the attributes say which)."""

    op_name = "sdpa"

    def __init__(self, fusion, outs: Sequence[Val], q: Val, k: Val, v: Val, dropout_p: Val,
                 is_causal: Val, scale: Val | None, bias: Val | None = None, mask: Val | None = None) -> None:
        extra = [x for x in (scale, bias, mask) if x is not None]
        super().__init__(fusion, [q, k, v, dropout_p, is_causal, *extra], list(outs),
                         has_scale=scale is not None, has_bias=bias is not None, has_mask=mask is not None)

    def _optional(self, which: str) -> Val | None:
        order = [k for k in ("scale", "bias", "mask") if self.attributes[f"has_{k}"]]
        return self.inputs[5 + order.index(which)] if which in order else None

    @property
    def scale(self) -> Val | None:
        return self._optional("scale")

    @property
    def bias(self) -> Val | None:
        return self._optional("bias")

    @property
    def mask(self) -> Val | None:
        return self._optional("mask")

    def to_string(self, indent: int = 0) -> str:
        i0, i1 = ind(indent), ind(indent + 1)
        outs = ",\n".join(f"{i0}{o}" for o in self.outputs)
        q, k, v, p, causal = self.inputs[:5]
        s = f"{outs}\n{i1} = sdpa({q},\n{i1}          {k},\n{i1}          {v},\n"
        for name in ("bias", "mask"):
            if self._optional(name) is not None:
                s += f"{i1}          {name}={self._optional(name)},\n"
        s += f"{i1}          dropout_p = {p.inline()},\n{i1}          is_causal={causal.inline()},\n"
        if self.scale is not None:
            s += f"{i1}          scale={self.scale.inline()},\n"
        return s + f"{i1})\n"


class SdpaBwdOp(Expr):
    """Scaled dot-product attention, backward (nvFuser's sdpfa_bwd): outputs (grad_query,
    grad_key, grad_value) of inputs (grad_output, query, key, value, output, log_sumexp,
    dropout_p, is_causal, philox_seed, philox_offset[, scale])."""

    op_name = "sdpa_bwd"

    def __init__(self, fusion, outs: Sequence[Val], ins: Sequence[Val]) -> None:
        super().__init__(fusion, list(ins), list(outs))

    @property
    def scale(self) -> Val | None:
        return self.inputs[10] if len(self.inputs) > 10 else None

    def to_string(self, indent: int = 0) -> str:
        i0, i1 = ind(indent), ind(indent + 1)
        outs = ",\n".join(f"{i0}{o}" for o in self.outputs)
        g, q, k, v, o, lse, p, causal, seed, offset = self.inputs[:10]
        lines = [f" = sdpa_bwd({g}", f"          {q}", f"          {k}", f"          {v}", f"          {o}",
                 f"          logsum_exp = {lse}", f"          dropout_p = {p.inline()}",
                 f"          is_causal = {causal.inline()}", f"          philox_seed = {seed}",
                 f"          philox_offset = {offset}"]
        if self.scale is not None:
            lines.append(f"          scale = {self.scale.inline()}")
        return f"{outs}\n" + ",\n".join(f"{i1}{x}" for x in lines) + f"\n{i1})\n"


class LinearOp(Expr):
    """out = a @ b^T (+ bias), as torch.nn.functional.linear."""

    op_name = "linear"

    def __init__(self, fusion, out: Val, a: Val, b: Val, bias: Val | None = None) -> None:
        super().__init__(fusion, [a, b] + ([bias] if bias is not None else []), [out])

    @property
    def has_bias(self) -> bool:
        return len(self.inputs) == 3

    def to_string(self, indent: int = 0) -> str:
        i1 = ind(indent + 1)
        a, b = self.inputs[:2]
        s = f"{ind(indent)}{self.output}\n{i1} = linear({a},\n{i1}          {b}"
        if self.has_bias:
            s += f"{i1},\n          {self.inputs[2]}"
        return s + f"{i1})\n"


class RFactorLinearOp(LinearOp):
    """The first half of an rfactor'ed linear, as RFactorMatmulOp: the partial products
    over the rfactored part of K, without the bias (the rfactor adds it once, after the
    reduction of the partials)."""
