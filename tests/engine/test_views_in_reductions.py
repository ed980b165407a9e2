"""Reshapes and slices around reductions, and look-ups taken before the ops that make
their table:

- a reshape that only splits axes (DeepGEMM's per-token fp8 quantization: [M, K] viewed as
  [M, K/128, 128] blocks) stays in a persistent kernel; one that merges a reduced axis with
  an iterated one is refused, naming it (nvFuser's reductionInterferingView), and an output
  reshaped from the kernel's result is a view of what the kernel writes;
- a slice of a fusion input is a window of its buffer: in a fusion refused whole, the
  region between such slices is tried whole (a DiT block's modulation chunks around a
  LayerNorm: one persistent kernel);
- take_along_axis of a log-softmax reads the logits: the [tokens, vocab] log-softmax is
  not written between kernels (engine.gather_first).
Values against the reference evaluator on the emulator.
"""

from __future__ import annotations

import torch

from engine import DataType, FusionDefinition, compile_fusion
from engine.analysis.view_interference import interfering_view
from engine.reference import evaluate
from engine.schedule.base import SchedulerType
from engine.schedule.persistent_checks import persistent_compile_reject


def _per_token_fp8(m: int, blocks: int, width: int = 16) -> FusionDefinition:
    k = blocks * width
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[m, k], contiguity=[True, True], dtype=DataType.BFloat16)
        v = fd.ops.reshape(x, new_shape=[m, blocks, width])
        amax = fd.ops.max(fd.ops.cast(fd.ops.abs(v), dtype=DataType.Float), dims=[2])
        amax = fd.ops.clamp(amax, fd.define_scalar(1e-4, dtype=DataType.Double),
                            fd.define_scalar(3.4e38, dtype=DataType.Double))
        scale = fd.ops.div(fd.define_scalar(448.0, dtype=DataType.Double), amax)
        b = fd.ops.broadcast_in_dim(scale, shape=[m, blocks, width], broadcast_dims=[0, 1])
        q = fd.ops.cast(fd.ops.mul(fd.ops.cast(v, dtype=DataType.Float), b), dtype=DataType.Float8_e4m3fn)
        fd.add_output(fd.ops.reshape(q, new_shape=[m, k]))
        fd.add_output(fd.ops.div(amax, fd.define_scalar(448.0, dtype=DataType.Double)))
    return fd


def test_split_only_reshape_stays_in_one_persistent_kernel() -> None:
    fd = _per_token_fp8(24, 5)
    xs = [torch.randn(24, 80, generator=torch.Generator().manual_seed(0)).to(torch.bfloat16)]
    cf = compile_fusion(fd, xs)
    kernels = [s.scheduler for s in cf.segments if s.is_kernel]
    assert kernels == ["inner_persistent"]
    # The output reshape merges the blocks back: a view of the [M, K/128, 128] result.
    assert [str(s.scheduler) for s in cf.segments if not s.is_kernel] == ["expr_eval"]
    got = cf.run(xs, backend="emulate")
    want = evaluate(fd.fusion, xs)
    assert torch.equal(got[0].view(torch.uint8), want[0].view(torch.uint8))
    torch.testing.assert_close(got[1], want[1])


def test_reshape_merging_reduced_and_iterated_axes_interferes() -> None:
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[6, 4, 8], contiguity=[True, True, True], dtype=DataType.Float)
        s = fd.ops.sum(x, dims=[2], keepdim=True)
        y = fd.ops.sub(x, fd.ops.broadcast_in_dim(s, shape=[6, 4, 8], broadcast_dims=[0, 1, 2]))
        fd.add_output(fd.ops.reshape(y, new_shape=[6, 32]))
    fusion = fd.fusion
    red = next(t for t in fusion.tensors() if any(i.is_reduction for i in t.domain.logical))
    view = interfering_view(fusion, red)
    assert view is not None
    why = persistent_compile_reject(fusion, SchedulerType.inner_persistent)
    assert why is not None and "View may interfere" in why and view.output.short_name in why


def test_split_only_reshape_does_not_interfere() -> None:
    fd = _per_token_fp8(8, 3)
    fusion = fd.fusion
    red = next(t for t in fusion.tensors() if any(i.is_reduction for i in t.domain.logical))
    views = [e for e in fusion.exprs() if type(e).__name__ == "ViewOp"]
    assert len(views) == 2  # the split of the input, the merge of the output
    # Only the output's merge (of a reduced axis with an iterated one) interferes.
    assert interfering_view(fusion, red) is views[-1]


def test_slices_of_an_input_around_a_layer_norm_leave_one_kernel() -> None:
    """A DiT block's adaLN: three chunks of a [B, 6H] modulation input scale, shift and
    gate a LayerNorm of the residual sum."""
    b, s, h = 2, 8, 24
    with FusionDefinition() as fd:
        mod = fd.define_tensor(shape=[b, 6 * h], contiguity=[True, True], dtype=DataType.BFloat16)
        x = fd.define_tensor(shape=[b, s, h], contiguity=[True, True, True], dtype=DataType.BFloat16)
        shift = fd.ops.slice(mod, start_indices=[0, 0], end_indices=[b, h])
        scale = fd.ops.slice(mod, start_indices=[0, h], end_indices=[b, 2 * h])
        xf = fd.ops.cast(x, dtype=DataType.Float)
        var, mean = fd.ops.var_mean(xf, dims=[2], correction=0, keepdim=False)
        mean_b = fd.ops.broadcast_in_dim(mean, shape=[b, s, h], broadcast_dims=[0, 1])
        rstd = fd.ops.rsqrt(fd.ops.add(var, fd.define_scalar(1e-6, dtype=DataType.Double)))
        rstd_b = fd.ops.broadcast_in_dim(rstd, shape=[b, s, h], broadcast_dims=[0, 1])
        y = fd.ops.mul(fd.ops.sub(xf, mean_b), rstd_b)
        sc = fd.ops.cast(fd.ops.broadcast_in_dim(scale, shape=[b, s, h], broadcast_dims=[0, 2]),
                         dtype=DataType.Float)
        sh = fd.ops.cast(fd.ops.broadcast_in_dim(shift, shape=[b, s, h], broadcast_dims=[0, 2]),
                         dtype=DataType.Float)
        out = fd.ops.add(fd.ops.mul(y, fd.ops.add(sc, fd.define_scalar(1.0, dtype=DataType.Double))), sh)
        fd.add_output(fd.ops.cast(out, dtype=DataType.BFloat16))
        fd.add_output(rstd)
    g = torch.Generator().manual_seed(1)
    xs = [torch.randn(b, 6 * h, generator=g).to(torch.bfloat16),
          torch.randn(b, s, h, generator=g).to(torch.bfloat16)]
    cf = compile_fusion(fd, xs)
    assert [s.scheduler for s in cf.segments if s.is_kernel] == ["inner_persistent"]
    got = cf.run(xs, backend="emulate")
    want = evaluate(fd.fusion, xs)
    for a, w in zip(got, want):
        torch.testing.assert_close(a, w, rtol=1e-2, atol=1e-2)


def _cross_entropy(n: int, v: int, smoothing: bool, expanded: bool = False,
                   dtype: DataType = DataType.BFloat16) -> FusionDefinition:
    """`expanded`: the row's max and log-sum-exp broadcast to [n, v] (expanded), as Thunder
    writes them, rather than to [n, 1]."""
    row = [n, v] if expanded else [n, 1]
    with FusionDefinition() as fd:
        logits = fd.define_tensor(shape=[n, v], contiguity=[True, True], dtype=dtype)
        labels = fd.define_tensor(shape=[n], contiguity=[True], dtype=DataType.Int)
        x = fd.ops.cast(logits, dtype=DataType.Float) if dtype != DataType.Float else logits
        mx = fd.ops.broadcast_in_dim(fd.ops.max(x, dims=[1]), shape=row, broadcast_dims=[0])
        sh = fd.ops.sub(x, mx)
        lse = fd.ops.broadcast_in_dim(fd.ops.log(fd.ops.sum(fd.ops.exp(sh), dims=[1])), shape=row,
                                      broadcast_dims=[0])
        logp = fd.ops.sub(sh, lse)
        idx = fd.ops.broadcast_in_dim(labels, shape=[n, 1], broadcast_dims=[0])
        picked = fd.ops.take_along_axis(logp, idx, 1)
        loss = fd.ops.sum(fd.ops.neg(picked), dims=[0, 1])
        if smoothing:
            loss = fd.ops.add(loss, fd.ops.neg(fd.ops.sum(logp, dims=[0, 1])))
        fd.add_output(loss)
    return fd


def test_take_along_axis_of_a_log_softmax_reads_the_logits() -> None:
    n, v = 6, 300
    g = torch.Generator().manual_seed(2)
    xs = [torch.randn(n, v, generator=g).to(torch.bfloat16), torch.randint(0, v, (n,), generator=g)]
    for smoothing, expanded in ((False, False), (True, False), (False, True)):
        fd = _cross_entropy(n, v, smoothing, expanded)
        cf = compile_fusion(fd, xs)
        rules = [e.data.get("rule") for e in cf.trace.events]
        assert "gathers_first" in rules
        # Without the smoothing term (a sum of the whole log-softmax, another reduction), no
        # [n, v] float tensor passes between kernels: the look-up reads the logits.
        for s in cf.segments if not smoothing else []:
            for t in s.output_vals:
                shape = [i.extent.value for i in t.domain.logical if i.extent.is_const and not i.is_reduction]
                assert not (t.dtype == DataType.Float and v in shape), (s.id, t)
        torch.testing.assert_close(cf.run(xs, backend="emulate")[0], evaluate(fd.fusion, xs)[0],
                                   rtol=1e-5, atol=1e-4)


def test_take_along_axis_is_left_where_it_would_not_read_inputs() -> None:
    """A look-up whose table is made from random numbers (or from a reshape, a reduction)
    is left as written: taken first, a kernel would compute that table at the looked-up
    positions rather than read a buffer."""
    n, v = 4, 40
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[n, v], contiguity=[True, True], dtype=DataType.Float)
        labels = fd.define_tensor(shape=[n, 1], contiguity=[True, None], dtype=DataType.Int)
        r = fd.ops.uniform(fd.define_scalar(0.0), fd.define_scalar(1.0), shape=[n, v], dtype=DataType.Float)
        y = fd.ops.exp(fd.ops.mul(x, r))
        fd.add_output(fd.ops.take_along_axis(y, labels, 1))
        fd.add_output(fd.ops.take_along_axis(fd.ops.exp(x), labels, 1))
    g = torch.Generator().manual_seed(3)
    xs = [torch.randn(n, v, generator=g), torch.randint(0, v, (n, 1), generator=g)]
    cf = compile_fusion(fd, xs)
    moved = [e.data["ops"] for e in cf.trace.events if e.data.get("rule") == "gathers_first"]
    assert moved == [1]  # the exp of the input only
    torch.testing.assert_close(cf.run(xs, backend="emulate")[1], evaluate(fd.fusion, xs)[1])


def test_a_row_value_expanded_to_the_table_is_applied_unexpanded() -> None:
    """The row's max and log-sum-exp expanded to [rows, vocab] meet the looked-up [rows, 1]
    elements as the [rows, 1] broadcasts they expand; at a model size (where the look-up
    runs in a kernel of its own) the compile lowers every segment."""
    fd = _cross_entropy(2048, 32000, smoothing=False, expanded=True, dtype=DataType.Float)
    xs = [torch.empty(2048, 32000, dtype=torch.float32, device="meta"),
          torch.empty(2048, dtype=torch.int64, device="meta")]
    cf = compile_fusion(fd, xs)
    assert "gathers_first" in [e.data.get("rule") for e in cf.trace.events]
    assert len([s for s in cf.segments if s.is_kernel]) <= 2


def test_a_symbolic_reshape_is_planned_again_at_the_bound_sizes() -> None:
    """HF attention's softmax: [B, H, S, S] reshaped to [B * H, S, S] with sizes read from
    another input (symbols that are equal only at run time). Planned at definition, the
    reshape merged all four axes and split them again, which a reduction schedule cannot
    carry (two kernels); at the bound sizes it keeps S and S and merges B, H: one kernel."""
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1, -1, -1], contiguity=True, dtype=DataType.Half)
        bias = fd.define_tensor(shape=[-1, -1, -1, -1], contiguity=True, dtype=DataType.Half)
        y = fd.ops.add(fd.ops.cast(bias, dtype=DataType.Float), fd.ops.cast(x, dtype=DataType.Float))
        bh = fd.ops.mul(x.size(0), x.size(1))
        y = fd.ops.reshape(y, new_shape=[bh, x.size(2), x.size(3)])
        mx = fd.ops.max(y, dims=[2])
        row = [bh, x.size(2), 1]
        e = fd.ops.exp(fd.ops.sub(y, fd.ops.broadcast_in_dim(mx, shape=row, broadcast_dims=[0, 1])))
        s = fd.ops.broadcast_in_dim(fd.ops.sum(e, dims=[2]), shape=row, broadcast_dims=[0, 1])
        fd.add_output(fd.ops.cast(fd.ops.div(e, s), dtype=DataType.Half))
    g = torch.Generator().manual_seed(5)
    xs = [torch.randn(2, 3, 8, 8, generator=g).half(), torch.randn(2, 3, 8, 8, generator=g).half()]
    cf = compile_fusion(fd, xs)
    assert "replan_reshapes" in [e.data.get("rule") for e in cf.trace.events]
    assert [s.scheduler for s in cf.segments if s.is_kernel] == ["inner_persistent"]
    torch.testing.assert_close(cf.run(xs, backend="emulate")[0], evaluate(fd.fusion, xs)[0],
                               rtol=1e-3, atol=1e-3)
