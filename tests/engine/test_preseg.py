"""Pre-segmentation rewrites that build ops (engine.preseg): a matmul over a broadcast K
axis is a multiply of its operands, fused with the ops around it."""

from __future__ import annotations

import pytest
import torch

from engine import DataType, FusionDefinition, compile_fusion
from engine.reference import evaluate


def _outer_product_fusion(dtype: DataType, a_shape: list[int], b_shape: list[int]) -> FusionDefinition:
    """cos(A @ B) where A's last axis and B's second-to-last are broadcasts of size 1."""
    with FusionDefinition() as fd:
        a = fd.define_tensor(shape=a_shape[:-1], contiguity=True, dtype=dtype)
        b = fd.define_tensor(shape=[b_shape[0], *b_shape[2:]] if len(b_shape) == 3 else b_shape[1:],
                             contiguity=True, dtype=dtype)
        wa = fd.ops.broadcast_in_dim(a, shape=a_shape, broadcast_dims=list(range(len(a_shape) - 1)))
        dims_b = [0, 2] if len(b_shape) == 3 else [1]
        wb = fd.ops.broadcast_in_dim(b, shape=b_shape, broadcast_dims=dims_b)
        m = fd.ops.matmul(wa, wb)
        fd.add_output(fd.ops.cos(m))
        fd.add_output(m)
    return fd


@pytest.mark.parametrize("dtype", [DataType.Float, DataType.BFloat16])
@pytest.mark.parametrize("a_shape,b_shape", [([1, 6, 1], [1, 1, 13]), ([3, 4, 1], [1, 5]), ([4, 1], [3, 1, 5])])
def test_matmul_over_a_broadcast_k_is_one_pointwise_kernel(dtype: DataType, a_shape: list[int],
                                                           b_shape: list[int]) -> None:
    fd = _outer_product_fusion(dtype, a_shape, b_shape)
    g = torch.Generator().manual_seed(0)
    tdt = torch.float32 if dtype == DataType.Float else torch.bfloat16
    xs = [torch.randn(a_shape[:-1], generator=g).to(tdt),
          torch.randn([b_shape[0], *b_shape[2:]] if len(b_shape) == 3 else b_shape[1:], generator=g).to(tdt)]
    cf = compile_fusion(fd, xs)
    assert [s.scheduler for s in cf.segments] == ["pointwise"]
    rules = [e.data.get("rule") for e in cf.trace.events if e.kind == "concretize"]
    assert "matmul_without_reduction" in rules
    got = cf.run(xs, backend="emulate")
    want = evaluate(fd.fusion, xs)
    # One product per element, rounded once: the GEMM's value exactly.
    assert got[1].shape == want[1].shape and torch.equal(got[1], want[1])
    torch.testing.assert_close(got[0], want[0])


def test_matmul_with_a_real_k_is_left_to_aten() -> None:
    with FusionDefinition() as fd:
        a = fd.define_tensor(shape=[-1, -1], contiguity=True, dtype=DataType.Float)
        b = fd.define_tensor(shape=[-1, -1], contiguity=True, dtype=DataType.Float)
        fd.add_output(fd.ops.cos(fd.ops.matmul(a, b)))
    xs = [torch.randn(4, 1), torch.randn(1, 5)]  # K = 1 at run time, but not a broadcast axis
    cf = compile_fusion(fd, xs)
    assert "expr_eval" in [s.scheduler for s in cf.segments]
    torch.testing.assert_close(cf.run(xs, backend="emulate")[0], evaluate(fd.fusion, xs)[0])
