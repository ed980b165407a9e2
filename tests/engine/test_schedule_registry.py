import torch

from engine import DataType, FusionDefinition
from engine.schedule.base import PRIORITY, SchedulerType, Verdict
from engine.schedule.runtime_info import SchedulerRuntimeInfo


def test_priority_order_and_names_follow_nvfuser():
    assert [str(t) for t in PRIORITY] == [
        "expr_eval", "no_op", "matmul", "reduction", "resize", "transpose", "pointwise",
        "inner_persistent", "outer_persistent", "inner_outer_persistent",
    ]


def test_verdict_prints_like_nvfuser():
    v = Verdict(SchedulerType.pointwise, False, "no support for reduction ops")
    assert str(v) == "Scheduler _pointwise_ ***rejected*** because : no support for reduction ops"


def test_runtime_info_binds_sizes_alignment_and_index_type():
    with FusionDefinition() as fd:
        a = fd.define_tensor(shape=[-1, -1], dtype=DataType.BFloat16)
        b = fd.ops.sum(fd.ops.cast(a, DataType.Float), [1])
        fd.add_output(b)
    x = torch.randn(6, 10).to(torch.bfloat16)
    info = SchedulerRuntimeInfo(fd.fusion, [x])
    assert info.sizes(b) == [6] and info.sizes(a) == [6, 10] and info.numel(a) == 60
    assert info.strides(a) == [10, 1] and info.strides(b) is None
    assert info.alignment(a) == 16
    offset = x.view(-1)[1:].view(-1)  # 2 bytes past an aligned start
    with FusionDefinition() as fd2:
        c = fd2.define_tensor(shape=[-1], dtype=DataType.BFloat16)
        fd2.add_output(fd2.ops.neg(c))
    assert SchedulerRuntimeInfo(fd2.fusion, [offset]).alignment(c) == 2
    assert info.index_type() == DataType.Int32
