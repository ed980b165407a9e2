"""Attention (an expr_eval segment) on the GPU: forward and backward through compile_fusion's
cuda back end, against the reference evaluated on the CPU."""

from __future__ import annotations

import pytest
import torch

from engine import DataType, FusionDefinition, compile_fusion
from engine.reference import evaluate

pytestmark = pytest.mark.gpu


@pytest.fixture(autouse=True)
def _gpu() -> None:
    if not torch.cuda.is_available():
        pytest.skip("no CUDA GPU")


@pytest.mark.parametrize("causal", [False, True])
def test_gpu_attention_forward_and_backward(causal: bool) -> None:
    with FusionDefinition() as fd:
        q, k, v, g = (fd.define_tensor(shape=[-1, -1, -1, -1], contiguity=[True] * 4, dtype=DataType.BFloat16)
                      for _ in range(4))
        out, lse, seed, offset = fd.ops.sdpfa_fwd(q, k, v, None, causal, None)
        fd.add_output(out)
        for t in fd.ops.sdpfa_bwd(g, q, k, v, out, lse, 0.0, causal, seed, offset, None):
            fd.add_output(t)
    xs = [torch.randn(2, 4, 128, 64, dtype=torch.bfloat16) for _ in range(4)]
    outs = compile_fusion(fd, xs).run(xs, backend="cuda")
    for o, r in zip(outs, evaluate(fd.fusion, xs)):
        assert o.is_cuda
        torch.testing.assert_close(o.cpu().float(), r.float(), rtol=2e-2, atol=2e-2)


def test_gpu_attention_takes_atens_flash_attention() -> None:
    """On the GPU the segment runs ATen's flash kernels (as nvFuser does), not the math path
    that holds the whole score matrix."""
    from engine.reference import _flash_bwd, _flash_fwd

    q, k, v, g = (torch.randn(2, 4, 256, 64, device="cuda", dtype=torch.bfloat16) for _ in range(4))
    got = _flash_fwd(q, k, v, True, 0.125)
    assert got is not None
    out, lse = got
    want = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True, scale=0.125)
    torch.testing.assert_close(out, want, rtol=2e-2, atol=2e-2)
    assert lse.dtype == torch.float32 and lse.shape == (2, 4, 256)
    grads = _flash_bwd(g, q, k, v, out, lse, True, 0.125)
    assert grads is not None and [t.shape for t in grads] == [q.shape, k.shape, v.shape]
    assert _flash_fwd(q.float(), k.float(), v.float(), True, 0.125) is None  # fp32: the math path
