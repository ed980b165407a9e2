"""Seed rules that hold for every scheduler: the layout op's global buffers (seed 000),
block scales (seed 004), and the Welford rfactor used by layer_norm's schedules."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from engine import DataType, FusionDefinition, ScheduleError, load_fusion
from engine.ir.exprs import RFactorWelfordOp, WelfordOp
from engine.ir.iterdomain import ParallelType
from engine.ir.quant_exprs import BlockQuantizationOp, PreprocessGroupedMatmulInputSf
from engine.ir.verify import verify_fusion
from engine.schedule import registry, schedule_fusion, tools
from engine.schedule.base import SchedulerType
from engine.schedule.reduction import vectorize_io
from engine.schedule.runtime_info import SchedulerRuntimeInfo
from engine.trace import Trace

OFFSETS_REASON = ("{what} {name} of PreprocessGroupedMatmulInputSf must be a fusion input: "
                  "its runtime function reads it from global memory")
OUTPUT_REASON = ("output {name} of PreprocessGroupedMatmulInputSf must be a fusion output with "
                 "no uses: its runtime function writes it to global memory")
SAMPLES = Path(__file__).resolve().parents[2] / "sample_fusions"


def layout_fusion(compute: str = "", extra_reduction: bool = False):
    """Block quantization feeding the layout op; `compute` breaks one rule:
    'input_offsets' / 'output_offsets' computes that offsets tensor inside the fusion."""
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1], dtype=DataType.BFloat16)
        io = fd.define_tensor(shape=[-1], dtype=DataType.Int32)
        oo = fd.define_tensor(shape=[-1], dtype=DataType.Int32)
        if compute == "input_offsets":
            io = fd.ops.abs(io)
        if compute == "output_offsets":
            oo = fd.ops.abs(oo)
        q, s = fd.ops.nv_block_quantize(x)
        out = fd.ops.preprocess_grouped_matmul_input_sf(s, io, oo)
        for t in (q, s, out):
            fd.add_output(t)
        if extra_reduction:
            fd.add_output(fd.ops.sum(fd.ops.cast(x, DataType.Float), [1]))
    xs = [torch.randn(2048, 1024).to(torch.bfloat16), torch.tensor([0, 1000], dtype=torch.int32),
          torch.tensor([0, 1024], dtype=torch.int32)]
    return fd, xs


def layout_op(fd) -> PreprocessGroupedMatmulInputSf:
    return next(e for e in fd.fusion.exprs() if isinstance(e, PreprocessGroupedMatmulInputSf))


def all_verdicts(fd, xs):
    vs, first = registry.can_schedule(fd.fusion, SchedulerRuntimeInfo(fd.fusion, xs))
    return {v.scheduler: v for v in vs}, first


# ---- seed 000: every scheduler refuses a layout op whose buffers are not global -------------

def test_every_scheduler_refuses_computed_input_offsets_naming_the_tensor():
    fd, xs = layout_fusion("input_offsets")
    name = layout_op(fd).input_offsets.short_name
    vs, first = all_verdicts(fd, xs)
    assert set(vs) == set(SchedulerType)
    for kind, v in vs.items():
        assert v.reason == OFFSETS_REASON.format(what="input_offsets", name=name), kind
    assert first is None


def test_every_scheduler_refuses_computed_output_offsets_naming_the_tensor():
    fd, xs = layout_fusion("output_offsets")
    name = layout_op(fd).output_offsets.short_name
    vs, _ = all_verdicts(fd, xs)
    for kind, v in vs.items():
        assert v.reason == OFFSETS_REASON.format(what="output_offsets", name=name), kind


def test_every_scheduler_refuses_a_layout_output_that_is_read_in_the_fusion():
    # The definition layer lets only the grouped matmul read the layout output: the
    # seed-000 MoE fusion is such a fusion, unsegmented.
    fd = load_fusion(SAMPLES / "seed000_moe_layout_op.py")
    name = layout_op(fd).output.short_name
    vs, first = all_verdicts(fd, fd.example_inputs(seed=0))
    for kind, v in vs.items():
        assert v.reason == OUTPUT_REASON.format(name=name), kind
    assert first is None


def test_the_rule_comes_before_each_schedulers_own_reason():
    # A reduction in the fusion: the reduction schedulers would otherwise refuse for
    # the quantization op, expr_eval for the number of exprs; fd.sched reports the
    # layout rule first, as nvFuser's checkCanSchedule does.
    fd, xs = layout_fusion("input_offsets", extra_reduction=True)
    name = layout_op(fd).input_offsets.short_name
    for kind in ("reduction", "inner_persistent", "expr_eval", "matmul", "transpose", "resize"):
        ok, why = fd.sched.can_schedule(kind)
        assert not ok and why == OFFSETS_REASON.format(what="input_offsets", name=name), kind


def test_a_valid_layout_op_gets_each_schedulers_own_verdict():
    fd, xs = layout_fusion(extra_reduction=True)
    vs, _ = all_verdicts(fd, xs)
    # No scheduler that keeps buffers across a reduction (or caches them in shared
    # memory) takes the layout op: its output and offsets can never become persistent.
    for kind in (SchedulerType.reduction, SchedulerType.inner_persistent,
                 SchedulerType.outer_persistent, SchedulerType.inner_outer_persistent):
        assert not vs[kind].accepted
        assert "PreprocessGroupedMatmulInputSf" not in vs[kind].reason
    assert vs[SchedulerType.pointwise].reason == "no support for reduction ops"


# ---- seeds 000 and 004: the shared keep rule in the cache tools ------------------------------

def test_cache_tools_keep_global_only_tensors_without_a_scheduler_keep():
    """Reduction, normalization, transpose and resize call the tools without a keep of
    their own: the tools keep the layout op's buffers and the block scales anyway."""
    fd, _ = layout_fusion()
    f = fd.fusion
    op = layout_op(fd)
    q = next(e for e in f.exprs() if isinstance(e, BlockQuantizationOp))
    scales, out = q.block_scales, op.output
    x, io, oo = f.inputs[:3]
    assert tools.global_only(f) == {scales, out, io, oo}
    trace = Trace()
    caches = tools.cache_inputs(f, trace=trace)
    # x is cached; the offsets are still read by the layout op itself.
    assert [c.definition.inputs[0] for c in caches] == [x]
    assert op.input_offsets is io and op.output_offsets is oo
    assert any("must stay in global memory" in e.message for e in trace.about(io.short_name))
    locals_ = tools.cache_and_fork_outputs(f, trace=trace)
    # The block scales are an output read by the layout op: without the rule they would
    # be forked. They and the layout output stay written by their own ops.
    assert scales.definition is q and out.definition is op
    assert op.input is scales and scales in f.outputs and out in f.outputs
    assert scales not in locals_ and out not in locals_
    assert any("output not cached" in e.message for e in trace.about(scales.short_name))


def test_a_scheduler_keep_adds_to_the_shared_rule():
    fd, _ = layout_fusion()
    f = fd.fusion
    x, io, oo = f.inputs[:3]
    caches = tools.cache_inputs(f, keep=lambda t: t is x)
    assert caches == []
    op = layout_op(fd)
    assert op.input_offsets is io and op.output_offsets is oo


def test_reduction_vectorization_skips_global_only_outputs():
    fd, _ = layout_fusion()
    f = fd.fusion
    q = next(e for e in f.exprs() if isinstance(e, BlockQuantizationOp))
    scales, quantized = q.block_scales, q.quantized
    for tv in (scales, quantized):
        tv.split(-1, 4)
    done = vectorize_io(f, [scales, quantized], 4)
    # Same split on both; only the tensor a kernel writes itself is vectorized.
    assert done == [quantized]
    assert quantized.axis(-1).parallel_type == ParallelType.vectorize
    assert scales.axis(-1).parallel_type != ParallelType.vectorize


# ---- Welford rfactor (layer_norm's var_mean) -------------------------------------------------

def var_mean_fusion(dim: int = 1):
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1], dtype=DataType.Float)
        v, m = fd.ops.var_mean(x, dims=[dim], correction=0, keepdim=False)
        fd.add_output(v)
        fd.add_output(m)
    return fd


def welford_of(fd) -> WelfordOp:
    return next(e for e in fd.fusion.exprs() if type(e) is WelfordOp)


def test_rfactor_of_a_welford_makes_partials_that_combine_to_var_mean():
    fd = var_mean_fusion()
    x = torch.randn(6, 1000) * 3 + 5
    w = welford_of(fd)
    avg, var_sum, n = w.outputs
    for t in (avg, var_sum, n):
        t.split(1, 128)  # 1000 is not a multiple of 128: the last partial is padded
    rf = var_sum.rfactor([1])
    part = rf.definition
    assert isinstance(part, RFactorWelfordOp) and rf is part.outputs[1]
    # The original op now combines the three partials over what is left (the 128 lanes).
    combine = avg.definition
    assert type(combine) is WelfordOp and combine is not w
    assert list(combine.inputs) == list(part.outputs) and list(combine.outputs) == [avg, var_sum, n]
    assert [i.is_reduction for i in avg.domain.logical] == [False, True]
    verify_fusion(fd.fusion)
    text = str(fd.fusion)
    a, v, c = (t.short_name for t in part.outputs)
    assert f"(Avg)\n    {v}_l_float" in text and f"(Var)\n    {c}_l_int64_t" in text
    var, mean = fd.execute([x])
    ref_var, ref_mean = torch.var_mean(x.double(), dim=1, correction=0)
    torch.testing.assert_close(mean.double(), ref_mean, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(var.double(), ref_var, rtol=1e-5, atol=1e-5)


def test_partial_counts_leave_out_the_padding_of_a_split():
    fd = var_mean_fusion()
    w = welford_of(fd)
    avg, var_sum, n = w.outputs
    for t in (avg, var_sum, n):
        t.split(1, 4, inner_split=False)  # 4 partials of ceil(10 / 4) = 3: 12 slots for 10
    rf = n.rfactor([2])
    # Evaluate the partial counts alone: make them an output of their own.
    fd.fusion.add_output(rf)
    x = torch.randn(2, 10)
    outs = fd.execute([x])
    counts = outs[-1]
    assert counts.dtype == torch.int64 and counts.tolist() == [[3, 3, 3, 1]] * 2
    torch.testing.assert_close(outs[1], x.mean(dim=1))


def test_a_combining_welford_is_not_rfactored_again():
    fd = var_mean_fusion()
    avg, var_sum, n = welford_of(fd).outputs
    for t in (avg, var_sum, n):
        t.split(1, 8)
        t.split(2, 2)
    avg.rfactor([1])
    with pytest.raises(ScheduleError, match="already combines partial results"):
        avg.rfactor([1])


def test_layer_norm_is_persistent_with_a_per_thread_welford_partial():
    fd = load_fusion(SAMPLES / "layer_norm.py")
    xs = fd.example_inputs(seed=0)
    before = fd.execute(xs)
    trace = Trace()
    kind, _ = schedule_fusion(fd.fusion, xs, trace)
    assert kind == SchedulerType.inner_persistent
    verify_fusion(fd.fusion)
    parts = [e for e in fd.fusion.exprs() if isinstance(e, RFactorWelfordOp)]
    assert len(parts) == 1
    combine = next(e for e in fd.fusion.exprs() if type(e) is WelfordOp)
    assert list(combine.inputs) == list(parts[0].outputs)
    # The partials reduce the serial axes per thread; the combine reduces across TIDx.
    assert all(i.parallel_type == ParallelType.serial
               for i in parts[0].outputs[0].domain.loop if i.is_reduction)
    assert any(i.is_reduction and i.parallel_type == ParallelType.block_x
               for i in combine.outputs[0].domain.loop)
    assert any("rfactor: per-thread partial reduction" in e.message for e in trace.events)
    after = fd.execute(xs)
    for a, b in zip(before, after):
        torch.testing.assert_close(a.float(), b.float(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dim,shape", [(1, (64, 8192)), (0, (8192, 64))])
def test_the_reduction_scheduler_rfactors_a_welford(dim, shape):
    fd = var_mean_fusion(dim)
    xs = [torch.randn(*shape)]
    before = fd.execute(xs)
    trace = Trace()
    kind, p = schedule_fusion(fd.fusion, xs, trace)
    assert kind == SchedulerType.reduction
    verify_fusion(fd.fusion)
    assert any(isinstance(e, RFactorWelfordOp) for e in fd.fusion.exprs())
    after = fd.execute(xs)
    for a, b in zip(before, after):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-5)


def test_a_user_rfactor_of_one_welford_output_replays_the_split_on_its_siblings():
    from engine import dumps_fusion, loads_fusion

    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1], dtype=DataType.Float)
        v, m = fd.ops.var_mean(x, dims=[1], correction=0, keepdim=False)
        fd.add_output(v)
        fd.add_output(m)
        fd.sched.split(m, 1, 8)  # only the mean (avg) is split by the user
        rf = fd.sched.rfactor(m, [1])
    part = rf.definition
    assert isinstance(part, RFactorWelfordOp)
    # All three partials reduce the same rfactored axis (ceilDiv(100, 8) here).
    assert all([i.is_reduction for i in p.domain.logical] == [False, True, False]
               for p in part.outputs)
    verify_fusion(fd.fusion)
    xs = [torch.randn(4, 100)]
    var, mean = fd.execute(xs)
    torch.testing.assert_close(var, torch.var(xs[0], dim=1, correction=0))
    torch.testing.assert_close(mean, xs[0].mean(dim=1))
    # The recorded schedule replays to the same IR from a fusion file.
    fd2 = loads_fusion(dumps_fusion(fd))
    assert str(fd2.fusion) == str(fd.fusion)


def test_welford_siblings_with_different_transforms_are_refused():
    fd = var_mean_fusion()
    avg, var_sum, n = welford_of(fd).outputs
    avg.split(1, 8)
    var_sum.split(1, 8)
    var_sum.split(2, 2)
    with pytest.raises(ScheduleError, match="sibling T2 has different loop transforms"):
        avg.rfactor([1])


@pytest.mark.parametrize("dim,shape,kind", [
    (0, (4096, 256), SchedulerType.outer_persistent),
    (1, (256, 4096), SchedulerType.inner_persistent),
])
def test_persistent_schedulers_rfactor_a_normalizing_welford(dim, shape, kind):
    # x - mean(x) keeps x alive across the Welford: a persistent schedule.
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1], dtype=DataType.Float)
        v, m = fd.ops.var_mean(x, dims=[dim], correction=0, keepdim=False)
        bm = fd.ops.broadcast(m, [dim == 0, dim == 1])
        fd.add_output(fd.ops.sub(x, bm))
        fd.add_output(v)
    xs = [torch.randn(*shape)]
    before = fd.execute(xs)
    trace = Trace()
    got, _ = schedule_fusion(fd.fusion, xs, trace)
    assert got == kind
    verify_fusion(fd.fusion)
    assert any(isinstance(e, RFactorWelfordOp) for e in fd.fusion.exprs())
    assert any("rfactor: per-thread partial reduction" in e.message for e in trace.events)
    for a, b in zip(before, fd.execute(xs)):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-5)
