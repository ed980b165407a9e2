"""The multi-wave launch of the combined inner-outer schedule (engine.schedule.inner_outer_multi_wave):
one row per block at a time, several blocks an SM held co-resident by the kernel's launch bounds,
the outer reductions finished by a cooperative grid reduction over all of them."""

from __future__ import annotations

import pytest
import torch

from engine import DataType, FusionDefinition, compile_fusion
from engine.config import Options
from engine.reference import evaluate
from engine.runtime.device import model
from engine.schedule.inner_outer_multi_wave import MIN_BLOCKS_PER_SM, minimum_batch, multi_wave
from engine.schedule.inner_persistent_batch import regs_per_thread

H200 = model("H200")


@pytest.mark.parametrize("inner, outer, batch", [(1024, 4096, 1), (2048, 8192, 2), (3072, 2048, 3),
                                                 (3072, 4096, 4), (8192, 2048, 4)])
def test_minimum_batch(inner: int, outer: int, batch: int) -> None:
    assert minimum_batch(inner, outer) == batch


def test_a_launch_holds_its_blocks_an_sm_within_the_registers_they_leave() -> None:
    # bf16 x and grad_out projected (32 bits a row element) and one outer partial (32 bits)
    c = multi_wave(H200, 2048, 8192, 8, 64, 0)
    assert c is not None
    assert c.blocks_per_sm >= MIN_BLOCKS_PER_SM and c.gdimy == c.blocks_per_sm * H200.sm_count
    assert c.threads * c.batch * 8 >= 2048 and c.batch >= minimum_batch(2048, 8192)
    assert c.warps_per_sm == c.threads // 32 * c.blocks_per_sm
    assert c.registers_available == regs_per_thread(c.warps_per_sm * 32, H200)
    assert c.spare >= 0


def test_buffers_too_large_for_enough_blocks_give_no_launch() -> None:
    # 8 KB of registers a row element: no block size keeps three blocks an SM
    assert multi_wave(H200, 8192, 8192, 8, 8 * 1024, 0) is None


def test_shared_memory_bounds_the_blocks_an_sm() -> None:
    c = multi_wave(H200, 4096, 8192, 8, 32, 60 * 1024)
    assert c is not None and c.blocks_per_sm == 3  # 228 KB over 60 KB (and its block reduction)


def _rms_norm_bwd(rows: int, hidden: int) -> tuple[FusionDefinition, list[torch.Tensor]]:
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1], contiguity=True, dtype=DataType.BFloat16)
        rstd = fd.define_tensor(shape=[-1, 1], contiguity=[True, None], dtype=DataType.Float)
        g = fd.define_tensor(shape=[-1, -1], contiguity=True, dtype=DataType.BFloat16)
        w = fd.define_tensor(shape=[-1], contiguity=True, dtype=DataType.BFloat16)
        xf, gf = fd.ops.cast(x, DataType.Float), fd.ops.cast(g, DataType.Float)
        wb = fd.ops.broadcast_in_dim(fd.ops.cast(w, DataType.Float), shape=x.shape(), broadcast_dims=[1])
        rb = fd.ops.broadcast_in_dim(rstd, shape=x.shape(), broadcast_dims=[0, 1])
        xhat = fd.ops.mul(xf, rb)
        gw = fd.ops.mul(gf, wb)
        s = fd.ops.sum(fd.ops.mul(gw, xhat), dims=[1], keepdim=True)
        scale = fd.ops.mul(s, fd.define_scalar(1.0 / hidden, dtype=DataType.Double))
        dx = fd.ops.mul(rb, fd.ops.sub(gw, fd.ops.mul(xhat, fd.ops.broadcast_in_dim(
            scale, shape=x.shape(), broadcast_dims=[0, 1]))))
        fd.add_output(fd.ops.cast(dx, DataType.BFloat16))
        fd.add_output(fd.ops.cast(fd.ops.sum(fd.ops.mul(gf, xhat), dims=[0]), DataType.BFloat16))
    gen = torch.Generator().manual_seed(0)
    xs = [torch.randn(rows, hidden, generator=gen).bfloat16(), torch.rand(rows, 1, generator=gen) + 0.5,
          torch.randn(rows, hidden, generator=gen).bfloat16(), torch.randn(hidden, generator=gen).bfloat16()]
    return fd, xs


def test_rms_norm_backward_runs_several_blocks_an_sm_and_matches_the_reference() -> None:
    """2048-wide rows: the launch bounds ask for its blocks an SM, the grid is that many per
    SM, the outer reduction waits at a grid barrier of all of them (a cooperative launch),
    and the emulated kernel computes what the reference does."""
    fd, xs = _rms_norm_bwd(1024, 2048)
    cf = compile_fusion(fd, xs, Options(device_model="H200"))
    (seg,) = [s for s in cf.segments if s.scheduler == "inner_outer_persistent"]
    p = seg.params
    assert p.blocks_per_sm >= MIN_BLOCKS_PER_SM and p.rows_per_step == 1
    assert seg.launch.grid[1] == p.blocks_per_sm * H200.sm_count and seg.launch.cooperative
    assert f"__launch_bounds__({seg.launch.threads}, {p.blocks_per_sm})" in seg.cuda_source
    assert f"min blocks per SM = {p.blocks_per_sm}" in str(p)
    assert any("multi-wave" in line for line in p.derivation)
    # sm_90: the row inputs in shared memory are staged a row ahead (two stages, cp.async).
    assert p.smem_persistent_buffers and p.circular_buffer_stages == 2
    assert any("2 circular-buffer stages of one row" in line for line in p.derivation)
    assert "fsCpAsync" in seg.cuda_source
    got, want = cf.run(xs, backend="emulate"), evaluate(fd.fusion, xs)
    for a, b in zip(got, want):
        torch.testing.assert_close(a.float(), b.float(), rtol=2e-2, atol=5e-2)


def test_rows_are_not_staged_before_sm_90() -> None:
    """On an A100 the multi-wave launch copies each row into shared memory when it is reached."""
    fd, xs = _rms_norm_bwd(1024, 2048)
    cf = compile_fusion(fd, xs, Options(device_model="A100"))
    (seg,) = [s for s in cf.segments if s.scheduler == "inner_outer_persistent"]
    assert any("multi-wave" in line for line in seg.params.derivation)
    assert seg.params.smem_persistent_buffers and seg.params.circular_buffer_stages == 0


def test_few_rows_keep_the_schedule_of_several_rows_per_block() -> None:
    """64 rows do not fill three blocks an SM: one block an SM, as before."""
    fd, xs = _rms_norm_bwd(64, 2048)
    cf = compile_fusion(fd, xs, Options(device_model="H200"))
    (seg,) = [s for s in cf.segments if s.scheduler == "inner_outer_persistent"]
    assert seg.params.blocks_per_sm == 1
    assert f"__launch_bounds__({seg.launch.threads})" in seg.cuda_source


def test_an_override_of_more_blocks_than_an_sm_holds_is_refused_by_name() -> None:
    from engine.errors import ScheduleError

    fd, xs = _rms_norm_bwd(1024, 2048)
    with pytest.raises(ScheduleError, match="blocks_per_sm 64 of 128x1 threads exceed the 2048"):
        compile_fusion(fd, xs, Options(device_model="H200", heuristic_overrides={"blocks_per_sm": 64}))
