"""Vector loads of inputs read across a reshape: the resize scheduler vectorizes an input whose
innermost run the analysis showed to hold whole vectors even where the reference's axis is a
merge of the input's (a head-major [B, H, S, D] gradient transposed and flattened into its
third of a fused [B, S, 3 * H * D] projection gradient); the lowering turns the element loop
into one access where the index reads as a sum with the loop variable an addend of its own
(engine.lower.vector_index.base_access), and checks guards nested in conjunctions."""

import re

import pytest
import torch

from engine import DataType, FusionDefinition
from engine.codegen.expressions import render
from engine.compile import compile_fusion
from engine.lower.kexpr import Access, Add, And, Cmp, Mod, Mul, Paren, Stride, Sub, Var
from engine.lower.vector_index import base_access, uniform_cond
from engine.reference import evaluate
from tests.emulation import needs_gxx

v = Var("i7")
B, H, S, D = 2, 4, 8, 16
Q = Mul(Mod(Sub(Var("t"), 768), 24), 4)  # (t - 768) % 24 * 4: a multiple of 4


@pytest.mark.parametrize("index, base", [
    (Add(Mul(Var("b"), Stride("T0", 2)), Sub(Add(Q, v), 48)), "T0[b * T0.alloc_stride[2] + ((t - 768) % 24 * 4 + 0 - 48)]"),
    (Add(Mul(Var("b"), Stride("T0", 2)), Add(Add(Q, v), 48)), "T0[b * T0.alloc_stride[2] + ((t - 768) % 24 * 4 + 0 + 48)]"),
    (Add(Var("b"), Add(Q, v)), None),  # b: not known to be a multiple of 4
    (Add(Mul(Var("b"), Stride("T0", 2)), Sub(Add(Q, v), 46)), None),  # a shift of 46 misaligns
    (Add(Q, Sub(Var("c"), v)), None),  # the loop variable subtracted
    (Add(Mul(v, 4), Add(Q, v)), None),  # named twice
])
def test_a_vector_access_needs_the_variable_once_and_every_other_addend_a_multiple(index, base):
    got = base_access(Access("T0", index), "i7", 4)
    assert (render(got) if got is not None else None) == base


def test_a_guard_nested_in_a_conjunction_is_checked_comparison_by_comparison():
    inner = And((Cmp(Paren(Sub(Add(Q, v), 48)), ">=", 0), Cmp(Paren(Add(Q, v)), "<", 96)))
    assert uniform_cond(And((Cmp(Var("s"), "<", 32), inner)), "i7", 4)
    shifted = And((Cmp(Paren(Sub(Add(Q, v), 46)), ">=", 0),))
    assert not uniform_cond(And((Cmp(Var("s"), "<", 32), shifted)), "i7", 4)


def phi3_style_qkv_grad():
    """Thunder's backward of a rope on a fused qkv projection, reduced: q's and k's grads
    (g * cos plus rotate-half's backward of g * sin, cos and sin expanded over batch and
    heads), transposed to [B, S, H, D], flattened and padded into their thirds of the
    [B, S, 3 * H * D] projection gradient, v's grad beside them."""
    half, hd = D // 2, H * D
    with FusionDefinition() as fd:
        gq, gk, gv = (fd.define_tensor(shape=[B, H, S, D], contiguity=[True] * 4, dtype=DataType.BFloat16)
                      for _ in range(3))
        cos, sin = (fd.define_tensor(shape=[B, H, S, D], contiguity=[None, None, True, True],
                                     dtype=DataType.BFloat16) for _ in range(2))
        c, s = fd.ops.cast(cos, DataType.Float), fd.ops.cast(sin, DataType.Float)

        def grad(g):
            gf = fd.ops.cast(g, DataType.Float)
            gs = fd.ops.mul(gf, s)
            lo = fd.ops.slice(gs, [0, 0, 0, 0], [B, H, S, half])
            hi = fd.ops.slice(gs, [0, 0, 0, half], [B, H, S, D])
            rot = fd.ops.add(fd.ops.pad(fd.ops.neg(lo), [half, 0]), fd.ops.pad(hi, [0, half]))
            return fd.ops.cast(fd.ops.add(rot, fd.ops.mul(gf, c)), DataType.BFloat16)

        def third(g, left):
            flat = fd.ops.reshape(fd.ops.permute(g, [0, 2, 1, 3]), [B, S, hd])
            return fd.ops.cast(fd.ops.pad(flat, [left, 2 * hd - left]), DataType.Float)

        out = fd.ops.add(fd.ops.add(third(grad(gq), 0), third(grad(gk), hd)), third(gv, 2 * hd))
        fd.add_output(fd.ops.cast(out, DataType.BFloat16))
    g = torch.Generator().manual_seed(0)
    xs = [torch.randn(B, H, S, D, generator=g).bfloat16() for _ in range(3)]
    xs += [torch.randn(S, D, generator=g).bfloat16().expand(B, H, S, D) for _ in range(2)]
    return fd, xs


def _scalar_input_reads(source: str, inputs: list[str]) -> list[str]:
    """Lines of the kernel that read one of `inputs` other than by a vector load."""
    return [line.strip() for line in source.splitlines()
            if any(re.search(rf"\b{t}\[", line) for t in inputs) and "loadGeneric<" not in line]


@needs_gxx
def test_inputs_read_across_a_transpose_and_a_flatten_are_loaded_as_vectors():
    fd, xs = phi3_style_qkv_grad()
    cf = compile_fusion(fd, xs)
    kernels = [s for s in cf.segments if s.is_kernel]
    assert kernels
    for seg in kernels:
        names = re.findall(r"Tensor<__bfloat, 4, 4> (T\d+)", seg.cuda_source)
        assert names
        assert re.search(r"loadGeneric<__bfloat, [48]>", seg.cuda_source)
        assert _scalar_input_reads(seg.cuda_source, names) == []
    for out, ref in zip(cf.run(xs, backend="emulate"), evaluate(fd.fusion, xs)):
        assert torch.equal(out, ref)
