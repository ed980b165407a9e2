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
