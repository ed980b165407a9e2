"""The pointwise scheduler: which fusions it takes and why not, its parameters and
vectorization analysis, and schedules that verify and keep reference results."""

import dataclasses
from pathlib import Path

import pytest
import torch

from engine import DataType, FusionDefinition, ParallelType, ScheduleError, load_fusion
from engine.ir.quant_exprs import BlockQuantizationOp, PreprocessGroupedMatmulInputSf
from engine.ir.verify import verify_fusion
from engine.schedule import SchedulerType, registry, schedule_fusion
from engine.schedule.pointwise import PointwiseParams
from engine.schedule.runtime_info import SchedulerRuntimeInfo
from engine.trace import Trace
from tests.emulation import require_gxx

SAMPLES = Path(__file__).resolve().parents[2] / "sample_fusions"


def verdicts(fd, xs):
    vs, first = registry.can_schedule(fd.fusion, SchedulerRuntimeInfo(fd.fusion, xs))
    return {v.scheduler: v for v in vs}, first


def same(a: torch.Tensor, b: torch.Tensor) -> bool:
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    if a.element_size() == 1:  # fp8 / packed fp4: compare the bytes
        return torch.equal(a.view(torch.uint8), b.view(torch.uint8))
    return torch.equal(a, b)


def schedule_and_check(fd, xs, force=None):
    """Schedule in place; the fusion verifies and computes what it computed before."""
    before = fd.execute(xs)
    trace = Trace()
    kind, params = schedule_fusion(fd.fusion, xs, trace, force=force)
    verify_fusion(fd.fusion)
    after = fd.execute(xs)
    assert len(before) == len(after)
    assert all(same(a, b) for a, b in zip(before, after))
    return kind, params, trace


def pointwise_2d(dtype=DataType.BFloat16, shape=(1024, 2048)):
    with FusionDefinition() as fd:
        a = fd.define_tensor(shape=[-1, -1], dtype=dtype)
        b = fd.define_tensor(shape=[-1, -1], dtype=dtype)
        c = fd.ops.mul(fd.ops.add(a, b), a)
        fd.add_output(fd.ops.cast(fd.ops.exp(fd.ops.cast(c, DataType.Float)), dtype))
    tdt = {DataType.BFloat16: torch.bfloat16, DataType.Float: torch.float32}[dtype]
    xs = [torch.randn(*shape).to(tdt), torch.randn(*shape).to(tdt)]
    return fd, xs


def params_of(fd, xs, trace=None) -> PointwiseParams:
    info = SchedulerRuntimeInfo(fd.fusion, xs)
    return registry.get("pointwise").compute_heuristics(fd.fusion, info, trace)


# ---- bundled samples ----------------------------------------------------------------

def test_gelu_bias_goes_to_pointwise_with_a_2d_vectorized_schedule():
    fd = load_fusion(SAMPLES / "gelu_bias.py")
    xs = fd.example_inputs(seed=0)
    vs, first = verdicts(fd, xs)
    assert first == SchedulerType.pointwise
    assert vs[SchedulerType.expr_eval].reason == "Fusion must contain only a single expression."
    assert vs[SchedulerType.no_op].reason == "output has a concrete dimension"
    assert vs[SchedulerType.matmul].reason == "No matmul patterns were found"
    kind, p, trace = schedule_and_check(fd, xs)
    assert kind == SchedulerType.pointwise
    # fp16 inputs, contiguous and aligned: 16 bytes / 2 bytes.
    assert p.vectorization_factor == 8
    # The bias is broadcast along rows: a break point after the row axis reads it once.
    assert p.break_point == 1 and not p.flip_grid_binding and not p.split_grid_y_dim
    assert p.lparams.bdimx == 384 // 8
    out = fd.fusion.outputs[0]
    assert out.axis(-1).parallel_type == ParallelType.vectorize
    assert out.axis(-1).extent.value == 8
    assert out.axis(0).parallel_type == ParallelType.grid_y
    assert out.axis(1).parallel_type == ParallelType.grid_x
    # Input caches are vectorized, the inputs themselves are not cached twice.
    caches = [e.output for e in fd.fusion.exprs() if e.inputs and e.inputs[0] in fd.fusion.inputs
              and type(e).__name__ == "LoadStoreOp"]
    assert len(caches) == 2
    assert all(c.axis(-1).parallel_type == ParallelType.vectorize for c in caches)
    assert all(c.compute_at_pos == c.nloop - 1 for c in caches)
    kinds = {e.kind for e in trace}
    assert {"can_schedule", "heuristic", "transform", "schedule"} <= kinds
    assert any("vectorization factor 8" in e.message for e in trace.of_kind("heuristic"))


def test_scheduling_is_deterministic():
    texts, params = [], []
    for _ in range(2):
        fd = load_fusion(SAMPLES / "gelu_bias.py")
        xs = fd.example_inputs(seed=1)
        _, p, _ = schedule_and_check(fd, xs)
        texts.append(str(fd.fusion))
        params.append(str(p))
    assert texts[0] == texts[1] and params[0] == params[1]


def test_params_print_like_nvfuser():
    p = PointwiseParams(break_point=1, split_block=True, split_grid_y_dim=True,
                        flip_grid_binding=True, vectorization_factor=4,
                        lparams=dataclasses.replace(PointwiseParams().lparams, bdimx=64, bdimy=2))
    assert str(p) == (
        "\n===== Pointwise Parameters ========\n"
        "Tag: Pointwise heuristics Pointwise Characteristics:\n"
        " Gridx: -1 BlckY: 2 BlckX: 64\n"
        "2D Schedule\n"
        "  Bcast break point: 1\n"
        "Split block into y-dim\n"
        "  Split y grid dim\n"
        "vectorization_factor: 4\n"
        "unroll_factor_outer: 1\n"
        "unroll_factor_inner: 1\n"
        "Flip BIDx/BIDy bindings\n"
        "====================================\n"
    )


@pytest.mark.parametrize("name", ["softmax", "layer_norm", "rms_norm"])
def test_pointwise_refuses_reductions(name):
    fd = load_fusion(SAMPLES / f"{name}.py")
    vs, _ = verdicts(fd, fd.example_inputs(seed=0))
    assert str(vs[SchedulerType.pointwise]) == (
        "Scheduler _pointwise_ ***rejected*** because : no support for reduction ops")


def test_reshape_chain_goes_to_pointwise_unvectorized_at_its_small_size():
    fd = load_fusion(SAMPLES / "reshape_chain.py")
    xs = fd.example_inputs(seed=0)
    _, first = verdicts(fd, xs)
    assert first == SchedulerType.pointwise
    trace = Trace()
    p = params_of(fd, xs, trace)
    # 16384 elements are less than a wave (132 SMs x 128 threads): nvFuser keeps the
    # budget at ceil(16384 / 16896) = 1; a reshape keeps the schedule 1-D.
    assert p.vectorization_factor == 1 and p.break_point == 0
    assert any("less than a wave" in e.message or "fewer elements than a wave" in e.message
               for e in trace)
    kind, _, _ = schedule_and_check(fd, xs)
    assert kind == SchedulerType.pointwise


def test_slice_of_an_intermediate_is_refused_with_the_memory_promotion_reason():
    with FusionDefinition() as fd:
        a = fd.define_tensor(shape=[16, 64], dtype=DataType.Float)
        fd.add_output(fd.ops.slice(fd.ops.exp(a), [0, 0], [16, 32]))
        fd.add_output(fd.ops.exp(a))
    vs, _ = verdicts(fd, [torch.randn(16, 64)])
    assert vs[SchedulerType.pointwise].reason == "First input of SliceOp must be fusion input."


# ---- vectorization factors ------------------------------------------------------------

def test_bf16_aligned_contiguous_vectorizes_by_8_and_fp32_by_4():
    fd, xs = pointwise_2d(DataType.BFloat16)
    p = params_of(fd, xs)
    assert p.vectorization_factor == 8 and p.break_point == 0 and p.unroll_factor_inner == 1
    kind, p2, _ = schedule_and_check(fd, xs)
    assert kind == SchedulerType.pointwise and p2 == p
    out = fd.fusion.outputs[0]
    assert [i.parallel_type for i in out.loop()] == [
        ParallelType.grid_x, ParallelType.block_x, ParallelType.vectorize]
    fd, xs = pointwise_2d(DataType.Float)
    assert params_of(fd, xs).vectorization_factor == 4


def test_misaligned_input_is_not_vectorized():
    fd, xs = pointwise_2d(DataType.BFloat16)
    storage = torch.randn(1024 * 2048 + 1).to(torch.bfloat16)
    xs[0] = storage[1:].view(1024, 2048)  # 2 bytes past an aligned address
    trace = Trace()
    p = params_of(fd, xs, trace)
    assert p.vectorization_factor == 1
    # Nothing vectorizes, so nvFuser unrolls instead.
    assert p.unroll_factor_inner == 8
    assert any("pointer alignment 2 bytes -> 1" in e.message for e in trace)
    schedule_and_check(fd, xs)


def test_odd_inner_extent_is_not_vectorized():
    fd, xs = pointwise_2d(DataType.BFloat16, shape=(999, 1001))
    assert params_of(fd, xs).vectorization_factor == 1
    fd, xs = pointwise_2d(DataType.BFloat16, shape=(1000, 1002))  # 2 divides 1002 * 1000 = 8 * 125250
    assert params_of(fd, xs).vectorization_factor == 8


def test_transposed_input_does_not_limit_and_is_not_vectorized():
    with FusionDefinition() as fd:
        a = fd.define_tensor(shape=[-1, -1], dtype=DataType.Float)
        b = fd.define_tensor(shape=[-1, -1], dtype=DataType.Float, stride_order=[0, 1])
        fd.add_output(fd.ops.add(a, b))
    xs = [torch.randn(512, 1024), torch.randn(1024, 512).t()]
    trace = Trace()
    p = params_of(fd, xs, trace)
    assert p.vectorization_factor == 4
    assert any("T1: innermost axis is not the reference's" in e.message for e in trace)
    assert set(p.vectorized_tensors) == {"T0", "T2"}


def test_broadcast_2d_split_grid_y_beyond_65535():
    with FusionDefinition() as fd:
        a = fd.define_tensor(shape=[-1, -1], dtype=DataType.BFloat16)
        b = fd.define_tensor(shape=[-1], dtype=DataType.BFloat16)
        fd.add_output(fd.ops.add(a, fd.ops.broadcast(b, [True, False])))
    # a is an expanded (stride-0) view: the sizes are big, the storage is not.
    xs = [torch.zeros(1, 1, dtype=torch.bfloat16).expand(200000, 512), torch.zeros(512, dtype=torch.bfloat16)]
    p = params_of(fd, xs)
    assert p.break_point == 1 and p.split_block and p.split_grid_y_dim
    assert p.lparams.bdimx == 64 and p.lparams.bdimy == 2
    # The stride-0 input is not contiguous along the row: no vector.
    assert p.vectorization_factor == 1
    registry.get("pointwise").schedule(fd.fusion, p)
    verify_fusion(fd.fusion)
    out = fd.fusion.outputs[0]
    types = [i.parallel_type for i in out.loop()]
    assert types == [ParallelType.serial, ParallelType.grid_y, ParallelType.block_y,
                     ParallelType.grid_x, ParallelType.block_x]
    assert out.axis(1).extent.value == 65535


def test_pad_of_an_outer_axis_keeps_the_vector_and_an_inner_pad_limits_it():
    def fusion(pad_widths):
        with FusionDefinition() as fd:
            a = fd.define_tensor(shape=[64, 4, 128], dtype=DataType.BFloat16)
            fd.add_output(fd.ops.pad(a, pad_widths))
        return fd
    xs = [torch.randn(64, 4, 128).to(torch.bfloat16)]
    # Pad the middle axis by (0, 2): boundaries at multiples of 128 elements.
    fd = fusion([0, 0, 0, 2])
    trace = Trace()
    info = SchedulerRuntimeInfo(fd.fusion, xs)
    from engine.analysis.vectorize import vectorization_factor

    r = vectorization_factor(fd.fusion, fd.fusion.outputs[0], info)
    assert r.factor == 8
    assert any("over 128 inner element(s)" in line for line in r.derivation)
    # Pad the innermost axis by (2, 0): a vector may not straddle the pad boundary.
    fd = fusion([2, 0])
    info = SchedulerRuntimeInfo(fd.fusion, xs)
    r = vectorization_factor(fd.fusion, fd.fusion.outputs[0], info)
    assert r.factor == 2
    del trace


# ---- seed 004: block quantization ---------------------------------------------------------

def test_seed004_sample_is_accepted_at_its_small_size():
    """Changed: nvFuser refuses 32 x 128 (under a wave the vector budget is 1, and its
    runtime function, which shares a block among 2-8 threads, needs a vector of at
    least 2). This engine quantizes a whole block in one thread, so the vector only
    subdivides a block and any size whose last axis holds whole blocks is taken."""
    fd = load_fusion(SAMPLES / "seed004_nvfp4_quantize.py")
    xs = fd.example_inputs(seed=0)
    vs, first = verdicts(fd, xs)
    assert vs[SchedulerType.pointwise].accepted
    assert first == SchedulerType.pointwise
    kind, p, trace = schedule_and_check(fd, xs)
    assert (p.block_size, p.vectorization_factor, p.break_point, p.unroll_factor_inner) == (16, 8, 0, 1)
    assert any("block quantization: 256 blocks of 16 elements" in e.message
               for e in trace.about("pointwise"))


def test_block_quantization_refused_when_the_last_axis_splits_a_block():
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1], dtype=DataType.BFloat16)
        q, s = fd.ops.nv_block_quantize(x)
        fd.add_output(q)
        fd.add_output(s)
    vs, _ = verdicts(fd, [torch.randn(4, 40).to(torch.bfloat16)])
    assert vs[SchedulerType.pointwise].reason == (
        "Block Quantization Op needs the last axis (40) of T0 to be a multiple of the block size 16.")


def quantize_fusion(scales_out: bool = True):
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1], dtype=DataType.BFloat16)
        g = fd.define_tensor(shape=[], dtype=DataType.Float)
        q, s = fd.ops.nv_block_quantize(x, global_scale=g)
        fd.add_output(q)
        if scales_out:
            fd.add_output(s)
        else:
            fd.add_output(fd.ops.cast(s, DataType.Float))
    xs = [torch.randn(1024, 2048).to(torch.bfloat16), torch.full((), 200.0)]
    return fd, xs


def test_block_quantization_gives_each_thread_whole_blocks():
    """Each thread quantizes whole 16-element blocks of the last axis: the quantized
    output's innermost loop is one serial block (the runtime function's call), the
    input cache reads the block in two vectors of 8 bf16 and is inlined at TIDx so the
    whole block is in the thread's registers, and the block scales [M, K/16] iterate
    the blocks: [BIDx, TIDx], the same loops as the quantized output without B."""
    fd, xs = quantize_fusion()
    _, first = verdicts(fd, xs)
    assert first == SchedulerType.pointwise
    kind, p, trace = schedule_and_check(fd, xs)
    assert p.vectorization_factor == 8  # bf16 input; the fp4 output would allow 32
    assert p.block_size == 16 and p.break_point == 0
    f = fd.fusion
    q_expr = next(e for e in f.exprs() if isinstance(e, BlockQuantizationOp))
    quantized, scales, x = q_expr.quantized, q_expr.block_scales, q_expr.inputs[0]
    pt = ParallelType
    # Block scales and quantized values are written by the quantize op itself.
    assert scales in f.outputs and scales.definition is q_expr
    assert quantized in f.outputs and quantized.definition is q_expr
    assert [i.parallel_type for i in quantized.loop()] == [pt.grid_x, pt.block_x, pt.unroll]
    assert quantized.axis(-1).extent.value == 16
    assert [i.parallel_type for i in scales.loop()] == [pt.grid_x, pt.block_x]
    assert [i.parallel_type for i in x.loop()] == [pt.grid_x, pt.block_x, pt.unroll, pt.vectorize]
    assert [i.extent.value for i in x.loop()[2:]] == [2, 8]
    assert x.definition.inputs[0] in f.inputs and x.compute_at_pos == 2
    # The scales share the quantized output's grid and block axes, extent for extent.
    bidx_q, bidx_s = quantized.axis(0).extent, scales.axis(0).extent
    info = SchedulerRuntimeInfo(f, xs)
    assert info.value(bidx_q) == info.value(bidx_s) == 1024 * 2048 // 16 // 128
    assert any("output not cached" in e.message for e in trace.about(scales.short_name))


def test_block_scales_not_an_output_is_refused():
    fd, xs = quantize_fusion(scales_out=False)
    vs, _ = verdicts(fd, xs)
    assert vs[SchedulerType.pointwise].reason == (
        "no support for block quantization where block scales is not a fusion output")


# ---- seed 000: the layout op ------------------------------------------------------------

def layout_fusion(offsets_computed: bool = False):
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1], dtype=DataType.BFloat16)
        io = fd.define_tensor(shape=[-1], dtype=DataType.Int32)
        oo = fd.define_tensor(shape=[-1], dtype=DataType.Int32)
        if offsets_computed:
            io = fd.ops.abs(io)
        q, s = fd.ops.nv_block_quantize(x)
        out = fd.ops.preprocess_grouped_matmul_input_sf(s, io, oo)
        for t in (q, s, out):
            fd.add_output(t)
    xs = [torch.randn(2048, 1024).to(torch.bfloat16), torch.tensor([0, 1000], dtype=torch.int32),
          torch.tensor([0, 1024], dtype=torch.int32)]
    return fd, xs


def test_layout_op_with_global_offsets_and_output_is_pointwise_and_never_cached():
    fd, xs = layout_fusion()
    _, first = verdicts(fd, xs)
    assert first == SchedulerType.pointwise
    kind, p, trace = schedule_and_check(fd, xs)
    op = next(e for e in fd.fusion.exprs() if isinstance(e, PreprocessGroupedMatmulInputSf))
    # The runtime function reads the offsets and writes its output in global memory.
    assert op.input_offsets in fd.fusion.inputs and op.output_offsets in fd.fusion.inputs
    assert op.output in fd.fusion.outputs
    assert all(i.parallel_type != ParallelType.vectorize for i in op.output.loop())
    assert {"T1", "T2", op.output.short_name}.isdisjoint(p.vectorized_tensors)
    assert any("must stay in global memory" in e.message for e in trace.about("T1"))


def test_layout_op_offsets_must_be_fusion_inputs():
    fd, xs = layout_fusion(offsets_computed=True)
    vs, first = verdicts(fd, xs)
    reason = vs[SchedulerType.pointwise].reason
    assert reason.startswith("input_offsets T")
    assert "of PreprocessGroupedMatmulInputSf must be a fusion input" in reason
    assert first is None


def test_seed000_whole_moe_fusion_is_refused_by_every_scheduler_naming_the_layout_output():
    fd = load_fusion(SAMPLES / "seed000_moe_layout_op.py")
    vs, first = verdicts(fd, fd.example_inputs(seed=0))
    # The layout op's rule comes before each scheduler's own checks (nvFuser's
    # checkCanSchedule), so even matmul's delegation reason is not reached.
    for kind in SchedulerType:
        assert vs[kind].reason == (
            "output T9 of PreprocessGroupedMatmulInputSf must be a fusion output with no uses: "
            "its runtime function writes it to global memory"), kind
    assert first is None


# ---- fd.sched and schedule_fusion -------------------------------------------------------------

def test_fd_sched_automatic_scheduler_calls():
    fd = load_fusion(SAMPLES / "gelu_bias.py")
    assert fd.sched.can_schedule(SchedulerType.pointwise) == (True, "")
    ok, why = fd.sched.can_schedule("expr_eval")
    assert not ok and why == "Fusion must contain only a single expression."
    assert SchedulerType.pointwise in fd.sched.find_compatible_schedulers()
    p = fd.sched.compute_pointwise_heuristics()
    assert isinstance(p, PointwiseParams) and p.vectorization_factor == 8
    # User-changed parameters are applied as given.
    fd.sched.schedule(dataclasses.replace(p, vectorization_factor=2))
    verify_fusion(fd.fusion)
    out = fd.fusion.outputs[0]
    assert out.axis(-1).extent.value == 2 and out.axis(-1).parallel_type == ParallelType.vectorize
    assert any(e.kind == "heuristic" for e in fd.sched.trace)


def test_fd_sched_schedule_refuses_with_the_reason_and_changes_nothing():
    fd = load_fusion(SAMPLES / "gelu_bias.py")
    before = str(fd.fusion)
    with pytest.raises(ScheduleError, match="no_op_ \\*\\*\\*rejected\\*\\*\\* because : output has"):
        fd.sched.schedule(SchedulerType.no_op)
    assert str(fd.fusion) == before and not fd.sched.calls


def test_fd_sched_schedule_round_trips_through_a_fusion_file():
    from engine import dumps_fusion, loads_fusion

    fd = load_fusion(SAMPLES / "gelu_bias.py")
    fd.sched.schedule(SchedulerType.pointwise)
    text = dumps_fusion(fd)
    assert "fd.sched.schedule(SchedulerType.pointwise)" in text
    fd2 = loads_fusion(text)
    # The file's inputs list comes after the definition: the loader schedules once it has it.
    assert fd2.sched.pending == []
    assert str(fd2.fusion) == str(fd.fusion)


def test_heuristics_without_sizes_are_refused_clearly():
    with FusionDefinition() as fd:
        a = fd.define_tensor(shape=[-1], dtype=DataType.Float)
        fd.add_output(fd.ops.neg(a))
    assert fd.sched.can_schedule(SchedulerType.pointwise) == (True, "")  # compile-time verdict
    with pytest.raises(ScheduleError, match="heuristics need input sizes"):
        fd.sched.compute_pointwise_heuristics()
    p = fd.sched.compute_pointwise_heuristics(inputs=[torch.randn(1 << 20)])
    assert p.vectorization_factor == 4


def test_compute_reduction_heuristics_uses_the_reduction_scheduler():
    fd = load_fusion(SAMPLES / "gelu_bias.py")
    with pytest.raises(ScheduleError, match="reduction"):
        fd.sched.compute_reduction_heuristics()


def test_schedule_fusion_force_refused_names_the_reason():
    fd = load_fusion(SAMPLES / "softmax.py")
    with pytest.raises(ScheduleError, match="no support for reduction ops"):
        schedule_fusion(fd.fusion, fd.example_inputs(seed=0), force="pointwise")


# ---- every bundled sample: the pointwise verdict, and schedules that keep results ----------

POINTWISE_REASONS = {
    "cross_entropy": "cannot find reference tensor",  # its loss output drops the class axis
    "gelu_bias": "",
    "layer_norm": "no support for reduction ops",
    # The output lost the reduced axis, so no output covers the input's axes: the
    # reference check comes first, as in nvFuser's canScheduleCompileTime.
    "outer_reduction": "cannot find reference tensor",
    "reshape_chain": "",
    "rms_norm": "no support for reduction ops",
    "seed000_moe_layout_op": (
        "output T9 of PreprocessGroupedMatmulInputSf must be a fusion output with no uses: "
        "its runtime function writes it to global memory"),
    "seed001_inner_outer_alloc": "no support for reduction ops",
    "seed002_stream_matmul_m": (
        "Has unsupported ops: MatmulOp (evaluated by the expr_eval scheduler in this engine)"),
    "seed002_stream_reduction": "no support for reduction ops",
    # Its output drops the summed axes, so no output covers every input axis.
    "seed003_rope_bwd": "cannot find reference tensor",
    "seed003_rope_bwd_small": "cannot find reference tensor",
    # Changed: accepted at 32 x 128 (one thread quantizes a whole block; see above).
    "seed004_nvfp4_quantize": "",
    "seed004_nvfp4_quantize_swizzled": "",
    "softmax": "no support for reduction ops",
    "transpose": "",
}


@pytest.mark.parametrize("name", sorted(POINTWISE_REASONS))
def test_pointwise_verdict_on_every_sample(name):
    fd = load_fusion(SAMPLES / f"{name}.py")
    xs = fd.example_inputs(seed=0)
    vs, first = verdicts(fd, xs)
    assert vs[SchedulerType.pointwise].reason == POINTWISE_REASONS[name]
    if vs[SchedulerType.pointwise].accepted:
        # Nothing earlier in the priority order takes these (the transpose scheduler
        # refuses the small transpose sample); they schedule and keep their results.
        assert first == SchedulerType.pointwise
        kind, p, _ = schedule_and_check(fd, xs)
        assert kind == SchedulerType.pointwise and isinstance(p, PointwiseParams)


def test_swizzled_quantize_keeps_the_scales_allocation_domain():
    fd = load_fusion(SAMPLES / "seed004_nvfp4_quantize_swizzled.py")
    xs = fd.example_inputs(seed=0)
    q = next(e for e in fd.fusion.exprs() if isinstance(e, BlockQuantizationOp))
    alloc = list(q.block_scales.domain.allocation)
    schedule_and_check(fd, xs)
    assert q.block_scales.definition is q and q.block_scales.domain.allocation == alloc


def test_outer_strides_limit_the_vector_but_size_one_strides_do_not():
    from engine.analysis.vectorize import vectorization_factor

    with FusionDefinition() as fd:
        a = fd.define_tensor(shape=[-1, -1, -1], contiguity=[False, False, True], dtype=DataType.BFloat16)
        fd.add_output(fd.ops.neg(a))
    # Rows of 64 elements 68 apart: the contiguous extent is 64, the row stride 68 = 4 * 17.
    x = torch.randn(8, 3, 68).to(torch.bfloat16)[:, :, :64]
    r = vectorization_factor(fd.fusion, fd.fusion.outputs[0], SchedulerRuntimeInfo(fd.fusion, [x]))
    assert r.per_tensor["T0"] == 4
    # A size-1 middle axis with an odd stride is never stepped over.
    y = torch.randn(8, 1, 64).to(torch.bfloat16).as_strided((8, 1, 64), (64, 7, 1))
    r = vectorization_factor(fd.fusion, fd.fusion.outputs[0], SchedulerRuntimeInfo(fd.fusion, [y]))
    assert r.per_tensor["T0"] == 8


def test_one_tensor_reshaped_two_ways_is_refused():
    with FusionDefinition() as fd:
        a = fd.define_tensor(shape=[64, 96], dtype=DataType.Float)
        b = fd.ops.exp(a)
        fd.add_output(fd.ops.neg(fd.ops.reshape(b, [96, 64])))
        fd.add_output(fd.ops.neg(fd.ops.reshape(fd.ops.abs(b), [32, 192])))
    vs, _ = verdicts(fd, [torch.randn(64, 96)])
    assert vs[SchedulerType.pointwise].reason == "Fusion requires view being reversible."
    # The same reshape twice is one replay.
    with FusionDefinition() as fd:
        a = fd.define_tensor(shape=[64, 96], dtype=DataType.Float)
        fd.add_output(fd.ops.reshape(fd.ops.exp(a), [96, 64]))
        fd.add_output(fd.ops.reshape(fd.ops.neg(a), [96, 64]))
    vs, _ = verdicts(fd, [torch.randn(64, 96)])
    assert vs[SchedulerType.pointwise].accepted
    schedule_and_check(fd, [torch.randn(64, 96)])


def test_reference_must_cover_every_input_axis():
    with FusionDefinition() as fd:
        a = fd.define_tensor(shape=[-1, -1], dtype=DataType.Float)
        b = fd.define_tensor(shape=[-1], dtype=DataType.Float)
        fd.add_output(fd.ops.exp(a))
        fd.add_output(fd.ops.neg(b))  # unrelated to a: no output covers both
    vs, _ = verdicts(fd, [torch.randn(8, 8), torch.randn(5)])
    assert vs[SchedulerType.pointwise].reason == "cannot find reference tensor"


def test_less_than_a_wave_is_not_vectorized_even_when_aligned():
    # 100 x 100 elements are fewer than 132 SMs x 128 threads: the budget drops to
    # ceil(10000 / 16896) = 1, as nvFuser prefers more threads over wider ones.
    fd, xs = pointwise_2d(DataType.BFloat16, shape=(100, 100))
    trace = Trace()
    p = params_of(fd, xs, trace)
    assert any("fewer elements than a wave (16896): budget -> 1" in e.message for e in trace)
    assert any("vectorization factor 8" in e.message for e in trace)  # what the layout allows
    assert p.vectorization_factor == 1 and p.unroll_factor_inner == 1


# ---- reshapes: every tensor of the 1-D schedule shares the reference's flattened loop --------

def _emulate_against_reference(fd, xs):

    from engine.compile import compile_fusion
    from engine.reference import evaluate

    require_gxx()
    cf = compile_fusion(fd, xs)
    outs = cf.run(xs, backend="emulate")
    refs = evaluate(fd.fusion, xs)
    assert len(outs) == len(refs)
    for o, r in zip(outs, refs):
        assert o.shape == r.shape and torch.equal(o, r)
    return cf


def _reshape_relu_reshape(shape, mid, final, both: bool):
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[1 if s == 1 else -1 for s in shape],
                              contiguity=[True] * len(shape), dtype=DataType.Float)
        t2 = fd.ops.relu(fd.ops.reshape(t0, mid))
        t3 = fd.ops.reshape(t2, final)
        if both:
            fd.add_output(t2)
        fd.add_output(t3)
    return fd, [torch.randn(*shape, generator=torch.Generator().manual_seed(0))]


@pytest.mark.parametrize("both", [True, False])
@pytest.mark.parametrize("shape, mid, final", [
    ((4, 6), [2, 2, 6], [24]),            # realworld reshape_original_shape
    ((5, 7), [7, 5], [35]),               # extents that divide nothing
    ((5, 7), [35], [7, 5]),
    ((130, 3), [390], [3, 130]),          # more than one block
    ((1, 6), [2, 3], [6]),                # size-1 axes (squeezed by the reshape)
    ((4, 1, 6), [24], [2, 12]),
    ((256, 96), [2, 128, 96], [24576]),   # large enough to vectorize
])
def test_reshape_relu_reshape_schedules_every_tensor_alike(shape, mid, final, both):
    """The reference is the 3-D intermediate output (or the final one); propagation crosses
    the second reshape forward and the first backward. Tensors after a reshape once kept
    their reshaped axes unscheduled and were read across threads from local memory."""
    fd, xs = _reshape_relu_reshape(shape, mid, final, both)
    cf = _emulate_against_reference(fd, xs)
    # With both outputs the final one is a view of the other (engine.preseg.views_of_outputs_apart):
    # a segment of no kernel; the schedule across both reshapes is checked below.
    assert [s.scheduler for s in cf.segments] == ["pointwise"] + (["expr_eval"] if both else [])
    fd, xs = _reshape_relu_reshape(shape, mid, final, both)
    kind, p, _ = schedule_and_check(fd, xs)
    assert kind == SchedulerType.pointwise
    n = 2 + (p.unroll_factor_inner > 1)  # [BIDx, (unroll), TIDx, (V)]
    for tv in fd.fusion.tensors():
        if tv not in fd.fusion.inputs:
            assert tv.compute_at_pos >= n, f"{tv.short_name}: {tv}"


def test_reshape_of_the_reference_and_its_inverse_back_to_the_input():
    """T0 -> reshape -> relu -> reshape back -> + T0: propagation reaches the relu from both
    reshapes; both give it the same flattened loop, so everything inlines."""
    for shape, mid in [((4, 6), [24]), ((64, 96), [32, 2, 96]), ((5, 7), [7, 5])]:
        with FusionDefinition() as fd:
            t0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
            t2 = fd.ops.relu(fd.ops.reshape(t0, mid))
            fd.add_output(t2)
            fd.add_output(fd.ops.add(fd.ops.reshape(t2, list(shape)), t0))
        cf = _emulate_against_reference(fd, [torch.randn(*shape)])
        assert [s.scheduler for s in cf.segments] == ["pointwise"]


def _reshape_beside_input(variant: str) -> FusionDefinition:
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float)
        src = fd.ops.neg(x) if variant == "intermediate" else x
        r = fd.ops.reshape(src, [2, 3])
        if variant == "two_reshapes":
            other = fd.ops.broadcast_in_dim(fd.ops.reshape(src, [2, 3]), [2, 3, 2, 3], [2, 3])
            fd.add_output(fd.ops.add(fd.ops.broadcast_in_dim(r, [2, 3, 2, 3], [0, 1]), other))
        elif variant == "same_walk":
            fd.add_output(fd.ops.add(r, fd.ops.reshape(fd.ops.abs(src), [2, 3])))
        else:
            fd.add_output(fd.ops.add(fd.ops.broadcast_in_dim(r, [2, 3, 6], [0, 1]),
                                     fd.ops.broadcast_in_dim(src, [2, 3, 6], [2])))
    return fd


@pytest.mark.parametrize("variant", ["input", "intermediate", "two_reshapes", "same_walk"])
def test_self_mapping_through_a_reshape_is_refused(variant):
    """x.reshape(2, 3)[:, :, None] + x: axes 0, 1 of the sum come from x's axis through the
    reshape, axis 2 directly. One buffer of x inlined into both readers held one element per
    thread (fuzz fusion 2-3079: the input cache was shared), so every kernel scheduler refuses
    and the segmenter splits; two reshapes of x to the same shape added elementwise walk x
    alike and stay one kernel."""
    fd = _reshape_beside_input(variant)
    reason = registry.verdict(SchedulerType.pointwise, fd.fusion, None).reason
    if variant == "same_walk":
        assert reason == ""
    else:
        assert "Fusion has self mapping through a reshape" in reason and "axis 0 of T0" in reason
    cf = _emulate_against_reference(_reshape_beside_input(variant), [torch.randn(6)])
    assert len(cf.segments) == (1 if variant == "same_walk" else 2)


@pytest.mark.parametrize("shape, final", [((4, 6), [24]), ((33, 65), [65, 33]), ((128, 64), [8192])])
def test_reference_before_a_reshape(shape, final):
    """The reference (first of the widest outputs) comes before the reshape: propagation
    crosses it forward, from the reference's full merge to the reshaped tensor's."""
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
        t1 = fd.ops.relu(t0)
        fd.add_output(t1)
        fd.add_output(fd.ops.neg(fd.ops.reshape(t1, final)))
        fd.add_output(fd.ops.abs(t1))
    cf = _emulate_against_reference(fd, [torch.randn(*shape)])
    assert [s.scheduler for s in cf.segments] == ["pointwise"]


@pytest.mark.parametrize("variant", ["permute_output", "permute_added"])
def test_reshape_and_permute_of_one_tensor_is_refused_and_segmented(variant):
    """A reshape flattens T0 row-major, a permute of T0 column-major: no 1-D loop serves
    both, so the pointwise scheduler refuses (naming the tensor) instead of failing in
    the lowering with a local read across threads; the segmenter splits the fusion."""
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
        fd.add_output(fd.ops.relu(fd.ops.reshape(t0, [24])))
        if variant == "permute_output":
            fd.add_output(fd.ops.neg(fd.ops.permute(t0, [1, 0])))
        else:
            t1 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
            fd.add_output(fd.ops.add(fd.ops.permute(t0, [1, 0]), t1))
    xs = [torch.randn(4, 6)] + ([torch.randn(6, 4)] if variant == "permute_added" else [])
    before = str(fd.fusion)
    vs, _ = verdicts(fd, xs)
    reason = vs[SchedulerType.pointwise].reason
    assert reason.startswith("the 1-D schedule cannot cross the reshapes: the cache of T0 is not "
                             "inlined into T1"), reason
    assert str(fd.fusion) == before  # the verdict tried the schedule on a copy
    cf = _emulate_against_reference(fd, xs)
    assert len(cf.segments) == 2


def _weight_times(shape, w_shape, dims, reshape_from=None):
    """x * broadcast(w), the weight multiply of a norm or a bias; x optionally reshaped
    from `reshape_from` first (a reshape makes the schedule 1-D)."""
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1] * len(reshape_from or shape), contiguity=True, dtype=DataType.BFloat16)
        w = fd.define_tensor(shape=[-1] * len(w_shape), contiguity=True, dtype=DataType.BFloat16)
        if reshape_from is not None:
            x = fd.ops.reshape(x, new_shape=list(shape))
        b = fd.ops.broadcast_in_dim(w, shape=list(shape), broadcast_dims=dims)
        fd.add_output(fd.ops.mul(fd.ops.cast(x, DataType.Float), fd.ops.cast(b, DataType.Float)))
    g = torch.Generator().manual_seed(0)
    xs = [torch.randn(reshape_from or shape, generator=g).bfloat16(), torch.randn(w_shape, generator=g).bfloat16()]
    return fd, xs


@pytest.mark.parametrize("shape,w_shape,dims,reshape_from", [
    ((300, 8, 100), (100,), [2], None),         # 2-D at 1: the weight has no outer axis, S is merged in
    ((2, 12, 197, 64), (64,), [3], None),       # ViT attention shape, 2-D at 2
    ((72, 8, 128), (128,), [2], (576, 128)),    # a reshape: 1-D, the weight's cache vectorized
])
def test_a_broadcast_weight_missing_inner_axes_is_read_from_global_memory(shape, w_shape, dims, reshape_from):
    """Its cache could not be indexed (1-D: a vectorized cache in the reference's promoted
    loops) or was read across blocks (2-D: no outer axis to inline at); both used to fail
    to lower ('cannot be indexed from the loop nest', 'elements another block computed'),
    leaving the fusion to be segmented apart or refused. Now one kernel, exact results."""

    from engine import compile_fusion
    from engine.reference import evaluate

    require_gxx()
    fd, xs = _weight_times(shape, w_shape, dims, reshape_from)
    cf = compile_fusion(fd, xs)
    assert [s.scheduler for s in cf.segments] == ["pointwise"]
    assert not [e for e in cf.trace if "failed to lower" in str(e) or "pointwise is refused" in str(e)]
    w = fd.fusion.inputs[1].short_name
    notes = [e.message for e in cf.trace.about(w) if e.message.startswith("input not cached")]
    assert notes == ["input not cached: it lacks some of the reference's inner axes, and its cache could "
                     "not be indexed (see uncacheable_inputs); its consumers read it from global memory"]
    for o, r in zip(cf.run(xs, backend="emulate"), evaluate(fd.fusion, xs)):
        assert same(o, r)


def test_a_bias_covering_the_inner_axes_keeps_its_vectorized_cache():
    """[N, H] + [H] broken at 1: the cache runs its own loop nest, each thread reading the
    elements it loaded itself; nothing to give up."""
    fd, xs = _weight_times((576, 1024), (1024,), [1])
    from engine import compile_fusion

    cf = compile_fusion(fd, xs)
    assert not any("input not cached: broadcast" in str(e) for e in cf.trace)
    assert cf.segments[0].params.vectorization_factor > 1


# ---- a computed [C] tensor read through a broadcast with leading broadcast axes ---------------

def _times_broadcast_rsqrt(shape, keep, variant="plain"):
    """x * broadcast(rsqrt(w + eps)): w's axis `keep` of x, the others broadcast. The 2-D
    schedule's loop of the broadcast starts with the broadcast outer axes (bblockIdx.y{1},
    bthreadIdx.y{3}), which rsqrt(w + eps) lacks; its inner loop is a merge of w's axis with
    broadcasts that x concretizes."""
    flags = [k != keep for k in range(len(shape))]
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1] * len(shape), contiguity=[True] * len(shape), dtype=DataType.Float)
        w = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float)
        r = fd.ops.rsqrt(fd.ops.add(w, fd.define_scalar(1e-5, dtype=DataType.Double)))
        y = fd.ops.mul(x, fd.ops.broadcast(r, flags))
        if variant == "two_broadcasts":
            y = fd.ops.add(y, fd.ops.broadcast(r, flags))
        if variant == "rsqrt_output":
            fd.add_output(r)
        fd.add_output(y)
    g = torch.Generator().manual_seed(0)
    xs = [torch.randn(*shape, generator=g), torch.rand(shape[keep], generator=g) + 0.1]
    return fd, xs, r


@pytest.mark.parametrize("shape, keep", [
    ((2048, 8, 20), 1),        # the minimal repro
    ((2047, 7, 19), 1),        # nothing divides
    ((33, 129, 3), 1),
    ((4, 128, 6, 6), 1),       # batch norm's [N, C, H, W] * [C]
])
@pytest.mark.parametrize("variant", ["plain", "two_broadcasts"])
def test_a_computed_weight_is_recomputed_in_the_loops_of_its_broadcast(shape, keep, variant):
    """rsqrt(w + eps) used to stay at ca_pos 0, computed in its own loops: the broadcast's
    threads then read elements other threads computed, the kernel was refused and the fusion
    split in two. inline_most gives it (and w + eps) loop-only broadcasts where the
    broadcast's loop has broadcast axes it lacks, so it is computed inside those loops."""
    fd, xs, r = _times_broadcast_rsqrt(shape, keep, variant)
    cf = _emulate_against_reference(fd, xs)
    assert [s.scheduler for s in cf.segments] == ["pointwise"]
    assert not [e for e in cf.trace if "pointwise is refused" in str(e)]
    fd, xs, r = _times_broadcast_rsqrt(shape, keep, variant)
    schedule_and_check(fd, xs)
    for tv in (r, r.definition.inputs[0]):
        assert tv.domain.loop_only, str(tv)
        last = max(tv.domain.loop.index(b) for b in tv.domain.loop_only)
        assert tv.compute_at_pos > last, str(tv)


def test_a_computed_weight_that_is_also_an_output_is_still_split_apart():
    """The output copy of rsqrt(w + eps) runs w's loops, its broadcast the consumer's: no
    loop domain pairs with both by position, so nothing is inserted and the kernel that
    would read across threads stays refused (two kernels, exact results)."""
    fd, xs, r = _times_broadcast_rsqrt((2048, 8, 20), 1, "rsqrt_output")
    cf = _emulate_against_reference(fd, xs)
    assert len(cf.segments) == 2
    # (Its vectorized kernel reads across threads; scheduled again unvectorized, across blocks.)
    assert any("elements another block computed" in str(e) for e in cf.trace)


def test_a_bias_read_past_a_launched_broadcast_is_computed_in_its_consumers_loops():
    """gelu_bias: the bias's loop pairs with its broadcast's past the broadcast's outer
    axis, which is bound to blockIdx.y (no loop). A loop-only broadcast there costs nothing
    and lets the bias be computed in its consumer's loops (its compute-at position past the
    grid and block axes) instead of in loops of its own before them; no serial loop is
    inserted, so no element is computed twice."""
    fd = load_fusion(SAMPLES / "gelu_bias.py")
    xs = fd.example_inputs(seed=0)
    schedule_and_check(fd, xs)
    aligned = [t for t in fd.fusion.tensors() if t.domain.loop_only]
    assert aligned and all(t.compute_at_pos >= 3 for t in aligned)
    for t in aligned:
        for i in t.domain.loop_only:
            assert i.parallel_type.is_block_dim or i.parallel_type.is_thread_dim, (t, i)


def test_an_output_beside_a_sliced_reference_is_parallelized():
    """v[B, M, N] sliced along N and where(mask, 0, v) as two outputs, the sliced one first
    (the reference): parallel types were copied edge by edge and stopped at the slice, so
    the full-size output and what only it reads kept serial loops over the whole tensor
    (where_bool_expanded_mask_slice at 4x3072x4096: `i < 12288`, `i < 8`, `i < 128`), run
    by every thread of the grid. Such loop nests take the reference's parallel types
    across the slice now (PERMISSIVE_RESIZE), whether the slice is narrower than the block
    or takes all but one column, and no loop of the kernel runs a launched dimension."""
    import re

    from engine import compile_fusion
    from engine.reference import evaluate

    m, n = 24, 512
    for lo, hi in ((4, 8), (0, n - 1), (100, n)):
        with FusionDefinition() as fd:
            mask = fd.define_tensor(shape=[2, m], contiguity=[True, True], dtype=DataType.Bool)
            v = fd.define_tensor(shape=[2, m, n], contiguity=[True] * 3, dtype=DataType.Float)
            zero = fd.define_scalar(0.0, dtype=DataType.Double)
            fd.add_output(fd.ops.slice(v, [0, 0, lo], [2, m, hi]))
            b = fd.ops.broadcast_in_dim(mask, shape=[2, m, n], broadcast_dims=[0, 1])
            fd.add_output(fd.ops.where(b, zero, v))
        g = torch.Generator().manual_seed(0)
        xs = [torch.rand(2, m, generator=g) < 0.5, torch.randn(2, m, n, generator=g)]
        cf = compile_fusion(fd, xs)
        (seg,) = cf.segments
        assert seg.scheduler == "pointwise"
        body = seg.cuda_source.split('extern "C"')[-1]
        trips = {int(t) for t in re.findall(r"for \(nvfuser_index_t \w+ = 0; \w+ < (\d+);", body)}
        assert not trips & {*seg.launch.grid, *seg.launch.block} - {1}, (lo, hi, trips, seg.launch)
        assert not trips & {2 * m, 2 * m * n}, (lo, hi, trips)
        require_gxx()
        for o, r in zip(cf.run(xs, backend="emulate"), evaluate(fd.fusion, xs)):
            assert torch.equal(o, r)


def test_inputs_missing_only_the_references_broadcast_axes_keep_their_vectorized_caches():
    """[1, S, H] inputs whose size-1 axis is a broadcast, as is the output's: every axis the
    output has, they have. They used to be read element by element from global memory (the
    check counted the reference's broadcast axes as axes an input must have), and at
    [1, 768, 5120] ptxas kept the unrolled loop's output vectors on a 48-byte stack."""
    from engine import compile_fusion
    from engine.reference import evaluate

    require_gxx()
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[1, -1, -1], contiguity=[None, True, True], dtype=DataType.BFloat16)
        y = fd.define_tensor(shape=[1, -1, -1], contiguity=[None, True, True], dtype=DataType.Float)
        s = fd.ops.add(fd.ops.cast(x, DataType.Float), fd.ops.mul(y, fd.define_scalar(2.0)))
        fd.add_output(fd.ops.cast(s, DataType.BFloat16))
        fd.add_output(fd.ops.mul(s, s))
    g = torch.Generator().manual_seed(0)
    xs = [torch.randn(1, 256, 1024, generator=g).bfloat16(), torch.randn(1, 256, 1024, generator=g)]
    cf = compile_fusion(fd, xs)
    (seg,) = cf.segments
    assert seg.scheduler == "pointwise"
    assert not [e for e in cf.trace if str(e).find("input not cached") >= 0]
    src = seg.cuda_source
    body = src[src.rindex("__global__"):]
    assert "loadGeneric<__bfloat, 4>(&" in body and "loadGeneric<float, 4>(&" in body, body
    for o, r in zip(cf.run(xs, backend="emulate"), evaluate(fd.fusion, xs)):
        assert same(o, r)
