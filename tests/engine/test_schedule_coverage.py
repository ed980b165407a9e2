"""Reduction-based schedules reach every axis of their fusion, or refuse it.

A schedule propagated from a reference reduction gives no thread to an axis that no
logical map ties to the reference's: each thread ran such an axis whole, from a local
buffer as long as the axis (cross entropy's count of valid tokens broadcast over the
vocabulary: 12.8 KB of local memory per thread at a vocabulary of 1600; a [10, H] weight
scaling beside an RMSNorm backward: every thread of the combined kernel wrote all of it).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import torch

from engine import DataType, FusionDefinition, load_fusion
from engine.analysis.coverage import uncovered_axis
from engine.analysis.persistent import reduction_tvs
from engine.compile import compile_fusion
from engine.reference import evaluate
from engine.schedule import registry
from engine.schedule.base import SchedulerType
from tests.emulation import needs_gxx

SCRIPTS = Path(__file__).parents[1] / "realworld" / "scripts"
_ARRAY = re.compile(r"^\s*alignas\(\d+\) [\w:<>, ]+ \w+\[(\d+)\];", re.M)


def _largest_local_array(cuda: str) -> int:
    return max((int(n) for n in _ARRAY.findall(cuda[cuda.index('extern "C"'):])), default=0)


def _count_scaled_rows(rows: int, cols: int) -> tuple[FusionDefinition, list[torch.Tensor]]:
    """Cross entropy's gradient scaling: a row mask summed over all rows (the count of valid
    tokens), then [rows, cols] values divided by it where the mask is set. The mask is read
    before the sum and after it: a persistent buffer of a 1-D inner reduction."""
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
        m = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Bool)
        mf = fd.ops.cast(m, dtype=DataType.Float)
        n = fd.ops.sum(mf, dims=[0])
        scaled = fd.ops.div(x, fd.ops.broadcast_in_dim(n, shape=[rows, cols], broadcast_dims=[]))
        keep = fd.ops.broadcast_in_dim(m, shape=[rows, cols], broadcast_dims=[0])
        fd.add_output(fd.ops.where(keep, scaled, 0.0))
    return fd, [torch.randn(rows, cols), torch.rand(rows) < 0.8]


def test_a_reduction_broadcast_along_a_new_axis_leaves_it_uncovered():
    fd, _ = _count_scaled_rows(16, 100)
    (count,) = reduction_tvs(fd.fusion)
    found = uncovered_axis(fd.fusion, [count])
    assert found is not None
    tv, axis = found
    assert len(tv.domain.logical) == 2 and axis is tv.domain.logical[1]  # the column axis
    x = fd.fusion.inputs[0]
    assert uncovered_axis(fd.fusion, [x]) is None  # the [rows, cols] input reaches every axis


@pytest.mark.parametrize("kind", [SchedulerType.inner_persistent, SchedulerType.reduction])
def test_schedulers_refuse_what_their_reference_does_not_reach(kind):
    fd, _ = _count_scaled_rows(16, 100)
    reason = registry.compile_time_reason(kind, fd.fusion)
    assert reason is not None
    if kind == SchedulerType.inner_persistent:
        assert "maps to no axis of the reference" in reason, reason


@needs_gxx
def test_the_count_is_a_kernel_of_its_own_and_the_columns_are_split_over_threads():
    fd, xs = _count_scaled_rows(16, 100)
    cf = compile_fusion(fd, xs)
    assert [s.scheduler for s in cf.segments] == ["reduction", "pointwise"]
    for s in cf.segments:
        assert _largest_local_array(s.cuda_source) < 100, s.cuda_source
    torch.testing.assert_close(cf.run(xs, backend="emulate")[0], evaluate(fd.fusion, xs)[0])


@needs_gxx
def test_cross_entropy_backward_counts_valid_tokens_in_a_kernel_of_its_own():
    fd = load_fusion(SCRIPTS / "cross_entropy_bwd_onehot.py")
    xs = fd.example_inputs(device="cpu", seed=0)
    cf = compile_fusion(fd, xs)
    assert [s.scheduler for s in cf.segments] == ["reduction", "inner_persistent"]
    for s in cf.segments:  # the vocabulary (100) is split over threads, never a local array
        assert _largest_local_array(s.cuda_source) < 100, s.cuda_source
    for o, r in zip(cf.run(xs, backend="emulate"), evaluate(fd.fusion, xs)):
        torch.testing.assert_close(o.float(), r.float(), rtol=1e-2, atol=1e-2)


def test_parts_sharing_no_tensor_are_segments_of_their_own():
    fd = load_fusion(SCRIPTS / "llama2_rms_norm_bwd_scalar_inputs.py")
    cf = compile_fusion(fd, fd.example_inputs(device="cpu", seed=0))
    assert [s.scheduler for s in cf.segments] == ["pointwise", "inner_outer_persistent"]
    norm = cf.segments[1]
    assert "one segment each" in "\n".join(str(e) for e in cf.trace.events)
    # The [10, H] scaling is no longer a serial loop of every thread of the combined kernel.
    assert "< 10; ++" not in norm.cuda_source


def test_a_pointwise_output_sharing_no_tensor_with_the_reference_is_a_kernel_of_its_own():
    """A random tensor made from no input beside an unrelated pointwise output: every thread
    of the one kernel wrote all of it in a serial loop."""
    fd = load_fusion(SCRIPTS / "normal_randn_like_seeded.py")
    cf = compile_fusion(fd, fd.example_inputs(device="cpu", seed=0))
    assert [s.scheduler for s in cf.segments] == ["pointwise", "pointwise"]
    for s in cf.segments:
        body = s.cuda_source[s.cuda_source.rfind('extern "C"'):]
        assert "for (" not in body, body
