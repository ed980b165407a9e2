"""Statistics: mean, var (two-pass composite), var_mean (one Welford), welford; values
against torch, composites' exprs, dtypes, and errors."""

import pytest
import torch

from engine import DataType, FusionDefinition, FusionDefinitionError
from engine.ir.exprs import BinaryOp, ReductionOp, WelfordOp


def _exprs(fd, cls):
    return [e for e in fd.fusion.exprs() if isinstance(e, cls)]


@pytest.mark.parametrize("dims,keepdim", [([1], False), ([0, 2], True), ([-1], False)])
def test_mean_and_var_values(dims, keepdim):
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1, -1, -1], dtype=DataType.Float)
        fd.add_output(fd.ops.mean(t0, dims, keepdim=keepdim))
        fd.add_output(fd.ops.var(t0, dims, correction=1, keepdim=keepdim))
        fd.add_output(fd.ops.var(t0, dims, correction=0, keepdim=keepdim))
    x = torch.randn(3, 4, 5, dtype=torch.float32)
    m, v1, v0 = fd.execute([x])
    assert torch.allclose(m, x.mean(dims, keepdim=keepdim), atol=1e-6)
    assert torch.allclose(v1, x.var(dims, correction=1, keepdim=keepdim), atol=1e-5)
    assert torch.allclose(v0, x.var(dims, correction=0, keepdim=keepdim), atol=1e-5)


def test_var_is_a_two_pass_composite_of_sums():
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[4, 8], dtype=DataType.Float)
        fd.add_output(fd.ops.var(t0, [1]))
    assert len(_exprs(fd, ReductionOp)) == 2
    assert not _exprs(fd, WelfordOp)
    ops = [e.op for e in _exprs(fd, BinaryOp)]
    assert ops == ["div", "sub", "mul", "div"]
    # The divisor is max(N - correction, 0), N the reduced element count.
    assert fd.fusion.print_math().splitlines()[-2] == "   / 7;"


def test_var_mean_uses_welford():
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1, -1], dtype=DataType.Float)
        v, m = fd.ops.var_mean(t0, [0], correction=1, keepdim=True)
        fd.add_output(v)
        fd.add_output(m)
    assert len(_exprs(fd, WelfordOp)) == 1
    x = torch.randn(6, 3)
    gv, gm = fd.execute([x])
    wv, wm = torch.var_mean(x, [0], correction=1, keepdim=True)
    assert torch.allclose(gv, wv, atol=1e-6) and torch.allclose(gm, wm, atol=1e-6)


def test_low_precision_statistics_compute_in_float():
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1, -1], dtype=DataType.BFloat16)
        m = fd.ops.mean(t0, [1])
        v = fd.ops.var(t0, [1])
        fd.add_output(m)
        fd.add_output(v)
    assert m.dtype == DataType.BFloat16 and v.dtype == DataType.BFloat16
    x = torch.randn(4, 33).bfloat16()
    gm, gv = fd.execute([x])
    xf = x.float()
    assert torch.equal(gm, xf.mean(1).bfloat16())
    assert torch.allclose(gv.float(), xf.var(1).bfloat16().float(), rtol=1e-2)


def test_integer_mean_is_float():
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1], dtype=DataType.Int32)
        m = fd.ops.mean(t0, [0])
        fd.add_output(m)
    assert m.dtype == DataType.Float
    (got,) = fd.execute([torch.tensor([1, 2, 4], dtype=torch.int32)])
    assert torch.allclose(got, torch.tensor(7 / 3))


def test_welford_outputs_and_listing():
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[3, 4], dtype=DataType.Float)
        avg, var_sum, n = fd.ops.welford(t0, [1])
        for t in (avg, var_sum, n):
            fd.add_output(t)
    assert n.dtype == DataType.Int
    assert fd.fusion.print_math().splitlines()[1:6] == [
        "T1_g_float[iS2{3}, rS3{4}](Avg),",
        "T2_g_float[iS4{3}, rS5{4}](Var),",
        "T3_g_int64_t[iS6{3}, rS7{4}](Count)",
        "   = Welford ( T0_g_float[iS0{3}, iS1{4}](Avg), ",
        "    allreduce = false )",
    ]
    x = torch.randn(3, 4)
    ga, gv, gn = fd.execute([x])
    assert torch.allclose(ga, x.mean(1), atol=1e-6)
    assert torch.allclose(gv, ((x - x.mean(1, keepdim=True)) ** 2).sum(1), atol=1e-5)
    assert gn.dtype == torch.int64 and torch.equal(gn, torch.full((3,), 4))


def test_statistics_errors():
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[3, 4])
        i0 = fd.define_tensor(shape=[3], dtype=DataType.Int)
        with pytest.raises(FusionDefinitionError, match="welford: T1 must be a floating tensor, got int64_t"):
            fd.ops.welford(i0, [0])
        with pytest.raises(FusionDefinitionError, match="var: dim 2 is out of range for rank 2 of T0"):
            fd.ops.var(t0, [2])
        with pytest.raises(FusionDefinitionError, match="var: correction must be a number >= 0"):
            fd.ops.var(t0, [1], correction=-1)
        with pytest.raises(FusionDefinitionError, match=r"mean: dims \[1, -1\] repeat an axis"):
            fd.ops.mean(t0, [1, -1])
        with pytest.raises(FusionDefinitionError, match="var_mean: input must be a tensor"):
            fd.ops.var_mean(1.0, [0])
