"""Gather-like ops before a reduction: a lookup into a fusion input is scheduled with the
reduction (an embedding row read at its index, then normalized: one kernel), as nvFuser's
hasGatherToBroadcastBeforeReduction lets it ("fusion input does not conflict"); a lookup into
an intermediate is refused by every kernel scheduler (rejectScheduleForMemoryPromotion)."""

import torch

from engine import DataType, FusionDefinition, compile_fusion
from engine.analysis.coverage import looked_up_axes
from engine.reference import evaluate
from engine.schedule.global_memory import memory_promotion_reason


def _embedding_rms_norm(lookup_of_intermediate: bool) -> FusionDefinition:
    with FusionDefinition() as fd:
        ids = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Int)
        table = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.BFloat16)
        w = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.BFloat16)
        src = fd.ops.mul(table, table) if lookup_of_intermediate else table
        rows = fd.ops.index_select(src, ids, dim=0)
        x = fd.ops.cast(rows, dtype=DataType.Float)
        ms = fd.ops.sum(fd.ops.mul(x, x), dims=[1], keepdim=True)
        h = fd.ops.mul(x, fd.ops.rsqrt(fd.ops.add(fd.ops.div(ms, 96.0), 1e-5)))
        y = fd.ops.mul(h, fd.ops.broadcast_in_dim(fd.ops.cast(w, dtype=DataType.Float), shape=[5, 96],
                                                 broadcast_dims=[1]))
        fd.add_output(rows)
        fd.add_output(fd.ops.cast(y, dtype=DataType.BFloat16))
    return fd


def _inputs():
    g = torch.Generator().manual_seed(0)
    return [torch.randint(0, 40, (5,), generator=g), torch.randn(40, 96, generator=g).bfloat16(),
            torch.randn(96, generator=g).bfloat16()]


def test_an_embedding_lookup_is_normalized_in_the_same_kernel():
    fd = _embedding_rms_norm(lookup_of_intermediate=False)
    xs = _inputs()
    cf = compile_fusion(fd, xs)
    assert [s.scheduler for s in cf.segments if s.is_kernel] == ["inner_persistent"]
    for out, ref in zip(cf.run(xs, backend="emulate"), evaluate(fd.fusion, xs), strict=True):
        torch.testing.assert_close(out.float(), ref.float(), rtol=1e-2, atol=1e-2)


def test_the_table_axis_a_lookup_indexes_needs_no_thread():
    fd = _embedding_rms_norm(lookup_of_intermediate=False)
    table = fd.fusion.inputs[1]
    assert looked_up_axes(fd.fusion) == {table.domain.logical[0]}


def test_a_lookup_into_an_intermediate_keeps_the_reduction_schedulers_away():
    fd = _embedding_rms_norm(lookup_of_intermediate=True)
    assert memory_promotion_reason(fd.fusion) == "First input of IndexSelectOp must be fusion input."
    xs = _inputs()
    cf = compile_fusion(fd, xs)
    assert len([s for s in cf.segments if s.is_kernel]) > 1
    for out, ref in zip(cf.run(xs, backend="emulate"), evaluate(fd.fusion, xs), strict=True):
        torch.testing.assert_close(out.float(), ref.float(), rtol=1e-2, atol=1e-2)
