"""A thread's register-resident Welford is lowered as two passes (sum, then squared
deviations) and its block combine pairs equal counts without dividing where the threads
are a power of two (engine/lower/welford_two_pass.py); a predicated one keeps the serial
update and the general combine. Both compute the reference's values on the emulator."""

import re

import pytest
import torch

from benchmarks.fusions import F32, layer_norm
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
    # 125 threads x 2 batches x 4 values: equal counts, but no power of two of threads
    (1000, {"lparams.bdimx": 128, "batches_per_block_inner_reduction": 2}, True, False),
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
    assert ("blockWelfordEqualCounts" in body) == equal
    if two_pass:
        assert re.search(r"T\d+_acc\[0\] = T\d+_acc\[0\] / static_cast<float>\(\d+\);", body)
    outs = cf.run(xs, backend="emulate")
    for got, want in zip(outs, evaluate(fd.fusion, xs)):
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
