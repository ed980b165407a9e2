"""Property: any pointwise fusion the pointwise scheduler accepts, at any sizes, strides
and dtypes, schedules into a fusion that verifies and computes what it computed before;
the chosen vector divides every vectorized tensor's contiguous inner extent."""

import math

import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine import DataType, FusionDefinition, ParallelType
from engine.ir.verify import verify_fusion
from engine.schedule import SchedulerType, registry, schedule_fusion
from engine.schedule.runtime_info import SchedulerRuntimeInfo

SIZES = [1, 3, 8, 64, 384, 1024]
DTYPES = {DataType.Float: torch.float32, DataType.BFloat16: torch.bfloat16, DataType.Half: torch.float16}


def build(kind: int, dtype: DataType, transposed: bool):
    with FusionDefinition() as fd:
        a = fd.define_tensor(shape=[-1, -1], dtype=dtype)
        if kind == 0:  # elementwise with a second full input, maybe transposed in memory
            b = fd.define_tensor(shape=[-1, -1], dtype=dtype, stride_order=[0, 1] if transposed else None)
            out = fd.ops.mul(fd.ops.add(a, b), a)
        elif kind == 1:  # row bias (broadcast along rows)
            b = fd.define_tensor(shape=[-1], dtype=dtype)
            out = fd.ops.add(a, fd.ops.broadcast(b, [True, False]))
        else:  # column scale (broadcast along columns), then a cast round trip
            b = fd.define_tensor(shape=[-1], dtype=dtype)
            c = fd.ops.mul(fd.ops.cast(a, DataType.Float), fd.ops.cast(fd.ops.broadcast(b, [False, True]), DataType.Float))
            out = fd.ops.cast(fd.ops.exp(c), dtype)
        fd.add_output(out)
        if kind == 2:
            fd.add_output(fd.ops.neg(a))  # a second output of the input's shape
    return fd


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(kind=st.integers(0, 2), m=st.sampled_from(SIZES), n=st.sampled_from(SIZES),
       dtype=st.sampled_from(sorted(DTYPES, key=str)), transposed=st.booleans(),
       offset=st.sampled_from([0, 0, 1]), seed=st.integers(0, 3))
def test_pointwise_schedules_verify_and_keep_results(kind, m, n, dtype, transposed, offset, seed):
    fd = build(kind, dtype, transposed)
    g = torch.Generator().manual_seed(seed)
    tdt = DTYPES[dtype]
    storage = torch.randn(m * n + offset, generator=g).to(tdt)
    a = storage[offset:].view(m, n)  # offset 1: misaligned
    if kind == 0:
        b = torch.randn(n, m, generator=g).to(tdt).t() if transposed else torch.randn(m, n, generator=g).to(tdt)
    elif kind == 1:
        b = torch.randn(n, generator=g).to(tdt)
    else:
        b = torch.randn(m, generator=g).to(tdt)
    xs = [a, b]
    info = SchedulerRuntimeInfo(fd.fusion, xs)
    vs, first = registry.can_schedule(fd.fusion, info)
    pw = next(v for v in vs if v.scheduler == SchedulerType.pointwise)
    assert pw.accepted, pw.reason
    before = fd.execute(xs)
    kind_, p = schedule_fusion(fd.fusion, xs, force="pointwise")
    verify_fusion(fd.fusion)
    after = fd.execute(xs)
    assert all(torch.equal(x, y) for x, y in zip(before, after))
    v = p.vectorization_factor
    assert v & (v - 1) == 0 and v * tdt.itemsize <= 16
    if offset and v > 1:
        raise AssertionError("a misaligned input must not be vectorized")
    if v > 1:
        # The vector divides the vectorized extent of the reference (right of the break point).
        right = math.prod([m, n][p.break_point:])
        assert right % v == 0
        out = fd.fusion.outputs[0]
        assert out.axis(-1).parallel_type == ParallelType.vectorize
