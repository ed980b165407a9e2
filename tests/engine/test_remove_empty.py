"""Work on empty tensors removed at the compiled sizes (engine.concretize.remove_empty, as
nvFuser's RemoveEmptyPass): a reduction over an axis with no elements is a `full` of its
initial value, an output with no elements a `full` that reads nothing, and the run plan
rebuilds empty outputs without computing them (engine.host.alias_replay)."""

from __future__ import annotations

import math

import pytest
import torch

from engine import DataType, FusionDefinition, load_fusion
from engine.compile import compile_fusion
from engine.ir.exprs import FullOp
from engine.ir.tensorview import TensorView
from engine.reference import evaluate

SCRIPT = "tests/realworld/scripts/empty_bf16_full_sums_dead_code.py"


def _no_input_read(cf) -> bool:
    return not any(isinstance(v, TensorView) for s in cf.segments for v in s.input_vals)


def test_empty_sums_read_nothing_and_launch_one_pointwise_kernel():
    fd = load_fusion(SCRIPT)
    xs = fd.example_inputs(seed=0)
    cf = compile_fusion(fd, xs)
    # The sum over the empty axis is five zeros written by one pointwise kernel; the empty
    # sum is a no-op segment; neither reads an (empty) input.
    assert [s.scheduler for s in cf.segments] == ["pointwise", "no_op"]
    assert _no_input_read(cf)
    kernel = cf.segments[0].cuda_source.split("nvfuser_pointwise")[-1]
    assert "for (" not in kernel and "Tensor<__bfloat" not in kernel  # no loop, no input
    events = [e.message for e in cf.trace.events if e.kind == "concretize"]
    assert any("reduction over an axis with no elements" in m for m in events)
    for o, r in zip(cf.run(xs, backend="emulate"), evaluate(fd.fusion, xs)):
        assert o.shape == r.shape and torch.equal(o, r)


def test_empty_outputs_are_rebuilt_not_computed(monkeypatch):
    from engine.host import plan as plan_module

    fd = load_fusion(SCRIPT)
    xs = fd.example_inputs(seed=0)
    cf = compile_fusion(fd, xs)
    cf.run(xs, backend="emulate")
    units = [s for s in cf._plans["emulate"].steps if hasattr(s, "replay")]
    assert units and all(s.replay is not None for s in units)
    monkeypatch.setattr(plan_module._Replayable, "compute", lambda *a: pytest.fail("an empty output was computed"))
    out = cf.run(xs, backend="emulate")
    assert out[1].shape == (0,) and out[1].dtype == torch.float32


@pytest.mark.parametrize("op,init", [("sum", 0.0), ("max", -math.inf), ("min", math.inf), ("prod", 1.0)])
def test_reduction_over_an_empty_axis_is_its_initial_value(op, init):
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1, -1], dtype=DataType.Float)
        t1 = getattr(fd.ops, op)(t0, [1])
        fd.add_output(fd.ops.add(t1, fd.define_scalar(1.0)))
    x = torch.randn(7, 0)
    cf = compile_fusion(fd, [x])
    assert _no_input_read(cf)
    assert any(isinstance(e, FullOp) for e in cf.fusion.exprs())
    assert [s.scheduler for s in cf.segments] == ["pointwise"]
    (out,) = cf.run([x], backend="emulate")
    assert torch.equal(out, torch.full((7,), init + 1.0))


def test_welford_over_an_empty_axis():
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1, -1], dtype=DataType.Float)
        var, mean = fd.ops.var_mean(t0, [0], correction=0)
        fd.add_output(var)
        fd.add_output(mean)
    x = torch.randn(0, 6)
    cf = compile_fusion(fd, [x])
    assert _no_input_read(cf)
    for o, r in zip(cf.run([x], backend="emulate"), evaluate(fd.fusion, [x])):
        torch.testing.assert_close(o, r, equal_nan=True)


def test_non_empty_sizes_keep_the_reduction():
    with FusionDefinition() as g:
        t0 = g.define_tensor(shape=[-1, -1], dtype=DataType.Float)
        g.add_output(g.ops.sum(t0, [1]))
    x = torch.randn(5, 3)
    cf = compile_fusion(g, [x])
    assert [s.scheduler for s in cf.segments] == ["reduction"]
    assert not any(e.kind == "concretize" for e in cf.trace.events)
