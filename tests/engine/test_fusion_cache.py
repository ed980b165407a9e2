"""The fusion cache (engine.fusion_cache): a definition compiled before, for inputs of the same
signature and with the same options, reuses the first compile; anything that changes the
kernels compiles again."""

from __future__ import annotations

import torch

from engine import DataType, FusionDefinition
from engine.compile import compile_fusion
from engine.config import Options


def _define(scale: float = 2.0, contiguity: tuple[bool, bool] = (True, True)) -> FusionDefinition:
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1], contiguity=list(contiguity), dtype=DataType.Float)
        s = fd.define_scalar(dtype=DataType.Double)
        y = fd.ops.mul(fd.ops.add(x, s), scale)
        fd.add_output(fd.ops.sum(y, dims=[1]))
    return fd


def test_the_same_definition_again_reuses_the_first_compile():
    xs = [torch.randn(16, 32), 1.5]
    first = compile_fusion(_define(), xs)
    first.run(xs, backend="reference")
    again = compile_fusion(_define(), xs)  # a new FusionDefinition with the same calls
    assert again is not first and again.segments is first.segments
    assert again.last_run is None and again.trace is first.trace
    torch.testing.assert_close(again.run(xs, backend="reference")[0], (xs[0] + 1.5).mul(2.0).sum(1))


def test_what_changes_the_kernels_compiles_again():
    xs = [torch.randn(16, 32), 1.5]
    first = compile_fusion(_define(), xs)
    others = [
        compile_fusion(_define(), [torch.randn(16, 64), 1.5]),  # sizes
        compile_fusion(_define(), [xs[0], 2.5]),  # a scalar's value
        compile_fusion(_define(3.0), xs),  # the definition
        compile_fusion(_define(), xs, Options(forwarding=False)),  # options
    ]
    assert all(o.segments is not first.segments for o in others)
    # Strides: rows 32 or 64 elements apart, both allowed by a non-contiguous outer axis.
    loose = compile_fusion(_define(contiguity=(False, True)), xs)
    sliced = compile_fusion(_define(contiguity=(False, True)), [torch.randn(16, 64)[:, :32], 1.5])
    assert sliced.segments is not loose.segments


def test_a_schedule_outside_the_recorded_calls_is_part_of_the_key():
    xs = [torch.randn(16, 32), 1.5]
    first = compile_fusion(_define(), xs)
    fd = _define()
    out = fd.fusion.outputs[0]
    out.definition.inputs[0].split(1, 8)  # not through fd.sched: only the IR listing shows it
    assert compile_fusion(fd, xs).segments is not first.segments


def test_a_bare_fusion_is_not_cached():
    xs = [torch.randn(16, 32), 1.5]
    fd = _define()
    assert compile_fusion(fd.fusion, xs).segments is not compile_fusion(fd.fusion, xs).segments
