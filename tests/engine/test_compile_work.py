"""compile_fusion works from shapes, strides and dtypes: it runs no reference evaluation, draws
no random numbers and makes no torch op on a tensor that holds data, so compiling a fusion at
64 times the sizes does the same work as at its own sizes.

Each fusion is compiled at M rows and at 64 M rows (the other sizes kept, so that every
heuristic makes the same choices) and the tests count: calls into the reference evaluator
(its entry points and every op rule) and into Philox, which must be none; torch ops on
tensors that are not meta tensors, which must be none either (an input's sizes, strides and
address are read without one); and Python calls into the engine, which must be as many at
both sizes, with the same segments and kernel IR of the same length.
"""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from engine import (
    DataType,
    FusionDefinition,
    compile_fusion,
    compile_stages,
    fusion_cache,
    load_fusion,
    philox,
    reference,
)
from engine.compile import _execute
from engine.compile_stages import schedule_segment
from engine.errors import ExecutionError
from engine.segment import graph
from tests.emulation import needs_gxx

Build = Callable[[int], tuple[FusionDefinition, list[Any]]]


def _dropout(m: int) -> tuple[FusionDefinition, list[Any]]:
    """A pointwise fusion with a uniform draw: y = where(u < 0.9, x, 0) / 0.9."""
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
        seed = fd.define_scalar(None, dtype=DataType.Int)
        offset = fd.define_scalar(None, dtype=DataType.Int)
        u = fd.ops.uniform(0.0, 1.0, shape=[m, 256], rng_seed=seed, rng_offset=offset, dtype=DataType.Float)
        y = fd.ops.where(fd.ops.lt(u, 0.9), t0, 0.0)
        fd.add_output(fd.ops.mul(y, 1 / 0.9))
    return fd, [torch.randn(m, 256), 1234, 5]


def _layer_norm_dropout(m: int) -> tuple[FusionDefinition, list[Any]]:
    """The reported fusion, smaller: a half LayerNorm forward followed by uniform dropout."""
    n = 512
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Half)
        w = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Half)
        x = fd.ops.cast(t0, dtype=DataType.Float)
        var, mean = fd.ops.var_mean(x, dims=[1], correction=0, keepdim=False)
        rstd = fd.ops.rsqrt(fd.ops.add(var, 1e-5))
        y = fd.ops.mul(fd.ops.sub(x, fd.ops.broadcast_in_dim(mean, shape=[m, n], broadcast_dims=[0])),
                       fd.ops.broadcast_in_dim(rstd, shape=[m, n], broadcast_dims=[0]))
        wb = fd.ops.broadcast_in_dim(fd.ops.cast(w, dtype=DataType.Float), shape=[m, n], broadcast_dims=[1])
        y = fd.ops.mul(y, wb)
        u = fd.ops.uniform(0.0, 1.0, shape=[m, n], dtype=DataType.Float)
        y = fd.ops.mul(fd.ops.where(fd.ops.lt(u, 0.9), y, 0.0), 1 / 0.9)
        fd.add_output(fd.ops.cast(y, dtype=DataType.Half))
    return fd, [torch.randn(m, n, dtype=torch.half), torch.randn(n, dtype=torch.half)]


def _reduction(m: int) -> tuple[FusionDefinition, list[Any]]:
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.BFloat16)
        s = fd.ops.sum(fd.ops.cast(t0, dtype=DataType.Float), dims=[1])
        fd.add_output(s)
    return fd, [torch.randn(m, 1024, dtype=torch.bfloat16)]


def _rotate_half_cat(m: int) -> tuple[FusionDefinition, list[Any]]:
    """RoPE's rotate-half: cat(-x[:, 64:], x[:, :64]) * sin + x * cos (slices, pad, cat)."""
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.BFloat16)
        cos = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.BFloat16)
        sin = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.BFloat16)
        lo = fd.ops.slice(x, start_indices=[0, 0], end_indices=[m, 64])
        hi = fd.ops.slice(x, start_indices=[0, 64], end_indices=[m, 128])
        rot = fd.ops.cat([fd.ops.neg(fd.ops.cast(hi, dtype=DataType.Float)),
                          fd.ops.cast(lo, dtype=DataType.Float)], dim=1)
        out = fd.ops.add(fd.ops.mul(fd.ops.cast(x, dtype=DataType.Float), fd.ops.cast(cos, dtype=DataType.Float)),
                         fd.ops.mul(rot, fd.ops.cast(sin, dtype=DataType.Float)))
        fd.add_output(fd.ops.cast(out, dtype=DataType.BFloat16))
    return fd, [torch.randn(m, 128, dtype=torch.bfloat16) for _ in range(3)]


FUSIONS: dict[str, Build] = {
    "uniform_dropout": _dropout,
    "layer_norm_dropout": _layer_norm_dropout,
    "reduction": _reduction,
    "rotate_half_cat": _rotate_half_cat,
}


class _DataOps(TorchDispatchMode):
    """Records every torch op that reads or makes a tensor holding data (not a meta tensor)."""

    def __init__(self) -> None:
        super().__init__()
        self.ops: Counter[str] = Counter()

    def __torch_dispatch__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        out = func(*args, **(kwargs or {}))
        leaves = torch.utils._pytree.tree_leaves((args, kwargs, out))
        if any(isinstance(t, torch.Tensor) and not t.is_meta for t in leaves):
            self.ops[str(func)] += 1
        return out


def _counting(calls: Counter[str], name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    def counted(*args: Any, **kwargs: Any) -> Any:
        calls[name] += 1
        return fn(*args, **kwargs)

    return counted


@pytest.fixture
def evaluations(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """Calls into the reference evaluator and Philox, by name, while the test runs."""
    calls: Counter[str] = Counter()
    for module, name in ((reference, "evaluate"), (graph, "_evaluate_segment"),
                         (philox, "philox"), (philox, "draw")):
        monkeypatch.setattr(module, name, _counting(calls, f"{module.__name__}.{name}", getattr(module, name)))
    for cls, rule in list(reference.HANDLERS.items()):
        monkeypatch.setitem(reference.HANDLERS, cls, _counting(calls, f"rule for {cls.__name__}", rule))
    return calls


def _compile_counted(build: Build, m: int) -> tuple[Any, int, Counter[str]]:
    """The compiled fusion, the number of Python calls into the engine and the torch ops on
    data tensors made while compiling `build(m)`."""
    fd, xs = build(m)
    fusion_cache.clear()
    engine_calls = 0

    def profile(frame: Any, event: str, arg: Any) -> None:
        nonlocal engine_calls
        if event == "call" and frame.f_globals.get("__name__", "").startswith("engine"):
            engine_calls += 1

    data_ops = _DataOps()
    old = sys.getprofile()
    sys.setprofile(profile)
    try:
        with data_ops:
            cf = compile_fusion(fd, xs)
    finally:
        sys.setprofile(old)
    return cf, engine_calls, data_ops.ops


@pytest.mark.parametrize("name", FUSIONS)
def test_compile_evaluates_nothing_and_does_the_same_work_at_64x(name: str, evaluations: Counter[str]) -> None:
    build = FUSIONS[name]
    rows = 256  # enough that the heuristics pick the same shapes at both sizes (vectors, rows per block)
    # Compiled once at each size first, so that first-use work (imports, lazily built tables)
    # is not counted; every compile counts towards the evaluations and data ops.
    runs = [_compile_counted(build, m) for m in (rows, 64 * rows, rows, 64 * rows)]
    (small, small_calls, _), (large, large_calls, _) = runs[2:]
    assert not evaluations, f"compile evaluated: {dict(evaluations)}"
    data_ops = sum((ops for _, _, ops in runs), Counter())
    assert not data_ops, f"torch ops on tensors holding data: {dict(data_ops)}"
    assert [s.scheduler for s in large.segments] == [s.scheduler for s in small.segments]
    assert [len((s.kernel_ir or "").splitlines()) for s in large.segments] == \
        [len((s.kernel_ir or "").splitlines()) for s in small.segments]
    assert large_calls == small_calls


def test_the_compiled_fusion_still_runs_and_matches_the_reference() -> None:
    """The same compiled fusions run on the reference back end (where Philox is drawn, at
    run time) and agree with evaluating the definition (a scheduled reduction sums in the
    kernel's partial sums, so its last bits may differ)."""
    for build in FUSIONS.values():
        fd, xs = build(8)
        cf = compile_fusion(fd, xs)
        got = cf.run(xs, backend="reference")
        want = reference.evaluate(fd.fusion, xs)
        for a, b in zip(got, want):
            torch.testing.assert_close(a, b)


def test_a_walk_of_the_segments_gives_each_its_arguments_and_the_outputs() -> None:
    """cf.walk: the segments in order, each with the fusion's inputs and what the segments
    before it produced; run here by hand on the reference, the outputs are cf.run's. Two
    walks go in step (fusescope's Run tab runs a back end and the reference so)."""
    for build in FUSIONS.values():
        fd, xs = build(8)
        cf = compile_fusion(fd, xs)
        a, b = cf.walk(xs), cf.walk(xs)
        seen = []
        for (seg, args), (seg_b, args_b) in zip(a, b):
            assert seg is seg_b and len(args) == len(args_b) == len(seg.input_vals)
            seen.append(seg.id)
            outs = seg.run(args, "reference")
            a.put(seg, outs)
            b.put(seg_b, outs)
        assert seen == [s.id for s in cf.segments]
        for x, y in zip(a.outputs(), cf.run(xs, backend="reference")):
            torch.testing.assert_close(x, y)
    fd, xs = next(iter(FUSIONS.values()))(8)
    walk = compile_fusion(fd, xs).walk(xs)
    with pytest.raises(ExecutionError, match="no segment produced it"):
        walk.outputs()


def test_the_counters_see_an_evaluation(evaluations: Counter[str]) -> None:
    """The instruments themselves: evaluating a fusion with a draw is counted."""
    fd, xs = _dropout(4)
    reference.evaluate(fd.fusion, xs)
    assert evaluations["engine.reference.evaluate"] == 1 and evaluations["engine.philox.draw"] == 1
    assert evaluations["rule for RNGOp"] == 1


@needs_gxx
@pytest.mark.parametrize("path", [
    "tests/regressions/fusions/constant_strides_only_for_user_inputs.py",  # kernel -> kernel, expanded axis
    "tests/regressions/fusions/cat_unsigned_index_subtraction.py",  # kernel -> expr_eval
    "sample_fusions/seed003_rope_bwd_small.py",  # expr_eval <-> kernels
])
def test_tensors_between_segments_have_the_layouts_compile_assumed(path: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Compile lays out a tensor that one segment passes to another from shapes alone; the
    run (emulated kernels, torch for the other segments) passes it with those sizes and
    strides."""
    assumed: dict[int, list[Any]] = {}

    def recording(seg: Any, args: list[Any], *rest: Any) -> Any:
        assumed[seg.id] = [_layout(a) for a in args]
        return schedule_segment(seg, args, *rest)

    monkeypatch.setattr(compile_stages, "schedule_segment", recording)
    fd = load_fusion(path)
    xs = fd.example_inputs(device="cpu", seed=0)
    cf = compile_fusion(fd, xs)
    assert len(cf.segments) > 1
    seen: list[str] = []

    def check(seg: Any, args: list[Any]) -> None:
        for k, (v, a) in enumerate(zip(seg.input_vals, args)):
            if k in seg.user_inputs or not isinstance(a, torch.Tensor):
                continue
            assert _layout(a) == assumed[seg.id][k], f"segment {seg.id} input {v.short_name}"
            seen.append(v.short_name)

    _execute(cf, xs, "emulate", check)
    assert seen


def _layout(x: Any) -> Any:
    return (tuple(x.shape), x.stride(), x.dtype) if isinstance(x, torch.Tensor) else x


def test_the_kernels_vectorize_as_far_as_the_inputs_alignment_allows() -> None:
    """The fusion's inputs are read as given (not as meta copies, whose address reads as 0):
    an input 8 bytes past a 16-byte boundary limits float accesses to pairs."""
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
        fd.add_output(fd.ops.mul(t0, t0))
    storage = torch.randn(256 * 256 + 4)
    for offset, factor in ((0, 4), (2, 2), (1, 1)):
        x = storage[offset : offset + 256 * 256].view(256, 256)
        assert x.data_ptr() % 16 == 4 * offset
        (seg,) = compile_fusion(fd, [x]).segments
        assert seg.params.vectorization_factor == factor


def test_size_rules_refuse_at_compile_from_sizes_alone(evaluations: Counter[str]) -> None:
    """What the reference refuses at run time for these sizes, the compile refuses with the
    same message, without evaluating anything."""
    from engine.errors import ExecutionError

    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1, -1], dtype=DataType.Float)
        fd.add_output(fd.ops.reshape(t0, [4, 6]))
    why = r"reshape of T0: \[4, 4\] has 16 elements, the new shape \[4, 6\] has 24"
    with pytest.raises(ExecutionError, match=why):
        compile_fusion(fd, [torch.randn(4, 4)])
    assert not evaluations
    with pytest.raises(ExecutionError, match=why):
        reference.evaluate(fd.fusion, [torch.randn(4, 4)])


def test_loading_a_file_whose_schedule_asks_the_heuristics_touches_no_data() -> None:
    """fd.sched's automatic schedulers read the sizes of the file's `inputs` list, as meta
    tensors: loading a file that schedules itself makes no tensor holding data."""
    path = Path(__file__).parents[1] / "realworld" / "scripts" / "sched_auto_scheduler_heuristic.py"
    data_ops = _DataOps()
    with data_ops:
        fd = load_fusion(path)
    assert not data_ops.ops, f"torch ops on tensors holding data: {dict(data_ops.ops)}"
    xs = fd.example_inputs(seed=0)
    (out,) = compile_fusion(fd, xs).run(xs, backend="reference")
    assert torch.allclose(out, xs[0].sum(1).exp())
