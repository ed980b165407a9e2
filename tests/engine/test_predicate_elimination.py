"""Bounds predicates only where memory is touched (engine.lower.lowering._register_only), and
the indices behind them (engine.lower.index): statements between registers run unguarded,
reads and writes of global memory keep their tests, and values stay the reference's."""

from __future__ import annotations

import re

import torch

from engine import DataType, FusionDefinition, compile_fusion
from engine.codegen.expressions import render
from engine.lower import kexpr
from engine.lower.index import Ix, _combined, _div_mod, _shifted, lower_bound_test
from engine.lower.kexpr import And, Var
from engine.reference import evaluate
from tests.emulation import needs_gxx


def _guarded(src: str) -> list[str]:
    """The statements of `src`'s kernel that sit right under an `if`."""
    lines = [ln.strip() for ln in src[src.index("__global__"):].splitlines()]
    return [b for a, b in zip(lines, lines[1:]) if a.startswith("if (") and a.endswith("{")]


def _odd_pointwise() -> FusionDefinition:
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.BFloat16)
        t1 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.BFloat16)
        a = fd.ops.cast(t0, DataType.Float)
        b = fd.ops.exp(fd.ops.mul(a, fd.ops.cast(t1, DataType.Float)))
        fd.add_output(fd.ops.cast(fd.ops.add(b, a), DataType.BFloat16))
    return fd


@needs_gxx
def test_arithmetic_on_registers_is_unguarded_and_memory_stays_guarded() -> None:
    fd = _odd_pointwise()
    xs = [torch.randn(37, 1001, dtype=torch.bfloat16), torch.randn(37, 1001, dtype=torch.bfloat16)]
    cf = compile_fusion(fd, xs)
    (seg,) = [s for s in cf.segments if s.is_kernel]
    guarded = _guarded(seg.cuda_source)
    # 37 x 1001 elements do not fill the last block: the loads and the store are tested...
    params = re.findall(r"Tensor<[^>]*> (T\d+)", seg.cuda_source)
    assert guarded and all(any(f"{p}[" in g or f"&{p}[" in g for p in params) for g in guarded)
    # ...and the exp, the products and the casts between registers are not.
    assert "expf(" in seg.cuda_source and not any("expf(" in g for g in guarded)
    out = cf.run(xs, backend="emulate")[0]
    torch.testing.assert_close(out.float(), evaluate(fd.fusion, xs)[0].float(), rtol=2e-2, atol=2e-2)


@needs_gxx
def test_a_cat_of_computed_halves_keeps_its_values() -> None:
    # Each side of the cat is computed for every element (the registers of the other side
    # are dropped by the cat's select): values must be the reference's at every position.
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
        left = fd.ops.slice(t0, [0, 0], [t0.size(0), 24])
        right = fd.ops.slice(t0, [0, 24], [t0.size(0), 40])
        fd.add_output(fd.ops.cat([fd.ops.exp(right), fd.ops.neg(left)], dim=-1))
    xs = [torch.randn(9, 40)]
    cf = compile_fusion(fd, xs)
    out = cf.run(xs, backend="emulate")[0]
    torch.testing.assert_close(out, torch.cat([xs[0][:, 24:].exp(), -xs[0][:, :24]], dim=-1))


def _split(o: str, factor: int, lo: int, hi: int) -> Ix:
    # x = o * factor + v, v in [0, factor): a vectorized position
    return _combined(Ix(Var(o), lo // factor, -(-hi // factor)), Ix(Var("v"), 0, factor), factor)


def test_a_pad_offset_keeps_the_split_parts_and_the_remainder_stays_a_trailing_vector_term() -> None:
    x = _shifted(_split("o", 8, 0, 192), -128)          # the cat's right part: x - 128
    assert x.lo == -128 and x.parts is not None
    q, r = _div_mod(x, 32)                               # a reshape [.., 32, 2]'s split
    assert render(r.term).endswith("+ v") and "v" not in render(q.term)
    # Where x - 128 >= 0 both are exact: check every value of o and v there.
    for o in range(16, 24):
        for v in range(8):
            xv = o * 8 + v - 128
            env = {"o": o, "v": v}
            assert _value(q.term, env) == xv // 32 and _value(r.term, env) == xv % 32


def test_indices_combined_from_a_negative_dividend_are_tested_on_the_dividend() -> None:
    x = _shifted(_split("o", 8, 0, 192), -128)
    q, r = _div_mod(x, 32)
    merged = _combined(r, q, 2)                          # permuted back: r * 2 + q
    test = lower_bound_test(merged, lambda t: t)
    assert render(test) == f"{render(x.term)} >= 0"
    both = _combined(r, _shifted(Ix(Var("w"), 0, 4), -1), 4)
    assert isinstance(lower_bound_test(both, lambda t: t), And)


def _value(t: int | kexpr.Expr, env: dict[str, int]) -> int:
    """An index term's value as C computes it (division and remainder truncate toward zero)."""
    if isinstance(t, int):
        return t
    if isinstance(t, Var):
        return env[t.name]
    if isinstance(t, kexpr.Signed | kexpr.Paren):
        return _value(t.x, env)
    a, b = (_value(c, env) for c in t.children())
    if isinstance(t, kexpr.Div | kexpr.Mod):
        q = abs(a) // abs(b) * (1 if (a < 0) == (b < 0) else -1)
        return q if isinstance(t, kexpr.Div) else a - q * b
    return {kexpr.Add: a + b, kexpr.Sub: a - b, kexpr.Mul: a * b}[type(t)]
