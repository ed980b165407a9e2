"""No generated kernel uses local memory at the sizes real models run (ptxas, without a GPU).

Each fusion is compiled at model sizes (its script rewritten as scripts/size_sweep.py does,
meta tensors for the inputs) and every kernel is compiled by nvcc for sm_90: a stack frame
or lmem (per-thread arrays ptxas could not keep in registers, or spills) fails the test. A
persistent buffer in local memory is the failure this guards against (an H200 report: a
reduction kernel of an RMSNorm + residual backward with 40 KB of local memory per thread,
20 s a call). The cases are the norms and their backwards at widths 2048 to 20480, softmax
and cross entropy; scripts/ptxas_check.py runs the whole corpus.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from engine.runtime.nvcc import nvcc_available
from engine.runtime.ptxas import ptxas_usage
from scripts.ptxas_check import compile_at
from scripts.scales import Scale

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = ROOT / "tests" / "realworld" / "scripts"
SAMPLES = ROOT / "sample_fusions"

# (file, input dim size -> model size)
CASES: list[tuple[Path, dict[int, int]]] = [
    # the H200 report: RMSNorm + residual backward, bf16 [1, 2048, 8192], a [9216, 8192] cat
    (SCRIPTS / "qwen2_rms_norm_residual_bwd_qkv_grad_cat.py", {40: 2048, 128: 8192, 8: 512}),
    # wider than the combined kernel's arrays fit: an inner persistent and a reduction kernel
    (SCRIPTS / "qwen2_rms_norm_residual_bwd_qkv_grad_cat.py", {40: 2048, 128: 20480, 8: 1280}),
    (SCRIPTS / "llama2_rms_norm_bwd_scalar_inputs.py", {16: 2048, 32: 8192}),
    (SCRIPTS / "rms_norm_bwd.py", {1000: 2048, 33: 4096}),
    # multi-wave launches: three blocks an SM bound by the launch bounds (128 and 100 threads)
    (SCRIPTS / "rms_norm_bwd_gemma_one_plus_weight_bf16.py", {24: 8192, 32: 2048}),
    (SCRIPTS / "layer_norm_bwd_3d_expanded_stats_residual_grad_bf16.py", {3: 16, 10: 512, 50: 1600}),
    (SCRIPTS / "layer_norm_bwd.py", {64: 2048, 96: 20480}),
    (SAMPLES / "rms_norm.py", {64: 2048, 512: 8192}),
    (SAMPLES / "layer_norm.py", {32: 2048, 256: 20480}),
    (SAMPLES / "softmax.py", {16: 2048, 1000: 20480}),
    (SCRIPTS / "softmax_bwd_bf16_roundtrip.py", {72: 4096, 130: 8192}),
    (SAMPLES / "cross_entropy.py", {32: 2048, 100: 32000}),
    (SCRIPTS / "cross_entropy_bwd_onehot.py", {16: 2048, 100: 32000}),
]

pytestmark = pytest.mark.skipif(not nvcc_available(), reason="nvcc is not available")


def _id(case: tuple[Path, dict[int, int]]) -> str:
    path, sizes = case
    return f"{path.stem}-" + "-".join(f"{k}to{v}" for k, v in sizes.items())


@pytest.mark.parametrize("case", CASES, ids=[_id(c) for c in CASES])
def test_no_kernel_has_local_memory_at_model_sizes(case: tuple[Path, dict[int, int]]) -> None:
    from engine import loads_fusion

    path, sizes = case
    text = path.read_text()
    fd = loads_fusion(text, filename=str(path))
    xs = fd.example_inputs(device="cpu", seed=0)
    cf = compile_at(path, text, xs, fd.input_specs or [None] * len(xs), Scale("model", sizes), 1 << 31)
    kernels = [s for s in cf.segments if s.is_kernel]
    assert kernels
    with ThreadPoolExecutor(max_workers=2) as pool:
        usages = list(pool.map(lambda s: ptxas_usage(s.cuda_source, "sm_90"), kernels))
    bad = []
    for seg, usage in zip(kernels, usages):
        (u,) = usage
        if u.local_bytes or u.spill_stores:
            bad.append(f"segment {seg.id} ({seg.scheduler}, {seg.launch}): {u.stack_frame} bytes stack "
                       f"frame, {u.spill_stores}/{u.spill_loads} bytes spilled, {u.registers} registers")
    assert not bad, "\n".join(bad)
