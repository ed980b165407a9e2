"""Circular buffering (cp.async loads a stage ahead) and the co-resident grid reduction of the
inner-outer persistent kernel, checked on the emulator against the reference evaluator."""

from __future__ import annotations

import pytest
import torch

from engine import DataType, FusionDefinition, MemoryType
from engine.compile import compile_fusion
from engine.config import Options
from engine.errors import ScheduleError
from engine.reference import evaluate


def seed001_like(rows: int, cols: int) -> tuple[FusionDefinition, list]:
    """Seed 001's inner-outer fusion at [1, rows, cols] with its permuted input allocation."""
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[1, rows, cols], contiguity=[True, None, True],
                              dtype=DataType.Float, stride_order=[1, 2, 0])
        t2 = fd.ops.sum(fd.ops.squeeze(t0, [0]), dims=[1])
        t4 = fd.ops.add(t0, fd.ops.broadcast(t2, [True, False, True]))
        fd.add_output(t4)
        fd.add_output(fd.ops.sum(fd.ops.squeeze(t4, [0]), dims=[0]))
    return fd, [torch.randn(rows, 1, cols).permute(1, 0, 2)]


def max_errors(cf, xs: list, fd: FusionDefinition) -> list[float]:
    outs = cf.run(xs, backend="emulate")
    return [float((o.double() - r.double()).abs().max()) for o, r in zip(outs, evaluate(fd.fusion, xs))]


@pytest.fixture(scope="module")
def compiled():
    # rows of 1024 floats: two a step hold a block of 128 threads (narrower rows take more
    # rows a step and several blocks an SM, and then loop over fewer steps)
    fd, xs = seed001_like(1000, 1024)
    return fd, xs, compile_fusion(fd, xs, Options(device_model="h100"))


def test_inner_outer_row_buffer_is_circular_buffered(compiled):
    fd, xs, cf = compiled
    seg = cf.segments[0]
    assert seg.scheduler == "inner_outer_persistent"
    assert seg.stages["circular_buffer"].startswith("T7: circular buffer of 2 stages over loop i")
    src = seg.cuda_source
    body = src[src.index('extern "C" __global__'):]
    # a prologue load before the row loop, then a wait, a barrier and a load ahead in every stage
    first_commit, first_wait = body.index("fsCpAsyncCommit();"), body.index("fsCpAsyncWait<0>();")
    assert body.index("fsCpAsync<float, 4>(&T7[") < first_commit < first_wait < body.index("// RAW: stage ") \
        < body.index("fsCpAsyncCommit();", first_commit + 1)
    assert body.count("fsCpAsyncCommit();") == 2 and body.count("fsCpAsyncWait<0>();") == 1
    assert "loadGeneric<float, 4>(&T7[" not in body
    assert max(max_errors(cf, xs, fd)) < 1e-2


def test_the_grid_reduction_waits_at_a_grid_barrier_on_a_cooperative_launch(compiled):
    fd, xs, cf = compiled
    seg = cf.segments[0]
    assert seg.launch.cooperative
    # The epilogue (the outer sum's write-back and store) runs per share, not in a last block.
    body = seg.cuda_source[seg.cuda_source.index('extern "C" __global__'):]
    assert "gridReduceGroupShares<" in body and "gridReduceGroupSync<" not in body
    assert seg.stages["grid_epilogue"] == "T9_last: every block runs the epilogue of the thread segments it combined\n"
    assert max(max_errors(cf, xs, fd)) < 1e-2
    assert [e.message for e in cf.trace.events if e.kind == "lowering" and e.subject == f"g{seg.id}"] == [
        "cooperative launch: the 132 blocks are co-resident, so the grid reduction waits at a grid barrier "
        "and every block combines a share of the partials, then runs the epilogue of that share"]


def test_a_grid_larger_than_the_sms_keeps_independent_blocks():
    fd, xs = seed001_like(1000, 1024)  # one block an SM
    cf = compile_fusion(fd, xs, Options(device_model="h100", heuristic_overrides={"lparams.gdimy": 200}))
    seg = cf.segments[0]
    body = seg.cuda_source[seg.cuda_source.index('extern "C" __global__'):]
    assert not seg.launch.cooperative and "gridReduceGroupS" not in body and "grid_epilogue" not in seg.stages
    assert max(max_errors(cf, xs, fd)) < 1e-2


@pytest.mark.parametrize("rows, cols", [(40, 64), (33, 96), (4096, 128)])
def test_pipelined_kernels_keep_results(rows: int, cols: int):
    fd, xs = seed001_like(rows, cols)
    cf = compile_fusion(fd, xs, Options(device_model="h100"))
    assert "circular buffer of 2 stages" in cf.segments[0].stages.get("circular_buffer", "")
    assert max(max_errors(cf, xs, fd)) < 1e-2


def test_the_emulator_lands_a_copy_only_when_its_thread_waits(compiled):
    """Without the wait, the stage is read before its copies land: the emulator models cp.async,
    so this kernel is wrong there as it would be on a GPU."""
    fd, xs, cf = compiled
    src = cf.segments[0].cuda_source
    bad = compile_fusion(fd, xs, Options(device_model="h100",
                                         kernel_sources={0: src.replace("fsCpAsyncWait<0>();", "")}))
    errs = max_errors(bad, xs, fd)
    assert not all(e < 1e-2 for e in errs)  # NaN or wrong values


def test_circular_buffer_needs_stages_and_shared_memory():
    fd, _ = seed001_like(64, 64)
    t0 = fd.fusion.inputs[0]
    with pytest.raises(ScheduleError, match="only a shared-memory cache"):
        fd.fusion.tensors()[-1].circular_buffer(2)
    with pytest.raises(ScheduleError, match="2 or more stages"):
        t0.circular_buffer(1)
    assert t0.memory_type == MemoryType.Global and t0.circular_buffer_depth == 0


@pytest.mark.parametrize("stages", [3, 4])
def test_deeper_circular_buffers_load_further_ahead(stages: int):
    fd, xs = seed001_like(1000, 512)
    cf = compile_fusion(fd, xs, Options(device_model="h100", heuristic_overrides={"circular_buffer_stages": stages}))
    seg = cf.segments[0]
    assert f"circular buffer of {stages} stages" in seg.stages["circular_buffer"]
    assert f"fsCpAsyncWait<{stages - 2}>();" in seg.cuda_source
    assert max(max_errors(cf, xs, fd)) < 1e-2


def kernel_body(seg) -> str:
    return seg.cuda_source[seg.cuda_source.index('extern "C" __global__'):]


def test_the_launch_shared_memory_is_the_cached_stages_and_the_reduction_workspace(compiled):
    _fd, _xs, cf = compiled
    seg = cf.segments[0]
    use = seg.shared_memory
    assert use.total == seg.launch.shared_mem_bytes
    [t7] = use.buffers
    # 2 stages of 2 rows of 1024 floats, loaded by cp.async, then one float per thread and more
    assert (t7.name, t7.source, t7.stages, t7.offset, t7.bytes) == ("T7", "T0", 2, 0, 2 * 2 * 1024 * 4)
    assert use.cp_async and use.staged_bytes == t7.bytes and use.other_bytes == 0 and use.padding == 0
    assert use.reduction_offset == t7.bytes and use.reduction_bytes >= 4 * seg.launch.threads
    body = kernel_body(seg)
    assert "float* T7 = reinterpret_cast<float*>(smem + 0);" in body
    assert f"char* red_smem = smem + {use.reduction_offset};" in body
    assert seg.stages["shared_memory"].splitlines()[0] == f"{use.total} bytes of dynamic shared memory:"


def test_a_cache_in_one_stage_is_shared_memory_without_cp_async():
    fd, xs = seed001_like(1000, 512)
    cf = compile_fusion(fd, xs, Options(device_model="h100", heuristic_overrides={"circular_buffer_stages": 1}))
    seg = cf.segments[0]
    use = seg.shared_memory
    [t7] = use.buffers
    assert (t7.source, t7.stages) == ("T0", 0) and not use.cp_async
    assert use.total == seg.launch.shared_mem_bytes == use.reduction_offset + use.reduction_bytes
    assert "fsCpAsync" not in kernel_body(seg) and "circular_buffer" not in seg.stages


def test_narrow_rows_take_more_rows_a_step_and_several_blocks_an_sm():
    # rows of 264 floats: 22 threads a row; two rows a step would be a block of 44 threads,
    # one block an SM. Eight rows a step (176 threads) and two blocks an SM instead, all
    # co-resident (the grid reduction waits at a grid barrier).
    fd, xs = seed001_like(4000, 264)
    cf = compile_fusion(fd, xs, Options(device_model="h100"))
    seg = cf.segments[0]
    assert seg.scheduler == "inner_outer_persistent"
    assert (seg.launch.block, seg.params.rows_per_step, seg.params.blocks_per_sm) == ((22, 8, 1), 8, 2)
    assert seg.launch.grid == (1, 2 * 132, 1) and seg.launch.cooperative
    assert max(max_errors(cf, xs, fd)) < 1e-2
