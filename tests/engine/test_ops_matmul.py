"""matmul and linear: torch's shape rules, the trailing reduction axis nvFuser gives the
output, values against torch (low precision computed in float), and errors."""

import pytest
import torch

from engine import DataType, FusionDefinition, FusionDefinitionError


@pytest.mark.parametrize(
    "sa,sb",
    [
        ((3, 4), (4, 5)),
        ((4,), (4,)),
        ((4,), (2, 4, 5)),
        ((2, 3, 4), (4,)),
        ((2, 1, 3, 4), (5, 4, 6)),
        ((3, 4), (2, 4, 5)),
    ],
)
def test_matmul_shapes_and_values(sa, sb):
    with FusionDefinition() as fd:
        a = fd.define_tensor(shape=[-1] * len(sa), dtype=DataType.Float)
        b = fd.define_tensor(shape=[-1] * len(sb), dtype=DataType.Float)
        out = fd.ops.matmul(a, b)
        fd.add_output(out)
    x, y = torch.randn(*sa), torch.randn(*sb)
    (got,) = fd.execute([x, y])
    want = torch.matmul(x, y)
    assert got.shape == want.shape
    assert torch.allclose(got, want, atol=1e-5)
    assert out.ndim == want.dim()
    # The contracted axis rides along as the last, reduction, IterDomain.
    assert out.domain.logical[-1].is_reduction


def test_matmul_line_and_domain():
    with FusionDefinition() as fd:
        a = fd.define_tensor(shape=[8, 16], dtype=DataType.BFloat16)
        b = fd.define_tensor(shape=[16, 4], dtype=DataType.BFloat16)
        out = fd.ops.matmul(a, b)
        fd.add_output(out)
    assert str(out) == "T2_g___bfloat[iS4{8}, iS5{4}, rS6{16}]"
    lines = fd.fusion.print_math().splitlines()
    assert lines[1] == "T2_g___bfloat[iS4{8}, iS5{4}, rS6{16}]"
    assert lines[2] == "   = matmul(T0_g___bfloat[iS0{8}, iS1{16}],"


def test_matmul_bf16_computed_in_float():
    with FusionDefinition() as fd:
        a = fd.define_tensor(shape=[-1, -1], dtype=DataType.BFloat16)
        b = fd.define_tensor(shape=[-1, -1], dtype=DataType.BFloat16)
        fd.add_output(fd.ops.matmul(a, b))
    x = torch.randn(5, 64).bfloat16()
    y = torch.randn(64, 3).bfloat16()
    (got,) = fd.execute([x, y])
    assert got.dtype == torch.bfloat16
    assert torch.equal(got, (x.float() @ y.float()).bfloat16())


def test_linear_with_and_without_bias():
    with FusionDefinition() as fd:
        a = fd.define_tensor(shape=[-1, -1, -1], dtype=DataType.Float)
        w = fd.define_tensor(shape=[-1, -1], dtype=DataType.Float)
        bias = fd.define_tensor(shape=[-1], dtype=DataType.Float)
        w1 = fd.define_tensor(shape=[-1], dtype=DataType.Float)
        o1 = fd.ops.linear(a, w, bias)
        o2 = fd.ops.linear(a, w)
        o3 = fd.ops.linear(a, w1)
        for o in (o1, o2, o3):
            fd.add_output(o)
    x, wt, bs, wv = torch.randn(2, 3, 4), torch.randn(5, 4), torch.randn(5), torch.randn(4)
    g1, g2, g3 = fd.execute([x, wt, bs, wv])
    F = torch.nn.functional  # noqa: N806 - torch's usual alias
    assert torch.allclose(g1, F.linear(x, wt, bs), atol=1e-5)
    assert torch.allclose(g2, F.linear(x, wt), atol=1e-5)
    assert torch.allclose(g3, F.linear(x, wv), atol=1e-5)
    assert g3.shape == (2, 3)
    assert [str(i)[0] for i in o1.domain.logical] == ["i", "i", "i", "r"]


def test_linear_with_leading_weight_axes():
    """nvFuser's linear of a weight [D, N, K] (its leading axes meant for devices), bias
    [D, N]: the output [D, ..., N] holds each block's linear of the whole input, on the
    reference and through the compiled (ATen) path."""
    from engine import compile_fusion

    with FusionDefinition() as fd:
        a = fd.define_tensor(shape=[-1, -1, 4], dtype=DataType.Float)
        w = fd.define_tensor(shape=[2, 5, 4], dtype=DataType.Float)
        bias = fd.define_tensor(shape=[2, 5], dtype=DataType.Float)
        out = fd.ops.linear(a, w, bias)
        fd.add_output(fd.ops.relu(out))
    with FusionDefinition() as bad:
        a2, w2 = bad.define_tensor(shape=[3, 4]), bad.define_tensor(shape=[2, 5, 4])
        with pytest.raises(FusionDefinitionError, match=r"linear: bias T2 has rank 1; it must be \[2, N\]"):
            bad.ops.linear(a2, w2, bad.define_tensor(shape=[5]))
    assert [str(i.extent.inline()) for i in out.domain.logical] == ["2", "i0", "i2", "5", "4"]
    x, wt, bs = torch.randn(3, 6, 4), torch.randn(2, 5, 4), torch.randn(2, 5)
    want = torch.nn.functional.linear(x, wt.view(-1, 4), bs.view(-1)).view(3, 6, 2, 5).permute(2, 0, 1, 3).relu()
    (got,) = fd.execute([x, wt, bs])
    torch.testing.assert_close(got, want)
    (emulated,) = compile_fusion(fd, [x, wt, bs]).run([x, wt, bs], backend="emulate")
    torch.testing.assert_close(emulated, want)


def test_linear_bf16_like_seed002():
    # Seed 002's linear: [2, 64, 1024] x [1024, 1024] + [1024], here smaller.
    with FusionDefinition() as fd:
        a = fd.define_tensor(shape=[2, 8, 16], dtype=DataType.BFloat16)
        w = fd.define_tensor(shape=[16, 16], dtype=DataType.BFloat16)
        b = fd.define_tensor(shape=[16], dtype=DataType.BFloat16)
        out = fd.ops.linear(a, w, b)
        fd.add_output(out)
    assert str(out) == "T3_g___bfloat[iS6{2}, iS7{8}, iS8{16}, rS9{16}]"
    x, wt, bs = torch.randn(2, 8, 16).bfloat16(), torch.randn(16, 16).bfloat16(), torch.randn(16).bfloat16()
    (got,) = fd.execute([x, wt, bs])
    want = torch.nn.functional.linear(x.float(), wt.float(), bs.float()).bfloat16()
    assert torch.equal(got, want)


def test_matmul_linear_errors():
    with FusionDefinition() as fd:
        a = fd.define_tensor(shape=[3, 4])
        b = fd.define_tensor(shape=[5, 6])
        c = fd.define_tensor(shape=[2, 4, 6])
        d = fd.define_tensor(shape=[3, 6, 2])
        i = fd.define_tensor(shape=[4, 2], dtype=DataType.Int)
        h = fd.define_tensor(shape=[4, 2], dtype=DataType.Half)
        bias = fd.define_tensor(shape=[7])
        with pytest.raises(FusionDefinitionError, match="matmul: contracted sizes differ: T0 has 4, T1 has 5"):
            fd.ops.matmul(a, b)
        with pytest.raises(FusionDefinitionError, match="matmul: batch axis 0 does not broadcast: T2 has 2, T3 has 3"):
            fd.ops.matmul(c, d)
        with pytest.raises(FusionDefinitionError, match="matmul: T4 must be a floating tensor, got int64_t"):
            fd.ops.matmul(a, i)
        with pytest.raises(FusionDefinitionError, match=r"matmul: operands must have one dtype \(T0 is float, T5 is __half\)"):
            fd.ops.matmul(a, h)
        with pytest.raises(FusionDefinitionError, match="linear: contracted sizes differ"):
            fd.ops.linear(a, b)
        with pytest.raises(FusionDefinitionError, match="linear: bias T6 has 7 elements but weight T0 has 3 outputs"):
            fd.ops.linear(fd.define_tensor(shape=[2, 4]), a, bias)
        with pytest.raises(FusionDefinitionError, match="linear: weight T8 must have rank >= 1"):
            fd.ops.linear(a, fd.define_tensor(shape=[]))
        with pytest.raises(FusionDefinitionError, match="linear: contracted sizes differ"):
            fd.ops.linear(a, c)
