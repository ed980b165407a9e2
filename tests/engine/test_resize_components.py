"""The resize scheduler's parts that meet only at fusion inputs (engine.schedule.
resize_components): a RoPE's q and k rotations over one cos and sin, each aligned with its
own output, in one kernel; values on the emulator."""

from pathlib import Path

import pytest
import torch

from engine import DataType, FusionDefinition, loads_fusion
from engine.compile import compile_fusion
from engine.config import Options
from engine.reference import evaluate
from engine.schedule.base import SchedulerType
from scripts.ptxas_check import meta_inputs
from scripts.scales import input_values, model_scale, rewrite
from tests.emulation import needs_gxx


def _rotate(fd: FusionDefinition, x, c, s, lead: list[int], d: int):
    x1 = fd.ops.slice(x, [0, 0, 0, 0], [*lead, d // 2])
    x2 = fd.ops.slice(x, [0, 0, 0, d // 2], [*lead, d])
    r = fd.ops.cat([fd.ops.cast(fd.ops.neg(fd.ops.cast(x2, DataType.Float)), DataType.BFloat16), x1], dim=-1)
    xf, rf = fd.ops.cast(x, DataType.Float), fd.ops.cast(r, DataType.Float)
    return fd.ops.cast(fd.ops.add(fd.ops.mul(xf, c), fd.ops.mul(rf, s)), DataType.BFloat16)


def mqa_rope(fd: FusionDefinition, s: int, h: int, d: int) -> None:
    """Gemma's multi-query RoPE: q [1, S, H*D] and the single k head [1, S, D] rotated with
    one cos and sin, broadcast to [1, 1, S, D] and expanded to q's heads; outputs
    [1, H, S, D] and [1, 1, S, D]."""
    q = fd.define_tensor(shape=[1, s, h * d], contiguity=[None, True, True], dtype=DataType.BFloat16)
    k = fd.define_tensor(shape=[1, s, d], contiguity=[None, True, True], dtype=DataType.BFloat16)
    cos = fd.define_tensor(shape=[1, s, d], contiguity=[None, True, True], dtype=DataType.BFloat16)
    sin = fd.define_tensor(shape=[1, s, d], contiguity=[None, True, True], dtype=DataType.BFloat16)
    qh = fd.ops.permute(fd.ops.reshape(q, [1, s, h, d]), [0, 2, 1, 3])
    kh = fd.ops.permute(fd.ops.reshape(k, [1, s, 1, d]), [0, 2, 1, 3])
    c1 = fd.ops.broadcast_in_dim(cos, shape=[1, 1, s, d], broadcast_dims=[0, 2, 3])
    s1 = fd.ops.broadcast_in_dim(sin, shape=[1, 1, s, d], broadcast_dims=[0, 2, 3])
    cq = fd.ops.cast(fd.ops.broadcast_in_dim(c1, shape=[1, h, s, d], broadcast_dims=[0, 1, 2, 3]), DataType.Float)
    sq = fd.ops.cast(fd.ops.broadcast_in_dim(s1, shape=[1, h, s, d], broadcast_dims=[0, 1, 2, 3]), DataType.Float)
    fd.add_output(_rotate(fd, qh, cq, sq, [1, h, s], d))
    fd.add_output(_rotate(fd, kh, fd.ops.cast(c1, DataType.Float), fd.ops.cast(s1, DataType.Float), [1, 1, s], d))


def _inputs(s: int, h: int, d: int) -> list[torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    return [torch.randn(1, s, h * d, generator=g).bfloat16(),
            *(torch.randn(1, s, d, generator=g).bfloat16() for _ in range(3))]


@needs_gxx
@pytest.mark.parametrize("s,h,d", [(6, 3, 8), (64, 4, 128)])
def test_q_and_k_rotations_are_one_resize_kernel(s: int, h: int, d: int):
    with FusionDefinition() as fd:
        mqa_rope(fd, s, h, d)
    xs = _inputs(s, h, d)
    cf = compile_fusion(fd, xs)
    assert [g.scheduler for g in cf.segments if g.is_kernel] == [SchedulerType.resize.value]
    notes = [e.message for e in cf.trace if e.kind == "transform"]
    assert any(m.startswith("aligned apart: 2 parts that meet only at fusion inputs") for m in notes), notes
    if d == 128:
        # Both outputs are written in 16-byte vectors: the k part is vectorized as the
        # reference's.
        seg = cf.segments[0]
        for out in seg.outputs:
            assert f"loadGeneric<__bfloat, 8>(&{out}[" in seg.cuda_source, out
    outs, refs = cf.run(xs, backend="emulate"), evaluate(fd.fusion, xs)
    for o, r in zip(outs, refs):
        assert o.shape == r.shape
        torch.testing.assert_close(o, r, rtol=0, atol=0)


@needs_gxx
def test_two_slices_of_one_input_as_outputs_are_one_kernel():
    # nvFuser refuses these ("Resize between reference and output not allowed"); each slice
    # is a part of its own here, meeting the other at the input.
    with FusionDefinition() as fd:
        a = fd.define_tensor(shape=[64, 96], contiguity=[True, True], dtype=DataType.Float)
        fd.add_output(fd.ops.slice(a, [0, 0], [64, 32]))
        fd.add_output(fd.ops.mul(fd.ops.slice(a, [0, 40], [64, 96]), fd.ops.slice(a, [0, 0], [64, 56])))
    xs = [torch.randn(64, 96)]
    cf = compile_fusion(fd, xs)
    assert [g.scheduler for g in cf.segments if g.is_kernel] == [SchedulerType.resize.value]
    for o, r in zip(cf.run(xs, backend="emulate"), evaluate(fd.fusion, xs)):
        torch.testing.assert_close(o, r, rtol=0, atol=0)


def fused_qkv_rope(fd: FusionDefinition, s: int, d: int) -> None:
    """q, k and v sliced from one fused [1, S, 3*D] projection; q and k rotated, v an output
    as it is (a view of the input)."""
    x = fd.define_tensor(shape=[1, s, 3 * d], contiguity=[None, True, True], dtype=DataType.BFloat16)
    cos = fd.define_tensor(shape=[s, d], contiguity=[True, True], dtype=DataType.BFloat16)
    sin = fd.define_tensor(shape=[s, d], contiguity=[True, True], dtype=DataType.BFloat16)
    h = fd.ops.reshape(x, [1, s, 1, 3 * d])
    q, k, v = (fd.ops.slice(h, [0, 0, 0, j * d], [1, s, 1, (j + 1) * d]) for j in range(3))
    c = fd.ops.cast(fd.ops.broadcast_in_dim(cos, shape=[1, s, 1, d], broadcast_dims=[1, 3]), DataType.Float)
    sn = fd.ops.cast(fd.ops.broadcast_in_dim(sin, shape=[1, s, 1, d], broadcast_dims=[1, 3]), DataType.Float)
    fd.add_output(_rotate(fd, q, c, sn, [1, s, 1], d))
    fd.add_output(_rotate(fd, k, c, sn, [1, s, 1], d))
    fd.add_output(v)


@needs_gxx
def test_a_view_part_is_copied_in_the_kernel_only_while_small():
    # Small, v's copy costs less than a launch: q, k and v in one kernel (values on the
    # emulator). At 65536 tokens v's copy would move 32 MiB: it stays a view, no kernel.
    for s, kernel_outputs in ((64, 3), (65536, 2)):
        with FusionDefinition() as fd:
            fused_qkv_rope(fd, s, 128)
        g = torch.Generator().manual_seed(0)
        xs = [torch.randn(1, s, 384, generator=g).bfloat16(), torch.randn(s, 128, generator=g).bfloat16(),
              torch.randn(s, 128, generator=g).bfloat16()]
        cf = compile_fusion(fd, xs)
        kernels = [seg for seg in cf.segments if seg.is_kernel]
        assert [seg.scheduler for seg in kernels] == [SchedulerType.resize.value]
        assert len(kernels[0].outputs) == kernel_outputs
        if s == 64:
            for o, r in zip(cf.run(xs, backend="emulate"), evaluate(fd.fusion, xs)):
                torch.testing.assert_close(o, r, rtol=0, atol=0)


def test_parts_apart_are_refused_where_the_shared_vector_is_narrower_than_a_part_s_own():
    # Llama's GQA RoPE at its model scale, forwarding off (its permuted view of the input
    # then crosses to the kernels that read it): a group of q's and k's parts whose shared
    # vector width (found over every part's inputs and outputs) is narrower than one
    # part's own is refused with the engine's reason.
    path = Path(__file__).resolve().parents[1] / "realworld" / "scripts" / "llama_rope_gqa_expand.py"
    text = path.read_text()
    fd = loads_fusion(text, filename=str(path))
    xs = fd.example_inputs(device="cpu", seed=0)
    scale = model_scale(input_values(xs)[0])
    scaled = loads_fusion(rewrite(text, scale), filename=str(path))
    cf = compile_fusion(scaled, meta_inputs(xs, fd.input_specs or [None] * len(xs), scale, 1 << 31),
                        options=Options(forwarding=False))
    reasons = [v["reason"] for e in cf.trace for v in (e.data or {}).get("verdicts", [])]
    assert any("parts aligned apart would vectorize" in r for r in reasons)


def _rope_of(fd: FusionDefinition, x, cos, sin, heads: int, s: int, d: int):
    """x [1, heads, s, d] float rotated by cos and sin [s, d] broadcast to its heads."""
    c, sn = (fd.ops.cast(fd.ops.broadcast_in_dim(t, shape=[1, heads, s, d], broadcast_dims=[2, 3]), DataType.Float)
             for t in (cos, sin))
    xs = fd.ops.mul(x, sn)
    lo = fd.ops.slice(xs, [0, 0, 0, 0], [1, heads, s, d // 2])
    hi = fd.ops.slice(xs, [0, 0, 0, d // 2], [1, heads, s, d])
    rot = fd.ops.add(fd.ops.pad(fd.ops.neg(lo), [d // 2, 0]), fd.ops.pad(hi, [0, d // 2]))
    return fd.ops.add(rot, fd.ops.mul(x, c))


@needs_gxx
def test_rotations_over_different_head_counts_are_aligned_apart_in_one_kernel():
    # GQA: q over 6 heads, k over 2, sharing cos and sin [s, d]. Aligned with q, k's heads
    # would have no reference axis (a serial loop whose cos and sin reads the kernel could
    # not index: its lowering failed, twice, before the fusion fell apart into two kernels).
    s, d, hq, hk = 64, 16, 6, 2
    with FusionDefinition() as fd:
        q = fd.define_tensor(shape=[1, hq, s, d], contiguity=[None, True, True, True], dtype=DataType.BFloat16)
        cos, sin = (fd.define_tensor(shape=[s, d], contiguity=[True, True], dtype=DataType.BFloat16)
                    for _ in range(2))
        k = fd.define_tensor(shape=[1, hk, s, d], contiguity=[None, True, True, True], dtype=DataType.Float)
        fd.add_output(_rope_of(fd, fd.ops.cast(q, DataType.Float), cos, sin, hq, s, d))
        fd.add_output(_rope_of(fd, k, cos, sin, hk, s, d))
    g = torch.Generator().manual_seed(0)
    xs = [torch.randn(1, hq, s, d, generator=g).bfloat16(), torch.randn(s, d, generator=g).bfloat16(),
          torch.randn(s, d, generator=g).bfloat16(), torch.randn(1, hk, s, d, generator=g)]
    cf = compile_fusion(fd, xs)
    assert [seg.scheduler for seg in cf.segments] == [SchedulerType.resize.value]
    assert not any("cannot be indexed" in e.message for e in cf.trace)
    for o, r in zip(cf.run(xs, backend="emulate"), evaluate(fd.fusion, xs)):
        torch.testing.assert_close(o, r, rtol=0, atol=0)
