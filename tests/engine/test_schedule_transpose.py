"""The transpose scheduler: grouping by innermost dim, nvFuser's refusals, TransposeParams,
the tiled schedule through shared memory, results, determinism and trace events."""

import re
from pathlib import Path

import pytest
import torch

from engine import DataType, FusionDefinition, load_fusion
from engine.ir.iterdomain import ParallelType
from engine.ir.loop_map import loop_map
from engine.ir.tensorview import MemoryType
from engine.ir.verify import verify_fusion
from engine.schedule import registry
from engine.schedule.base import SchedulerType
from engine.schedule.runtime_info import SchedulerRuntimeInfo
from engine.schedule.transpose import TransposeParams, group_inputs_outputs_by_inner_dim
from engine.trace import Trace
from tests.emulation import require_gxx

SAMPLES = Path(__file__).resolve().parents[2] / "sample_fusions"
SMALL = "Transpose scheduler does not perform well on small problem sizes."


def sample():
    return load_fusion(SAMPLES / "transpose.py")


def big_inputs(m=2048, n=1536):
    g = torch.Generator().manual_seed(0)
    return [torch.randn(m, n, generator=g), torch.randn(n, m, generator=g)]


def transpose_verdict(fd, xs):
    info = SchedulerRuntimeInfo(fd.fusion, xs)
    return registry.verdict(SchedulerType.transpose, fd.fusion, info)


def schedule(fd, xs, trace=None):
    info = SchedulerRuntimeInfo(fd.fusion, xs)
    s = registry.get("transpose")
    params = s.compute_heuristics(fd.fusion, info, trace)
    s.schedule(fd.fusion, params, trace)
    return params


def test_groups_of_the_sample_follow_the_innermost_dims():
    groups = group_inputs_outputs_by_inner_dim(sample().fusion)
    # The output and the input laid out like it share an innermost dim; the permuted input not.
    assert [[t.short_name for t in g] for g in groups] == [["T4", "T1"], ["T0"]]


def test_sample_at_its_own_size_is_refused_as_too_small():
    fd = sample()
    v = transpose_verdict(fd, fd.example_inputs())
    assert not v.accepted
    assert str(v) == f"Scheduler _transpose_ ***rejected*** because : {SMALL}"


def test_sample_at_a_large_size_goes_to_transpose():
    fd = sample()
    trace = Trace()
    verdicts, first = registry.can_schedule(fd.fusion, SchedulerRuntimeInfo(fd.fusion, big_inputs()), trace)
    assert first == SchedulerType.transpose
    assert next(v for v in verdicts if v.scheduler == SchedulerType.transpose).accepted
    assert any(e.data["scheduler"] == "transpose" and e.data["accepted"] for e in trace.of_kind("can_schedule"))
    # The wave threshold is SMs x 32 x 32 elements: just below it is refused.
    below = 132 * 1024 - 64
    assert transpose_verdict(fd, big_inputs(64, below // 64)).reason == SMALL


def test_params_and_their_nvfuser_printout():
    fd = sample()
    p = schedule(fd, big_inputs())
    assert isinstance(p, TransposeParams)
    assert (p.tile_size1, p.tile_size2) == (32, 32)
    assert (p.vectorize_factor1, p.vectorize_factor2) == (4, 4)  # 16 bytes of float
    assert p.lparams.bdimx == 128
    assert (p.inner_most_dim1, p.inner_most_dim2) == (1, 0)
    assert (p.reference1, p.reference2) == ("T4", "T0")
    assert str(p) == (
        "\n===== Transpose Parameters ========\n"
        "Tag: Transpose heuristics Transpose Characteristics:\n"
        " BlckX: 128\n input tile size: 32\n output tile size: 32\n"
        " elements per tile: 1024\n elements per thread: 8\n"
        "Vectorize group 1, Factor: 4\nUnroll group 1, Factor: 2\n"
        "Vectorize group 2, Factor: 4\nUnroll group 2, Factor: 2\n"
        "====================================\n"
    )


def test_vectorization_is_limited_by_a_full_wave_and_by_alignment():
    # 512 x 768 elements are under 4 waves of tiles: unroll/vectorize at most 3 -> 2.
    p = schedule(sample(), big_inputs(512, 768))
    assert (p.vectorize_factor1, p.vectorize_factor2) == (2, 2)
    assert "Unroll group 1, Factor: 4" in str(p)
    # An input 4 bytes past an aligned address is read one float at a time.
    x, y = big_inputs()
    base = torch.empty(x.numel() + 1)
    shifted = base[1:].view(x.shape)
    shifted.copy_(x)
    fd = sample()
    p2 = schedule(fd, [shifted, y])
    assert p2.vectorize_factor2 == 1 and p2.vectorize_factor1 == 4


def test_schedule_tiles_through_shared_memory_and_verifies():
    fd = sample()
    xs = big_inputs()
    before = fd.execute(xs)[0]
    schedule(fd, xs)
    f = fd.fusion
    verify_fusion(f)
    smem = [t for t in f.tensors() if t.memory_type == MemoryType.Shared]
    assert len(smem) == 1
    s = smem[0]
    # The cache of the transposed input, computed per block and read back transposed.
    assert s.definition.inputs[0] is f.inputs[0]
    assert s.compute_at_pos == 2
    assert s.domain.allocation == s.domain.loop
    (consumer,) = [e.outputs[0] for e in f.uses_of(s)]
    m = loop_map(s, consumer)
    assert m.get(s.axis(0)) is consumer.axis(0) and m.get(s.axis(1)) is consumer.axis(1)
    assert all(m.get(s.axis(k)) is not consumer.axis(k) for k in range(2, s.nloop))
    out = f.outputs[0]
    types = [i.parallel_type for i in out.domain.loop]
    assert types == [ParallelType.grid_x, ParallelType.unswitch, ParallelType.unroll,
                     ParallelType.block_x, ParallelType.vectorize]
    assert [i.extent.value for i in out.domain.loop[2:]] == [2, 128, 4]
    assert [i.parallel_type for i in s.domain.loop][-2:] == [ParallelType.block_x, ParallelType.vectorize]
    assert "T5_s_float" in str(f) and "ca_pos( 2 )" in str(f)
    after = fd.execute(xs)[0]
    assert torch.equal(before, after)
    assert torch.allclose(after, xs[0].t() * 2 + xs[1])


def test_scheduling_is_deterministic_and_traced():
    texts, params = [], []
    for _ in range(2):
        fd = sample()
        trace = Trace()
        params.append(schedule(fd, big_inputs(), trace))
        texts.append(str(fd.fusion))
    assert texts[0] == texts[1] and params[0] == params[1]
    heur = [e.message for e in trace.of_kind("heuristic")]
    assert any("vectorize_factor1 4" in m for m in heur)
    assert any("threads per block 128" in m for m in heur)
    assert params[0].derivation and params[0].derivation == tuple(heur)
    transforms = trace.of_kind("transform")
    assert any("shared memory" in e.message for e in transforms)
    assert any("allocation domain from the loop domain" in e.message for e in transforms)


def pointwise_pair(stride_order=None, shape=(2048, 1536)):
    with FusionDefinition() as fd:
        a = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float,
                             stride_order=stride_order)
        b = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
        fd.add_output(fd.ops.add(a, b))
    return fd


def test_same_layout_is_not_a_transpose():
    fd = pointwise_pair()
    xs = [torch.randn(2048, 1536), torch.randn(2048, 1536)]
    assert transpose_verdict(fd, xs).reason == "cannot find two mismatching inner most dimensions"


def test_an_input_laid_out_column_major_makes_a_transpose():
    # stride_order [0, 1]: dim 0 is innermost in memory, so the inner dims differ.
    fd = pointwise_pair(stride_order=[0, 1])
    a = torch.randn(1536, 2048).t()
    b = torch.randn(2048, 1536)
    assert transpose_verdict(fd, [a, b]).accepted
    before = fd.execute([a, b])[0]
    schedule(fd, [a, b])
    verify_fusion(fd.fusion)
    assert any(t.memory_type == MemoryType.Shared for t in fd.fusion.tensors())
    assert torch.equal(fd.execute([a, b])[0], before)


def test_refusal_reasons():
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1], dtype=DataType.Float)
        fd.add_output(fd.ops.sum(fd.ops.permute(x, [1, 0]), dims=[0]))
    assert transpose_verdict(fd, [torch.randn(4, 4)]).reason == "no support for reduction ops"
    # Transposing two dims of 2 x 2 elements under a long outer dim: pointwise coalesces better.
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1, -1], dtype=DataType.Float)
        fd.add_output(fd.ops.permute(x, [0, 2, 1]))
    v = transpose_verdict(fd, [torch.randn(100000, 2, 2)])
    assert v.reason.startswith("Inner transpose of small dimensions should be scheduled by the pointwise")
    fp4 = load_fusion(SAMPLES / "seed004_nvfp4_quantize.py")
    assert transpose_verdict(fp4, fp4.example_inputs()).reason == "Does not support sub-byte data types."


def test_three_dim_transpose_keeps_results():
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1, -1], dtype=DataType.Half)
        y = fd.ops.cast(fd.ops.permute(x, [0, 2, 1]), DataType.Float)
        fd.add_output(fd.ops.relu(y))
    x = torch.randn(8, 256, 160).half()
    assert transpose_verdict(fd, [x]).accepted
    before = fd.execute([x])[0]
    p = schedule(fd, [x])
    verify_fusion(fd.fusion)
    # Half input: 16 bytes allow 8, a full wave of 32x32 tiles caps it at 3 -> 2.
    assert p.vectorize_factor2 == 2
    assert torch.equal(fd.execute([x])[0], before)


def test_a_broadcast_meeting_two_sizes_is_refused():
    with FusionDefinition() as fd:
        b = fd.define_tensor(shape=[1], contiguity=[None], dtype=DataType.Float)
        x = fd.define_tensor(shape=[-1], dtype=DataType.Float)
        y = fd.define_tensor(shape=[-1], dtype=DataType.Float)
        fd.add_output(fd.ops.add(x, b))
        fd.add_output(fd.ops.add(y, b))
    v = transpose_verdict(fd, [torch.randn(1), torch.randn(64), torch.randn(32)])
    assert v.reason == "Broadcasting dimension might be broadcasting to multiple sizes."


def test_user_schedule_through_fd_sched():
    fd = sample()
    xs = big_inputs()
    assert fd.sched.can_schedule("transpose") == (False, SMALL)  # the file's own small inputs
    assert fd.sched.can_schedule("transpose", xs) == (True, "")
    before = fd.execute(xs)[0]
    fd.sched.schedule("transpose", xs)
    verify_fusion(fd.fusion)
    assert any(t.memory_type == MemoryType.Shared for t in fd.fusion.tensors())
    assert torch.equal(fd.execute(xs)[0], before)


def test_propagating_into_a_reshape_is_refused():
    # reference1 is x * 2; reaching the transposed output means going from x forward
    # through a reshape, which nvFuser's dry run refuses.
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[2048, 1536], dtype=DataType.Float)
        fd.add_output(fd.ops.mul(x, 2.0))
        r = fd.ops.reshape(x, [2048, 48, 32])
        fd.add_output(fd.ops.permute(r, [1, 2, 0]))
    v = transpose_verdict(fd, [torch.randn(2048, 1536)])
    assert v.reason == "transpose scheduler could potentially trigger incoherent transform propagation"


def _transpose_plus_bias():
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1], dtype=DataType.BFloat16)
        b = fd.define_tensor(shape=[-1], dtype=DataType.BFloat16)
        bb = fd.ops.broadcast(b, [True, False])
        y = fd.ops.add(fd.ops.cast(fd.ops.permute(x, [1, 0]), DataType.Float), fd.ops.cast(bb, DataType.Float))
        fd.add_output(fd.ops.cast(y, DataType.BFloat16))
    return fd


def test_a_broadcast_bias_is_read_from_global_memory_and_lowers():
    """The bias lacks one of the tile's dims. Its vectorized cache used to be inlined in
    the tile loops promoted through the broadcast, where its vector could not be indexed
    ('T9: axis iS17{i3} cannot be indexed from the loop nest'): the transpose scheduler
    was refused and the fusion went pointwise. Now it stays uncached and the kernel lowers."""


    from engine import compile_fusion
    from engine.reference import evaluate

    fd = _transpose_plus_bias()
    xs = [torch.randn(4096, 1024).bfloat16(), torch.randn(4096).bfloat16()]
    before = fd.execute(xs)[0]
    p = schedule(fd, xs)
    assert p.group1 == ("T7", "T1") and p.group2 == ("T0",)
    f = fd.fusion
    verify_fusion(f)
    assert [type(e).__name__ for e in f.uses_of(f.inputs[1])] == ["BroadcastOp"]
    assert torch.equal(fd.execute(xs)[0], before)
    require_gxx()
    fresh = _transpose_plus_bias()
    cf = compile_fusion(fresh, xs)
    assert [s.scheduler for s in cf.segments] == ["transpose"]
    assert torch.equal(cf.run(xs, backend="emulate")[0], evaluate(fresh.fusion, xs)[0])


def test_large_transposes_take_64x64_tiles_on_256_threads():
    fd = sample()
    xs = [torch.empty(8192, 8192, dtype=torch.float32, device="meta") for _ in fd.fusion.inputs]
    info = SchedulerRuntimeInfo(fd.fusion, xs)
    p = registry.get(SchedulerType.transpose).compute_heuristics(fd.fusion, info)
    assert (p.tile_size1, p.tile_size2, p.lparams.bdimx) == (64, 64, 256)
    small = registry.get(SchedulerType.transpose).compute_heuristics(
        fd.fusion, SchedulerRuntimeInfo(fd.fusion, big_inputs()))
    assert (small.tile_size1, small.tile_size2, small.lparams.bdimx) == (32, 32, 128)


def test_large_bf16_transposes_take_swizzled_128x128_tiles_on_1024_threads():
    with FusionDefinition() as fd:
        a = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.BFloat16)
        b = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.BFloat16)
        fd.add_output(fd.ops.add(fd.ops.permute(a, dims=[1, 0]), b))
    xs = [torch.empty(8192, 8192, dtype=torch.bfloat16, device="meta") for _ in range(2)]
    info = SchedulerRuntimeInfo(fd.fusion, xs)
    p = registry.get(SchedulerType.transpose).compute_heuristics(fd.fusion, info)
    assert (p.tile_size1, p.tile_size2, p.lparams.bdimx, p.swizzle) == (128, 128, 1024, True)
    assert (p.vectorize_factor1, p.vectorize_factor2) == (8, 8)
    # Too few waves of 128x128 tiles: 64x64, still swizzled (8 row groups, 8 vectors a row).
    mid = [torch.empty(4096, 4096, dtype=torch.bfloat16, device="meta") for _ in range(2)]
    q = registry.get(SchedulerType.transpose).compute_heuristics(fd.fusion, SchedulerRuntimeInfo(fd.fusion, mid))
    assert (q.tile_size1, q.swizzle) == (64, True)
    # fp32 keeps 64x64 tiles: 128x128 was only measured for 2-byte tensors.
    fp32 = sample()
    big = [torch.empty(8192, 8192, dtype=torch.float32, device="meta") for _ in range(2)]
    r = registry.get(SchedulerType.transpose).compute_heuristics(fp32.fusion, SchedulerRuntimeInfo(fp32.fusion, big))
    assert r.tile_size1 == 64


def test_shared_tiles_are_xor_swizzled_by_row_group():
    """Group 1 reads the shared tile down its columns; each row group's vectors are permuted."""
    fd = sample()
    xs = big_inputs()
    trace = Trace()
    p = schedule(fd, xs, trace)
    assert p.swizzle and (p.tile_size1, p.vectorize_factor1, p.vectorize_factor2) == (32, 4, 4)
    smem = [t for t in fd.fusion.tensors() if getattr(t, "memory_type", None) == MemoryType.Shared]
    assert smem
    for t in smem:
        assert " Xor(2D): " in fd.sched.to_string(t)
    assert any("Xor-swizzle" in str(e) for e in trace)
    off = load_fusion(SAMPLES / "transpose.py")
    info = SchedulerRuntimeInfo(off.fusion, xs)
    s = registry.get("transpose")
    from dataclasses import replace
    s.schedule(off.fusion, replace(s.compute_heuristics(off.fusion, info), swizzle=False))
    assert not any("Xor(2D)" in off.sched.to_string(t) for t in off.fusion.tensors())


def test_a_64x64_tile_schedule_emulates_exactly():


    from engine import compile_fusion
    from engine.config import Options
    from engine.reference import evaluate

    require_gxx()
    fd = sample()
    xs = big_inputs(512, 1024)
    opts = Options(force_scheduler="transpose",
                   heuristic_overrides={"tile_size1": 64, "tile_size2": 64, "lparams.bdimx": 256})
    cf = compile_fusion(fd, xs, opts)
    assert cf.segments[0].launch.block[0] == 256
    for o, r in zip(cf.run(xs, backend="emulate"), evaluate(fd.fusion, xs)):
        assert torch.equal(o, r)


def test_a_swizzled_128x128_tile_emulates_exactly():


    from engine import compile_fusion
    from engine.config import Options
    from engine.reference import evaluate

    require_gxx()
    fd = sample()
    xs = big_inputs(512, 1024)
    opts = Options(force_scheduler="transpose", heuristic_overrides={
        "tile_size1": 128, "tile_size2": 128, "lparams.bdimx": 1024, "swizzle": True})
    cf = compile_fusion(fd, xs, opts)
    assert " ^ " in cf.segments[0].cuda_source.split('extern "C"')[1]
    for o, r in zip(cf.run(xs, backend="emulate"), evaluate(fd.fusion, xs)):
        assert torch.equal(o, r)


def test_inputs_read_in_short_tile_rows_prefetch_into_l2():


    from engine import compile_fusion
    from engine.config import Options
    from engine.reference import evaluate

    fd = sample()
    xs = big_inputs(512, 1024)  # fp32 in 32x32 tiles: 128-byte rows
    cf = compile_fusion(fd, xs, Options(force_scheduler="transpose"))
    p = cf.segments[0].params
    names = [t.short_name for t in fd.fusion.inputs]
    assert sorted(p.l2_prefetch) == sorted(names)
    assert any("prefetch 256 bytes into L2" in line for line in p.derivation)
    src = cf.segments[0].cuda_source
    for name in names:
        assert "loadGlobalPrefetchL2<float, 4, 256>(&" in src and f"&{name}[" in src
    off = compile_fusion(fd, xs, Options(force_scheduler="transpose", heuristic_overrides={"l2_prefetch": []}))
    assert "loadGlobalPrefetchL2<" not in off.segments[0].cuda_source.split('extern "C"')[1]
    wide = registry.get(SchedulerType.transpose).compute_heuristics(
        fd.fusion, SchedulerRuntimeInfo(fd.fusion, [torch.empty(8192, 8192, device="meta")] * 2))
    assert wide.tile_size1 == 64 and wide.l2_prefetch == ()  # 64 floats: a 256-byte row
    require_gxx()
    for o, r in zip(cf.run(xs, backend="emulate"), evaluate(fd.fusion, xs)):
        assert torch.equal(o, r)


def test_an_expanded_input_is_no_transpose():
    """An input expanded along the other group's inner dim ([M, K, 1 ex N] against
    [M, K, N], as a LayerNorm backward reads its statistics) has K innermost, but it cannot
    lead a group: its N is a broadcast where the output has a concrete axis (nvFuser's
    findReferenceFor takes valid references only). With no second group the fusion is one
    pointwise kernel, as nvFuser's (it used to be a transpose staging the statistic through
    a shared tile with a broadcast side)."""


    from engine import compile_fusion
    from engine.reference import evaluate

    require_gxx()
    with FusionDefinition() as fd:
        a = fd.define_tensor(shape=[-1, -1, -1], contiguity=[True, True, True], dtype=DataType.Float)
        b = fd.define_tensor(shape=[-1, -1, -1], contiguity=[True, True, None], dtype=DataType.Float)
        fd.add_output(fd.ops.mul(b, a))
    g = torch.Generator().manual_seed(0)
    xs = [torch.randn(288, 8, 128, generator=g), torch.randn(288, 8, 1, generator=g).expand(288, 8, 128)]
    v = transpose_verdict(fd, xs)
    assert not v.accepted and v.reason == "cannot find two mismatching inner most dimensions"
    cf = compile_fusion(fd, xs)
    assert [s.scheduler for s in cf.segments] == ["pointwise"]
    for o, r in zip(cf.run(xs, backend="emulate"), evaluate(fd.fusion, xs)):
        assert torch.equal(o, r)


@pytest.mark.parametrize("other", ["weight", "statistic"])
def test_an_input_missing_a_tile_dim_is_read_from_global_memory(other):
    """(a + b.permute) * w[N] (a weight) or * s[B, M] (a row statistic, as an RMSNorm's
    rstd between segments): the other input lacks a reference axis; its cache (group 1's
    vectorized one, or group 2's shared tile with one side) could not be indexed in the
    promoted tile loops ('cannot be indexed from the loop nest', first 'a 2-D swizzle
    needs equal extents' for the statistic), so transpose was refused. Now one exact
    transpose kernel."""

    from engine import compile_fusion
    from engine.reference import evaluate

    require_gxx()
    nb, nm, nn = 2, 128, 768
    with FusionDefinition() as fd:
        a = fd.define_tensor(shape=[-1] * 3, contiguity=True, dtype=DataType.Float)
        b = fd.define_tensor(shape=[-1] * 3, contiguity=True, dtype=DataType.Float)
        if other == "weight":
            w = fd.define_tensor(shape=[-1], contiguity=True, dtype=DataType.Float)
            wb = fd.ops.broadcast_in_dim(w, shape=[nb, nm, nn], broadcast_dims=[2])
        else:
            w = fd.define_tensor(shape=[-1, -1], contiguity=True, dtype=DataType.Float)
            wb = fd.ops.broadcast_in_dim(w, shape=[nb, nm, nn], broadcast_dims=[0, 1])
        fd.add_output(fd.ops.mul(fd.ops.add(a, fd.ops.permute(b, dims=[0, 2, 1])), wb))
    g = torch.Generator().manual_seed(0)
    xs = [torch.randn(nb, nm, nn, generator=g), torch.randn(nb, nn, nm, generator=g),
          torch.randn(nn, generator=g) if other == "weight" else torch.randn(nb, nm, generator=g)]
    cf = compile_fusion(fd, xs)
    assert [s.scheduler for s in cf.segments] == ["transpose"]
    assert not [e for e in cf.trace if "is refused for" in str(e)]
    notes = [e.message for e in cf.trace.about(w.short_name) if e.message.startswith("input not cached")]
    assert notes == ["input not cached: it lacks an axis of the reference, and its cache could not be "
                     "indexed in the tile's loops; its consumers read it from global memory"]
    assert torch.equal(cf.run(xs, backend="emulate")[0], evaluate(fd.fusion, xs)[0])


OUTPUT_SIDE = '''
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float, is_cpu=False)
    T1 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float, is_cpu=False)
    T2 = fd.ops.broadcast_in_dim(T1, shape=[512, 384], broadcast_dims=[1])
    T3 = fd.ops.add(T0, T2)
    T4 = fd.ops.permute(T3, dims=[1, 0])
    fd.add_output(T4)


with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)
'''


def test_an_output_side_tile_is_written_in_group_1_order():
    """Group 2 holds only the permuted output (the input and a [N] weight share group 1's
    innermost dim), so the shared tile is the output's producer. Its operands are group 1's
    registers: scheduled like group 2 it read them at other threads' positions ('T7 reads
    T4 (local memory) at elements another thread computed') and the transpose scheduler was
    refused. As nvFuser's cached outputs, it takes group 1's tile order; group 2 reads it."""

    from engine import compile_fusion, loads_fusion
    from engine.reference import evaluate

    fd = loads_fusion(OUTPUT_SIDE)
    g = torch.Generator().manual_seed(0)
    xs = [torch.randn(512, 384, generator=g), torch.randn(384, generator=g)]
    assert [len(gr) for gr in group_inputs_outputs_by_inner_dim(fd.fusion)] == [2, 1]
    cf = compile_fusion(fd, xs)
    assert [s.scheduler for s in cf.segments] == ["transpose"]
    assert not any("refused" in e.message for e in cf.trace.events)
    require_gxx()
    assert torch.equal(cf.run(xs, backend="emulate")[0], evaluate(fd.fusion, xs)[0])


def test_the_expanded_mask_of_where_bool_expanded_mask_slice_is_no_transpose():
    """At the model scale (4x3072x4096) the bool mask's stride-0 last axis made its innermost
    non-broadcast axis differ from the values', and the transpose scheduler took the fusion
    (H200: one transpose kernel, second output's loops serial). The mask cannot lead a group:
    one pointwise kernel, as nvFuser's."""
    from scripts import scales as S  # noqa: N812 - as tests/realworld spell it

    p = Path(__file__).resolve().parents[1] / "realworld" / "scripts" / "where_bool_expanded_mask_slice.py"
    fd0 = load_fusion(p)
    xs0 = fd0.example_inputs(seed=0)
    scale = S.model_scale(S.input_values(xs0)[0])
    fd, xs = S.scaled_fusion(p, p.read_text(), scale, xs0, fd0.input_specs, cap=1 << 27)
    assert xs[0].shape == (4, 3072, 4096) and xs[0].stride()[-1] == 0
    v = transpose_verdict(fd, xs)
    assert not v.accepted and v.reason == "cannot find two mismatching inner most dimensions"


def test_every_output_of_a_transpose_with_a_sliced_output_is_parallelized():
    """v[B, M, N] sliced along N and v + w.permute as two outputs: the sliced output leads
    group 1 (the first of equal rank), and parallel types did not cross its slice, so the
    full-size output kept serial loops over the whole grid and block (`i < 256` blocks,
    `i < 128` threads) run by every thread. They cross it now (as nvFuser's PERMISSIVE_RESIZE
    map), and no loop over a launched dimension stays serial."""
    from engine import compile_fusion
    from engine.reference import evaluate

    m, n = 256, 512
    for lo, hi in ((4, n), (100, n), (0, n - 1)):
        with FusionDefinition() as fd:
            v = fd.define_tensor(shape=[2, m, n], contiguity=[True] * 3, dtype=DataType.Float)
            w = fd.define_tensor(shape=[2, n, m], contiguity=[True] * 3, dtype=DataType.Float)
            fd.add_output(fd.ops.slice(v, [0, 0, lo], [2, m, hi]))
            fd.add_output(fd.ops.add(v, fd.ops.permute(w, [0, 2, 1])))
        g = torch.Generator().manual_seed(0)
        xs = [torch.randn(2, m, n, generator=g), torch.randn(2, n, m, generator=g)]
        cf = compile_fusion(fd, xs)
        (seg,) = cf.segments
        assert seg.scheduler == "transpose" and seg.params.reference1 == fd.fusion.outputs[0].short_name
        grid, block = seg.launch.grid[0], seg.launch.block[0]
        body = seg.cuda_source.split('extern "C"')[-1]
        trips = [int(t) for t in re.findall(r"for \(nvfuser_index_t \w+ = 0; \w+ < (\d+);", body)]
        assert grid not in trips and block not in trips, (lo, hi, trips)
        require_gxx()
        for o, r in zip(cf.run(xs, backend="emulate"), evaluate(fd.fusion, xs)):
            assert torch.equal(o, r)
