"""A thread's register-resident Welford is lowered as two passes (sum, then squared
deviations) and its block combine pairs equal counts without dividing where the threads
are a power of two (engine/lower/welford_two_pass.py); a predicated one keeps the serial
update and the general combine. Both compute the reference's values on the emulator."""

import re

import pytest
import torch

from benchmarks.fusions import BF16, F32, layer_norm
from engine.compile import compile_fusion
from engine.config import Options
from engine.reference import evaluate
from tests.emulation import needs_gxx


def kernel_body(cf) -> str:  # noqa: ANN001
    src = cf.segments[0].cuda_source
    return src[src.rindex("__global__"):]


@needs_gxx
@pytest.mark.parametrize("cols, overrides, two_pass, equal", [
    (1024, {}, True, True),  # 128 threads x 2 batches x 4 values
    # 125 threads x 2 batches x 4 values: equal counts over no power of two of threads
    (1000, {"lparams.bdimx": 128, "batches_per_block_inner_reduction": 2}, True, True),
    # 128 threads x 8 batches over 1001 values: the last threads' values predicated off
    (1001, {"lparams.bdimx": 128, "batches_per_block_inner_reduction": 8}, False, False),
])
def test_register_welford_is_two_passes_where_every_thread_folds_as_many(cols: int, overrides: dict,
                                                                        two_pass: bool, equal: bool):
    fd = layer_norm(F32, 4, cols)
    g = torch.Generator().manual_seed(cols)
    xs = [torch.randn(4, cols, generator=g) * 3 + 5, torch.randn(cols, generator=g), torch.randn(cols, generator=g)]
    cf = compile_fusion(fd, xs, Options(heuristic_overrides=overrides))
    body = kernel_body(cf)
    assert ("fs_welford_update" not in body) == two_pass
    assert ("blockWelfordFixedCounts" in body) == equal
    if two_pass:
        assert re.search(r"T\d+_acc\[0\] = T\d+_acc\[0\] / static_cast<float>\(\d+\);", body)
    outs = cf.run(xs, backend="emulate")
    for got, want in zip(outs, evaluate(fd.fusion, xs)):
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)


@needs_gxx
def test_a_welford_over_a_projected_bf16_row_reads_the_buffer_in_both_passes():
    """The float values are a cast of the persistent bf16 input (projected): both passes read
    the bf16 registers and convert, and the block combines fixed counts."""
    fd = layer_norm(BF16, 8, 1024)
    g = torch.Generator().manual_seed(5)
    xs = [(torch.randn(8, 1024, generator=g) * 3 + 5).to(torch.bfloat16),
          torch.randn(1024, generator=g).to(torch.bfloat16), torch.randn(1024, generator=g).to(torch.bfloat16)]
    cf = compile_fusion(fd, xs)
    body = kernel_body(cf)
    assert "fs_welford_update" not in body and "blockWelfordFixedCounts" in body
    assert re.search(r"fs_d = __bfloat2float\(T\d+\[", body)
    outs = cf.run(xs, backend="emulate")
    for got, want in zip(outs, evaluate(fd.fusion, xs)):
        torch.testing.assert_close(got.float(), want.float(), rtol=1e-2, atol=1e-2)
