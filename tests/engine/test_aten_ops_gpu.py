"""The torch-evaluated ops (scan, topk, argsort, scatter, index_put_accumulate, grouped_mm)
on the GPU through compile_fusion's cuda back end, with generated kernels around them,
against the reference evaluated on the CPU."""

from __future__ import annotations

import pytest
import torch

from engine import DataType, FusionDefinition, compile_fusion
from engine.aten_eval import scan
from engine.reference import evaluate

pytestmark = pytest.mark.gpu


@pytest.fixture(autouse=True)
def _gpu() -> None:
    if not torch.cuda.is_available():
        pytest.skip("no CUDA GPU")


def test_gpu_torch_evaluated_ops_between_kernels() -> None:
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.BFloat16)
        idx = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Int)
        w = fd.define_tensor(shape=[-1, -1, -1], contiguity=[True] * 3, dtype=DataType.BFloat16)
        offs = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Int32)
        xf = fd.ops.cast(x, DataType.Float)
        c = fd.ops.cumsum(fd.ops.mul(xf, xf), dim=1)
        v, i = fd.ops.topk(c, 4, dim=1, largest=True, sorted=True)
        fd.add_output(fd.ops.add(v, fd.ops.cast(i, DataType.Float)))
        fd.add_output(fd.ops.argsort(idx, dim=0, stable=True))
        fd.add_output(fd.ops.index_put_accumulate(xf, idx, fd.ops.exp(xf)))
        fd.add_output(fd.ops.scatter(xf, fd.ops.broadcast_in_dim(idx, [256, 64], [0]), 1.0, dim=0))
        fd.add_output(fd.ops.grouped_mm(x, w, offs))
    g = torch.Generator().manual_seed(0)
    xs = [torch.randn(256, 64, generator=g).bfloat16(), torch.randint(0, 256, (256,), generator=g),
          torch.randn(4, 64, 32, generator=g).bfloat16(), torch.tensor([64, 100, 200, 256], dtype=torch.int32)]
    cf = compile_fusion(fd, xs)
    assert "expr_eval" in [s.scheduler for s in cf.segments] and "pointwise" in [s.scheduler for s in cf.segments]
    outs = cf.run(xs, backend="cuda")
    for o, r in zip(outs, evaluate(fd.fusion, xs)):
        assert o.is_cuda and o.dtype == r.dtype and o.shape == r.shape
        if r.dtype == torch.int64:
            assert torch.equal(o.cpu(), r)
        else:
            torch.testing.assert_close(o.cpu().double(), r.double(), rtol=2e-2, atol=2e-2)


@pytest.mark.parametrize("kind", ["cumsum", "cumprod", "cummax", "cummin"])
@pytest.mark.parametrize("shape,dim", [((8192, 8), 0), ((3, 4096, 5), 1), ((64, 33), 0), ((40000, 2), 1)])
def test_gpu_scans_along_an_outer_axis(kind: str, shape: tuple, dim: int) -> None:
    """Few long scans along an outer axis go innermost and back (engine.aten_eval.scan): the
    same values as ATen's scan along the axis itself, integers exactly."""
    g = torch.Generator().manual_seed(1)
    for x in (torch.randint(-3, 4, shape, generator=g), torch.rand(shape, generator=g) + 0.5):
        y = scan(kind, x.cuda(), dim)
        want = scan(kind, x, dim)
        assert y.shape == want.shape and y.is_contiguous()
        if not x.dtype.is_floating_point:
            assert torch.equal(y.cpu(), want)
        elif kind != "cumprod":  # products of thousands of factors leave float's range
            torch.testing.assert_close(y.cpu(), want, rtol=1e-4, atol=1e-4)
