"""An outer Welford reduced across blocks (a BatchNorm's var_mean over rows) combines every
column a thread holds in one gridWelfordGroup call: one arrival and one last-block combine for
the thread's whole vector of columns instead of one gridWelford per column."""

from __future__ import annotations

import pytest
import torch

from engine import DataType, FusionDefinition, compile_fusion
from engine.reference import evaluate
from tests.emulation import require_gxx


def outer_var_mean(dtype: DataType) -> FusionDefinition:
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=dtype)
        var, mean = fd.ops.var_mean(fd.ops.cast(x, DataType.Float), dims=[0], correction=1)
        fd.add_output(var)
        fd.add_output(mean)
    return fd


@pytest.mark.parametrize(("rows", "cols", "dtype"), [(3000, 40, DataType.Float), (5000, 24, DataType.BFloat16)])
def test_an_outer_grid_welford_combines_a_threads_columns_at_once(rows: int, cols: int, dtype: DataType) -> None:
    fd = outer_var_mean(dtype)
    g = torch.Generator().manual_seed(rows)
    x = torch.randn(rows, cols, generator=g) * 3 + 5  # an offset mean: a naive sum of squares loses it
    xs = [x if dtype == DataType.Float else x.to(torch.bfloat16)]
    cf = compile_fusion(fd, xs)
    (seg,) = cf.segments
    assert seg.launch.grid[1] > 1, "the rows are split over blocks"
    assert "gridWelfordGroup<" in seg.cuda_source and "gridWelford<" not in seg.cuda_source
    require_gxx()
    for got, want in zip(cf.run(xs, backend="emulate"), evaluate(fd.fusion, xs)):
        torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-4)


@pytest.mark.gpu
@pytest.mark.parametrize(("rows", "cols", "dtype"), [(8192, 1024, DataType.Float), (100352, 256, DataType.BFloat16),
                                                     (3000, 40, DataType.Float)])
def test_an_outer_grid_welford_group_on_the_gpu(rows: int, cols: int, dtype: DataType) -> None:
    if not torch.cuda.is_available():
        pytest.skip("no CUDA GPU")
    fd = outer_var_mean(dtype)
    g = torch.Generator().manual_seed(cols)
    x = torch.randn(rows, cols, generator=g) * 3 + 5
    xs = [x if dtype == DataType.Float else x.to(torch.bfloat16)]
    cf = compile_fusion(fd, xs)
    assert "gridWelfordGroup<" in cf.segments[0].cuda_source
    for _ in range(3):  # the arrival flags are reset for the next launch
        outs = cf.run(xs, backend="cuda")
    for got, want in zip(outs, evaluate(fd.fusion, xs)):
        torch.testing.assert_close(got.cpu(), want, rtol=1e-4, atol=1e-4)
