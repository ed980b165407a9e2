"""Generated kernels: emulated on the CPU against the reference, and compile-checked with nvcc.

Samples go through the whole pipeline (segment, schedule, lower, render, emulate);
manual schedules exercise the lowering on loop structures no scheduler makes
(non-divisible splits, odd parallelizations, shared memory, rfactor, grid reductions).
"""

from __future__ import annotations

import re
import shutil

import pytest
import torch

from engine import CompileError, DataType, FusionDefinition, MemoryType, ParallelType, load_fusion
from engine.compile import compile_fusion
from engine.reference import evaluate
from tests.emulation import needs_gxx

needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is needed to compile-check")

SAMPLES = [
    "gelu_bias", "softmax", "layer_norm", "rms_norm", "outer_reduction", "transpose", "reshape_chain",
    "seed001_inner_outer_alloc", "seed002_stream_single_set", "seed002_stream_two_sets",
    "seed002_stream_three_sets_disjoint", "seed002_stream_reduction", "seed002_stream_matmul_m",
    "cross_entropy", "seed003_rope_bwd_small", "seed003_rope_bwd",
    "seed004_nvfp4_quantize", "seed004_nvfp4_quantize_swizzled", "seed000_moe_layout_op",
]


def close(out: torch.Tensor, ref: torch.Tensor) -> None:
    assert out.shape == ref.shape and out.dtype == ref.dtype
    if out.element_size() == 1:  # fp8 / packed fp4 / bool / int8: byte for byte
        assert torch.equal(out.view(torch.uint8), ref.view(torch.uint8))
        return
    if not out.dtype.is_floating_point:
        assert torch.equal(out, ref)
        return
    tol = 1e-5 if out.dtype in (torch.float32, torch.float64) else 1e-2
    torch.testing.assert_close(out.double(), ref.double(), rtol=tol, atol=tol * max(1.0, ref.abs().max().item()))


def check_emulated(fd, xs) -> object:
    cf = compile_fusion(fd, xs)
    # Poison-free check: outputs are freshly allocated with torch.empty, so an unwritten
    # element shows up as a mismatch (up to chance).
    outs = cf.run(xs, backend="emulate")
    refs = evaluate(fd.fusion, xs)
    for o, r in zip(outs, refs):
        close(o, r)
    return cf


@pytest.fixture(scope="module")
def compiled() -> dict[str, tuple]:
    return {}


def _compiled(name: str, cache: dict) -> tuple:
    if name not in cache:
        fd = load_fusion(f"sample_fusions/{name}.py")
        xs = fd.example_inputs(seed=0)
        cache[name] = (fd, xs, compile_fusion(fd, xs))
    return cache[name]


@needs_gxx
@pytest.mark.parametrize("name", SAMPLES)
def test_sample_emulated_matches_reference(name: str, compiled: dict) -> None:
    fd, xs, cf = _compiled(name, compiled)
    # Every segment a kernel scheduler took has its kernel; only matmuls run through torch.
    for s in cf.segments:
        assert (s.cuda_source is not None) == (s.scheduler not in ("expr_eval", "no_op")), s.scheduler
    outs = cf.run(xs, backend="emulate")
    for o, r in zip(outs, evaluate(fd.fusion, xs)):
        close(o, r)


@needs_nvcc
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.parametrize("name", SAMPLES)
def test_sample_kernels_compile_with_nvcc(name: str, arch: str, compiled: dict) -> None:
    from engine.runtime.nvcc import ptx_check

    _fd, _xs, cf = _compiled(name, compiled)
    for seg in cf.segments:
        if seg.cuda_source:
            assert ".entry " + seg.kernel_name in ptx_check(seg.cuda_source, arch)


def test_segment_texts_and_kernel_name() -> None:
    fd = load_fusion("sample_fusions/softmax.py")
    cf = compile_fusion(fd, fd.example_inputs(seed=0))
    seg = cf.segments[0]
    assert seg.scheduler == "inner_persistent"
    assert seg.kernel_name == "nvfuser_inner_persistent_f0_c0_r0_g0"
    assert f'extern "C" __global__ void __launch_bounds__({seg.launch.threads}) {seg.kernel_name}(' in seg.cuda_source
    assert "blockAllReduce<true, false, false>" in seg.cuda_source
    assert seg.kernel_ir.startswith(f"%kernel {seg.kernel_name}(")
    assert "T9_g_float" in seg.scheduled_ir
    assert seg.launch.block[0] * seg.launch.block[1] == seg.launch.threads
    for stage in ("loop_nests", "parallel_dims", "allocation", "sync", "kernel_ir"):
        assert stage in seg.stages
    assert "kernel_ir" in cf.trace.stages and "cuda_kernel" in cf.trace.stages


# ---- manual schedules --------------------------------------------------------------------------

def _pointwise(shape=(37, 53)):
    fd = FusionDefinition()
    with fd:
        t0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
        t1 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
        t2 = fd.ops.mul(fd.ops.add(t0, t1), fd.ops.sin(t0))
        fd.add_output(t2)
    xs = [torch.randn(*shape), torch.randn(*shape)]
    return fd, xs, t0, t1, t2


@needs_gxx
def test_manual_split_merge_parallelize_nondivisible() -> None:
    fd, xs, _t0, _t1, t2 = _pointwise()
    s = fd.sched
    s.merge(t2, 0)          # [37*53]
    s.split(t2, 0, 64)      # [ceil(1961/64), 64]: the last block overhangs
    s.split(t2, 1, 5)       # [.., 13, 5]: 64 is not divisible by 5 either
    s.parallelize(t2, 0, ParallelType.grid_x)
    s.parallelize(t2, 1, ParallelType.block_x)
    s.transform_like(t2)
    s.parallelize_like(t2)
    s.inline_most()
    cf = check_emulated(fd, xs)
    assert cf.segments[0].scheduler == "user"
    assert cf.segments[0].launch.grid[0] == -(-37 * 53 // 64) and cf.segments[0].launch.block[0] == 13
    assert "< 1961" in cf.segments[0].cuda_source


@needs_gxx
def test_manual_reorder_and_outer_split() -> None:
    fd, xs, _t0, _t1, t2 = _pointwise((19, 23))
    s = fd.sched
    s.reorder(t2, {0: 1, 1: 0})                     # iterate columns outermost
    s.split(t2, 0, 4, inner_split=False)            # outer split: 4 outer parts
    s.parallelize(t2, 0, ParallelType.grid_y)
    s.parallelize(t2, 2, ParallelType.block_y)
    s.transform_like(t2)
    s.parallelize_like(t2)
    s.inline_most()
    check_emulated(fd, xs)


@needs_gxx
def test_manual_cache_in_shared_memory_read_across_threads() -> None:
    """A transposed read from shared memory: each thread reads another thread's element."""
    fd = FusionDefinition()
    with fd:
        t0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
        t1 = fd.ops.permute(fd.ops.exp(t0), dims=[1, 0])
        fd.add_output(t1)
    xs = [torch.randn(24, 20)]
    s = fd.sched
    cache = s.cache_after(t0)
    s.set_memory_type(cache, MemoryType.shared)
    s.parallelize(t1, 0, ParallelType.block_y)
    s.parallelize(t1, 1, ParallelType.block_x)
    s.parallelize(cache, 0, ParallelType.block_y)
    s.parallelize(cache, 1, ParallelType.block_x)
    cf = check_emulated(fd, xs)
    assert "__syncthreads();  // RAW" in cf.segments[0].cuda_source


def test_local_buffer_read_by_another_thread_is_refused() -> None:
    fd = FusionDefinition()
    with fd:
        t0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
        t1 = fd.ops.permute(fd.ops.exp(t0), dims=[1, 0])
        fd.add_output(t1)
    xs = [torch.randn(8, 8)]
    s = fd.sched
    cache = s.cache_after(t0)
    for t in (t1, cache):
        s.parallelize(t, 0, ParallelType.block_y)
        s.parallelize(t, 1, ParallelType.block_x)
    with pytest.raises(CompileError, match="local memory.*another thread"):
        compile_fusion(fd, xs)


def _sum_rows(shape=(6, 301)):
    fd = FusionDefinition()
    with fd:
        t0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
        t1 = fd.ops.sum(t0, dims=[1])
        fd.add_output(t1)
    return fd, [torch.randn(*shape)], t0, t1


@needs_gxx
def test_manual_block_reduction_with_rfactor_nondivisible() -> None:
    fd, xs, _t0, t1 = _sum_rows()
    s = fd.sched
    s.split(t1, 1, 32)                       # [i, r/32, r32]: 301 is not a multiple of 32
    partial = s.rfactor(t1, [1])             # serial partial sums over r/32
    s.parallelize(t1, 0, ParallelType.grid_x)
    s.parallelize(t1, 1, ParallelType.block_x)
    s.parallelize(partial, 0, ParallelType.grid_x)
    s.parallelize(partial, 2, ParallelType.block_x)
    s.inline_most()
    cf = check_emulated(fd, xs)
    assert "blockAllReduce<true, false, false>" in cf.segments[0].cuda_source


@needs_gxx
def test_manual_serial_reduction_into_global_output() -> None:
    fd, xs, _t0, t1 = _sum_rows((5, 7))
    fd.sched.parallelize(t1, 0, ParallelType.block_x)
    check_emulated(fd, xs)


@needs_gxx
def test_manual_grid_reduction() -> None:
    fd, xs, _t0, t1 = _sum_rows((3, 1000))
    s = fd.sched
    s.split(t1, 1, 128)                      # [i, ceil(1000/128)=8 blocks, 128 threads]
    s.parallelize(t1, 1, ParallelType.grid_x)
    s.parallelize(t1, 2, ParallelType.block_x)
    cf = check_emulated(fd, xs)
    assert "gridReduce<true, false, false, true, false, false>" in cf.segments[0].cuda_source


@needs_gxx
def test_manual_welford_block() -> None:
    fd = FusionDefinition()
    with fd:
        t0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
        var, mean = fd.ops.var_mean(t0, dims=[1], correction=0)
        fd.add_output(var)
        fd.add_output(mean)
    xs = [torch.randn(4, 77)]
    check_emulated(fd, xs)


@needs_gxx
def test_scheduled_broadcast_and_reductions_with_odd_sizes() -> None:
    fd = FusionDefinition()
    with fd:
        t0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.BFloat16)
        t1 = fd.ops.cast(t0, DataType.Float)
        t2 = fd.ops.max(t1, dims=[1], keepdim=True)
        t3 = fd.ops.sub(t1, t2)
        t4 = fd.ops.cast(fd.ops.exp(t3), DataType.BFloat16)
        fd.add_output(t4)
    xs = [torch.randn(13, 333).bfloat16()]
    check_emulated(fd, xs)


@needs_gxx
@pytest.mark.parametrize("swizzle", [False, True])
def test_manual_block_quantization_bit_exact(swizzle: bool) -> None:
    """nvfp4: each thread quantizes two 16-element blocks; values and (swizzled) scales byte for byte."""
    fd = FusionDefinition()
    with fd:
        x = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.BFloat16)
        g = fd.define_tensor(shape=[], contiguity=[], dtype=DataType.Float)
        q, sc = fd.ops.nv_block_quantize(x, global_scale=g, swizzle_scales=swizzle)
        fd.add_output(q)
        fd.add_output(sc)
    s = fd.sched
    s.split(q, 1, 32)
    s.parallelize(q, 0, ParallelType.grid_x)
    s.parallelize(q, 1, ParallelType.block_x)
    xs = [(torch.randn(128, 64) * 3).bfloat16(), torch.tensor(0.7)]
    cf = compile_fusion(fd, xs)
    assert "nvfp4QuantizeBlock(" in cf.segments[0].cuda_source
    outs = cf.run(xs, backend="emulate")
    for o, r in zip(outs, evaluate(fd.fusion, xs)):
        assert o.shape == r.shape and o.dtype == r.dtype
        assert torch.equal(o.view(torch.uint8), r.view(torch.uint8))


def test_block_quantization_needs_whole_blocks_in_a_thread() -> None:
    fd = FusionDefinition()
    with fd:
        x = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
        q, sc = fd.ops.nv_block_quantize(x)
        fd.add_output(q)
        fd.add_output(sc)
    fd.sched.split(q, 1, 8)
    fd.sched.parallelize(q, 1, ParallelType.block_x)
    with pytest.raises(CompileError, match="whole blocks in one thread"):
        compile_fusion(fd, [torch.randn(4, 64)])


@needs_gxx
def test_kernel_fault_names_segment_and_kernel() -> None:
    """A kernel that faults (here: a corrupted launch) is an ExecutionError naming both."""
    from engine import ExecutionError

    fd, xs, _t0, _t1, t2 = _pointwise((4, 8))
    fd.sched.parallelize(t2, 0, ParallelType.block_x)
    cf = compile_fusion(fd, xs)
    seg = cf.segments[0]
    seg.cuda_source = seg.cuda_source.replace("T4[", "T4.data[(nvfuser_index_t)1 << 40] = 0; T4[", 1)
    with pytest.raises(ExecutionError, match=r"segment 0 \(user, kernel nvfuser_user_f0_c0_r0_g0\)"):
        cf.run(xs, backend="emulate")


def test_compile_error_quotes_the_source() -> None:
    from engine.runtime.emulate import EmulatedKernel

    fd, xs, _t0, _t1, _t2 = _pointwise((4, 8))
    cf = compile_fusion(fd, xs)
    seg = cf.segments[0]
    bad = seg.cuda_source.replace("T4[", "T4 [[ oops ", 1)
    with pytest.raises(CompileError, match="oops"):
        EmulatedKernel(bad, seg.kernel_name, seg.lowered.kernel.params)


def test_vectorized_accesses_where_the_schedule_allows() -> None:
    """Vector loads into the persistent buffer, vector stores from registers; seed 001's shared
    buffer is read in vectors of 4 and its output stored in vectors of 4."""
    fd = load_fusion("sample_fusions/softmax.py")
    src = compile_fusion(fd, fd.example_inputs(seed=0)).segments[0].cuda_source
    assert "loadGeneric<float, 4>(&T10[" in src and "T9_vec" in src
    fd = load_fusion("sample_fusions/seed001_inner_outer_alloc.py")
    src = compile_fusion(fd, fd.example_inputs(seed=0)).segments[0].cuda_source
    assert "loadGeneric<float, 4>(T7_r" in src and "loadGeneric<float, 4>(&T8[" in src


@needs_gxx
def test_manual_vectorize_and_unroll() -> None:
    """A user's cache_after + vectorize + unroll schedule: vector loads of the cache, values then
    vector stores of the output, an unrolled outer loop; results exact."""
    fd = FusionDefinition()
    with fd:
        t0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Half)
        t1 = fd.ops.cast(fd.ops.relu(fd.ops.cast(t0, DataType.Float)), DataType.Half)
        fd.add_output(t1)
    xs = [torch.randn(6, 64).half()]
    s = fd.sched
    cache = s.cache_after(t0)
    s.split(t1, 1, 8)                        # [6, 8, 8]
    s.split(t1, 1, 2)                        # [6, 4, 2, 8]
    s.parallelize(t1, 0, ParallelType.grid_x)
    s.parallelize(t1, 1, ParallelType.block_x)
    s.transform_like(t1)
    s.parallelize_like(t1)
    s.parallelize(t1, 2, ParallelType.unroll)
    s.parallelize(t1, 3, ParallelType.vectorize)
    s.parallelize(cache, 3, ParallelType.vectorize)
    s.inline_most()
    cf = check_emulated(fd, xs)
    src = cf.segments[0].cuda_source
    assert "loadGeneric<__half, 8>" in src and "#pragma unroll" in src


def test_stream_segment_too_big_for_a_kernel_still_runs() -> None:
    """A user's stream-parallel schedule whose unscheduled intermediate would not fit a kernel:
    the host program runs it slice by slice through torch; the trace says why no kernel."""
    fd = load_fusion("sample_fusions/seed002_stream_two_sets.py")
    xs = [torch.randn(4, 1 << 16)]
    cf = compile_fusion(fd, xs)
    assert cf.segments[0].cuda_source is None
    assert any("no kernel for the stream-parallel segment" in e.message for e in cf.trace.events)
    close(cf.run(xs, backend="reference")[0], evaluate(fd.fusion, xs)[0])


@needs_gxx
def test_rope_without_forwarding_emulates_exactly() -> None:
    """With forwarding off the RoPE casts of expanded inputs are cached and merged with their
    broadcasts: the op's own axis pairing still indexes the input."""
    from engine.config import Options

    fd = load_fusion("sample_fusions/seed003_rope_bwd_small.py")
    xs = fd.example_inputs(seed=0)
    cf = compile_fusion(fd, xs, Options(forwarding=False))
    for o, r in zip(cf.run(xs, backend="emulate"), evaluate(fd.fusion, xs)):
        close(o, r)


@needs_gxx
def test_a_replacement_kernel_source_runs_and_its_fault_names_the_segment() -> None:
    from engine.config import Options
    from engine.errors import ExecutionError

    with FusionDefinition() as fd:
        a = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float)
        fd.add_output(fd.ops.exp(a))
    xs = [torch.randn(100)]
    src = compile_fusion(fd, xs).segments[0].cuda_source
    store = "T1[blockIdx.x * 128 + threadIdx.x] = T3[0];"
    assert store in src
    doubled = compile_fusion(fd, xs, Options(kernel_sources={0: src.replace("= T3[0];", "= 2.0f * T3[0];")}))
    torch.testing.assert_close(doubled.run(xs, backend="emulate")[0], 2 * torch.exp(xs[0]))
    faulty = compile_fusion(fd, xs, Options(kernel_sources={0: src.replace(store, store.replace("]", " + 100000000]", 1))}))
    with pytest.raises(ExecutionError, match=r"segment 0 \(pointwise.*SIGSEGV"):
        faulty.run(xs, backend="emulate")
    with pytest.raises(CompileError, match="segment 0: the replacement kernel source must define"):
        compile_fusion(fd, xs, Options(kernel_sources={0: "int x;"}))


@needs_gxx
def test_heuristic_overrides_change_the_schedule_and_stay_correct() -> None:
    from engine.config import Options
    from engine.errors import ScheduleError

    n = 64
    x = torch.randn(n * n).as_strided((1, n, n), (n, n, 1))
    with FusionDefinition() as small:
        t0 = small.define_tensor(shape=[1, n, n], contiguity=[True, None, True], dtype=DataType.Float,
                                 stride_order=[1, 2, 0])
        t2 = small.ops.sum(small.ops.squeeze(t0, dims=[0]), dims=[1])
        t4 = small.ops.add(t0, small.ops.broadcast(t2, is_broadcast_dim=[True, False, True]))
        small.add_output(t4)
        small.add_output(small.ops.sum(small.ops.squeeze(t4, dims=[0]), dims=[0]))
    cf = compile_fusion(small, [x], Options(heuristic_overrides={"g0.lparams.gdimy": 5}))
    p = cf.segments[0].params
    assert p.lparams.gdimy == 5 and p.derivation[-1] == "overridden by the user: g0.lparams.gdimy=5"
    assert "GridDim.y = 5," in str(cf.segments[0].launch)
    for o, r in zip(cf.run([x], backend="emulate"), evaluate(small.fusion, [x])):
        close(o, r)
    # More blocks than row steps: the idle blocks' partial outer sums are the init value
    # (their write-back was once predicated on the rows and left garbage).
    idle = compile_fusion(small, [x], Options(heuristic_overrides={"lparams.gdimy": 40}))
    for o, r in zip(idle.run([x], backend="emulate"), evaluate(small.fusion, [x])):
        close(o, r)
    with pytest.raises(ScheduleError, match="'lparams.gdimy': expected int, got str"):
        compile_fusion(small, [x], Options(heuristic_overrides={"lparams.gdimy": "5"}))
    with pytest.raises(CompileError, match="'nonsense' names no parameter"):
        compile_fusion(small, [x], Options(heuristic_overrides={"nonsense": 1}))


# ---- gather / take_along_axis / index_select: the lookup table stays in global memory -------

def _lookup_fusion(table: tuple[int, ...], index: tuple[int, ...], dim: int, ops: tuple[str, ...]):
    """`ops` of one table and one index tensor, summed; size-1 axes are declared as such."""
    fd = FusionDefinition()
    with fd:
        t0 = fd.define_tensor(shape=[1 if s == 1 else -1 for s in table],
                              contiguity=[True] * len(table), dtype=DataType.Float)
        t1 = fd.define_tensor(shape=[1 if s == 1 else -1 for s in index],
                              contiguity=[True] * len(index), dtype=DataType.Int)
        outs = [getattr(fd.ops, op)(t0, t1, dim) for op in ops]
        acc = outs[0]
        for o in outs[1:]:
            acc = fd.ops.add(acc, o)
        fd.add_output(acc)
    g = torch.Generator().manual_seed(0)
    xs = [torch.randn(*table, generator=g), torch.randint(0, table[dim], index, generator=g)]
    return fd, xs


@needs_gxx
@pytest.mark.parametrize("table, index, dim", [
    ((10, 7), (10, 7), 0), ((10, 7), (10, 7), 1),
    ((10, 7), (5, 3), 0), ((10, 7), (5, 3), 1),      # index smaller than the table
    ((130, 3), (129, 2), 0),                          # more than one block of 128 threads
    ((1, 9), (1, 4), 1), ((10, 1), (3, 1), 0),        # size-1 axes
    ((6, 5, 7), (4, 5, 3), 2), ((6, 5, 7), (2, 3, 7), 1),
])
def test_gather_reads_the_table_at_the_outputs_position_off_dim(table, index, dim) -> None:
    """torch.gather's index may be smaller than the table on the axes other than `dim`, so
    those axes are not mapped to the table's (realworld index_select_gather: 'cannot index
    T0's allocation axis'); the table is still read at the output's position there."""
    fd, xs = _lookup_fusion(table, index, dim, ("gather",))
    cf = check_emulated(fd, xs)
    assert [s.scheduler for s in cf.segments] == ["pointwise"]


@needs_gxx
@pytest.mark.parametrize("table, index, dim", [
    ((10, 7), (10, 3), 1), ((10, 7), (5, 7), 0), ((13, 9), (2, 9), 0), ((1, 9), (1, 4), 1),
    ((6, 5, 7), (6, 3, 7), 1),
])
def test_gather_and_take_along_axis_of_one_table(table, index, dim) -> None:
    fd, xs = _lookup_fusion(table, index, dim, ("gather", "take_along_axis"))
    cf = check_emulated(fd, xs)
    assert [s.scheduler for s in cf.segments] == ["pointwise"]
    # The table is read from global memory, never cached in registers.
    assert "T0[" in cf.segments[0].cuda_source


@needs_gxx
@pytest.mark.parametrize("table, index, dim", [
    ((1, 7), (5, 3), 1), ((10, 7), (1, 3), 1), ((10, 7), (4, 1), 0), ((10, 1), (4, 6), 0),
])
def test_take_along_axis_broadcasts_table_and_index(table, index, dim) -> None:
    fd, xs = _lookup_fusion(table, index, dim, ("take_along_axis",))
    check_emulated(fd, xs)


@needs_gxx
@pytest.mark.parametrize("dim", [0, 1])
def test_index_select_with_gather_of_one_table(dim: int) -> None:
    """The realworld script's shape: index_select and gather/take_along_axis of one table
    (the two results have unrelated shapes, so they are two segments)."""
    fd = FusionDefinition()
    with fd:
        t0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
        t1 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Int)
        t2 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Int)
        fd.add_output(fd.ops.index_select(t0, t1, dim=dim))
        t4 = fd.ops.gather(t0, t2, dim=dim)
        fd.add_output(fd.ops.add(t4, fd.ops.take_along_axis(t0, t2, dim)))
    g = torch.Generator().manual_seed(0)
    table = (10, 7)
    gidx = (4, 7) if dim == 0 else (10, 3)
    xs = [torch.randn(*table, generator=g), torch.randint(0, table[dim], (5,), generator=g),
          torch.randint(0, table[dim], gidx, generator=g)]
    check_emulated(fd, xs)


def _swizzled_smem_transpose(swizzle_type, rows=16, cols=16):
    """A transposed read from a shared tile whose [rows/4, 4] x [cols/4, 4] loop is swizzled
    on its two outer axes, then merged back and bound to threads."""
    from engine.ir.iterdomain import SwizzleType

    fd = FusionDefinition()
    with fd:
        t0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
        t1 = fd.ops.permute(fd.ops.exp(t0), dims=[1, 0])
        fd.add_output(t1)
    xs = [torch.randn(rows, cols)]
    s = fd.sched
    cache = s.cache_after(t0)
    s.set_memory_type(cache, MemoryType.shared)
    s.split(cache, 1, 4)
    s.split(cache, 0, 4)            # [rows/4, 4, cols/4, 4]
    s.swizzle(cache, SwizzleType[swizzle_type], 0, 2)
    s.merge(cache, 0)
    s.merge(cache, 1)               # [rows, cols], the columns permuted within each row
    for t in (t1, cache):
        s.parallelize(t, 0, ParallelType.block_y)
        s.parallelize(t, 1, ParallelType.block_x)
    return fd, xs, cache


@needs_gxx
@pytest.mark.parametrize("swizzle_type", ["XOR", "CyclicShift"])
def test_manual_swizzle_of_a_shared_tile(swizzle_type: str) -> None:
    fd, xs, cache = _swizzled_smem_transpose(swizzle_type)
    listing = fd.sched.to_string(cache)
    name = "Xor" if swizzle_type == "XOR" else "CyclicShift"
    assert f" {name}(2D): " in listing
    cf = check_emulated(fd, xs)
    src = cf.segments[0].cuda_source.split('extern "C"')[1]
    assert (" ^ " in src) == (swizzle_type == "XOR")


def test_swizzle_refusals_name_the_tensor_and_axes() -> None:
    from engine.errors import ScheduleError
    from engine.ir.iterdomain import SwizzleType

    fd = FusionDefinition()
    with fd:
        t0 = fd.define_tensor(shape=[12, 8], contiguity=[True, True], dtype=DataType.Float)
        t1 = fd.ops.exp(t0)
        fd.add_output(t1)
    s = fd.sched
    with pytest.raises(ScheduleError, match=r"T1: cannot swizzle .*equal extents, got 12 and 8"):
        s.swizzle(t1, SwizzleType.XOR, 0, 1)
    s.split(t1, 0, 4)  # [3, 4, 8]
    with pytest.raises(ScheduleError, match=r"power-of-two extent, got 3"):
        s.split(t1, 2, 3) or s.swizzle(t1, SwizzleType.XOR, 0, 2)
    with pytest.raises(ScheduleError, match="expected a SwizzleType"):
        s.swizzle(t1, "Xor", 0, 1)
    with pytest.raises(ScheduleError, match="with itself"):
        s.swizzle(t1, SwizzleType.XOR, 1, 1)


def test_swizzle_of_symbolic_extents_is_checked_when_lowered() -> None:
    fd, xs, _cache = _swizzled_smem_transpose("XOR", rows=16, cols=8)  # 4 and 2 row/column groups
    with pytest.raises(CompileError, match=r"Xor\(2D\): .* equal extents, got 4 and 2"):
        compile_fusion(fd, xs)


def test_swizzle_schedule_round_trips_through_a_fusion_file() -> None:
    from engine import dumps_fusion, loads_fusion

    fd, xs, _cache = _swizzled_smem_transpose("XOR")
    text = dumps_fusion(fd)
    assert "fd.sched.swizzle(T" in text and "SwizzleType.XOR, 0, 2)" in text
    again = loads_fusion(text)
    assert dumps_fusion(again) == text
    assert again.sched.user_schedule_ir() == fd.sched.user_schedule_ir()


@needs_gxx
def test_a_squeezed_unit_axis_past_the_compute_at_position_is_indexed_zero():
    """A slice keeps one row of an axis, a squeeze drops it (the q/k/v split of
    rope_bwd_qkv_pad_squeeze_cat_half). The resize schedule vectorizes the slice and inlines
    it before its vector; the one-element axis, left after the vector, is no loop of the
    squeeze, which read it without an index ('cannot index T1 on its axis iS5{1}rf') and
    the segment was split apart. Its only element is 0."""
    s = 8192
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[s, 2, 8], contiguity=[True, True, True], dtype=DataType.Float)
        q = fd.ops.squeeze(fd.ops.slice(x, start_indices=[0, 1, 0], end_indices=[s, 2, 8]), dims=[1])
        fd.add_output(fd.ops.neg(q))
    g = torch.Generator().manual_seed(0)
    xs = [torch.randn(s, 2, 8, generator=g)]
    cf = compile_fusion(fd, xs)
    assert [seg.scheduler for seg in cf.segments] == ["resize"]
    lines = cf.segments[0].scheduled_ir.splitlines()
    sliced = next(a for a, b in zip(lines, lines[1:]) if b.lstrip().startswith("= slice("))
    assert "iV" in sliced  # the slice is vectorized, its one-row axis after the vector
    assert torch.equal(cf.run(xs, backend="emulate")[0], evaluate(fd.fusion, xs)[0])


def _two_outputs(parallel_b: bool) -> FusionDefinition:
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
        a = fd.ops.add(x, x)
        b = fd.ops.mul(x, x)
        fd.add_output(a)
        fd.add_output(b)
        fd.sched.parallelize(a, 0, ParallelType.grid_x)
        fd.sched.parallelize(a, 1, ParallelType.block_x)
        if parallel_b:
            fd.sched.parallelize(b, 0, ParallelType.grid_x)
    return fd


def test_a_user_schedule_whose_threads_all_write_an_output_is_kept_and_logged():
    """A kernel launched with 6 blocks of 32 threads whose second output's loop nest binds
    no thread or block index: every thread writes all of it (the shape of the bug that
    where_bool_expanded_mask_slice's pointwise kernel had at 4x3072x4096, 3.1M threads
    writing 50M elements each). A user's schedule stands (the values are right, as nvFuser
    allows), and the decision log says what it costs, naming the tensor. An output bound to
    blocks only, its inner loop serial, is partitioned and logs nothing."""
    xs = [torch.randn(6, 32)]
    fd = _two_outputs(parallel_b=False)
    b = fd.fusion.outputs[1].short_name
    cf = compile_fusion(fd, xs)
    (seg,) = cf.segments
    assert seg.scheduler == "user" and (seg.launch.grid, seg.launch.block) == ((6, 1, 1), (32, 1, 1))
    (event,) = [e for e in cf.trace.events if e.data.get("rule") == "unpartitioned_write"]
    assert re.search(rf"{b}: its loop nest binds no thread or block index \(serial loops .*\), so every "
                     r"thread of the launch \(grid 6x1x1, block 32x1x1\) would write the whole tensor.*"
                     r"kept: the user's schedule", str(event))
    ok = compile_fusion(_two_outputs(parallel_b=True), xs)
    assert not [e for e in ok.trace.events if e.data.get("rule") == "unpartitioned_write"]


def test_a_scheduler_that_leaves_an_output_serial_is_segmented_again(monkeypatch):
    """The check holds for the automatic schedulers too: with the pointwise scheduler's
    mapping across slices switched off (as it was), the output beside a sliced reference
    keeps its serial loop nest; that kernel is refused, logged naming the tensor, and the
    ops are segmented again into kernels that partition every output (values right)."""
    from engine import fusion_cache
    from engine.schedule import pointwise_schedule

    with FusionDefinition() as fd:
        mask = fd.define_tensor(shape=[2, 24], contiguity=[True, True], dtype=DataType.Bool)
        v = fd.define_tensor(shape=[2, 24, 64], contiguity=[True] * 3, dtype=DataType.Float)
        fd.add_output(fd.ops.slice(v, [0, 0, 4], [2, 24, 8]))
        b = fd.ops.broadcast_in_dim(mask, shape=[2, 24, 64], broadcast_dims=[0, 1])
        fd.add_output(fd.ops.where(b, fd.define_scalar(0.0, dtype=DataType.Double), v))
    xs = [torch.rand(2, 24) < 0.5, torch.randn(2, 24, 64)]
    assert [s.scheduler for s in compile_fusion(fd, xs).segments] == ["pointwise"]
    monkeypatch.setattr(pointwise_schedule, "serial_nests", lambda fusion: [])
    fusion_cache.clear()
    out = fd.fusion.outputs[1].short_name
    cf = compile_fusion(fd, xs)
    assert len(cf.segments) > 1
    # The refusal is in the final compile's log (the note compile_fusion carries over).
    assert any(f"segment 0 (pointwise): {out}: its loop nest binds no thread or block index" in e.message
               and "pointwise is refused for these" in e.message for e in cf.trace.events)
    got = cf.run(xs, backend="reference")
    want = fd.execute(xs)
    assert all(torch.equal(g, w) for g, w in zip(got, want))
