"""nvfp4 block quantization as a generated kernel: byte for byte against the reference on
the emulator (bf16 runs the two-values-per-compare path, fp32 the float path; odd global
scales and NaN blocks the division path), and a register-only kernel (ptxas: no stack)."""

from __future__ import annotations

import math
import re
import shutil
import subprocess

import pytest
import torch

from engine import DataType, FusionDefinition
from engine.compile import compile_fusion
from engine.reference import evaluate
from tests.emulation import needs_gxx

needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")
needs_gpu = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU")
# The emulator runs the runtime's portable branches, the GPU its PTX (bf16x2 compares,
# directed conversions).
BACKENDS = [pytest.param("emulate", marks=needs_gxx),
            pytest.param("cuda", marks=[pytest.mark.gpu, needs_gpu])]

TORCH = {DataType.BFloat16: torch.bfloat16, DataType.Float: torch.float32}


def quantize_fusion(dtype: DataType, global_scale: bool, swizzle: bool) -> FusionDefinition:
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=dtype, is_cpu=False)
        kw = {}
        if global_scale:
            kw["global_scale"] = fd.define_tensor(shape=[], contiguity=[], dtype=DataType.Float, is_cpu=False)
        q, s = fd.ops.nv_block_quantize(x, swizzle_scales=swizzle, block_size=16,
                                        dtype=DataType.Float4_e2m1fn, **kw)
        fd.add_output(q)
        fd.add_output(s)
    return fd


def hard_input(rows: int, k: int, dtype: torch.dtype, seed: int = 0) -> torch.Tensor:
    """Blocks of very different magnitudes, exact e2m1 ties after scaling, and specials."""
    g = torch.Generator().manual_seed(seed)
    mags = torch.tensor([1e-30, 1e-6, 1e-3, 0.1, 1.0, 30.0, 5000.0, 1e30])
    pick = torch.randint(0, len(mags), (rows, k // 16), generator=g)
    x = torch.randn(rows, k, generator=g) * mags[pick].repeat_interleave(16, dim=1)
    x[0, :16] = torch.linspace(-6, 6, 16) * 0.5  # ties of the e2m1 grid
    if rows > 1 and k >= 32:
        x[1, :16] = -0.0
        x[1, 16:32] = torch.tensor([0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0, 6.0] * 2) * 7.0
    if rows > 2:
        x[2, 3] = math.inf
    if rows > 3:
        x[3, 5] = math.nan
    if rows > 4:
        x[4, :16] = 1e-39  # subnormal in fp32 and bf16
    return x.to(dtype)


def run_both(fd: FusionDefinition, xs: list, backend: str) -> None:
    cf = compile_fusion(fd, xs)
    outs = cf.run(xs, backend=backend)
    refs = evaluate(fd.fusion, xs)
    assert len(outs) == len(refs) == 2
    for o, r in zip(outs, refs):
        assert o.shape == r.shape
        assert torch.equal(o.cpu().view(torch.uint8), r.view(torch.uint8))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", [DataType.BFloat16, DataType.Float])
@pytest.mark.parametrize("rows,k", [(32, 128), (7, 48), (24, 64), (130, 96)])
def test_quantize_kernel_bytes_match_reference(dtype: DataType, rows: int, k: int, backend: str) -> None:
    # 7x48 and 130x96 have block counts (21, 780) that are no multiple of the 128 threads.
    x = hard_input(rows, k, TORCH[dtype], seed=rows)
    run_both(quantize_fusion(dtype, True, False), [x, torch.tensor(200.0)], backend)
    run_both(quantize_fusion(dtype, False, False), [x], backend)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", [DataType.BFloat16, DataType.Float])
@pytest.mark.parametrize("gs", [-3.0, 2.0**100, 2.0**-100, 1e-45, 3.0e38])
def test_quantize_kernel_odd_global_scales(dtype: DataType, gs: float, backend: str) -> None:
    # Negative scales divide; huge and tiny ones push the steps to the ends of the float
    # and bf16 ranges.
    x = hard_input(8, 64, TORCH[dtype], seed=3)
    run_both(quantize_fusion(dtype, True, False), [x, torch.tensor(gs)], backend)


@needs_gxx
@pytest.mark.parametrize("dtype", [DataType.BFloat16, DataType.Float])
@pytest.mark.parametrize("gs", [0.0, math.inf, math.nan])
def test_quantize_kernel_nan_scales(dtype: DataType, gs: float) -> None:
    # Zero, infinite and NaN global scales make NaN scales (inf * 0 and the like). Their
    # sign is the host's NaN's on the emulator; on a GPU NaN bit patterns are no contract.
    x = hard_input(8, 64, TORCH[dtype], seed=3)
    run_both(quantize_fusion(dtype, True, False), [x, torch.tensor(gs)], "emulate")


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", [DataType.BFloat16, DataType.Float])
def test_swizzled_quantize_kernel_bytes_match_reference(dtype: DataType, backend: str) -> None:
    x = hard_input(256, 128, TORCH[dtype], seed=5)
    run_both(quantize_fusion(dtype, False, True), [x], backend)


@pytest.mark.parametrize("backend", BACKENDS)
def test_quantize_kernel_every_bf16_value(backend: str) -> None:
    # Every finite bf16 bit pattern of both signs, 15 to a block, beside a block maximum a
    # few times the block's own, so that each value meets the steps around its magnitude.
    bits = torch.arange(0, 0x7F80, dtype=torch.int32)
    vals = torch.cat([bits, bits | 0x8000]).to(torch.int16).view(torch.bfloat16).float()
    n = vals.numel() // 15 * 15
    blocks = vals[:n].reshape(-1, 15)
    factor = torch.tensor([1.0, 1.3, 2.0, 3.7, 6.0, 11.0]).repeat(blocks.shape[0] // 6 + 1)
    top = blocks.abs().amax(dim=1) * factor[: blocks.shape[0]]
    x = torch.cat([blocks, top[:, None]], dim=1).reshape(-1, 64).to(torch.bfloat16)
    run_both(quantize_fusion(DataType.BFloat16, True, False), [x, torch.tensor(200.0)], backend)
    run_both(quantize_fusion(DataType.BFloat16, False, False), [x], backend)


def _ptxas_stack(source: str, tmp_path) -> list[int]:
    cu = tmp_path / "k.cu"
    cu.write_text(source)
    r = subprocess.run(["nvcc", "-arch=sm_90", "-Xptxas", "-v", "-c", str(cu), "-o", str(tmp_path / "k.o")],
                       capture_output=True, text=True, check=True)
    return [int(n) for n in re.findall(r"(\d+) bytes stack frame", r.stderr)]


@needs_nvcc
@pytest.mark.parametrize("swizzle", [False, True])
def test_quantize_kernel_keeps_blocks_in_registers(swizzle: bool, tmp_path) -> None:
    fd = quantize_fusion(DataType.BFloat16, not swizzle, swizzle)
    xs = [torch.randn(256, 512, dtype=torch.bfloat16)] + ([] if swizzle else [torch.tensor(200.0)])
    (seg,) = compile_fusion(fd, xs).segments
    assert _ptxas_stack(seg.cuda_source, tmp_path) == [0]
