"""CompiledFusion.run's per-signature plan (engine.host.plan, engine.host.launch): kernel launches
settled at the first call and replayed; the packed arguments are those of the general path;
outputs are fresh each run; zeroed workspaces are zeroed once, at the first launch; inputs are checked against the
compiled signature with an error naming the input. Kernels are stand-ins that record what a
launch receives (no compiler), except one emulated sample run end to end."""

from __future__ import annotations

import pytest
import torch

from benchmarks.fusions import benchmark_fusions
from engine import ExecutionError, load_fusion
from engine.compile import compile_fusion
from engine.reference import evaluate
from engine.runtime.abi import ArgBuffer, ScalarArg, TensorArg, pack_args


class Recorder:
    """A kernel stand-in: keeps the bytes each launch packs, from either path."""

    def __init__(self, seg) -> None:
        self.specs, self.name = list(seg.lowered.kernel.params), seg.kernel_name
        self.launches: list[tuple[list[bytes], list]] = []
        self.alloc_strides = None  # what the general path passed

    def launch(self, args, launch, alloc_strides=None, **_) -> None:
        self.alloc_strides = alloc_strides
        self.launches.append((pack_args(self.specs, list(args), alloc_strides), list(args)))

    def launcher(self, launch, layouts, *, sync=False):
        buf = ArgBuffer(self.specs, layouts)

        def go(values):
            buf.fill(values)
            self.launches.append((buf.packed(), list(values)))
        return go


def compiled(name: str):
    bf = next(b for b in benchmark_fusions("small") if b.name == name)
    xs = bf.make_inputs("cpu", 0)
    cf = compile_fusion(bf.build(), xs)
    kernels = {}
    for s in cf.segments:
        if s.is_kernel:
            kernels[s.id] = s._kernels["emulate"] = Recorder(s)
    return cf, xs, kernels


def _strip_pointers(packed: list[bytes], specs) -> list[bytes]:
    return [b[8:] if isinstance(s, TensorArg) else b for b, s in zip(packed, specs)]


@pytest.mark.parametrize("name", ["gelu_bias", "layer_norm", "inner_outer", "nvfp4_swizzled", "rope_bwd"])
def test_replayed_launch_packs_what_the_general_path_packs(name):
    cf, xs, kernels = compiled(name)
    for _ in range(3):
        cf.run(xs, backend="emulate")
    assert cf._plans["emulate"], "a program without stream statements runs as a plan"
    for seg in cf.segments:
        if not seg.is_kernel:
            continue
        k = kernels[seg.id]
        assert len(k.launches) == 3
        first, replays = k.launches[0], k.launches[1:]
        for packed, values in replays:
            # Sizes and strides as the general path packed them; data pointers of this run's tensors.
            assert _strip_pointers(packed, k.specs) == _strip_pointers(first[0], k.specs)
            assert packed == pack_args(k.specs, values, k.alloc_strides)


def test_outputs_are_fresh_tensors_each_run():
    cf, xs, kernels = compiled("rms_norm")
    a = cf.run(xs, backend="emulate")
    b = cf.run(xs, backend="emulate")
    assert all(x.data_ptr() != y.data_ptr() for x, y in zip(a, b))
    refs = evaluate(cf.fusion, xs)
    for x, r in zip(b, refs):
        assert x.shape == r.shape and x.dtype == r.dtype and x.stride() == r.stride()


def test_zeroed_workspaces_are_zeroed_once_and_kept():
    cf, xs, kernels = compiled("inner_outer")
    (seg,) = [s for s in cf.segments if s.is_kernel]
    zeroed = [k for k, p in enumerate(seg.lowered.kernel.params)
              if p.name in seg.lowered.kernel.workspaces and seg.lowered.kernel.workspaces[p.name][2]]
    assert zeroed, "the inner-outer kernel grid-reduces: it has zeroed sync flags"
    for _ in range(3):
        cf.run(xs, backend="emulate")
    flags = [values[zeroed[0]] for _packed, values in kernels[seg.id].launches]
    # the first launch's buffer serves the replays (the kernel leaves it zero): a second call
    # allocates and zeroes nothing
    assert flags[0] is flags[1] is flags[2]
    assert not flags[2].any()


def test_scalar_inputs_are_read_each_run():
    # A fusion scalar input is no part of the signature's sizes: each run passes its value.
    from engine import DataType, FusionDefinition

    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
        s = fd.define_scalar(dtype=DataType.Double)
        fd.add_output(fd.ops.mul(t0, s))
    x = torch.randn(8, 16)
    cf = compile_fusion(fd, [x, 2.0])
    (seg,) = [s for s in cf.segments if s.is_kernel]
    rec = seg._kernels["emulate"] = Recorder(seg)
    cf.run([x, 2.0], backend="emulate")
    cf.run([x, 3.5], backend="emulate")
    scalar = next(k for k, p in enumerate(rec.specs) if isinstance(p, ScalarArg))
    assert [values[scalar] for _p, values in rec.launches] == [2.0, 3.5]


def test_input_checks_name_the_input():
    cf, xs, _ = compiled("gelu_bias")
    cf.run(xs, backend="emulate")
    bad = [xs[0], torch.randn(xs[1].shape[0] + 1).to(xs[1].dtype)]
    with pytest.raises(ExecutionError, match=r"input 1 .*compile again"):
        cf.run(bad, backend="emulate")
    with pytest.raises(ExecutionError, match="compile again"):
        cf.run([xs[0].float(), xs[1]], backend="emulate")
    with pytest.raises(ExecutionError, match="compile again"):
        cf.run(xs[:1], backend="emulate")
    with pytest.raises(ExecutionError, match="compile again"):
        cf.run([xs[0].t().contiguous().t(), xs[1]], backend="emulate")


def test_misaligned_input_is_refused_and_better_aligned_accepted():
    cf, xs, _ = compiled("gelu_bias")
    n = xs[1].numel()
    storage = torch.empty(n + 8, dtype=xs[1].dtype)
    off = next(k for k in range(1, 8) if (storage.data_ptr() + 2 * k) % 16)
    with pytest.raises(ExecutionError, match="compile again"):
        cf.run([xs[0], storage[off:off + n]], backend="emulate")
    cf.run([xs[0], storage[:n]], backend="emulate")  # 16-byte aligned or better: fits


def test_timeline_runs_through_the_evaluator():
    cf, xs, _ = compiled("softmax")
    cf.run(xs, backend="emulate", timeline=True)
    assert [e.op for e in cf.last_run.timeline] == [f"LaunchKernel g{cf.segments[0].id}"]
    cf.run(xs, backend="emulate")
    assert cf.last_run is None


def test_emulated_sample_matches_reference_run_after_run():
    fd = load_fusion("sample_fusions/seed003_rope_bwd_small.py")
    xs = fd.example_inputs(seed=0)
    cf = compile_fusion(fd, xs)
    refs = evaluate(fd.fusion, xs)
    for _ in range(2):
        for o, r in zip(cf.run(xs, backend="emulate"), refs):
            torch.testing.assert_close(o.double(), r.double(), rtol=1e-2, atol=1e-2)


def test_arg_buffer_packs_as_pack_args():
    specs = [TensorArg("T0", "float", 2, 2), ScalarArg("s", "float"), ScalarArg("b", "bool"),
             TensorArg("T1", "__bfloat", 1, 1), ScalarArg("d", "double"), ScalarArg("i", "int64_t")]
    t, u = torch.randn(3, 4).t(), torch.randn(5).bfloat16()
    values = [t, 1.5, True, u, -2.25, 7]
    buf = ArgBuffer(specs, [(list(t.shape), list(t.stride())), None, None, ([5], [1]), None, None])
    buf.fill(values)
    assert buf.packed() == pack_args(specs, values)
    buf.fill([torch.randn(4, 3).t(), 4.0, False, u, 0.5, -1])
    assert buf.packed()[1:3] == pack_args(specs[1:3], [4.0, False])


def _view_steps(cf, backend: str) -> list:
    return [s for s in cf._plans[backend].steps if hasattr(s, "replay")]


@pytest.mark.parametrize("name", ["var_mean_size1_reshape_eps_input", "gemma_rms_norm_bwd_reshape_permute_out"])
def test_view_steps_are_replayed_from_their_first_run(name, monkeypatch):
    from engine.host import plan as plan_module

    fd = load_fusion(f"tests/realworld/scripts/{name}.py")
    xs = fd.example_inputs(seed=0)
    cf = compile_fusion(fd, xs)
    cf.run(xs, backend="emulate")
    steps = _view_steps(cf, "emulate")
    assert steps and all(s.replay is not None for s in steps)
    # later runs rebuild the views without computing the steps, and stay right
    monkeypatch.setattr(plan_module._Replayable, "compute", lambda *a: pytest.fail("a view step was computed"))
    ys = fd.example_inputs(seed=1)
    for o, r in zip(cf.run(ys, backend="emulate"), evaluate(fd.fusion, ys)):
        torch.testing.assert_close(o, r, rtol=1e-2, atol=1e-2)


def test_alias_replay_learns_views_only_and_checks_geometry():
    from engine.host.alias_replay import AliasReplay

    x = torch.randn(4, 6)
    replay = AliasReplay.learn([x, 2.0], [x.t()[1:], x.reshape(24)])
    y = torch.randn(4, 6)
    got = replay([y, 3.0])
    assert torch.equal(got[0], y.t()[1:]) and torch.equal(got[1], y.reshape(24))
    assert replay([torch.randn(6, 4).t(), 3.0]) is None  # another layout: computed again
    assert AliasReplay.learn([x], [x + 1]) is None  # a new buffer is no view


def test_execute_takes_the_last_plan_for_inputs_of_its_signature(monkeypatch):
    import engine.reference as reference

    fd = load_fusion("sample_fusions/softmax.py")
    xs = fd.example_inputs(seed=0)
    cf = compile_fusion(fd, xs)
    cf.run(xs, backend="emulate")
    fd.__dict__["_last_plan"] = cf._plans["emulate"]  # what a GPU call leaves behind
    calls = []
    monkeypatch.setattr(reference, "check_input_layouts", lambda *a: calls.append(a))
    ys = fd.example_inputs(seed=1)
    for o, r in zip(fd.execute(ys), evaluate(fd.fusion, ys)):
        torch.testing.assert_close(o, r)
    assert calls == []  # the plan's signature check stood for the layout check
    other = [x.t().contiguous().t() if isinstance(x, torch.Tensor) else x for x in ys]
    fd.execute(other)  # other strides, another signature: the full path (the reference on the CPU)
    assert len(calls) == 1


def test_a_view_of_a_misaligned_input_is_read_at_its_alignment():
    # the reshape runs as a view (expr_eval) of the input's own buffer, so the kernel reading it
    # sees the input's address: 4 bytes past a 16-byte boundary, no float pairs
    fd = load_fusion("tests/realworld/scripts/var_mean_size1_reshape_eps_input.py")
    for offset, vectorized in ((0, True), (1, False)):
        xs = [torch.randn(5)[offset:offset + 4].view(2, 2), 1e-5]
        cf = compile_fusion(fd, xs)
        (seg,) = [s for s in cf.segments if s.is_kernel]
        assert seg.params.vectorize_inner_reduction is vectorized
        for o, r in zip(cf.run(xs, backend="emulate"), evaluate(fd.fusion, xs)):
            torch.testing.assert_close(o, r)


def test_view_chains_off_an_input_fold_into_one_view_per_tensor_read(monkeypatch):
    # gpt-oss's de-interleave: reshape, two slices and two squeezes of the input (5 steps);
    # the kernel reads the two squeezed views, which are made straight from the input.
    from engine.host import plan as plan_module
    from engine.host.view_folding import DirectViews

    fd = load_fusion("tests/realworld/scripts/gpt_oss_clamped_swiglu_interleaved_pairs_reshape_bf16.py")
    xs = fd.example_inputs(seed=0)
    cf = compile_fusion(fd, xs)
    cf.run(xs, backend="emulate")
    steps = cf._plans["emulate"].steps
    direct = [s for s in steps if isinstance(s, DirectViews)]
    assert len(direct) == 5 and not _view_steps(cf, "emulate")
    assert sum(len(s.views) for s in direct) == 2  # the reshape and slices are never made
    monkeypatch.setattr(plan_module._Replayable, "compute", lambda *a: pytest.fail("a view step was computed"))
    for seed in (1, 2):
        ys = fd.example_inputs(seed=seed)
        for o, r in zip(cf.run(ys, backend="emulate"), evaluate(fd.fusion, ys), strict=True):
            torch.testing.assert_close(o, r, rtol=1e-2, atol=1e-2)


def test_a_folded_view_that_is_an_output_is_still_made():
    from engine import DataType, FusionDefinition

    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[8, 8], contiguity=[True, True], dtype=DataType.Float)
        t1 = fd.ops.reshape(t0, new_shape=[8, 4, 2])
        t2 = fd.ops.slice(t1, start_indices=[0, 0, 1], end_indices=[8, 4, 2])
        t3 = fd.ops.squeeze(t2, dims=[2])
        fd.add_output(t1)
        fd.add_output(fd.ops.mul(t3, t3))
    xs = [torch.randn(8, 8)]
    cf = compile_fusion(fd, xs)
    for seed in range(3):
        ys = [torch.randn(8, 8, generator=torch.Generator().manual_seed(seed))]
        got = cf.run(ys, backend="emulate")
        assert got[0].data_ptr() == ys[0].data_ptr()  # the reshape is a view of the input
        for o, r in zip(got, evaluate(fd.fusion, ys), strict=True):
            torch.testing.assert_close(o, r)
    from engine.host.view_folding import DirectViews

    made = [v for s in cf._plans["emulate"].steps if isinstance(s, DirectViews) for v in s.views]
    assert len(made) == 2  # the reshape (an output) and the squeezed slice (the kernel's input)
