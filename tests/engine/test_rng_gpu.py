"""RNG ops on the GPU: the kernel's Philox draws against the reference evaluator's (uniform
bit for bit, normal to the last bits of the math library), at a size the pointwise scheduler
vectorizes, and in a dropout fusion."""

from __future__ import annotations

import pytest
import torch

from engine import DataType, compile_fusion
from engine.reference import evaluate
from tests.engine.test_rng import _fusion, dropout_fusion

pytestmark = pytest.mark.gpu


@pytest.fixture(autouse=True)
def _gpu() -> None:
    if not torch.cuda.is_available():
        pytest.skip("no CUDA GPU")


@pytest.mark.parametrize("dtype", [DataType.Float, DataType.Double, DataType.Half, DataType.BFloat16])
@pytest.mark.parametrize("dist", ["uniform", "normal"])
@pytest.mark.parametrize("shape", [[5, 37], [1024, 4096]])
def test_gpu_draws_the_reference_numbers(dist, dtype, shape) -> None:
    fd = _fusion(dist, dtype, shape)
    xs = [987654321, 12]
    (out,) = compile_fusion(fd, xs).run(xs, backend="cuda")
    (ref,) = evaluate(fd.fusion, xs)
    if dist == "uniform":
        assert torch.equal(out.cpu(), ref)
    else:
        tol = 1e-5 if dtype.bits >= 32 else 1e-2
        torch.testing.assert_close(out.cpu().double(), ref.double(), rtol=tol, atol=tol)


def test_gpu_dropout_matches_the_reference_exactly() -> None:
    fd = dropout_fusion()
    xs = [torch.randn(2048, 4096).bfloat16(), 2024, 8]
    outs = compile_fusion(fd, xs).run(xs, backend="cuda")
    for o, r in zip(outs, evaluate(fd.fusion, xs)):
        assert torch.equal(o.cpu(), r)
