"""Pre-segmentation rewrites that build ops (engine.preseg): a matmul over a broadcast K
axis is a multiply of its operands, fused with the ops around it."""

from __future__ import annotations

import pytest
import torch

from engine import DataType, FusionDefinition, compile_fusion
from engine.reference import evaluate


def _outer_product_fusion(dtype: DataType, a_shape: list[int], b_shape: list[int]) -> FusionDefinition:
    """cos(A @ B) where A's last axis and B's second-to-last are broadcasts of size 1."""
    with FusionDefinition() as fd:
        a = fd.define_tensor(shape=a_shape[:-1], contiguity=True, dtype=dtype)
        b = fd.define_tensor(shape=[b_shape[0], *b_shape[2:]] if len(b_shape) == 3 else b_shape[1:],
                             contiguity=True, dtype=dtype)
        wa = fd.ops.broadcast_in_dim(a, shape=a_shape, broadcast_dims=list(range(len(a_shape) - 1)))
        dims_b = [0, 2] if len(b_shape) == 3 else [1]
        wb = fd.ops.broadcast_in_dim(b, shape=b_shape, broadcast_dims=dims_b)
        m = fd.ops.matmul(wa, wb)
        fd.add_output(fd.ops.cos(m))
        fd.add_output(m)
    return fd


@pytest.mark.parametrize("dtype", [DataType.Float, DataType.BFloat16])
@pytest.mark.parametrize("a_shape,b_shape", [([1, 6, 1], [1, 1, 13]), ([3, 4, 1], [1, 5]), ([4, 1], [3, 1, 5])])
def test_matmul_over_a_broadcast_k_is_one_pointwise_kernel(dtype: DataType, a_shape: list[int],
                                                           b_shape: list[int]) -> None:
    fd = _outer_product_fusion(dtype, a_shape, b_shape)
    g = torch.Generator().manual_seed(0)
    tdt = torch.float32 if dtype == DataType.Float else torch.bfloat16
    xs = [torch.randn(a_shape[:-1], generator=g).to(tdt),
          torch.randn([b_shape[0], *b_shape[2:]] if len(b_shape) == 3 else b_shape[1:], generator=g).to(tdt)]
    cf = compile_fusion(fd, xs)
    assert [s.scheduler for s in cf.segments] == ["pointwise"]
    rules = [e.data.get("rule") for e in cf.trace.events if e.kind == "preseg"]
    assert "matmul_without_reduction" in rules
    got = cf.run(xs, backend="emulate")
    want = evaluate(fd.fusion, xs)
    # One product per element, rounded once: the GEMM's value exactly.
    assert got[1].shape == want[1].shape and torch.equal(got[1], want[1])
    torch.testing.assert_close(got[0], want[0])


def test_matmul_with_a_real_k_is_left_to_aten() -> None:
    with FusionDefinition() as fd:
        a = fd.define_tensor(shape=[-1, -1], contiguity=True, dtype=DataType.Float)
        b = fd.define_tensor(shape=[-1, -1], contiguity=True, dtype=DataType.Float)
        fd.add_output(fd.ops.cos(fd.ops.matmul(a, b)))
    xs = [torch.randn(4, 1), torch.randn(1, 5)]  # K = 1 at run time, but not a broadcast axis
    cf = compile_fusion(fd, xs)
    assert "expr_eval" in [s.scheduler for s in cf.segments]
    torch.testing.assert_close(cf.run(xs, backend="emulate")[0], evaluate(fd.fusion, xs)[0])


def _cos_sin_rope(fd: FusionDefinition, b: int, h: int) -> None:
    """A RoPE's cos of [S, D/2] positions (cat to [S, D]) handed back expanded to [B, H, S, D],
    and applied to q [B, H, S, D]."""
    ang = fd.define_tensor(shape=[1, -1, -1], contiguity=[None, True, True], dtype=DataType.Float)
    q = fd.define_tensor(shape=[b, h, -1, -1], contiguity=True, dtype=DataType.BFloat16)
    cos = fd.ops.cast(fd.ops.cos(fd.ops.cat([ang, ang], dim=-1)), DataType.BFloat16)
    s, d = q.shape()[2], q.shape()[3]
    wide = fd.ops.broadcast_in_dim(fd.ops.broadcast_in_dim(cos, shape=[1, 1, s, d], broadcast_dims=[0, 2, 3]),
                                   shape=[b, h, s, d], broadcast_dims=[0, 1, 2, 3])
    fd.add_output(wide)
    fd.add_output(fd.ops.cast(fd.ops.mul(fd.ops.cast(q, DataType.Float), fd.ops.cast(wide, DataType.Float)),
                              DataType.BFloat16))


def test_an_expanded_output_is_a_view_and_cos_is_computed_once_per_position() -> None:
    b, h, s, d = 2, 8, 256, 256  # the rope kernel iterates 1M elements, cos 64K of them
    with FusionDefinition() as fd:
        _cos_sin_rope(fd, b, h)
    g = torch.Generator().manual_seed(0)
    xs = [torch.rand(1, s, d // 2, generator=g) * 100, torch.randn(b, h, s, d, generator=g).bfloat16()]
    cf = compile_fusion(fd, xs)
    rules = {e.data.get("rule") for e in cf.trace.events if e.kind == "preseg"}
    assert "expanded_outputs_apart" in rules
    trig = [sg for sg in cf.segments if "= cosf(" in (sg.cuda_source or "")]
    assert len(trig) == 1
    grid, block = trig[0].launch.grid, trig[0].launch.block
    assert grid[0] * grid[1] * grid[2] * block[0] * 4 <= 2 * s * d  # its own elements, not B*H copies
    assert any("broadcast copies" in str(e) for e in cf.trace.events if e.kind == "merge")
    outs, want = cf.run(xs, backend="reference"), evaluate(fd.fusion, xs)
    assert outs[0].stride()[:2] == (0, 0) and torch.equal(outs[0], want[0])
    torch.testing.assert_close(outs[1].float(), want[1].float())


def test_a_small_rope_keeps_cos_in_its_kernel() -> None:
    """Below a million elements one kernel is cheaper than a second launch: no cut for cos."""
    with FusionDefinition() as fd:
        _cos_sin_rope(fd, 2, 2)
    xs = [torch.rand(1, 16, 8), torch.randn(2, 2, 16, 16).bfloat16()]
    cf = compile_fusion(fd, xs)
    assert not any("broadcast copies" in str(e) for e in cf.trace.events if e.kind == "merge")
    got, want = cf.run(xs, backend="emulate"), evaluate(fd.fusion, xs)
    torch.testing.assert_close(got[1].float(), want[1].float())
    assert torch.equal(got[0], want[0])


def test_views_of_an_output_are_views_and_the_kernel_writes_it_once() -> None:
    """A norm backward's grad handed back as [1, N, H], reshaped to [N, H] and transposed to
    [H, N] (a Gemma RMSNorm backward repro): one kernel writes [1, N, H], the other two are
    its buffer seen with other sizes and strides, and no kernel writes a transposed copy."""
    n, h = 16, 64
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[1, n, h], contiguity=[None, True, True], dtype=DataType.BFloat16)
        w = fd.define_tensor(shape=[h], contiguity=[True], dtype=DataType.Float)
        xf = fd.ops.cast(x, DataType.Float)
        y = fd.ops.mul(xf, fd.ops.broadcast_in_dim(w, shape=[1, n, h], broadcast_dims=[2]))
        s = fd.ops.sum(y, dims=[2], keepdim=True)
        g = fd.ops.cast(fd.ops.sub(y, fd.ops.mul(s, xf)), DataType.BFloat16)
        flat = fd.ops.reshape(g, new_shape=[n, h])
        fd.add_output(fd.ops.permute(flat, dims=[1, 0]))
        fd.add_output(flat)
        fd.add_output(g)
        fd.add_output(fd.ops.sum(y, dims=[0, 1]))
    g0 = torch.Generator().manual_seed(0)
    xs = [torch.randn(1, n, h, generator=g0).bfloat16(), torch.randn(h, generator=g0)]
    cf = compile_fusion(fd, xs)
    rules = {e.data.get("rule") for e in cf.trace.events if e.kind == "preseg"}
    assert "views_of_outputs_apart" in rules
    kernels = [sg for sg in cf.segments if sg.scheduler != "expr_eval"]
    assert len(kernels) == 1 and len(cf.segments) == 2
    assert "transpose" not in [sg.scheduler for sg in cf.segments]
    got, want = cf.run(xs, backend="emulate"), evaluate(fd.fusion, xs)
    for a, b in zip(got, want):
        torch.testing.assert_close(a.float(), b.float(), rtol=2e-2, atol=2e-2)
    t, flat_out, full = got[:3]
    assert t.data_ptr() == flat_out.data_ptr() == full.data_ptr()
    assert t.stride() == (1, h)


def test_an_expanded_output_read_by_the_kernel_stays_in_registers() -> None:
    """nanoGPT's masked softmax hands its [B, H, S, S] expanded mask back: the output becomes
    a view of a segment_set, and the kernel's own copy of the expand is an intermediate
    again (it was the output, in global memory, which the kernel wrote and re-read element
    by element between block-wide waits)."""
    b, h, s = 2, 3, 8
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[b, h, s, s], contiguity=True, dtype=DataType.BFloat16)
        m = fd.define_tensor(shape=[1, 1, s, s], contiguity=[None, None, True, True], dtype=DataType.Float)
        mask = fd.ops.broadcast_in_dim(fd.ops.eq(m, fd.define_scalar(0.0, dtype=DataType.Double)),
                                       shape=[b, h, s, s], broadcast_dims=[0, 1, 2, 3])
        y = fd.ops.where(mask, fd.define_scalar(float("-inf"), dtype=DataType.Double),
                         fd.ops.cast(x, dtype=DataType.Float))
        mx = fd.ops.broadcast_in_dim(fd.ops.max(y, dims=[3]), shape=[b, h, s, 1], broadcast_dims=[0, 1, 2])
        fd.add_output(fd.ops.cast(fd.ops.sub(y, mx), dtype=DataType.BFloat16))
        fd.add_output(mask)
    g = torch.Generator().manual_seed(4)
    xs = [torch.randn(b, h, s, s, generator=g).to(torch.bfloat16),
          torch.triu(torch.ones(1, 1, s, s), diagonal=1)]
    cf = compile_fusion(fd, xs)
    (kernel,) = [seg for seg in cf.segments if seg.scheduler == "inner_persistent"]
    boundary = {*kernel.inputs, *kernel.outputs}
    assert not [t for t in kernel.fusion.tensors()
                if t.memory_type.name == "Global" and t.short_name not in boundary]
    got, want = cf.run(xs, backend="emulate"), evaluate(fd.fusion, xs)
    assert torch.equal(got[1], want[1])
    torch.testing.assert_close(got[0], want[0], equal_nan=True)  # a fully masked row is NaN


def _scatter_fusion(n: int, v: int, k: int, src_tensor: bool, dtype: DataType, columns: bool) -> FusionDefinition:
    """grad = scatter(full(0), labels [n, k], value, dim=1) * scale, and its row sums; labels
    given as [n, k] (`columns`), else as [n] broadcast to [n, 1]."""
    with FusionDefinition() as fd:
        labels = fd.define_tensor(shape=[-1, -1] if columns else [-1], contiguity=True, dtype=DataType.Int)
        scale = fd.define_tensor(shape=[-1, -1], contiguity=True, dtype=dtype)
        idx = labels if columns else fd.ops.broadcast_in_dim(labels, shape=[n, 1], broadcast_dims=[0])
        zeros = fd.ops.full(shape=[n, v], fill_value=fd.define_scalar(0.0), dtype=dtype)
        value = (fd.ops.full(shape=[n, k], fill_value=fd.define_scalar(-1.0), dtype=dtype) if src_tensor
                 else fd.define_scalar(-1.0))
        hot = fd.ops.scatter(zeros, idx, value, dim=1)
        grad = fd.ops.mul(hot, scale)
        fd.add_output(grad)
        fd.add_output(fd.ops.sum(grad, dims=[1]))
    return fd


@pytest.mark.parametrize("k,src_tensor,columns", [(1, False, False), (1, True, False), (1, True, True),
                                                  (3, True, True)])
@pytest.mark.parametrize("dtype", [DataType.Float, DataType.BFloat16])
def test_a_scatter_of_one_value_into_a_full_tensor_is_a_select(k: int, src_tensor: bool, columns: bool,
                                                               dtype: DataType) -> None:
    n, v = 6, 37
    fd = _scatter_fusion(n, v, k, src_tensor, dtype, columns)
    g = torch.Generator().manual_seed(1)
    tdt = torch.float32 if dtype == DataType.Float else torch.bfloat16
    # Distinct indices a row (torch's scatter of a value is the same with repeats).
    labels = torch.stack([torch.randperm(v, generator=g)[:k] for _ in range(n)])
    xs = [labels if columns else labels[:, 0].contiguous(), torch.randn(n, v, generator=g).to(tdt)]
    cf = compile_fusion(fd, xs)
    rules = [e.data.get("rule") for e in cf.trace.events if e.kind == "preseg"]
    assert "scatters_as_selects" in rules
    assert "expr_eval" not in [s.scheduler for s in cf.segments]  # no torch scatter
    if not columns:
        assert [s.scheduler for s in cf.segments] == ["reduction"]
    got = cf.run(xs, backend="emulate")
    want = evaluate(fd.fusion, xs)
    assert torch.equal(got[0], want[0])
    torch.testing.assert_close(got[1], want[1])


def test_a_scatter_into_part_of_the_rows_or_into_data_stays_a_scatter() -> None:
    with FusionDefinition() as fd:
        labels = fd.define_tensor(shape=[-1, -1], contiguity=True, dtype=DataType.Int)
        data = fd.define_tensor(shape=[-1, -1], contiguity=True, dtype=DataType.Float)
        zeros = fd.ops.full(shape=[6, 9], fill_value=fd.define_scalar(0.0), dtype=DataType.Float)
        fd.add_output(fd.ops.scatter(zeros, labels, fd.define_scalar(2.0), dim=1))  # index of 4 rows
        fd.add_output(fd.ops.scatter(data, labels, fd.define_scalar(2.0), dim=1))  # into an input
    xs = [torch.tensor([[1], [0], [8], [3]]), torch.randn(6, 9)]
    cf = compile_fusion(fd, xs)
    assert not any(e.data.get("rule") == "scatters_as_selects" for e in cf.trace.events)
    got, want = cf.run(xs, backend="emulate"), evaluate(fd.fusion, xs)
    for a, b in zip(got, want):
        assert torch.equal(a, b)
