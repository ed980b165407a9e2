"""Channels-last fusions: intermediates laid out as their inputs (engine.layout_order) and
the pointwise schedule running along memory (pointwise_reference.schedule_axes).

A [N, C, H, W] tensor with stride_order [3, 0, 2, 1] has C innermost in memory. A pointwise
kernel whose threads ran along W (the innermost logical axis) would stride over C-sized gaps
with every load and store; one whose intermediates were laid out in logical order would
write them across their rows and read them back as a transpose."""

from __future__ import annotations

import pytest
import torch

from engine import DataType, FusionDefinition, compile_fusion
from engine.reference import evaluate
from tests.emulation import require_gxx

CL = [3, 0, 2, 1]


def channels_last(shape: tuple[int, ...], dtype: torch.dtype, seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.randn(shape, generator=g).to(dtype).to(memory_format=torch.channels_last)


def scale_fusion(out_order: list[int] | None) -> FusionDefinition:
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1, -1, -1], contiguity=[True] * 4, dtype=DataType.BFloat16,
                             stride_order=CL)
        w = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float)
        y = fd.ops.mul(fd.ops.cast(x, DataType.Float), fd.ops.broadcast_in_dim(w, shape=x.shape(),
                                                                                broadcast_dims=[1]))
        out = fd.ops.cast(y, DataType.BFloat16)
        fd.add_output(out, stride_order=out_order)
    return fd


def out_name(fd: FusionDefinition) -> str:
    return fd.fusion.outputs[0].short_name


def test_a_channels_last_pointwise_kernel_runs_along_channels_in_vectors() -> None:
    fd = scale_fusion(CL)
    xs = [channels_last((8, 64, 14, 14), torch.bfloat16, 0), torch.randn(64)]
    cf = compile_fusion(fd, xs)
    (seg,) = cf.segments
    assert seg.scheduler == "pointwise"
    # The innermost merged axis is C (64 contiguous elements), so loads and stores are vectors.
    assert seg.params.vectorization_factor > 1
    assert any(e.message.startswith("axes in the reference's memory order") for e in cf.trace.events)
    assert {"T0", out_name(fd)} <= set(seg.params.vectorized_tensors)


def test_a_logical_order_output_of_channels_last_inputs_keeps_its_own_order() -> None:
    fd = scale_fusion(None)
    xs = [channels_last((2, 16, 5, 3), torch.bfloat16, 1), torch.randn(16)]
    cf = compile_fusion(fd, xs)
    (out,) = cf.run(xs, backend="reference")
    assert out.is_contiguous()
    assert not any(e.message.startswith("axes in the reference's memory order") for e in cf.trace.events)


def batch_norm_bwd_channels_last() -> FusionDefinition:
    """Thunder's BatchNorm2d backward on channels-last bf16 (sums over N, H, W)."""
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1, -1, -1], contiguity=[True] * 4, dtype=DataType.BFloat16,
                             stride_order=CL)
        dy = fd.define_tensor(shape=[-1, -1, -1, -1], contiguity=[True] * 4, dtype=DataType.BFloat16,
                              stride_order=CL)
        mean = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float)
        invstd = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float)
        shape = x.shape()
        xf, dyf = fd.ops.cast(x, DataType.Float), fd.ops.cast(dy, DataType.Float)
        xhat = fd.ops.mul(fd.ops.sub(xf, fd.ops.broadcast_in_dim(mean, shape=shape, broadcast_dims=[1])),
                          fd.ops.broadcast_in_dim(invstd, shape=shape, broadcast_dims=[1]))
        s1 = fd.ops.sum(dyf, dims=[0, 2, 3])
        s2 = fd.ops.sum(fd.ops.mul(dyf, xhat), dims=[0, 2, 3])
        b1 = fd.ops.broadcast_in_dim(s1, shape=shape, broadcast_dims=[1])
        b2 = fd.ops.broadcast_in_dim(s2, shape=shape, broadcast_dims=[1])
        gx = fd.ops.sub(fd.ops.sub(dyf, b1), fd.ops.mul(xhat, b2))
        fd.add_output(fd.ops.cast(gx, DataType.BFloat16), stride_order=CL)
        fd.add_output(s1)
        fd.add_output(s2)
    return fd


def test_an_intermediate_between_segments_takes_its_inputs_channels_last_order() -> None:
    fd = batch_norm_bwd_channels_last()
    # Model sizes (ResNet's [128, 512, 28, 28]), as meta tensors: the compile needs no data.
    act = torch.empty(128, 512, 28, 28, dtype=torch.bfloat16, device="meta").to(memory_format=torch.channels_last)
    xs = [act, act, torch.empty(512, device="meta"), torch.empty(512, device="meta")]
    cf = compile_fusion(fd, xs)
    crossing = [v for s in cf.segments[1:] for v in s.input_vals
                if getattr(v, "ndim", 0) == 4 and v not in cf.fusion.inputs]
    assert crossing, "the reduction segment hands a 4-D intermediate to the next"
    for v in crossing:
        order = [v.domain.logical.index(i) for i in v.domain.allocation]
        assert order == [0, 2, 3, 1], f"{v.short_name} is laid out {order}"  # N, H, W, C
    # No segment transposes: every 4-D tensor is channels-last.
    assert all(s.scheduler != "transpose" for s in cf.segments)


def test_channels_last_batch_norm_backward_matches_the_reference() -> None:
    fd = batch_norm_bwd_channels_last()
    xs = [channels_last((2, 24, 5, 3), torch.bfloat16, 4), channels_last((2, 24, 5, 3), torch.bfloat16, 5),
          torch.randn(24), torch.rand(24) + 0.5]
    cf = compile_fusion(fd, xs)
    require_gxx()
    want = evaluate(fd.fusion, xs)
    got = cf.run(xs, backend="emulate")
    for g, w in zip(got, want):
        torch.testing.assert_close(g.float(), w.float(), rtol=2e-2, atol=2e-2)
    assert got[0].stride() == xs[0].stride()


@pytest.mark.parametrize("out_order", [CL, None])
def test_channels_last_scale_matches_the_reference(out_order: list[int] | None) -> None:
    fd = scale_fusion(out_order)
    xs = [channels_last((3, 40, 5, 7), torch.bfloat16, 6), torch.randn(40)]
    cf = compile_fusion(fd, xs)
    require_gxx()
    (got,) = cf.run(xs, backend="emulate")
    (want,) = evaluate(fd.fusion, xs)
    torch.testing.assert_close(got.float(), want.float())


@pytest.mark.gpu
def test_channels_last_batch_norm_backward_on_the_gpu() -> None:
    if not torch.cuda.is_available():
        pytest.skip("no CUDA GPU")
    fd = batch_norm_bwd_channels_last()
    xs = [channels_last((32, 128, 14, 14), torch.bfloat16, 7), channels_last((32, 128, 14, 14), torch.bfloat16, 8),
          torch.randn(128), torch.rand(128) + 0.5]
    cf = compile_fusion(fd, xs)
    got = cf.run(xs, backend="cuda")
    want = evaluate(fd.fusion, xs)
    for g, w in zip(got, want):
        torch.testing.assert_close(g.cpu().float(), w.float(), rtol=2e-2, atol=5e-2)
    assert got[0].stride() == xs[0].stride()
