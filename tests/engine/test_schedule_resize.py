"""The resize scheduler: nvFuser's acceptance rules and reasons for slice/pad/cat fusions,
ResizeParams, the schedule that moves resizes onto producers' loop domains, results,
determinism and trace events."""

from pathlib import Path

import pytest
import torch

from engine import DataType, FusionDefinition, load_fusion
from engine.ir.iterdomain import ParallelType, Resize
from engine.ir.verify import verify_fusion
from engine.schedule import registry
from engine.schedule.base import SchedulerType
from engine.schedule.resize import ResizeParams
from engine.schedule.runtime_info import SchedulerRuntimeInfo
from engine.trace import Trace
from tests.emulation import needs_gxx

SAMPLES = Path(__file__).resolve().parents[2] / "sample_fusions"
B, H, S, D = 2, 4, 16, 128


def verdict(fd, xs, kind=SchedulerType.resize):
    return registry.verdict(kind, fd.fusion, SchedulerRuntimeInfo(fd.fusion, xs))


def schedule(fd, xs, trace=None):
    info = SchedulerRuntimeInfo(fd.fusion, xs)
    s = registry.get("resize")
    p = s.compute_heuristics(fd.fusion, info, trace)
    s.schedule(fd.fusion, p, trace)
    return p


def rope_forward():
    """x * cos + rotate_half(x) * sin, rotate_half as two slices, a negation and a cat."""
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[B, H, S, D], contiguity=[True] * 4, dtype=DataType.BFloat16)
        cos = fd.define_tensor(shape=[1, 1, S, D], contiguity=[None, None, True, True],
                               dtype=DataType.BFloat16)
        sin = fd.define_tensor(shape=[1, 1, S, D], contiguity=[None, None, True, True],
                               dtype=DataType.BFloat16)
        x1 = fd.ops.slice(x, [0, 0, 0, 0], [B, H, S, D // 2])
        x2 = fd.ops.slice(x, [0, 0, 0, D // 2], [B, H, S, D])
        rot = fd.ops.cat([fd.ops.neg(fd.ops.cast(x2, DataType.Float)), fd.ops.cast(x1, DataType.Float)], dim=3)
        xf = fd.ops.cast(x, DataType.Float)
        y = fd.ops.add(fd.ops.mul(xf, fd.ops.cast(cos, DataType.Float)),
                       fd.ops.mul(rot, fd.ops.cast(sin, DataType.Float)))
        fd.add_output(fd.ops.cast(y, DataType.BFloat16))
    g = torch.Generator().manual_seed(0)
    xs = [torch.randn(B, H, S, D, generator=g).bfloat16(),
          torch.randn(1, 1, S, D, generator=g).bfloat16(),
          torch.randn(1, 1, S, D, generator=g).bfloat16()]
    return fd, xs


def cat_of_inputs(widths=(60, 4), dtype=DataType.BFloat16):
    with FusionDefinition() as fd:
        ts = [fd.define_tensor(shape=[64, w], contiguity=[True, True], dtype=dtype) for w in widths]
        fd.add_output(fd.ops.cat(ts, dim=1))
    xs = [torch.randn(64, w).to(torch.bfloat16 if dtype == DataType.BFloat16 else torch.float32)
          for w in widths]
    return fd, xs


def test_whole_rope_backward_is_refused_for_its_reductions():
    fd = load_fusion(SAMPLES / "seed003_rope_bwd_small.py")
    xs = fd.example_inputs()
    assert verdict(fd, xs).reason == "No support for reduction ops"
    assert verdict(fd, xs, SchedulerType.transpose).reason == "no support for reduction ops"


def test_rope_cat_segment_pads_a_broadcast_and_is_refused():
    # Seed 002's concat segment of the RoPE backward (q, k and v gradients on dim 2; k and v
    # are broadcast there): nvFuser gave it to the pointwise scheduler, the resize scheduler
    # refusing a resize of a broadcast ID.
    with FusionDefinition() as fd:
        q = fd.define_tensor(shape=[1, 8, 4, S, D], contiguity=[None, True, True, True, True],
                             dtype=DataType.BFloat16)
        k = fd.define_tensor(shape=[1, 8, 1, S, D], contiguity=[None, True, None, True, True],
                             dtype=DataType.BFloat16)
        v = fd.define_tensor(shape=[1, 8, 1, S, D], contiguity=[None, True, None, True, True],
                             dtype=DataType.BFloat16)
        c = fd.ops.cat([q, k, v], dim=2)
        fd.add_output(fd.ops.reshape(fd.ops.permute(c, [0, 3, 1, 2, 4]), [1, S, 8 * 6 * D]))
    xs = [torch.randn(1, 8, 4, S, D).bfloat16(), torch.randn(1, 8, 1, S, D).bfloat16(),
          torch.randn(1, 8, 1, S, D).bfloat16()]
    assert verdict(fd, xs).reason == "Resize of a broadcast ID is not allowed."


def test_rope_forward_goes_to_resize_with_its_params():
    fd, xs = rope_forward()
    trace = Trace()
    verdicts, first = registry.can_schedule(fd.fusion, SchedulerRuntimeInfo(fd.fusion, xs), trace)
    assert first == SchedulerType.resize
    assert str(next(v for v in verdicts if v.scheduler == SchedulerType.resize)) == \
        "Scheduler _resize_ ***accepted***"
    p = schedule(fd, xs, trace)
    assert isinstance(p, ResizeParams)
    # bf16, 128-element rows, slice/pad offsets of 64: 16 bytes -> 8 elements.
    assert (p.vectorization_factor, p.largest_input, p.split_grid_x_dim) == (8, 0, False)
    assert p.lparams.bdimx == 128
    assert str(p) == (
        "\n===== Resize Parameters ========\n"
        "Tag: Resize heuristics Resize Characteristics:\n"
        " split grid x dim: 0\n index of largest input: 0\n vectorization factor: 8\n"
        "====================================\n"
    )
    assert any("resize boundaries" in e.message for e in trace.of_kind("heuristic"))


def test_rope_forward_schedule_moves_resizes_and_inlines_across_them():
    fd, xs = rope_forward()
    before = fd.execute(xs)[0]
    schedule(fd, xs)
    f = fd.fusion
    verify_fusion(f)
    out = f.outputs[0]
    assert [i.parallel_type for i in out.domain.loop] == [
        ParallelType.grid_x, ParallelType.block_x, ParallelType.vectorize]
    assert [i.extent.value for i in out.domain.loop] == [B * H * S * D // 8 // 128, 128, 8]
    # The negation feeding the first pad iterates the padded extent (a loop-only Resize
    # with the pad's offsets) and is computed inside the pad's loop, past the block axes.
    pads = [e for e in f.exprs() if type(e).__name__ == "PadOp"]
    assert len(pads) == 2
    for pad in pads:
        producer = pad.inputs[0]
        assert producer not in f.inputs
        assert producer.compute_at_pos == producer.nloop
        assert any(isinstance(t, Resize) for t in _loop_history(producer))
    # Every computed tensor is inlined into its consumers beyond the grid and block axes.
    for t in f.tensors():
        if t not in f.inputs and t not in f.outputs:
            assert t.compute_at_pos >= 2, str(t)
    after = fd.execute(xs)[0]
    assert torch.equal(before, after)


def _loop_history(tv):
    from engine.ir.transform_replay import loop_transforms

    return loop_transforms(tv)


def test_cat_vectorization_divides_the_pad_offsets():
    fd, xs = cat_of_inputs((60, 4))
    assert verdict(fd, xs).accepted
    before = fd.execute(xs)[0]
    p = schedule(fd, xs)
    assert p.vectorization_factor == 4  # gcd of 60 and 4, within 8 bf16 elements
    verify_fusion(fd.fusion)
    assert torch.equal(fd.execute(xs)[0], torch.cat(xs, dim=1))
    assert torch.equal(fd.execute(xs)[0], before)
    fd2, xs2 = cat_of_inputs((64, 64))
    assert schedule(fd2, xs2).vectorization_factor == 8


def test_refusal_reasons():
    with FusionDefinition() as fd:
        a = fd.define_tensor(shape=[64, 64], dtype=DataType.Float)
        fd.add_output(fd.ops.add(a, a))
    xs = [torch.randn(64, 64)]
    assert verdict(fd, xs).reason == "No resize op to schedule"

    with FusionDefinition() as fd:
        a = fd.define_tensor(shape=[64, 64], dtype=DataType.Float)
        fd.add_output(fd.ops.sum(fd.ops.pad(a, [1, 1]), dims=[1]))
    assert verdict(fd, xs).reason == "No support for reduction ops"

    # nvFuser's own example of "Resize between reference and output not allowed": two
    # outputs made by different slices of one input. They meet only at the input, so each
    # is aligned with itself (engine.schedule.resize_components) and the verdict accepts.
    with FusionDefinition() as fd:
        a = fd.define_tensor(shape=[64], dtype=DataType.Float)
        fd.add_output(fd.ops.slice(a, [0], [32]))
        fd.add_output(fd.ops.slice(a, [32], [64]))
    assert verdict(fd, [torch.randn(64)]).accepted

    # A pad then a transpose: the inner dims of input and output differ.
    with FusionDefinition() as fd:
        a = fd.define_tensor(shape=[64, 64], dtype=DataType.Float)
        fd.add_output(fd.ops.permute(fd.ops.pad(a, [0, 0, 2, 2]), [1, 0]))
    assert verdict(fd, xs).reason == "Transpose-like patterns not supported."

    # A transpose inside the fusion (a de-interleave: pairs split off the inner axis and
    # moved outward) reads its input at a stride: refused too, though every input and
    # output shares one inner dim.
    with FusionDefinition() as fd:
        a = fd.define_tensor(shape=[64, 96], dtype=DataType.Float)
        rot = fd.ops.slice(a, [0, 32], [64, 96])
        d = fd.ops.reshape(fd.ops.permute(fd.ops.reshape(rot, [64, 32, 2]), [0, 2, 1]), [64, 64])
        fd.add_output(fd.ops.cat([fd.ops.slice(a, [0, 0], [64, 32]), d], dim=1))
    assert verdict(fd, [torch.randn(64, 96)]).reason.endswith("permutes the innermost axis")


def test_an_intermediate_read_by_a_slice_and_a_pointwise_op_is_recomputed():
    # nvFuser's RecomputeTv: the slice gets its own copy of the product, so that the
    # copy can iterate the sliced range while the original feeds the add.
    with FusionDefinition() as fd:
        a = fd.define_tensor(shape=[64, 64], dtype=DataType.Float)
        y = fd.ops.mul(a, a)
        s = fd.ops.pad(fd.ops.slice(y, [0, 0], [64, 32]), [0, 32])
        fd.add_output(fd.ops.add(s, y))
    x = [torch.randn(64, 64)]
    v = verdict(fd, x)
    assert v.accepted
    n_exprs = len(fd.fusion.exprs())  # the verdict did not change the fusion
    before = fd.execute(x)[0]
    trace = Trace()
    schedule(fd, x, trace)
    f = fd.fusion
    verify_fusion(f)
    muls = [e for e in f.exprs() if getattr(e, "op", None) == "mul"]
    assert len(muls) == 2 and len(f.exprs()) > n_exprs
    assert any("recomputes" in e.message for e in trace.of_kind("transform"))
    for t in f.tensors():
        if t not in f.inputs and t not in f.outputs:
            assert t.compute_at_pos >= 2, str(t)
    assert torch.equal(fd.execute(x)[0], before)


def test_a_shared_pad_is_recomputed_and_matches_the_reference():
    # The shared tensor is a pad (its output has a root domain): its copy replays the
    # Resize between its root and logical domains.
    with FusionDefinition() as fd:
        a = fd.define_tensor(shape=[64, 64], dtype=DataType.Float)
        y = fd.ops.pad(a, [1, 1])
        s = fd.ops.pad(fd.ops.slice(y, [0, 0], [64, 33]), [0, 33])
        fd.add_output(fd.ops.add(s, y))
    xs = [torch.randn(64, 64)]
    assert verdict(fd, xs).accepted
    _emulates_as_one_resize_kernel(fd, xs)


def test_a_shared_cat_is_recomputed():
    # A cat read by a slice and by a pointwise op (Swin's roll: a cat sliced again) gets a
    # copy for the slice, as pads do.
    with FusionDefinition() as fd:
        a = fd.define_tensor(shape=[64, 64], dtype=DataType.Float)
        y = fd.ops.cat([a, a], dim=1)
        s = fd.ops.pad(fd.ops.slice(y, [0, 0], [64, 64]), [0, 64])
        fd.add_output(fd.ops.add(s, y))
    xs = [torch.randn(64, 64)]
    assert verdict(fd, xs).accepted
    _emulates_as_one_resize_kernel(fd, xs)


def test_what_cannot_be_recomputed_is_refused_with_the_engines_reason():
    # The shared tensor is a select: not recomputed here.
    with FusionDefinition() as fd:
        a = fd.define_tensor(shape=[8, 64, 64], dtype=DataType.Float)
        y = fd.ops.select(a, fd.define_scalar(3, dtype=DataType.Int), 0)
        s = fd.ops.pad(fd.ops.slice(y, [0, 0], [64, 32]), [0, 32])
        fd.add_output(fd.ops.add(s, y))
    v = verdict(fd, [torch.randn(8, 64, 64)])
    assert not v.accepted
    assert "needed under different resizes" in v.reason
    assert "recomputing a resize input is supported for pointwise" in v.reason


def _emulates_as_one_resize_kernel(fd, xs):
    from engine.compile import compile_fusion
    from engine.reference import evaluate

    cf = compile_fusion(fd, xs)
    assert [s.scheduler for s in cf.segments if s.is_kernel] == [SchedulerType.resize.value]
    for out, ref in zip(cf.run(xs, backend="emulate"), evaluate(fd.fusion, xs)):
        torch.testing.assert_close(out, ref)


def test_rope_backward_q_segment_goes_to_resize():
    # Seed 003's q-gradient segment up to the reshape: dq * sin through rotate_half's
    # backward (two slices of one product, a negation, two pads) plus dq * cos.
    with FusionDefinition() as fd:
        cos = fd.define_tensor(shape=[1, S, D], contiguity=[None, True, True], dtype=DataType.BFloat16)
        dq = fd.define_tensor(shape=[1, 32, S, D], contiguity=[None, True, True, True],
                              dtype=DataType.BFloat16)
        sin = fd.define_tensor(shape=[1, S, D], contiguity=[None, True, True], dtype=DataType.BFloat16)
        c4 = fd.ops.broadcast_in_dim(cos, shape=[1, 32, S, D], broadcast_dims=[0, 2, 3])
        s5 = fd.ops.broadcast_in_dim(sin, shape=[1, 32, S, D], broadcast_dims=[0, 2, 3])
        t9 = fd.ops.cast(dq, DataType.Float)
        t12 = fd.ops.cast(fd.ops.mul(t9, fd.ops.cast(s5, DataType.Float)), DataType.BFloat16)
        t14 = fd.ops.pad(fd.ops.slice(t12, [0, 0, 0, 64], [1, 32, S, D]), [0, 64, 0, 0, 0, 0, 0, 0])
        t15 = fd.ops.slice(t12, [0, 0, 0, 0], [1, 32, S, 64])
        t18 = fd.ops.cast(fd.ops.neg(fd.ops.cast(t15, DataType.Float)), DataType.BFloat16)
        t19 = fd.ops.pad(t18, [64, 0, 0, 0, 0, 0, 0, 0])
        t22 = fd.ops.add(fd.ops.cast(t14, DataType.Float), fd.ops.cast(t19, DataType.Float))
        t25 = fd.ops.add(fd.ops.mul(t9, fd.ops.cast(c4, DataType.Float)), t22)
        fd.add_output(fd.ops.cast(t25, DataType.BFloat16))
    g = torch.Generator().manual_seed(3)
    xs = [torch.randn(1, S, D, generator=g).bfloat16(), torch.randn(1, 32, S, D, generator=g).bfloat16(),
          torch.randn(1, S, D, generator=g).bfloat16()]
    verdicts, first = registry.can_schedule(fd.fusion, SchedulerRuntimeInfo(fd.fusion, xs))
    assert first == SchedulerType.resize
    before = fd.execute(xs)[0]
    p = schedule(fd, xs)
    assert p.vectorization_factor == 8
    verify_fusion(fd.fusion)
    for t in fd.fusion.tensors():
        if t not in fd.fusion.inputs and t not in fd.fusion.outputs:
            assert t.compute_at_pos >= 2, str(t)
    assert torch.equal(fd.execute(xs)[0], before)


@pytest.mark.parametrize("make", [rope_forward, cat_of_inputs])
def test_scheduling_is_deterministic_and_traced(make):
    texts, params, traces = [], [], []
    for _ in range(2):
        fd, xs = make()
        trace = Trace()
        params.append(schedule(fd, xs, trace))
        texts.append(str(fd.fusion))
        traces.append([str(e) for e in trace])
    assert texts[0] == texts[1] and params[0] == params[1] and traces[0] == traces[1]
    assert params[0].derivation
    assert any("aligned with the reference" in m for m in traces[0])


def test_expanded_broadcast_and_a_twice_read_input_are_scheduled_and_inlined():
    # The seed-003 pattern: cos broadcast and expanded over the heads; the gradient read
    # twice (a pointwise product and a slice), which need it shifted differently: one
    # cache (a vectorized copy) per reader.
    with FusionDefinition() as fd:
        c = fd.define_tensor(shape=[1, S, D], contiguity=[None, True, True], dtype=DataType.BFloat16)
        x = fd.define_tensor(shape=[1, 32, S, D], contiguity=[None, True, True, True],
                             dtype=DataType.BFloat16)
        cb = fd.ops.broadcast_in_dim(c, shape=[1, 32, S, D], broadcast_dims=[0, 2, 3])
        m = fd.ops.mul(fd.ops.cast(x, DataType.Float), fd.ops.cast(cb, DataType.Float))
        h = fd.ops.slice(fd.ops.cast(x, DataType.Float), [0, 0, 0, 64], [1, 32, S, D])
        p = fd.ops.pad(fd.ops.neg(h), [0, 64, 0, 0, 0, 0, 0, 0])
        fd.add_output(fd.ops.cast(fd.ops.add(m, p), DataType.BFloat16))
    xs = [torch.randn(1, S, D).bfloat16(), torch.randn(1, 32, S, D).bfloat16()]
    assert verdict(fd, xs).accepted
    before = fd.execute(xs)[0]
    p = schedule(fd, xs)
    assert p.vectorization_factor == 8
    f = fd.fusion
    verify_fusion(f)
    x_in = f.inputs[1]
    caches = f.uses_of(x_in)
    assert len(caches) == 2 and all(type(e).__name__ == "LoadStoreOp" for e in caches)
    assert all(len(f.uses_of(e.outputs[0])) == 1 for e in caches)
    assert all(any(i.parallel_type.name == "vectorize" for i in e.outputs[0].domain.loop) for e in caches)
    for t in f.tensors():
        if t not in f.inputs and t not in f.outputs:
            assert t.compute_at_pos >= 2, str(t)
    assert torch.equal(fd.execute(xs)[0], before)


def test_a_broadcast_meeting_two_sizes_is_refused():
    with FusionDefinition() as fd:
        b = fd.define_tensor(shape=[1], contiguity=[None], dtype=DataType.Float)
        x = fd.define_tensor(shape=[64], dtype=DataType.Float)
        y = fd.define_tensor(shape=[32], dtype=DataType.Float)
        fd.add_output(fd.ops.pad(fd.ops.add(x, b), [2, 2]))
        fd.add_output(fd.ops.add(y, b))
    v = verdict(fd, [torch.randn(1), torch.randn(64), torch.randn(32)])
    assert v.reason == "Broadcasting dimension might be broadcasting to multiple sizes."


def test_user_schedule_through_fd_sched():
    fd, xs = cat_of_inputs((60, 4))
    assert fd.sched.can_schedule("resize", xs) == (True, "")
    assert SchedulerType.resize in fd.sched.find_compatible_schedulers(xs)
    fd.sched.schedule("resize", xs)
    verify_fusion(fd.fusion)
    assert torch.equal(fd.execute(xs)[0], torch.cat(xs, dim=1))


@needs_gxx
@pytest.mark.parametrize("widths", [(128, 8, 8), (8, 8, 8, 3)])
def test_a_cat_of_three_or_more_symbolic_extents_is_one_resize_kernel(widths):
    """Each input of a cat is padded to the output's extent: the first to i0 + (i3 + i5), the
    others to (i0 + i3) + i5. Integer sums equal in any grouping map the cat axis of every
    padded input to the output's (no scheduler accepted the lone cat before)."""
    from engine.compile import compile_fusion
    from engine.reference import evaluate

    with FusionDefinition() as fd:
        ts = [fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.BFloat16)
              for _ in widths]
        fd.add_output(fd.ops.cat(ts, dim=1))
    xs = [torch.randn(40, w).to(torch.bfloat16) for w in widths]
    cf = compile_fusion(fd, xs)
    assert [s.scheduler for s in cf.segments] == ["resize"]
    assert torch.equal(cf.run(xs, backend="emulate")[0], evaluate(fd.fusion, xs)[0])


@needs_gxx
def test_an_output_apart_from_the_reference_is_scheduled_too():
    """full([5]) sliced twice into two outputs, no inputs (full_slice_cast_no_inputs): the
    `full` is made private to each slice, which leaves the second output in a component of
    its own that the reference's alignment never reaches. It kept an unscheduled loop over
    its 3 elements run by each of the block's 128 threads; it is aligned with itself now
    and bound to [BIDx, TIDx] like the reference."""
    import re

    from engine import compile_fusion
    from engine.reference import evaluate

    with FusionDefinition() as fd:
        one = fd.define_scalar(1.0, dtype=DataType.Double)
        t = fd.ops.full(shape=[5], fill_value=one, dtype=DataType.Float)
        fd.add_output(fd.ops.cast(fd.ops.slice(t, [0], [2], [1]), DataType.Half))
        fd.add_output(fd.ops.cast(fd.ops.slice(t, [2], [5], [1]), DataType.Half))
    cf = compile_fusion(fd, [])
    (seg,) = cf.segments
    assert seg.scheduler == "resize"
    body = seg.cuda_source.split('extern "C"')[-1]
    assert not re.findall(r"for \(nvfuser_index_t \w+ = 0; \w+ < \d+;", body), body
    for o, r in zip(cf.run([], backend="emulate"), evaluate(fd.fusion, [])):
        assert torch.equal(o, r)
