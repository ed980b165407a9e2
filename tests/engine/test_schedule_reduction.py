"""The reduction scheduler: which fusions it takes and nvFuser's reasons when it does not,
its parameters (printed like nvFuser's ReductionParams), and schedules that verify and
keep the reference results; plus the reduction analyses it relies on."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from engine import DataType, FusionDefinition, load_fusion
from engine.analysis.persistent import (
    persistent_buffers,
    reduction_properties,
    reduction_tvs,
    reduction_type,
)
from engine.ir.iterdomain import ParallelType
from engine.ir.rfactor import RFactorReductionOp
from engine.ir.verify import verify_fusion
from engine.runtime.device import model
from engine.schedule import registry
from engine.schedule.base import SchedulerType
from engine.schedule.reduction import ReductionParams, compute_reduction_heuristics
from engine.schedule.runtime_info import SchedulerRuntimeInfo
from engine.trace import Trace
from tests.emulation import require_gxx

SAMPLES = Path(__file__).resolve().parents[2] / "sample_fusions"
H100 = model("H100")


def verdicts(fd: FusionDefinition, xs: list) -> tuple[dict[str, str], SchedulerType | None]:
    info = SchedulerRuntimeInfo(fd.fusion, xs, H100)
    vs, first = registry.can_schedule(fd.fusion, info)
    return {str(v.scheduler): ("accepted" if v.accepted else v.reason) for v in vs}, first


def schedule(fd: FusionDefinition, xs: list, kind: str, trace: Trace | None = None) -> ReductionParams:
    """Heuristics and schedule with `kind`; checks the verifier and the results."""
    before = fd.execute(xs)
    info = SchedulerRuntimeInfo(fd.fusion, xs, H100)
    s = registry.get(kind)
    p = s.compute_heuristics(fd.fusion, info, trace)
    s.schedule(fd.fusion, p, trace)
    verify_fusion(fd.fusion)
    after = fd.execute(xs)
    for a, b in zip(before, after, strict=True):
        torch.testing.assert_close(a.double(), b.double(), rtol=1e-4, atol=1e-4)
    return p


def inner_sum(rows: int = 64, cols: int = 1024, dtype: DataType = DataType.Float):
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=dtype)
        t1 = fd.ops.sum(fd.ops.cast(t0, DataType.Float), dims=[1])
        fd.add_output(t1)
    x = torch.randn(rows, cols).to(torch.float32 if dtype == DataType.Float else torch.bfloat16)
    return fd, [x]


# ---- analysis ---------------------------------------------------------------------------------------

def test_reduction_properties_inner_and_outer():
    fd, xs = inner_sum(8, 96)
    info = SchedulerRuntimeInfo(fd.fusion, xs, H100)
    p = reduction_properties(reduction_tvs(fd.fusion)[0], info)
    assert (p.fastest_dim_reduction, p.total_reduction_numel, p.total_iteration_numel,
            p.inner_most_dimension_numel, p.inner_most_dimension_ndims) == (True, 96, 8, 96, 1)
    fd = load_fusion(SAMPLES / "outer_reduction.py")
    xs = fd.example_inputs()
    info = SchedulerRuntimeInfo(fd.fusion, xs, H100)
    p = reduction_properties(reduction_tvs(fd.fusion)[0], info)
    assert (p.fastest_dim_reduction, p.total_reduction_numel, p.total_iteration_numel,
            p.inner_most_dimension_numel) == (False, 1024, 64, 64)


def test_fastest_dim_follows_the_input_allocation_order():
    # sum over logical dim 1 of an input whose memory order is (1, 0): dim 0 is innermost
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float,
                              stride_order=[0, 1])
        fd.add_output(fd.ops.sum(t0, dims=[1]))
    x = torch.randn(32, 48).t().contiguous().t()
    red = reduction_tvs(fd.fusion)[0]
    info = SchedulerRuntimeInfo(fd.fusion, [x], H100)
    assert not reduction_properties(red, info).fastest_dim_reduction
    assert reduction_type([red]) == "outer"


def test_a_broadcast_row_stored_transposed_does_not_order_the_reduction():
    # [1, N] with stride_order [0, 1] holds one real axis: its allocation orders nothing, so
    # the sum over dim 0 of [M, 1] * [1, N] stays an outer reduction of the row-major product
    with FusionDefinition() as fd:
        row = fd.define_tensor(shape=[1, -1], contiguity=[True, None], dtype=DataType.Float,
                               stride_order=[0, 1])
        col = fd.define_tensor(shape=[-1, 1], contiguity=[True, None], dtype=DataType.Float)
        prod = fd.ops.mul(col, row)
        fd.add_output(prod)
        fd.add_output(fd.ops.sum(prod, dims=[0]))
    xs = [torch.randn(64).as_strided((1, 64), (1, 1)), torch.randn(48).as_strided((48, 1), (1, 0))]
    red = reduction_tvs(fd.fusion)[0]
    info = SchedulerRuntimeInfo(fd.fusion, xs, H100)
    assert not reduction_properties(red, info).fastest_dim_reduction


def test_most_bytes_stored_in_another_order_decide_the_reduction_order():
    # sum(dim 1) of the product of a transposed [M, N] input and a row-major one, the product
    # also an output (row-major): more bytes are stored in the logical order than in the
    # transposed one, so the reduction is the inner (fastest-dim) one of the logical order.
    # Without the row-major output the two orders weigh the same and the transposed input's
    # allocation decides, as alone: dim 0 is innermost and the reduction outer.
    def fusion(product_out: bool) -> FusionDefinition:
        with FusionDefinition() as fd:
            t0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float,
                                  stride_order=[0, 1])
            t1 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
            prod = fd.ops.mul(t0, t1)
            if product_out:
                fd.add_output(prod)
            fd.add_output(fd.ops.sum(prod, dims=[1]))
        return fd

    xs = [torch.randn(48, 32).t(), torch.randn(32, 48)]
    for product_out, fastest in ((True, True), (False, False)):
        fd = fusion(product_out)
        red = reduction_tvs(fd.fusion)[0]
        info = SchedulerRuntimeInfo(fd.fusion, xs, H100)
        assert reduction_properties(red, info).fastest_dim_reduction is fastest


def test_no_persistent_buffers_in_plain_reductions():
    fd, _ = inner_sum()
    assert persistent_buffers(fd.fusion).persistent_buffers == []


# ---- which fusions, and why not ------------------------------------------------------------------------

def test_outer_reduction_sample_goes_to_reduction_with_vectorized_iteration():
    fd = load_fusion(SAMPLES / "outer_reduction.py")
    xs = fd.example_inputs(seed=0)
    v, first = verdicts(fd, xs)
    assert first == SchedulerType.reduction
    assert v["inner_persistent"] == "ReductionType and heuristic doesn't match."
    assert v["outer_persistent"] == "no persistent buffer identified"
    assert v["pointwise"] != "accepted"  # its reason is the pointwise scheduler's to test
    p = schedule(fd, xs, "reduction")
    assert not p.fastest_dim and not p.persistent_kernel
    # bf16, 64 contiguous columns (nvFuser's block outer reduction): warps of 8 columns x 16
    # rows, one block per 8 columns, each reducing all 1024 rows; columns go to blocks
    # before vectors, which only come when the blocks fill the SMs.
    assert p.cross_block_inner_reduction and p.block_dim_inner_reduction == ParallelType.block_y
    assert not p.cross_grid_inner_reduction
    assert (p.lparams.bdimx, p.lparams.bdimy, p.lparams.gdimx, p.lparams.gdimy) == (8, 16, 8, 1)
    assert p.unroll_factor_iter_dom == 1


def test_inner_reduction_params_and_rfactor():
    fd, xs = inner_sum(64, 1024)
    assert verdicts(fd, xs)[1] == SchedulerType.reduction
    p = schedule(fd, xs, "reduction")
    assert p.fastest_dim and p.vectorize_inner_reduction and p.unroll_factor_inner_reduction == 4
    assert p.lparams.bdimx == 256 and p.block_dim_inner_reduction == ParallelType.block_x
    out = fd.fusion.outputs[0]
    red = out.definition.input  # the output's local cache holds the reduction
    assert isinstance(red.definition.input.definition, RFactorReductionOp)
    # after rfactor the reduction itself is only the block (TIDx) part
    assert [i.parallel_type for i in red.domain.loop if i.is_reduction] == [ParallelType.block_x]
    # the input cache loads 16-byte vectors
    cache = fd.fusion.tensors()[len(fd.fusion.inputs)]
    assert cache.domain.loop[-1].parallel_type == ParallelType.vectorize


def test_short_rows_share_a_block():
    fd, xs = inner_sum(256, 32)
    p = schedule(fd, xs, "reduction")
    assert p.multiple_reds_per_blk and p.lparams.bdimy > 1
    assert p.block_dim_iter_dom == ParallelType.block_y


def test_short_outer_reduction_narrows_blocks_to_reach_more_sms():
    """fp32 [32, 4096] summed over its rows (nvFuser's block outer reduction): vectors of 4
    over blocks of 8 columns spread the columns over 128 blocks, none idle for want of
    columns; no grid reduction for 32 rows."""
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
        fd.add_output(fd.ops.sum(t0, dims=[0]))
    p = schedule(fd, [torch.randn(32, 4096)], "reduction")
    lp = p.lparams
    assert (lp.bdimx, lp.gdimx, lp.gdimy) == (8, 128, 1)
    assert not p.cross_grid_inner_reduction and p.unroll_factor_iter_dom == 4
    # A long reduction gets the block's threads over its rows, 1024 in all, one block per
    # SM: a grid reduction would add a pass through global memory for nothing.
    with FusionDefinition() as big:
        t0 = big.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
        big.add_output(big.ops.sum(t0, dims=[0]))
    xs = [torch.empty(32768, 4096, device="meta")]
    q = compute_reduction_heuristics(big.fusion, SchedulerRuntimeInfo(big.fusion, xs, H100))
    assert (q.lparams.bdimx, q.lparams.bdimy, q.lparams.gdimx, q.lparams.gdimy) == (8, 128, 128, 1)
    assert "Little's law" in q.derivation[-1]


def test_full_reduction_is_a_grid_reduction():
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float)
        fd.add_output(fd.ops.sum(t0, dims=[0]))
    xs = [torch.randn(1 << 16)]
    p = schedule(fd, xs, "reduction")
    assert p.cross_grid_inner_reduction and p.grid_dim_inner_reduction == ParallelType.grid_y
    assert p.lparams.gdimy > 1


def test_stream_reduction_sample_three_dims():
    fd = load_fusion(SAMPLES / "seed002_stream_reduction.py")
    xs = fd.example_inputs(seed=1)
    assert verdicts(fd, xs)[1] == SchedulerType.reduction
    p = schedule(fd, xs, "reduction")
    assert p.fastest_dim


def test_refusals_with_nvfusers_reasons():
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1, -1], dtype=DataType.Float)
        fd.add_output(fd.ops.exp(t0))
    v, _ = verdicts(fd, [torch.randn(4, 4)])
    assert v["reduction"] == "No reduction op to schedule"
    assert v["inner_persistent"] == "needs a reduction op"

    # a normalization needs persistence
    fd = load_fusion(SAMPLES / "softmax.py")
    v, _ = verdicts(fd, fd.example_inputs())
    assert v["reduction"] == "need persistent buffers that reduction scheduler doesn't handle"

    # the row sums broadcast again to a tensor that is not the reduced one
    with FusionDefinition() as fd:
        a = fd.define_tensor(shape=[-1, -1], dtype=DataType.Float)
        b = fd.define_tensor(shape=[-1, -1], dtype=DataType.Float)
        s = fd.ops.sum(a, dims=[1])
        fd.add_output(fd.ops.add(fd.ops.broadcast(s, [False, True]), b))
    v, _ = verdicts(fd, [torch.randn(4, 8), torch.randn(4, 8)])
    assert v["reduction"] == "has unsupported post reduction fusion"

    # take_along_axis of a fusion input feeding a reduction: the lookup reads global memory
    # wherever the schedule puts it (nvFuser's hasGatherToBroadcastBeforeReduction: "fusion
    # input does not conflict")
    with FusionDefinition() as fd:
        a = fd.define_tensor(shape=[-1, -1], dtype=DataType.Float)
        i = fd.define_tensor(shape=[-1, -1], dtype=DataType.Int)
        fd.add_output(fd.ops.sum(fd.ops.take_along_axis(a, i, dim=1), dims=[1]))
    v, _ = verdicts(fd, [torch.randn(4, 8), torch.randint(0, 8, (4, 3))])
    assert v["reduction"] == "accepted"

    # a select of an intermediate feeding a reduction (rejectScheduleForMemoryPromotion, which
    # every kernel scheduler applies first)
    with FusionDefinition() as fd:
        a = fd.define_tensor(shape=[-1, -1, -1], dtype=DataType.Float)
        fd.add_output(fd.ops.sum(fd.ops.select(fd.ops.exp(a), 0, dim=1), dims=[1]))
    v, _ = verdicts(fd, [torch.randn(4, 5, 8)])
    assert v["reduction"] == "First input of SelectOp must be fusion input."


def test_cross_entropy_gather_of_an_intermediate_is_refused_by_every_scheduler():
    """take_along_axis reads log_softmax's result, computed in the same fusion: every
    kernel scheduler refuses (nvFuser's rejectScheduleForMemoryPromotion), so the
    segmenter cuts before the gather and its table arrives in global memory."""
    fd = load_fusion(SAMPLES / "cross_entropy.py")
    v, first = verdicts(fd, fd.example_inputs())
    assert first is None
    for kind in ("reduction", "inner_persistent", "outer_persistent",
                 "inner_outer_persistent"):
        assert v[kind] == "First input of GatherOp must be fusion input.", kind


def test_unmapped_reductions_do_not_share_a_schedule():
    # cross_entropy's two reductions without its gather: a row max and a total sum.
    with FusionDefinition() as fd:
        a = fd.define_tensor(shape=[-1, -1], dtype=DataType.Float)
        m = fd.ops.broadcast_in_dim(fd.ops.max(a, dims=[1]), shape=[32, 100], broadcast_dims=[0])
        fd.add_output(fd.ops.sum(fd.ops.sub(a, m), dims=[0, 1]))
    v, first = verdicts(fd, [torch.randn(32, 100)])
    assert first is None
    assert v["reduction"].startswith("Un-mapped multi-reduction: T")
    assert v["inner_persistent"].startswith("unmapped reduction T")
    assert v["outer_persistent"] == "ReductionType and heuristic doesn't match."


# ---- params, determinism, trace -------------------------------------------------------------------------

def test_params_print_like_nvfuser():
    fd = load_fusion(SAMPLES / "outer_reduction.py")
    # 8192 columns: enough blocks of 8 x 8 columns to fill the SMs, so the vector is 8.
    xs = [torch.empty(1024, 8192, dtype=torch.bfloat16, device="meta")]
    info = SchedulerRuntimeInfo(fd.fusion, xs, H100)
    p = compute_reduction_heuristics(fd.fusion, info)
    assert str(p) == (
        "\n===== Reduction Parameters ========\n"
        "Tag: Reduction heuristics\n"
        "Red On Slow Dim\n"
        "Circular buffer: not used\n"
        "\nIteration Domain: blockIdx.x / threadIdx.x / multiple reductions per block / vectorize / factor 8\n"
        "Inner Reduction Domain: cross block - threadIdx.y / \n"
        "Launch Parameters: BlockDim.x = 8, BlockDim.y = 128, BlockDim.z = -1, GridDim.x = 128, "
        "GridDim.y = 1, GridDim.z = -1, Smem Size = 0\n"
        "Compile Parameters: index_type = int\n"
        "====================================\n"
    )


def test_scheduling_is_deterministic_and_traced():
    texts, params = [], []
    for _ in range(2):
        fd = load_fusion(SAMPLES / "outer_reduction.py")
        xs = [torch.randn(64, 8192, generator=torch.Generator().manual_seed(3)).to(torch.bfloat16)]
        t = Trace()
        info = SchedulerRuntimeInfo(fd.fusion, xs, H100)
        registry.can_schedule(fd.fusion, info, t)
        params.append(schedule(fd, xs, "reduction", t))
        texts.append(str(fd.fusion))
        kinds = {e.kind for e in t}
        assert {"can_schedule", "heuristic", "transform"} <= kinds
        assert any("rfactor" in e.message for e in t.of_kind("transform"))
        assert any("vectorized by 8" in e.message for e in t.of_kind("transform"))
    assert texts[0] == texts[1] and params[0] == params[1]
    assert params[0].derivation and "reduction numel 64" in params[0].derivation[0]


@pytest.mark.parametrize("rows, cols", [(3, 5), (1, 300), (130, 7), (17, 4096)])
def test_odd_sizes_keep_results(rows: int, cols: int):
    fd, xs = inner_sum(rows, cols)
    schedule(fd, xs, "reduction")
    with FusionDefinition() as fd2:
        t0 = fd2.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
        fd2.add_output(fd2.ops.max(t0, dims=[0]))
    schedule(fd2, [torch.randn(cols, rows)], "reduction")


# ---- random reductions --------------------------------------------------------------------------------------

@settings(max_examples=25, deadline=None)
@given(rows=st.integers(1, 300), cols=st.integers(1, 300), dim=st.sampled_from([0, 1]),
       op=st.sampled_from(["sum", "max", "min"]), bf16=st.booleans(), transposed=st.booleans())
def test_random_reductions_schedule_verify_and_keep_results(rows, cols, dim, op, bf16, transposed):
    dt = DataType.BFloat16 if bf16 else DataType.Float
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=dt,
                              stride_order=[0, 1] if transposed else [1, 0])
        r = getattr(fd.ops, op)(fd.ops.cast(t0, DataType.Float), dims=[dim])
        fd.add_output(fd.ops.cast(r, dt))
    x = torch.randn(cols, rows).t() if transposed else torch.randn(rows, cols)
    x = x.to(torch.bfloat16 if bf16 else torch.float32)
    v, first = verdicts(fd, [x])
    assert first == SchedulerType.reduction, v
    info = SchedulerRuntimeInfo(fd.fusion, [x], H100)
    p = registry.get("reduction").compute_heuristics(fd.fusion, info)
    # the reduction is on the fastest dimension exactly when the reduced dim is the
    # innermost one of the declared layout (decided from the definition, as nvFuser)
    assert p.fastest_dim == (dim == (0 if transposed else 1))
    before = fd.execute([x])
    registry.get("reduction").schedule(fd.fusion, p)
    verify_fusion(fd.fusion)
    (after,) = fd.execute([x])
    tol = dict(rtol=1.6e-2, atol=1e-2) if bf16 else dict(rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(after.double(), before[0].double(), **tol)
    # vectors never exceed 16 bytes and divide the vectorized extent
    vec = p.unroll_factor_inner_reduction if p.fastest_dim else p.unroll_factor_iter_dom
    assert vec * (2 if bf16 else 4) <= 16


def test_outer_reduction_over_merged_iteration_axes_vectorizes_loads_and_stores():
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1, -1, -1], contiguity=[True, True, True], dtype=DataType.Float)
        fd.add_output(fd.ops.sum(t0, dims=[0]))
    xs = [torch.randn(64, 64, 64)]
    p = schedule(fd, xs, "reduction")
    assert not p.fastest_dim and p.unroll_factor_iter_dom == 4
    cache = fd.fusion.tensors()[1]
    assert cache.definition.input is fd.fusion.inputs[0]
    assert cache.domain.loop[-1].parallel_type == ParallelType.vectorize
    assert fd.fusion.outputs[0].domain.loop[-1].parallel_type == ParallelType.vectorize
    # the loop ids bound to threads keep their parallel types (TIDx over columns, TIDy rows)
    assert [i.parallel_type for i in cache.domain.loop[:3]] == [
        ParallelType.grid_x, ParallelType.block_x, ParallelType.block_y]


@pytest.mark.parametrize("op", ["sum", "prod"])
def test_a_reduction_over_an_empty_axis_writes_its_initial_value(op: str):
    """Found on the GPU (realworld empty_tensor_reshape_sum): the write-back was bounded by the
    reduced axis (index 0 < extent 0: false), so the output kept whatever its memory held.
    Such a reduction is now a full of its initial value at the compiled sizes
    (engine.concretize.remove_empty): a pointwise kernel that reads nothing."""
    from engine.compile import compile_fusion

    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
        fd.add_output(getattr(fd.ops, op)(t0, dims=[0]))
    xs = [torch.randn(0, 5)]
    cf = compile_fusion(fd, xs)
    assert [(s.scheduler, s.input_vals) for s in cf.segments] == [("pointwise", [])]
    out = cf.run(xs, backend="emulate")[0]
    expected = {"sum": 0.0, "prod": 1.0}[op]
    assert torch.equal(out, torch.full((5,), expected))


def test_a_part_that_shares_no_tensor_with_the_reference_is_scheduled_like_it():
    """Two column sums of unrelated inputs in one segment (the segmenter merges reductions
    of one signature whose common producer lies in another segment: the weight grads of
    layer_norm_bwd_3d_reshape_weight_grads). Propagation from the reference never reached
    the second: it ran unscheduled, each thread reducing all rows serially, and at 4097
    columns its local buffer failed to lower. It is now scheduled from its own reduction
    with the reference's parameters."""

    from engine import compile_fusion
    from engine.reference import evaluate

    with FusionDefinition() as fd:
        a = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Int32)
        b = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Int32)
        fd.add_output(fd.ops.sum(a, dims=[0]))
        fd.add_output(fd.ops.sum(b, dims=[0]))
    g = torch.Generator().manual_seed(0)
    xs = [torch.randint(-100, 100, (64, 4097), generator=g, dtype=torch.int32) for _ in range(2)]
    cf = compile_fusion(fd, xs)
    assert [s.scheduler for s in cf.segments] == ["reduction"]
    scheduled = cf.segments[0].scheduled_ir
    for out in fd.fusion.outputs:
        line = next(x for x in scheduled.splitlines() if x.startswith(out.short_name + "_g"))
        assert "threadIdx.x" in line and "blockIdx.x" in line
    require_gxx()
    for o, r in zip(cf.run(xs, backend="emulate"), evaluate(fd.fusion, xs), strict=True):
        assert torch.equal(o, r)


def test_an_input_without_the_inner_dim_is_not_vectorized_along_another_axis():
    """max(x - w) over every axis of x [N, C, H] with a [C] w (reductions_min_prod_mean_keepdim
    at H=4096): the schedule merges all axes and vectorizes along H. w lacks N and H, so the
    replay put the vector split on C: its cache, vectorized, ran a vector of C elements past
    its compute-at position in loops sized by x, and the lowering refused it ('axis ... cannot
    be indexed from the loop nest'; one more kernel). Only inputs with the reference's inner
    dim are vectorized, as nvFuser's getInputsOutputsWithInnerDim."""

    from engine import compile_fusion
    from engine.reference import evaluate

    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1, -1], contiguity=[True, True, True], dtype=DataType.Half)
        w = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float)
        xf = fd.ops.cast(x, DataType.Float)
        wb = fd.ops.broadcast_in_dim(w, shape=fd.ops.shape(xf), broadcast_dims=[1])
        fd.add_output(fd.ops.max(fd.ops.sub(xf, wb), dims=[0, 1, 2], keepdim=False))
    g = torch.Generator().manual_seed(0)
    xs = [torch.randn(4, 6, 4096, generator=g).half(), torch.randn(6, generator=g)]
    cf = compile_fusion(fd, xs)
    assert [s.scheduler for s in cf.segments] == ["reduction"]
    assert not any("refused" in e.message for e in cf.trace.events)
    lines = cf.segments[0].scheduled_ir.splitlines()
    # Each cache's line, then its definition "   = Set( T<input>_g...": the input read.
    vectorized = {d.split("Set( ")[1].split("_")[0] for c, d in zip(lines, lines[1:])
                  if d.startswith("   = Set( T") and "iV" in c}
    assert vectorized == {fd.fusion.inputs[0].short_name}  # x's cache, not w's
    require_gxx()
    assert torch.equal(cf.run(xs, backend="emulate")[0], evaluate(fd.fusion, xs)[0])


def test_a_part_met_only_in_a_0_dim_tensor_is_scheduled_like_the_reference():
    """A cross entropy's loss sum divided by its count of valid tokens: two full reductions
    of tensors made by another kernel, joined only by the 0-dim division. Propagation does
    not cross a tensor with no axes: the count ran unscheduled, every thread adding all the
    tokens serially (0.5 ms at 8192 tokens, for 8 KB of data)."""

    from engine import compile_fusion
    from engine.reference import evaluate

    with FusionDefinition() as fd:
        a = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float)
        m = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Int)
        count = fd.ops.cast(fd.ops.sum(m, dims=[0]), dtype=DataType.Float)
        fd.add_output(fd.ops.div(fd.ops.sum(a, dims=[0]), count))
    g = torch.Generator().manual_seed(0)
    xs = [torch.randn(8192, generator=g), torch.randint(0, 2, (8192,), generator=g)]
    cf = compile_fusion(fd, xs)
    assert [s.scheduler for s in cf.segments] == ["reduction"]
    scheduled = cf.segments[0].scheduled_ir.splitlines()
    # Both sums end in a block reduction over threadIdx.x (the count no longer serially).
    finals = [x for x in scheduled if x.startswith("T") and "[rthreadIdx.x" in x]
    assert len(finals) == 2, finals
    require_gxx()
    for o, r in zip(cf.run(xs, backend="emulate"), evaluate(fd.fusion, xs), strict=True):
        torch.testing.assert_close(o, r)


def test_a_welford_grid_reduction_leaves_the_last_block_few_partials_a_thread() -> None:
    """var_mean over the rows of [8192, 128] floats on an H200 is a grid reduction; a Welford
    one takes blocks of 256 threads, at most a warp of them along the columns, with at most
    WELFORD_PARTIALS_PER_THREAD partials for each of the last block's threads of a column
    (its combine is serial), and the emulated kernel computes what the reference does."""
    require_gxx()
    from engine import compile_fusion
    from engine.config import Options
    from engine.reference import evaluate
    from engine.schedule.reduction_outer import WELFORD_PARTIALS_PER_THREAD

    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1], contiguity=True, dtype=DataType.Float)
        var, mean = fd.ops.var_mean(x, dims=[0], correction=0, keepdim=False)
        fd.add_output(var)
        fd.add_output(mean)
    xs = [torch.randn(8192, 128, generator=torch.Generator().manual_seed(0))]
    cf = compile_fusion(fd, xs, Options(device_model="H200"))
    (seg,) = cf.segments
    lp = seg.params.lparams
    assert seg.scheduler == "reduction" and seg.params.cross_grid_inner_reduction
    assert lp.bdimx * lp.bdimy == 256 and lp.bdimx <= 32 and lp.bdimy >= 8
    assert 1 < lp.gdimy <= WELFORD_PARTIALS_PER_THREAD * lp.bdimy
    assert any("for a Welford" in line for line in seg.params.derivation)
    for got, want in zip(cf.run(xs, backend="emulate"), evaluate(fd.fusion, xs)):
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
