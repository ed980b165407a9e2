"""Per-head normalizations (Qwen3's q/k RMSNorm over head_dim before the rotary embedding):
the reduction scheduler takes a reduction's broadcast left unresolved (nvFuser's
hasPostReductionBCast), reductions of one pattern but different sizes never share a kernel
(nvFuser's un-mapped multi-reduction), a split-only reshape of an input read by a
reduction is kept apart while merging (then joins the persistent kernel that reads it), and
the boundary narrowing moves plain copies (broadcast_in_dim of a broadcast tensor) with the
ops they feed."""

import pytest
import torch

from engine import DataType, FusionDefinition
from engine.analysis.persistent import reduction_tvs
from engine.compile import compile_fusion
from engine.reference import evaluate
from engine.schedule import registry
from engine.schedule.base import SchedulerType
from engine.schedule.reduction_checks import unequal_reductions
from engine.schedule.runtime_info import SchedulerRuntimeInfo
from tests.emulation import needs_gxx

S, HQ, HK, D = 8, 4, 2, 16


def _rms_rsqrt(fd, x, y):
    """rsqrt(mean(x * x) + eps) as [32, 1]; added to y [32, D] when y is given."""
    xf = fd.ops.cast(x, DataType.Float)
    ss = fd.ops.sum(fd.ops.mul(xf, xf), dims=[1])
    r = fd.ops.rsqrt(fd.ops.add(fd.ops.div(ss, fd.define_scalar(float(D))), fd.define_scalar(1e-6)))
    b = fd.ops.broadcast_in_dim(r, shape=[32, 1], broadcast_dims=[0])
    fd.add_output(b if y is None else fd.ops.add(y, b))


def _verdict(fd, xs, kind):
    return registry.verdict(kind, fd.fusion, SchedulerRuntimeInfo(fd.fusion, xs))


def test_the_reduction_scheduler_takes_a_broadcast_left_unresolved_only():
    for resolve in (False, True):
        with FusionDefinition() as fd:
            x = fd.define_tensor(shape=[32, D], contiguity=[True, True], dtype=DataType.BFloat16)
            y = fd.define_tensor(shape=[32, D], contiguity=[True, True], dtype=DataType.Float) if resolve else None
            _rms_rsqrt(fd, x, y)
        xs = [torch.randn(32, D).bfloat16()] + ([torch.randn(32, D)] if resolve else [])
        v = _verdict(fd, xs, SchedulerType.reduction)
        assert v.accepted is not resolve
        if resolve:
            assert v.reason == "has unsupported post reduction fusion"


def _head_norm(fd, x, w, heads):
    """RMSNorm over D of [1, S, heads * D] seen as [1, S, heads, D], scaled by w [D]."""
    v = fd.ops.reshape(x, [1, S, heads, D])
    xf = fd.ops.cast(v, DataType.Float)
    ss = fd.ops.sum(fd.ops.mul(xf, xf), dims=[3])
    r = fd.ops.rsqrt(fd.ops.add(fd.ops.div(ss, fd.define_scalar(float(D))), fd.define_scalar(1e-6)))
    y = fd.ops.cast(fd.ops.mul(xf, fd.ops.broadcast_in_dim(r, shape=[1, S, heads, D], broadcast_dims=[0, 1, 2])),
                    DataType.BFloat16)
    wb = fd.ops.cast(fd.ops.broadcast_in_dim(w, shape=[1, S, heads, D], broadcast_dims=[3]), DataType.Float)
    return fd.ops.cast(fd.ops.mul(wb, fd.ops.cast(y, DataType.Float)), DataType.BFloat16)


def _rope(fd, y, cos, sin, heads):
    """Transposed to [1, heads, S, D], then y * cos + rotate_half(y) * sin."""
    t = fd.ops.permute(y, [0, 2, 1, 3])
    c = fd.ops.broadcast_in_dim(cos, shape=[1, heads, S, D], broadcast_dims=[0, 1, 2, 3])
    s = fd.ops.broadcast_in_dim(sin, shape=[1, heads, S, D], broadcast_dims=[0, 1, 2, 3])
    lo = fd.ops.slice(t, [0, 0, 0, 0], [1, heads, S, D // 2])
    hi = fd.ops.slice(t, [0, 0, 0, D // 2], [1, heads, S, D])
    rot = fd.ops.cat([fd.ops.cast(fd.ops.neg(fd.ops.cast(hi, DataType.Float)), DataType.BFloat16), lo], dim=-1)
    out = fd.ops.add(fd.ops.mul(fd.ops.cast(t, DataType.Float), fd.ops.cast(c, DataType.Float)),
                     fd.ops.mul(fd.ops.cast(rot, DataType.Float), fd.ops.cast(s, DataType.Float)))
    return fd.ops.cast(out, DataType.BFloat16)


def qk_norm_rope():
    with FusionDefinition() as fd:
        q = fd.define_tensor(shape=[1, S, HQ * D], contiguity=[None, True, True], dtype=DataType.BFloat16)
        k = fd.define_tensor(shape=[1, S, HK * D], contiguity=[None, True, True], dtype=DataType.BFloat16)
        wq, wk = (fd.define_tensor(shape=[D], contiguity=[True], dtype=DataType.BFloat16) for _ in range(2))
        cos, sin = (fd.define_tensor(shape=[1, S, D], contiguity=[None, True, True], dtype=DataType.BFloat16)
                    for _ in range(2))
        cos4, sin4 = (fd.ops.broadcast_in_dim(t, shape=[1, 1, S, D], broadcast_dims=[0, 2, 3]) for t in (cos, sin))
        fd.add_output(_rope(fd, _head_norm(fd, q, wq, HQ), cos4, sin4, HQ))
        fd.add_output(_rope(fd, _head_norm(fd, k, wk, HK), cos4, sin4, HK))
    g = torch.Generator().manual_seed(0)
    xs = [torch.randn(1, S, HQ * D, generator=g).bfloat16(), torch.randn(1, S, HK * D, generator=g).bfloat16(),
          torch.randn(D, generator=g).bfloat16(), torch.randn(D, generator=g).bfloat16(),
          torch.randn(1, S, D, generator=g).bfloat16(), torch.randn(1, S, D, generator=g).bfloat16()]
    return fd, xs


@pytest.mark.parametrize("heads", [(HQ, HK), (HQ, HQ)])
def test_norms_of_different_head_counts_are_not_one_persistent_kernel(heads):
    # Each norm's rows are [S, heads]: one reduction pattern, of equal or different sizes.
    with FusionDefinition() as fd:
        for h in heads:
            x = fd.define_tensor(shape=[S, h, D], contiguity=[True] * 3, dtype=DataType.Float)
            r = fd.ops.broadcast_in_dim(fd.ops.sum(fd.ops.mul(x, x), dims=[2]), shape=[S, h, D],
                                        broadcast_dims=[0, 1])
            fd.add_output(fd.ops.mul(x, r))
    xs = [torch.randn(S, h, D) for h in heads]
    reds = reduction_tvs(fd.fusion)
    why = unequal_reductions(reds, SchedulerRuntimeInfo(fd.fusion, xs))
    if heads[0] == heads[1]:
        assert why is None
    else:
        assert why == (f"Un-mapped multi-reduction: {reds[0].short_name} [{S}, {HQ}, {D}] and "
                       f"{reds[1].short_name} [{S}, {HK}, {D}]")


@needs_gxx
def test_per_head_norms_then_rope_are_a_persistent_and_a_resize_kernel_each():
    fd, xs = qk_norm_rope()
    cf = compile_fusion(fd, xs)
    kernels = [s for s in cf.segments if s.is_kernel]
    assert sorted(s.scheduler for s in kernels) == ["inner_persistent"] * 2 + ["resize"] * 2
    # The reshapes of q and k, kept apart while merging, end in their norms' kernels (no
    # host step of their own); each norm writes only its bf16 result (the rope's float
    # products are made in the resize kernel).
    assert len(cf.segments) == 4
    absorbed = [e for e in cf.trace.of_kind("merge") if "input view absorbed: merged" in e.message]
    assert len(absorbed) == 2
    for s in kernels:
        if s.scheduler == "inner_persistent":
            assert len(s.outputs) == 1
    for out, ref in zip(cf.run(xs, backend="emulate"), evaluate(fd.fusion, xs)):
        torch.testing.assert_close(out.float(), ref.float(), rtol=0, atol=0)
