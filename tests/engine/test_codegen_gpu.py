"""Every bundled sample on the GPU (the `cuda` back end) against the reference evaluator."""

from __future__ import annotations

import pytest
import torch

from engine import load_fusion
from engine.compile import compile_fusion
from engine.reference import evaluate

pytestmark = pytest.mark.gpu

SAMPLES = [
    "gelu_bias", "softmax", "layer_norm", "rms_norm", "outer_reduction", "transpose", "reshape_chain",
    "cross_entropy", "seed001_inner_outer_alloc", "seed002_stream_single_set", "seed002_stream_two_sets",
    "seed002_stream_three_sets_disjoint", "seed002_stream_reduction", "seed002_stream_matmul_m",
    "seed003_rope_bwd_small", "seed003_rope_bwd", "seed004_nvfp4_quantize", "seed004_nvfp4_quantize_swizzled",
    "seed000_moe_layout_op",
]


@pytest.fixture(autouse=True)
def _gpu() -> None:
    if not torch.cuda.is_available():
        pytest.skip("no CUDA GPU")


@pytest.mark.parametrize("name", SAMPLES)
def test_sample_on_gpu_matches_reference(name: str) -> None:
    fd = load_fusion(f"sample_fusions/{name}.py")
    xs = fd.example_inputs(device="cpu", seed=0)
    cf = compile_fusion(fd, xs)
    outs = cf.run(xs, backend="cuda")
    refs = evaluate(fd.fusion, xs)
    for o, r in zip(outs, refs):
        o = o.cpu()
        assert o.shape == r.shape and o.dtype == r.dtype
        if o.dtype.is_floating_point and o.element_size() >= 2:
            tol = 1e-5 if o.dtype in (torch.float32, torch.float64) else 1e-2
            torch.testing.assert_close(o.double(), r.double(), rtol=tol, atol=tol * max(1.0, r.abs().max().item()))
        else:
            assert torch.equal(o.view(torch.uint8) if o.element_size() == 1 else o,
                               r.view(torch.uint8) if r.element_size() == 1 else r)


@pytest.mark.parametrize("shape", [(8192, 8192), (4100, 8300), (1000, 3000)])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32])
def test_swizzled_transpose_tiles_on_gpu(shape: tuple[int, int], dtype: torch.dtype) -> None:
    """The transpose scheduler's Xor-swizzled shared tiles (128x128 bf16, 64x64 and 32x32 otherwise),
    with partial tiles at the edges, exact against the reference."""
    from benchmarks.fusions import transpose
    from engine.dtypes import DataType

    m, n = shape
    fd = transpose(DataType.BFloat16 if dtype == torch.bfloat16 else DataType.Float, m, n)
    g = torch.Generator().manual_seed(0)
    xs = [torch.randn(m, n, generator=g).to(dtype), torch.randn(n, m, generator=g).to(dtype)]
    cf = compile_fusion(fd, xs)
    assert [s.scheduler for s in cf.segments] == ["transpose"]
    assert cf.segments[0].params.swizzle
    out = cf.run([x.cuda() for x in xs], backend="cuda")[0].cpu()
    assert torch.equal(out, evaluate(fd.fusion, xs)[0])
