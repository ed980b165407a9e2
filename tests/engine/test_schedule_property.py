"""Property: any sequence of scheduling primitives on a small fusion either is refused
with ScheduleError, leaving every tensor as it was, or leaves a fusion that verifies;
and scheduling never changes what the reference evaluator computes."""

from pathlib import Path

import pytest
import torch
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from engine import DataType, FusionDefinition, MemoryType, ParallelType, ScheduleError
from engine.ir.printer import transforms_block
from engine.ir.verify import verify_fusion
from tests.multidevice.samples import single_device


def build(kind: int, rank: int, sizes: list[int]):
    """One of a few fusion shapes: pointwise, reduction, normalization, broadcast/squeeze,
    and (static shapes) permute/reshape/pad and cat/slice, whose consumers have root domains."""
    fd = FusionDefinition()
    with fd:
        static = kind >= 4
        t0 = fd.define_tensor(shape=sizes[:rank] if static else [-1] * rank, dtype=DataType.Float)
        if kind == 4:
            t1 = fd.ops.permute(t0, list(range(rank))[::-1])
            t2 = fd.ops.exp(t1)
            n = 1
            for k in sizes[:rank]:
                n *= k
            t3 = fd.ops.reshape(t2, [n])
            fd.add_output(fd.ops.pad(t3, [1, 2]))
            fd.add_output(fd.ops.sum(t2, dims=[0]))
        elif kind == 5:
            t1 = fd.ops.cat([t0, fd.ops.neg(t0)], dim=rank - 1)
            ends = list(sizes[:rank])
            t2 = fd.ops.slice(t1, [0] * rank, ends)
            fd.add_output(fd.ops.mul(t2, t0))
            fd.add_output(fd.ops.sum(t1, dims=[rank - 1]))
        elif kind == 0:
            t1 = fd.ops.exp(t0)
            t2 = fd.ops.mul(t1, t0)
            fd.add_output(fd.ops.neg(t2))
        elif kind == 1:
            t1 = fd.ops.relu(t0)
            fd.add_output(fd.ops.sum(t1, dims=list(range(1, rank))))
        elif kind == 2:
            t1 = fd.ops.exp(t0)
            t2 = fd.ops.sum(t1, dims=[rank - 1])
            t3 = fd.ops.broadcast(t2, [False] * (rank - 1) + [True])
            t4 = fd.ops.sub(t1, t3)
            fd.add_output(t4)
            fd.add_output(t1)
        else:
            t1 = fd.ops.broadcast(t0, [True] + [False] * rank)
            t2 = fd.ops.squeeze(t1, [0])
            t3 = fd.ops.max(t2, dims=[0])
            fd.add_output(t3)
            fd.add_output(fd.ops.sin(t2))
    return fd


def snapshot(fd) -> str:
    parts = [str(fd.fusion)]
    for t in fd.fusion.tensors():
        parts.append(f"{transforms_block(t)} {t.memory_type} {t.compute_at_pos} {t.max_producer_pos}")
    return "\n".join(parts)


PTYPES = [ParallelType.grid_x, ParallelType.block_x, ParallelType.unroll, ParallelType.vectorize,
          ParallelType.serial]


def step(data, fd) -> str:
    """Apply one randomly drawn primitive through fd.sched; return its name."""
    s = fd.sched
    tvs = s.tensors()
    op = data.draw(st.sampled_from([
        "split", "split", "merge", "reorder", "parallelize", "cache_after", "cache_before",
        "cache_fork", "rfactor", "rfactor", "inline_at", "inline_most", "transform_like",
        "parallelize_like", "set_allocation_as_loop", "set_memory_type", "compute_at",
    ]))
    reductions = [t for t in tvs if s.is_reduction(t)]
    # rfactor mostly on reductions, so that it is exercised and not only refused.
    tv = data.draw(st.sampled_from(reductions if op == "rfactor" and reductions else tvs))
    # Mostly in-range axes, sometimes out of range or negative.
    ax = data.draw(st.one_of(st.integers(0, max(tv.nloop - 1, 0)), st.integers(-2, 4)))
    if op == "split":
        s.split(tv, ax, data.draw(st.integers(1, 5)), data.draw(st.booleans()))
    elif op == "merge":
        s.merge(tv, ax)
    elif op == "reorder":
        s.reorder(tv, {ax: data.draw(st.integers(-2, 4))})
    elif op == "parallelize":
        s.parallelize(tv, ax, data.draw(st.sampled_from(PTYPES)))
    elif op == "cache_after":
        s.cache_after(tv)
    elif op == "cache_before":
        s.cache_before(tv)
    elif op == "cache_fork":
        s.cache_fork(tv)
    elif op == "rfactor":
        s.rfactor(tv, [ax])
    elif op == "inline_at":
        s.inline_at(tv, ax, best_effort=data.draw(st.booleans()), selected_tensors=[tv])
    elif op == "inline_most":
        s.inline_most()
    elif op == "transform_like":
        s.transform_like(tv)
    elif op == "parallelize_like":
        s.parallelize_like(tv)
    elif op == "set_allocation_as_loop":
        s.set_allocation_as_loop(tv)
    elif op == "set_memory_type":
        s.set_memory_type(tv, data.draw(st.sampled_from([MemoryType.Local, MemoryType.Shared])))
    elif op == "compute_at":
        consumers = [u.output for u in fd.fusion.uses_of(tv)]
        if consumers:
            tv.compute_at(consumers[0], ax, best_effort=data.draw(st.booleans()))
    return op


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), kind=st.integers(0, 5), rank=st.integers(2, 3),
       sizes=st.lists(st.integers(1, 6), min_size=3, max_size=3), seed=st.integers(0, 2**16))
def test_random_schedules_are_valid_or_refused_and_keep_results(data, kind, rank, sizes, seed):
    fd = build(kind, rank, sizes)
    x = torch.randn(*sizes[:rank], generator=torch.Generator().manual_seed(seed))
    before = fd.execute([x])
    verify_fusion(fd.fusion)
    refused = 0
    for _ in range(data.draw(st.integers(1, 16))):
        state = snapshot(fd)
        ncalls = len(fd.sched.calls)
        try:
            op = step(data, fd)
        except ScheduleError as e:
            refused += 1
            event(f"refused: {str(e).split(':')[1].strip()[:40]}")
            assert snapshot(fd) == state, "a refused primitive changed the fusion"
            assert len(fd.sched.calls) == ncalls, "a refused call was recorded"
            continue
        verify_fusion(fd.fusion)
        event(f"applied {op}")
    after = fd.execute([laid_out_as(fd.fusion.inputs[0], x)])
    assert len(after) == len(before)
    for a, b in zip(before, after):
        torch.testing.assert_close(a, b)


def laid_out_as(tv, x: torch.Tensor) -> torch.Tensor:
    """`x` in the layout input `tv`'s allocation domain asks for now: a schedule may set an
    input's allocation (set_allocation_as_loop after a reorder), which is the layout the
    fusion then expects of that input, as in nvFuser."""
    logical = [i for i in tv.domain.logical if not i.is_reduction]
    alloc = [i for i in tv.domain.maybe_allocation if not i.is_reduction]
    if sorted(map(id, alloc)) != sorted(map(id, logical)):
        return x  # not a permutation: no layout is checked
    perm = [logical.index(i) for i in alloc]
    return x.permute(perm).contiguous().permute(sorted(range(len(perm)), key=perm.__getitem__))


# ---- the bundled samples: a reference schedule propagated over real fusions ----------------------

# The multi-device samples are left out: fd.execute runs them on every rank of a process group
# (tests/multidevice/test_multidevice_samples.py does), and their device axes are not scheduled.
_ALL = single_device(sorted((Path(__file__).resolve().parents[2] / "sample_fusions").glob("*.py")))
# A sample with a `_small` variant is the same fusion at full size: the small one is enough.
SAMPLES = [p for p in _ALL if p.with_name(p.stem + "_small.py") not in _ALL]


def same_values(a: torch.Tensor, b: torch.Tensor) -> bool:
    if a.dtype in (torch.float64, torch.float32, torch.float16, torch.bfloat16):
        return torch.allclose(a, b, equal_nan=True)
    if a.element_size() == 1 and a.dtype not in (torch.bool, torch.uint8, torch.int8):
        return torch.equal(a.view(torch.uint8), b.view(torch.uint8))  # fp8 / packed fp4
    return torch.equal(a, b)


@pytest.mark.parametrize("path", SAMPLES, ids=lambda p: p.stem)
def test_samples_scheduled_like_their_last_output_keep_results(path):
    from engine.frontend.pyformat import load_fusion
    from engine.ir.tensorview import TensorView

    fd = load_fusion(path)
    if not fd.input_specs:
        pytest.skip("sample has no example inputs")
    xs = fd.example_inputs(seed=0)
    before = fd.execute(xs)
    verify_fusion(fd.fusion)
    tensors = [o for o in fd.fusion.outputs if isinstance(o, TensorView) and o.nloop]
    if not tensors:
        pytest.skip("no output with a loop to schedule")
    ref = tensors[-1]
    fd.sched.split(ref, 0, 2)
    if ref.nloop >= 3 and ref.domain.loop[1].is_reduction == ref.domain.loop[2].is_reduction:
        fd.sched.merge(ref, 1)
    fd.sched.transform_like(ref)
    fd.sched.parallelize(ref, 0, ParallelType.grid_x)
    fd.sched.parallelize_like(ref)
    fd.sched.inline_most()
    verify_fusion(fd.fusion)
    assert ref.domain.loop[0].parallel_type == ParallelType.grid_x
    after = fd.execute(xs)
    assert all(same_values(a, b) for a, b in zip(before, after))
