"""expr_eval (ATen-evaluated segments and pure aliases), no_op and matmul verdicts."""

from pathlib import Path

import torch

from engine import DataType, FusionDefinition, load_fusion
from engine.schedule import SchedulerType, registry, schedule_fusion
from engine.schedule.runtime_info import SchedulerRuntimeInfo
from engine.trace import Trace

SAMPLES = Path(__file__).resolve().parents[2] / "sample_fusions"


def verdicts(fusion, xs=None):
    info = SchedulerRuntimeInfo(fusion, xs) if xs is not None else None
    vs, first = registry.can_schedule(fusion, info)
    return {v.scheduler: v for v in vs}, first


def test_matmul_sample_goes_to_expr_eval_and_matmul_delegates():
    fd = load_fusion(SAMPLES / "seed002_stream_matmul_m.py")
    xs = fd.example_inputs(seed=0)
    vs, first = verdicts(fd.fusion, xs)
    assert first == SchedulerType.expr_eval
    assert str(vs[SchedulerType.matmul]) == (
        "Scheduler _matmul_ ***rejected*** because : "
        "matmul ops are evaluated by the expr_eval scheduler in this engine")
    assert vs[SchedulerType.pointwise].reason.startswith("Has unsupported ops: MatmulOp")
    before = str(fd.fusion)
    trace = Trace()
    kind, params = schedule_fusion(fd.fusion, xs, trace)
    # No heuristics and no transforms: the matmul runs through torch.
    assert kind == SchedulerType.expr_eval and params is None
    assert str(fd.fusion) == before
    assert any(e.kind == "schedule" and e.data["scheduler"] == "expr_eval" for e in trace)


def test_linear_with_bias_is_one_aten_expression():
    with FusionDefinition() as fd:
        a = fd.define_tensor(shape=[-1, -1], dtype=DataType.BFloat16)
        b = fd.define_tensor(shape=[-1, -1], dtype=DataType.BFloat16)
        c = fd.define_tensor(shape=[-1], dtype=DataType.BFloat16)
        fd.add_output(fd.ops.linear(a, b, c))
    _, first = verdicts(fd.fusion)
    assert first == SchedulerType.expr_eval


def test_matmul_with_an_epilogue_is_not_a_single_expression():
    with FusionDefinition() as fd:
        a = fd.define_tensor(shape=[-1, -1], dtype=DataType.Float)
        b = fd.define_tensor(shape=[-1, -1], dtype=DataType.Float)
        fd.add_output(fd.ops.relu(fd.ops.matmul(a, b)))
    vs, first = verdicts(fd.fusion)
    assert vs[SchedulerType.expr_eval].reason == "Fusion must contain only a single expression."
    assert vs[SchedulerType.matmul].reason == (
        "matmul ops are evaluated by the expr_eval scheduler in this engine")
    assert first is None


def test_single_pointwise_expression_is_not_aten_evaluated():
    with FusionDefinition() as fd:
        a = fd.define_tensor(shape=[-1], dtype=DataType.Float)
        fd.add_output(fd.ops.neg(a))
    vs, first = verdicts(fd.fusion)
    assert vs[SchedulerType.expr_eval].reason == (
        "Fusion must contain only a single expression of type "
        "MatmulOp/LinearOp/SdpaFwdOp/SdpaBwdOp")
    assert first == SchedulerType.pointwise


def test_pure_aliases_of_inputs_are_expr_eval():
    with FusionDefinition() as fd:
        a = fd.define_tensor(shape=[4, 6, 8], dtype=DataType.Float)
        p = fd.ops.permute(a, [2, 0, 1])
        fd.add_output(p)
        r = fd.ops.reshape(a, [24, 8])
        fd.add_output(fd.ops.broadcast(r, [True, False, False]))
    vs, first = verdicts(fd.fusion)
    assert first == SchedulerType.expr_eval
    x = torch.randn(4, 6, 8)
    kind, params = schedule_fusion(fd.fusion, [x])
    assert kind == SchedulerType.expr_eval and params is None


def test_reshape_of_a_non_contiguous_input_is_a_copy_not_an_alias():
    with FusionDefinition() as fd:
        a = fd.define_tensor(shape=[4, 6], contiguity=[False, True], dtype=DataType.Float)
        fd.add_output(fd.ops.reshape(a, [24]))
    vs, _ = verdicts(fd.fusion)
    assert not vs[SchedulerType.expr_eval].accepted


def test_alias_with_compute_is_not_expr_eval():
    with FusionDefinition() as fd:
        a = fd.define_tensor(shape=[4, 6], dtype=DataType.Float)
        fd.add_output(fd.ops.permute(a, [1, 0]))
        fd.add_output(fd.ops.exp(a))
    vs, _ = verdicts(fd.fusion)
    assert vs[SchedulerType.expr_eval].reason == "Fusion must contain only a single expression."


def test_no_op_takes_empty_and_broadcast_only_outputs():
    with FusionDefinition() as fd:
        a = fd.define_tensor(shape=[0, 4], dtype=DataType.Float)
        fd.add_output(fd.ops.exp(a))
    vs, first = verdicts(fd.fusion)
    assert vs[SchedulerType.no_op].accepted
    assert first == SchedulerType.no_op
    with FusionDefinition() as fd:
        a = fd.define_tensor(shape=[1, 1], dtype=DataType.Float)  # static 1: broadcast axes
        fd.add_output(fd.ops.exp(a))
    vs, _ = verdicts(fd.fusion)
    assert vs[SchedulerType.no_op].accepted


def test_no_op_refuses_reductions_and_concrete_outputs():
    fd = load_fusion(SAMPLES / "softmax.py")
    vs, _ = verdicts(fd.fusion)
    assert vs[SchedulerType.no_op].reason == "reduction of non-zero elements is not supported"
    with FusionDefinition() as fd:
        a = fd.define_tensor(shape=[-1], dtype=DataType.Float)
        fd.add_output(fd.ops.exp(a))
    vs, _ = verdicts(fd.fusion)
    assert vs[SchedulerType.no_op].reason == "output has a concrete dimension"
