"""The persistent (normalization) schedulers: which samples each takes and the others'
reasons, persistent buffers and their projection, register/shared-memory storage and
the refusal when a buffer fits neither, seed 001's shared-memory cache and its
allocation domain, schedules that verify and keep the reference results."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from engine import DataType, FusionDefinition, MemoryType, load_fusion
from engine.analysis.persistent import (
    persistent_buffer_size,
    persistent_buffers,
    reduction_properties,
    reduction_tvs,
    reduction_type,
)
from engine.ir.iterdomain import ParallelType
from engine.ir.printer import transforms_block
from engine.ir.verify import verify_fusion
from engine.runtime.device import model
from engine.schedule import registry
from engine.schedule.base import SchedulerType
from engine.schedule.normalization import smem_allocation_from_loop
from engine.schedule.reduction import ReductionParams
from engine.schedule.runtime_info import SchedulerRuntimeInfo
from engine.trace import Trace
from tests.emulation import needs_gxx

SAMPLES = Path(__file__).resolve().parents[2] / "sample_fusions"
H100 = model("H100")
A100 = model("A100")


def verdicts(fd: FusionDefinition, xs: list, dev=H100) -> tuple[dict[str, str], SchedulerType | None]:
    info = SchedulerRuntimeInfo(fd.fusion, xs, dev)
    vs, first = registry.can_schedule(fd.fusion, info)
    return {str(v.scheduler): ("accepted" if v.accepted else v.reason) for v in vs}, first


def heuristics(fd: FusionDefinition, xs: list, kind: str, dev=H100, trace=None) -> ReductionParams:
    info = SchedulerRuntimeInfo(fd.fusion, xs, dev)
    return registry.get(kind).compute_heuristics(fd.fusion, info, trace)


def schedule(fd: FusionDefinition, xs: list, kind: str, dev=H100, trace=None,
             check_results: bool = True) -> ReductionParams:
    before = fd.execute(xs) if check_results else None
    p = heuristics(fd, xs, kind, dev, trace)
    registry.get(kind).schedule(fd.fusion, p, trace)
    verify_fusion(fd.fusion)
    if before is not None:
        for a, b in zip(before, fd.execute(xs), strict=True):
            # the schedule changes the summation order (rfactor): float rounding differs,
            # by up to one bf16 ulp once rounded to bf16
            low = a.dtype in (torch.bfloat16, torch.float16)
            torch.testing.assert_close(a.double(), b.double(), rtol=1.6e-2 if low else 1e-4,
                                       atol=1e-2 if low else 1e-3)
    return p


def rms_norm(hidden: int, rows: int = 8) -> tuple[FusionDefinition, list]:
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.BFloat16)
        w = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.BFloat16)
        x = fd.ops.cast(t0, DataType.Float)
        ms = fd.ops.div(fd.ops.sum(fd.ops.mul(x, x), dims=[1]), float(hidden))
        r = fd.ops.rsqrt(fd.ops.add(ms, 1e-6))
        y = fd.ops.mul(fd.ops.mul(x, fd.ops.broadcast(r, [False, True])),
                       fd.ops.broadcast(fd.ops.cast(w, DataType.Float), [True, False]))
        fd.add_output(fd.ops.cast(y, DataType.BFloat16))
    xs = [torch.randn(rows, hidden).to(torch.bfloat16), torch.randn(hidden).to(torch.bfloat16)]
    return fd, xs


def seed001_like(n: int, variant: bool = False) -> tuple[FusionDefinition, list]:
    """Seed 001 at [1, n, n]; `variant`: the AllocationDomainBroadcast test (sum over
    {0, 2}, broadcast, add, sum over {0, 1}, no squeezes)."""
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[1, n, n], contiguity=[True, None, True],
                              dtype=DataType.Float, stride_order=[1, 2, 0])
        if variant:
            t2 = fd.ops.sum(t0, dims=[0, 2])
            t4 = fd.ops.add(t0, fd.ops.broadcast(t2, [True, False, True]))
            t6 = fd.ops.sum(t4, dims=[0, 1])
        else:
            t2 = fd.ops.sum(fd.ops.squeeze(t0, [0]), dims=[1])
            t4 = fd.ops.add(t0, fd.ops.broadcast(t2, [True, False, True]))
            t6 = fd.ops.sum(fd.ops.squeeze(t4, [0]), dims=[0])
        fd.add_output(t4)
        fd.add_output(t6)
    return fd, [torch.randn(n, 1, n).permute(1, 0, 2)]


def outer_norm(rows: int, cols: int) -> tuple[FusionDefinition, list]:
    """x - mean over rows: an outer reduction whose input persists."""
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
        m = fd.ops.sum(t0, dims=[0])
        fd.add_output(fd.ops.sub(t0, fd.ops.broadcast(m, [True, False])))
    return fd, [torch.randn(rows, cols)]


# ---- analysis -------------------------------------------------------------------------------------------

def test_persistent_buffers_and_projection_of_rms_norm():
    fd, xs = rms_norm(4096)
    pb = persistent_buffers(fd.fusion)
    x_float = fd.fusion.tensors()[2]  # cast(T0) to float
    assert pb.persistent_buffers == [x_float]
    assert pb.projectable == {x_float: [fd.fusion.inputs[0]]}
    info = SchedulerRuntimeInfo(fd.fusion, xs, H100)
    props = reduction_properties(reduction_tvs(fd.fusion)[0], info)
    sz = persistent_buffer_size(fd.fusion, info, pb, props.total_iteration_numel)
    # a float row of 4096, or the bf16 input row it is cast from
    assert (sz.persistent_buffer_size, sz.projected_persistent_buffer_size) == (4096 * 4, 4096 * 2)


def test_softmax_buffers_are_live_across_different_reductions():
    fd = load_fusion(SAMPLES / "softmax.py")
    xs = fd.example_inputs()
    pb = persistent_buffers(fd.fusion)
    mx, sm = reduction_tvs(fd.fusion)
    # the input across the max, exp(x - max) across the sum; never both at once
    assert pb.live_across[mx] == [fd.fusion.inputs[0]]
    assert [t.definition.op for t in pb.live_across[sm]] == ["exp"]
    info = SchedulerRuntimeInfo(fd.fusion, xs, H100)
    sz = persistent_buffer_size(fd.fusion, info, pb, 16)
    assert sz.persistent_buffer_size == 1000 * 4 and not sz.can_project


def test_seed001_analysis_sees_the_permuted_allocation():
    fd = load_fusion(SAMPLES / "seed001_inner_outer_alloc.py")
    reds = reduction_tvs(fd.fusion)
    assert reduction_type(reds) == "inner_outer"
    assert [t.short_name for t in persistent_buffers(fd.fusion).persistent_buffers] == ["T0"]
    fd2, _ = seed001_like(16, variant=True)
    assert reduction_type(reduction_tvs(fd2.fusion)) == "inner_outer"


# ---- samples: which scheduler, the others' reasons, key params ---------------------------------------------

@pytest.mark.parametrize("name", ["softmax.py", "layer_norm.py", "rms_norm.py"])
def test_inner_normalization_samples(name: str):
    fd = load_fusion(SAMPLES / name)
    xs = fd.example_inputs(seed=0)
    v, first = verdicts(fd, xs)
    assert first == SchedulerType.inner_persistent
    assert v["reduction"] == "need persistent buffers that reduction scheduler doesn't handle"
    assert v["outer_persistent"] == "ReductionType and heuristic doesn't match."
    assert v["inner_outer_persistent"] == "ReductionType and heuristic doesn't match."
    assert v["pointwise"] != "accepted"  # its reason is the pointwise scheduler's to test
    info = SchedulerRuntimeInfo(fd.fusion, xs, H100)
    red_numel = reduction_properties(reduction_tvs(fd.fusion)[0], info).total_reduction_numel
    p = schedule(fd, xs, "inner_persistent")
    assert p.persistent_kernel and p.fastest_dim and p.cross_block_inner_reduction
    # bf16 norms keep the bf16 input instead of its float cast; softmax has nothing to project
    assert p.project_persistent_buffers == (name != "softmax.py")
    assert p.smem_persistent_buffers == ()
    # threads x persistent batches x vector cover the row
    covered = p.lparams.bdimx * p.batches_per_block_inner_reduction * p.unroll_factor_inner_reduction
    assert red_numel <= covered < 2 * red_numel + 32 * p.unroll_factor_inner_reduction


def test_rms_norm_hidden_4096_bf16_is_register_persistent():
    fd, xs = rms_norm(4096, rows=4096)  # eight waves or more of rows
    v, first = verdicts(fd, xs)
    assert first == SchedulerType.inner_persistent
    # nvFuser's batch choice: on the H100 the higher occupancy of 256 threads x 2 batches; on
    # the H200 (high bandwidth for its FLOPs) the fewer waves of 128 threads x 4
    p100 = heuristics(fd, xs, "inner_persistent")
    assert (p100.lparams.bdimx, p100.batches_per_block_inner_reduction) == (256, 2)
    p = schedule(fd, xs, "inner_persistent", dev=model("H200"))
    assert (p.persistent_kernel, p.project_persistent_buffers, p.vectorize_inner_reduction) == (True, True, True)
    assert p.unroll_factor_inner_reduction == 8  # 16 bytes of bf16
    assert (p.lparams.bdimx, p.batches_per_block_inner_reduction) == (128, 4)
    assert p.smem_persistent_buffers == () and p.lparams.smem == 0
    assert str(p).startswith(
        "\n===== Reduction Parameters ========\nTag: Inner Persistent Heuristic\n"
        "Red On Fastest Dim\nPersistent Kernel\nProject Persistent Buffers\n"
        "Batches per block: 4\nCircular buffer: not used\n\n"
        "Iteration Domain: blockIdx.x / \n"
        "Inner Reduction Domain: cross block - threadIdx.x / persistent batch - 4 / vectorize / factor 8\n"
        "Launch Parameters: BlockDim.x = 128, BlockDim.y = 1,")
    # projected: the post-reduction use recomputes the cast from the input; the input's
    # cache is the buffer, inlined at the iteration axis only so it lives across the sum
    cache = fd.fusion.tensors()[len(fd.fusion.inputs)]
    assert cache.definition.input is fd.fusion.inputs[0]
    assert len(fd.fusion.uses_of(cache)) == 2
    assert cache.compute_at_pos == 1
    assert cache.domain.loop[-1].parallel_type == ParallelType.vectorize


def test_a_mask_expanded_over_outer_axes_keeps_the_rows_vectorized():
    """A [S, S] causal mask seen as [B, H, S, S] (stride 0 on B and H, attention's
    backward): its rows are still contiguous, so the softmax backward reads 8 bf16 a time."""
    with FusionDefinition() as fd:
        g = fd.define_tensor(shape=[1, -1, -1, -1], contiguity=[None, True, True, True], dtype=DataType.BFloat16)
        y = fd.define_tensor(shape=[1, -1, -1, -1], contiguity=[None, True, True, True], dtype=DataType.BFloat16)
        mask = fd.define_tensor(shape=[1, -1, -1, -1], contiguity=[None, None, True, True], dtype=DataType.Bool)
        gy = fd.ops.mul(fd.ops.cast(g, DataType.Float), fd.ops.cast(y, DataType.Float))
        s = fd.ops.broadcast(fd.ops.sum(gy, dims=[3]), [False, False, False, True])
        dx = fd.ops.mul(fd.ops.cast(y, DataType.Float), fd.ops.sub(fd.ops.cast(g, DataType.Float), s))
        fd.add_output(fd.ops.cast(fd.ops.where(mask, 0.0, dx), DataType.BFloat16))
    xs = [torch.randn(1, 4, 64, 256).to(torch.bfloat16), torch.rand(1, 4, 64, 256).to(torch.bfloat16),
          (torch.rand(64, 256) < 0.5).expand(1, 4, 64, 256)]
    p = schedule(fd, xs, "inner_persistent")
    assert p.vectorize_inner_reduction and p.unroll_factor_inner_reduction == 8


def test_a_buffer_that_fits_nowhere_is_refused():
    fd, xs = rms_norm(1 << 20, rows=2)  # a 2 MiB bf16 row even when projected
    v, first = verdicts(fd, xs)
    assert v["inner_persistent"] == "not enough registers or shared memory for persistence"
    assert first is None


def test_a_buffer_too_large_for_registers_goes_to_shared_memory():
    # 53248 floats = 208 KiB per row: over the 192 KiB register budget, within shared memory
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
        s = fd.ops.sum(t0, dims=[1])
        fd.add_output(fd.ops.div(t0, fd.ops.broadcast(s, [False, True])))
    xs = [torch.rand(32, 53248) + 1]
    # two rows only would be refused: a long reduction over too few blocks
    assert verdicts(fd, [xs[0][:2]])[0]["inner_persistent"] == "not enough blocks"
    assert verdicts(fd, xs)[1] == SchedulerType.inner_persistent
    p = schedule(fd, xs, "inner_persistent")
    assert p.smem_persistent_buffers == ("T0",) and p.lparams.smem == 53248 * 4
    cache = fd.fusion.tensors()[len(fd.fusion.inputs)]
    assert cache.memory_type == MemoryType.Shared and cache.compute_at_pos == 1


def test_outer_persistent():
    fd, xs = outer_norm(96, 40)
    v, first = verdicts(fd, xs)
    assert first == SchedulerType.outer_persistent
    assert v["inner_persistent"] == "ReductionType and heuristic doesn't match."
    p = schedule(fd, xs, "outer_persistent")
    assert p.persistent_kernel and not p.fastest_dim
    assert p.block_dim_inner_reduction == ParallelType.block_y
    assert p.vectorize_iter_dom and p.unroll_factor_iter_dom == 4
    assert p.lparams.bdimy * p.batches_per_block_inner_reduction >= 96


# ---- seed 001 ---------------------------------------------------------------------------------------------

def test_seed001_schedules_inner_outer_with_a_rebuilt_shared_allocation():
    fd = load_fusion(SAMPLES / "seed001_inner_outer_alloc.py")
    xs = fd.example_inputs(seed=0)
    v, first = verdicts(fd, xs)
    assert first == SchedulerType.inner_outer_persistent
    assert v["reduction"] == ("Un-mapped multi-reduction: T2_l_float[iS5{4096}, rS6{4096}] and "
                              "T6_g_float[rS15{4096}, iS16{4096}]")
    assert v["inner_persistent"] == "ReductionType and heuristic doesn't match."
    t = Trace()
    p = schedule(fd, xs, "inner_outer_persistent", trace=t, check_results=False)
    assert p.combined_inner_outer and p.persistent_kernel
    assert (p.cross_block_outer_reduction, p.cross_grid_outer_reduction) == (True, True)
    assert p.smem_persistent_buffers == ("T0",) and p.circular_buffer_stages == 2
    assert (p.lparams.gdimy, p.lparams.bdimy, p.lparams.bdimx) == (132, 2, 256)
    t7 = next(x for x in fd.fusion.tensors() if x.short_name == "T7")
    # the seed's T7, numbered by this fusion: loop (blockIdx.y{132}, {8}, {2}, {2}, bS{1},
    # iB{4096}) at ca_pos 2, and an allocation domain of what is right of ca_pos
    assert transforms_block(t7) == (
        "T7_s_float[iblockIdx.y39{132}, iS40{8}, iS41{2}, iS37{2}, bS17{1}, iB19{4096}] ca_pos( 2 )\n"
        " logical domain : (bS17{1}, iS18{4096}, iB19{4096})\n"
        " allocation domain : (iS41{2}, iS37{2}, bS17{1}, iB19{4096})\n"
        " contiguity: t t n t\n"
        "  Split: iS18{4096} by factor 2 -> iS36{2048}, iS37{2}\n"
        "  Split: iS36{2048} by factor 132 -> iS38{16}, iblockIdx.y39{132}\n"
        "  Split: iS38{16} by factor 2 -> iS40{8}, iS41{2}\n"
        " loop domain : (iblockIdx.y39{132}, iS40{8}, iS41{2}, iS37{2}, bS17{1}, iB19{4096})\n"
    )
    assert t7.definition.input is fd.fusion.inputs[0]
    # the input keeps its own layout
    assert str(fd.fusion.inputs[0]).startswith("T0_g_float")
    assert [i.name for i in fd.fusion.inputs[0].domain.allocation] == [1, 0, 2]
    msgs = [e.message for e in t.about("T7")]
    assert "allocation domain rebuilt from the loop domain right of ca_pos: " \
           "(iS41{2}, iS37{2}, bS17{1}, iB19{4096})" in msgs
    # the outer reduction ends as a block (TIDy) and grid (BIDy) reduction of partials
    out = fd.fusion.outputs[1]
    red = out.definition.input
    assert [i.parallel_type for i in red.domain.loop if i.is_reduction] == [
        ParallelType.grid_y, ParallelType.block_y]


def test_allocation_rule_never_copies_the_stale_input_order():
    fd, xs = seed001_like(4096)
    schedule(fd, xs, "inner_outer_persistent", check_results=False)
    t7 = fd.fusion.tensors()[len(fd.fusion.inputs)]
    assert t7.memory_type == MemoryType.Shared
    alloc = t7.domain.allocation
    logical = t7.domain.logical
    # no id of the stale copy (iS18, bS17, iB19 in input order) that the loop split
    assert logical[1] not in alloc
    assert alloc == smem_allocation_from_loop(t7) == [*t7.domain.loop[2:4], *t7.domain.loop[4:]]


def test_allocation_domain_broadcast_variant():
    fd, xs = seed001_like(4096, variant=True)
    v, first = verdicts(fd, xs)
    assert first == SchedulerType.inner_outer_persistent
    schedule(fd, xs, "inner_outer_persistent", check_results=False)
    c = fd.fusion.tensors()[len(fd.fusion.inputs)]
    assert c.memory_type == MemoryType.Shared and c.compute_at_pos == 2
    loop = c.domain.loop
    # (stages, rows) of the row axis, then the copied row (the broadcast merged into it)
    assert c.domain.allocation == [loop[2], loop[3], loop[4]]
    assert loop[4].parallel_type == ParallelType.bulk
    assert [str(i.extent.inline()) for i in c.domain.allocation] == ["2", "2", "4096"]
    assert transforms_block(c).splitlines()[0].endswith("ca_pos( 2 )")


@pytest.mark.parametrize("n, variant", [(40, False), (24, False), (40, True), (33, True)])
def test_seed001_small_keeps_results(n: int, variant: bool):
    fd, xs = seed001_like(n, variant)
    assert verdicts(fd, xs)[1] == SchedulerType.inner_outer_persistent
    schedule(fd, xs, "inner_outer_persistent")


def test_without_tma_inner_outer_keeps_inputs_in_registers():
    fd, xs = seed001_like(64)
    p = schedule(fd, xs, "inner_outer_persistent", dev=A100)
    assert p.smem_persistent_buffers == () and p.circular_buffer_stages == 0
    assert all(t.memory_type != MemoryType.Shared for t in fd.fusion.tensors())


# ---- determinism and trace ---------------------------------------------------------------------------------

def test_deterministic_and_traced():
    texts = []
    for _ in range(2):
        fd = load_fusion(SAMPLES / "layer_norm.py")
        xs = fd.example_inputs(seed=5)
        t = Trace()
        p = schedule(fd, xs, "inner_persistent", trace=t)
        texts.append((str(fd.fusion), p))
        heur = [e.message for e in t.of_kind("heuristic")]
        assert heur[0] == "persistent buffer 512 bytes per row (projected to inputs)"
        assert any("projected to inputs" in e.message for e in t.of_kind("transform"))
        assert any("persistent buffer inlined" in e.message for e in t.of_kind("transform"))
    assert texts[0] == texts[1]


# ---- normalizations at odd sizes ---------------------------------------------------------------------------

def layer_norm_fwd(rows: int, cols: int, dt: DataType) -> tuple[FusionDefinition, list]:
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=dt)
        w = fd.define_tensor(shape=[-1], contiguity=[True], dtype=dt)
        x = fd.ops.cast(t0, DataType.Float)
        var, mean = fd.ops.var_mean(x, dims=[1], correction=0)
        y = fd.ops.mul(fd.ops.sub(x, fd.ops.broadcast(mean, [False, True])),
                       fd.ops.broadcast(fd.ops.rsqrt(fd.ops.add(var, 1e-5)), [False, True]))
        y = fd.ops.mul(y, fd.ops.broadcast(fd.ops.cast(w, DataType.Float), [True, False]))
        fd.add_output(fd.ops.cast(y, dt))
        fd.add_output(mean)
    tdt = torch.bfloat16 if dt == DataType.BFloat16 else torch.float32
    return fd, [torch.randn(rows, cols).to(tdt), torch.randn(cols).to(tdt)]


def layer_norm_bwd_like(rows: int, cols: int, dt: DataType) -> tuple[FusionDefinition, list]:
    """grad_input needs a reduction over each row (inner), grad_weight one over the
    rows (outer): layer-norm backward's combined pattern."""
    with FusionDefinition() as fd:
        g = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=dt)
        x = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=dt)
        gf, xf = fd.ops.cast(g, DataType.Float), fd.ops.cast(x, DataType.Float)
        s = fd.ops.sum(fd.ops.mul(gf, xf), dims=[1])
        gi = fd.ops.sub(gf, fd.ops.mul(xf, fd.ops.broadcast(s, [False, True])))
        fd.add_output(fd.ops.cast(gi, dt))
        fd.add_output(fd.ops.sum(fd.ops.mul(gf, xf), dims=[0]))
    tdt = torch.bfloat16 if dt == DataType.BFloat16 else torch.float32
    return fd, [torch.randn(rows, cols).to(tdt), torch.randn(rows, cols).to(tdt)]


@pytest.mark.parametrize("rows, cols", [(1, 1), (3, 7), (5, 33), (130, 1000), (2, 4096)])
@pytest.mark.parametrize("dt", [DataType.Float, DataType.BFloat16])
def test_layer_norm_forward_and_backward_like_keep_results(rows: int, cols: int, dt: DataType):
    fd, xs = layer_norm_fwd(rows, cols, dt)
    assert verdicts(fd, xs)[1] == SchedulerType.inner_persistent
    p = schedule(fd, xs, "inner_persistent")
    assert p.project_persistent_buffers == (dt == DataType.BFloat16)
    fd, xs = layer_norm_bwd_like(rows, cols, dt)
    v, first = verdicts(fd, xs)
    assert first == SchedulerType.inner_outer_persistent
    assert v["inner_persistent"] == "ReductionType and heuristic doesn't match."
    p = schedule(fd, xs, "inner_outer_persistent")
    # Projected from bf16 because the inputs are narrower; from float because the rows are
    # staged (the default device is sm_90), which only inputs can be.
    assert p.combined_inner_outer and p.project_persistent_buffers


def test_inner_outer_with_a_welford_inner_reduction():
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
        _var, mean = fd.ops.var_mean(x, dims=[1], correction=0)
        y = fd.ops.sub(x, fd.ops.broadcast(mean, [False, True]))
        fd.add_output(y)
        fd.add_output(fd.ops.sum(y, dims=[0]))
    xs = [torch.randn(40, 24)]
    assert verdicts(fd, xs)[1] == SchedulerType.inner_outer_persistent
    schedule(fd, xs, "inner_outer_persistent")


# ---- outer reductions whose result is used again (var over dim 0 next to var over dim 1) -------------------

def var_both_dims(kind: str, c1: int = 1, c0: int = 0, k1: bool = True,
                  k0: bool = False) -> FusionDefinition:
    """A reduction over dim 1 (used again per row) and one over dim 0 of one [rows, cols]
    input (tests/realworld/scripts/var_correction.py is var with c1=1, c0=0, k1, not k0).
    var: two-pass variances (the dim-0 mean is broadcast back over the rows); var_mean:
    Welfords; sum: plain sums over dim 0 and dim 1; mixed: x - sum over dim 1, and
    var_mean over dim 0 (an outer Welford whose results only go to outputs)."""
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)

        def per_row(t):
            return t if k1 else fd.ops.broadcast(t, [False, True])

        if kind == "var":
            fd.add_output(fd.ops.sub(t0, per_row(fd.ops.var(t0, dims=[1], correction=c1, keepdim=k1))))
            fd.add_output(fd.ops.var(t0, dims=[0], correction=c0, keepdim=k0))
        elif kind == "var_mean":
            v1, m1 = fd.ops.var_mean(t0, dims=[1], correction=c1, keepdim=k1)
            fd.add_output(fd.ops.div(fd.ops.sub(t0, per_row(m1)), fd.ops.add(per_row(v1), 1.0)))
            for t in fd.ops.var_mean(t0, dims=[0], correction=c0, keepdim=k0):
                fd.add_output(t)
        elif kind == "sum":
            fd.add_output(fd.ops.sum(t0, dims=[0], keepdim=k0))
            fd.add_output(fd.ops.sum(t0, dims=[1], keepdim=k1))
        else:
            fd.add_output(fd.ops.sub(t0, per_row(fd.ops.sum(t0, dims=[1], keepdim=k1))))
            for t in fd.ops.var_mean(t0, dims=[0], correction=c0, keepdim=k0):
                fd.add_output(t)
    return fd


def test_inner_outer_refuses_an_outer_result_used_over_the_rows():
    """The combined kernel's outer reductions end in a grid reduction that only the last
    block gets: the dim-0 mean of a two-pass variance cannot go back over every block's
    rows. It used to be taken, and the dim-0 variance came out wrong."""
    fd = var_both_dims("var")
    v, first = verdicts(fd, [torch.randn(5, 9)])
    assert first is None  # segmented: inner persistent, then outer persistent
    assert v["inner_outer_persistent"] == (
        "outer reduction T10's result is used over the rows it reduced (T13 axis iS26{i0}): the "
        "combined kernel's grid reduction gives it to the last block only (a grid all-reduce is "
        "not supported)")
    # An outer result going to outputs only (keepdim: broadcast, not iterated) is taken.
    fd = var_both_dims("mixed", k0=True)
    assert verdicts(fd, [torch.randn(64, 96)])[1] == SchedulerType.inner_outer_persistent


def test_lowering_refuses_a_grid_reduction_result_read_by_every_block():
    """The same schedule forced past the scheduler's check: the lowering refuses it
    rather than generate a kernel where only the last block has the dim-0 mean."""
    from engine.errors import CompileError
    from engine.lower.pipeline import lower_fusion

    fd = load_fusion(Path(__file__).resolve().parents[1] / "realworld" / "scripts" / "var_correction.py")
    xs = fd.example_inputs(seed=0)
    info = SchedulerRuntimeInfo(fd.fusion, xs, H100)
    s = registry.get("inner_outer_persistent")
    s.schedule(fd.fusion, s.compute_heuristics(fd.fusion, info))
    with pytest.raises(CompileError, match="only the last block has.*grid all-reduce"):
        lower_fusion(fd.fusion, info.env, "k")


def test_inner_outer_refuses_an_inner_welford_read_in_a_row_loop():
    """A Welford's outputs are never inlined: read per row inside a loop over several
    steps of each block's rows, it would need the loop closed and reopened."""
    fd = var_both_dims("var_mean")
    assert verdicts(fd, [torch.randn(64, 96)])[0]["inner_outer_persistent"] == "accepted"
    v, _ = verdicts(fd, [torch.randn(20000, 33)])
    assert v["inner_outer_persistent"] == ("inner Welford T1 is read in the loop over each block's "
                                           "rows (4 steps), but its outputs cannot be inlined into it")


_VAR_CASES = [
    # kind, correction over dim 1, over dim 0, keepdim over dim 1, over dim 0
    ("var", 1, 0, True, False),  # the real-world script
    ("var", 0, 1, False, True),
    ("var_mean", 1, 0, True, False),
    ("var_mean", 0, 1, False, True),
    ("sum", 0, 0, False, True),
    ("mixed", 0, 1, True, True),
]


@needs_gxx
@pytest.mark.parametrize("shape", [(5, 9), (64, 96), (1000, 33), (7, 4096)])
@pytest.mark.parametrize("case", _VAR_CASES, ids=lambda c: "-".join(map(str, c)))
def test_reductions_over_both_dims_emulated(shape: tuple[int, int], case: tuple):
    from engine.compile import compile_fusion
    from engine.reference import evaluate

    fd = var_both_dims(*case)
    xs = [torch.randn(*shape, generator=torch.Generator().manual_seed(0)) * 3 + 1]
    cf = compile_fusion(fd, xs)
    outs = cf.run(xs, backend="emulate")
    refs = evaluate(fd.fusion, xs)
    assert len(outs) == len(refs)
    for o, r in zip(outs, refs, strict=True):
        assert o.shape == r.shape
        torch.testing.assert_close(o.double(), r.double(), rtol=1e-5, atol=1e-5 * max(1.0, r.abs().max().item()))


# ---- outer reductions of what the inner reduction's result computes (layer-norm backward) -----------------



def _emulate(fd: FusionDefinition, xs: list, dev: str = "H100") -> list[str]:
    """Compile for `dev`, run on the emulator, compare with the reference; the schedulers."""
    from engine.compile import compile_fusion
    from engine.config import Options
    from engine.reference import evaluate

    cf = compile_fusion(fd, xs, Options(device_model=dev))
    outs = cf.run(xs, backend="emulate")
    refs = evaluate(fd.fusion, xs)
    assert len(outs) == len(refs) == len(fd.fusion.outputs)
    for o, r in zip(outs, refs, strict=True):
        assert o.shape == r.shape and o.dtype == r.dtype
        tol = 1e-5 if o.dtype == torch.float32 else 1e-2
        torch.testing.assert_close(o.double(), r.double(), rtol=tol, atol=tol * max(1.0, r.abs().max().item()))
    return [s.scheduler for s in cf.segments]


def mean_sub_col_sum(rows: int, cols: int) -> tuple[FusionDefinition, list]:
    """The smallest case: y = x - mean(x, dim 1) (an output), and sum(y, dim 0). The outer
    reduction reads a tensor computed from the inner reduction's result."""
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
        m = fd.ops.div(fd.ops.sum(x, dims=[1], keepdim=True), fd.ops.size(x, 1))
        y = fd.ops.sub(x, m)
        fd.add_output(y)
        fd.add_output(fd.ops.sum(y, dims=[0]))
    return fd, [torch.randn(rows, cols, generator=torch.Generator().manual_seed(0))]


def _torch_dtype(dt: DataType) -> torch.dtype:
    return torch.bfloat16 if dt == DataType.BFloat16 else torch.float32


def layer_norm_backward(rows: int, cols: int, dt: DataType, mean_keepdim: bool = False
                        ) -> tuple[FusionDefinition, list]:
    """Layer-norm backward as nvFuser's python frontend gets it from Thunder (nvFuser's
    benchmarks/python layernorm_bwd_fusion): x, grad_out, mean ([N] or [N, 1]), rstd
    [N, 1], weight; grad_input from the per-row sums of grad_out * w * x_hat and
    grad_out * w (then sums of [N, 1] tensors over their broadcast axis), grad_weight and
    grad_bias as sums over the rows. Float compute for bf16 inputs."""
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=dt)
        g = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=dt)
        if mean_keepdim:
            mean = fd.define_tensor(shape=[-1, 1], contiguity=[True, None], dtype=DataType.Float)
        else:
            mean = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float)
        rstd = fd.define_tensor(shape=[-1, 1], contiguity=[True, None], dtype=DataType.Float)
        w = fd.define_tensor(shape=[-1], contiguity=[True], dtype=dt)
        if dt != DataType.Float:
            x, g, w = (fd.ops.cast(t, DataType.Float) for t in (x, g, w))
        col = [fd.ops.size(x, 0), 1]
        full = fd.ops.shape(x)
        m = mean if mean_keepdim else fd.ops.broadcast_in_dim(mean, shape=col, broadcast_dims=[0])
        xmu = fd.ops.sub(x, fd.ops.broadcast_in_dim(m, shape=full, broadcast_dims=[0, 1]))
        rb = fd.ops.broadcast_in_dim(rstd, shape=full, broadcast_dims=[0, 1])
        x_hat = fd.ops.mul(xmu, rb)
        wb = fd.ops.broadcast_in_dim(w, shape=full, broadcast_dims=[1])
        grad_bias = fd.ops.sum(g, dims=[0])
        gw = fd.ops.mul(g, wb)
        grad_weight = fd.ops.sum(fd.ops.mul(g, x_hat), dims=[0])
        a = fd.ops.mul(gw, rb)
        s1 = fd.ops.broadcast_in_dim(fd.ops.sum(fd.ops.mul(gw, xmu), dims=[1]), shape=col, broadcast_dims=[0])
        s2 = fd.ops.broadcast_in_dim(fd.ops.sum(fd.ops.neg(a), dims=[1]), shape=col, broadcast_dims=[0])
        d_var = fd.ops.mul(fd.ops.mul(-0.5, s1), fd.ops.pow(rstd, 3.0))
        s2 = fd.ops.sum(s2, dims=[1])  # over the broadcast axis: a trivial reduction
        d_var = fd.ops.sum(d_var, dims=[1])
        d_var = fd.ops.broadcast_in_dim(fd.ops.broadcast_in_dim(d_var, shape=col, broadcast_dims=[0]),
                                        shape=full, broadcast_dims=[0, 1])
        t = fd.ops.div(fd.ops.mul(fd.ops.mul(2.0, d_var), xmu), fd.ops.size(x, 1))
        s2 = fd.ops.broadcast_in_dim(fd.ops.broadcast_in_dim(s2, shape=col, broadcast_dims=[0]),
                                     shape=full, broadcast_dims=[0, 1])
        grad_input = fd.ops.add(a, fd.ops.add(t, fd.ops.div(s2, fd.ops.size(x, 1))))
        for out in (grad_input, grad_weight, grad_bias):
            fd.add_output(out if dt == DataType.Float else fd.ops.cast(out, dt))
    gen = torch.Generator().manual_seed(0)
    xf = torch.randn(rows, cols, generator=gen)
    mu = xf.mean(1, keepdim=True)
    rs = (xf.var(1, unbiased=False, keepdim=True) + 1e-5).rsqrt()
    tdt = _torch_dtype(dt)
    return fd, [xf.to(tdt), torch.randn(rows, cols, generator=gen).to(tdt),
                mu if mean_keepdim else mu.reshape(rows), rs, torch.randn(cols, generator=gen).to(tdt)]


def rms_norm_backward(rows: int, cols: int, dt: DataType) -> tuple[FusionDefinition, list]:
    """RMS-norm backward in the same form (nvFuser's rmsnorm_bwd_fusion): x, rms [N, 1],
    grad_out, weight; grad_input from one per-row sum, grad_weight a sum over the rows."""
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=dt)
        rms = fd.define_tensor(shape=[-1, 1], contiguity=[True, None], dtype=DataType.Float)
        g = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=dt)
        w = fd.define_tensor(shape=[-1], contiguity=[True], dtype=dt)
        if dt != DataType.Float:
            x, g, w = (fd.ops.cast(t, DataType.Float) for t in (x, g, w))
        full = fd.ops.shape(x)
        col = [fd.ops.size(x, 0), 1]
        rb = fd.ops.broadcast_in_dim(rms, shape=full, broadcast_dims=[0, 1])
        inv = fd.ops.reciprocal(rb)
        x_hat = fd.ops.mul(x, inv)
        gw = fd.ops.mul(g, fd.ops.broadcast_in_dim(w, shape=full, broadcast_dims=[1]))
        grad_weight = fd.ops.sum(fd.ops.mul(g, x_hat), dims=[0])
        s = fd.ops.sum(fd.ops.mul(fd.ops.mul(fd.ops.neg(gw), x), fd.ops.reciprocal(fd.ops.pow(rb, 2.0))),
                       dims=[1])
        s = fd.ops.mul(fd.ops.broadcast_in_dim(s, shape=col, broadcast_dims=[0]),
                       fd.ops.reciprocal(fd.ops.mul(2.0, rms)))
        s = fd.ops.sum(fd.ops.div(s, fd.ops.size(x, 1)), dims=[1])  # a trivial reduction
        s = fd.ops.broadcast_in_dim(fd.ops.broadcast_in_dim(s, shape=col, broadcast_dims=[0]),
                                    shape=full, broadcast_dims=[0, 1])
        grad_input = fd.ops.add(fd.ops.mul(gw, inv), fd.ops.mul(fd.ops.mul(s, 2.0), x))
        for out in (grad_input, grad_weight):
            fd.add_output(out if dt == DataType.Float else fd.ops.cast(out, dt))
    gen = torch.Generator().manual_seed(0)
    xf = torch.randn(rows, cols, generator=gen)
    r = (xf.pow(2).mean(1, keepdim=True) + 1e-5).sqrt()
    tdt = _torch_dtype(dt)
    return fd, [xf.to(tdt), r, torch.randn(rows, cols, generator=gen).to(tdt),
                torch.randn(cols, generator=gen).to(tdt)]


@needs_gxx
@pytest.mark.parametrize("shape", [(64, 96), (1000, 33), (5, 9), (7, 4096)])
def test_outer_reduction_of_the_inner_result_emulated(shape: tuple[int, int]):
    """It used to be taken and then fail to lower: 'T6: axis iS12{i0} cannot be indexed from
    the loop nest'. The final grid reduction of the outer partials shares the blockIdx.y loop
    with the row loop's tensors; its axis is the rfactor's split of the rows, which the
    lowering now follows across the rfactor instead of taking it for another axis."""
    fd, xs = mean_sub_col_sum(*shape)
    assert verdicts(fd, xs)[1] == SchedulerType.inner_outer_persistent
    for dev in ("H100", "A100"):  # inputs staged in shared memory (cp.async) and in registers
        assert _emulate(fd, xs, dev) == ["inner_outer_persistent"]


@needs_gxx
@pytest.mark.parametrize("n", [16, 33, 40])
@pytest.mark.parametrize("variant", [False, True])
def test_seed001_like_lowers_and_emulates(n: int, variant: bool):
    """The variant sums over {0, 2} and then {0, 1} of a [1, n, n] input: the size-1 axis is
    reduced by both. The inner reduction merges it into its reduced axis; the outer one
    cannot merge a reduction with its iteration axis, so the merge used to stop there and
    the outer reduction kept its inner axis unsplit, read by threads that did not compute
    it. A reduction over one element now forwards such a merge, as a broadcast does."""
    fd, xs = seed001_like(n, variant)
    assert _emulate(fd, xs) == ["inner_outer_persistent"]


_NORM_DTYPES = [DataType.Float, DataType.BFloat16]


@needs_gxx
@pytest.mark.parametrize("shape", [(64, 96), (1000, 33), (256, 1024), (5, 9)])
@pytest.mark.parametrize("dt", _NORM_DTYPES, ids=lambda d: d.name)
@pytest.mark.parametrize("mean_keepdim", [False, True], ids=["mean_N", "mean_N1"])
def test_layer_norm_backward_emulated(shape: tuple[int, int], dt: DataType, mean_keepdim: bool):
    fd, xs = layer_norm_backward(*shape, dt, mean_keepdim)
    assert _emulate(fd, xs) == ["inner_outer_persistent"]


@needs_gxx
@pytest.mark.parametrize("shape", [(64, 96), (1000, 33), (256, 1024), (5, 9)])
@pytest.mark.parametrize("dt", _NORM_DTYPES, ids=lambda d: d.name)
def test_rms_norm_backward_emulated(shape: tuple[int, int], dt: DataType):
    fd, xs = rms_norm_backward(*shape, dt)
    assert _emulate(fd, xs) == ["inner_outer_persistent"]


@needs_gxx
@pytest.mark.parametrize("dt", _NORM_DTYPES, ids=lambda d: d.name)
def test_norm_backwards_at_2048_by_4096_emulated(dt: DataType):
    for build in (layer_norm_backward, rms_norm_backward):
        fd, xs = build(2048, 4096, dt)
        assert _emulate(fd, xs) == ["inner_outer_persistent"]


def test_trivial_reductions_are_squeezes():
    """Sums of [N, 1] tensors over their broadcast axis (layer-norm backward has two) reduce
    nothing: as nvFuser's reductionOp makes them, they are squeezes, and the normalization
    schedulers see the four real reductions. As reductions they used to leave a fallback
    segmentation (the combined kernel refused) with a kernel of its own for them."""
    from engine.analysis.persistent import is_trivial_reduction_tv
    from engine.ir.exprs import SqueezeOp
    from engine.reference import evaluate

    fd, xs = layer_norm_backward(64, 96, DataType.Float)
    assert not [t for t in fd.fusion.tensors() if is_trivial_reduction_tv(t)]
    assert len([e for e in fd.fusion.exprs() if isinstance(e, SqueezeOp)]) == 2
    reds = reduction_tvs(fd.fusion)
    assert len(reds) == 4 and reduction_type(reds) == "inner_outer"
    v, first = verdicts(fd, xs)
    assert first == SchedulerType.inner_outer_persistent
    # A sum (or max, or keepdim) of only a broadcast axis is its squeeze: the values of torch.
    with FusionDefinition() as fd2:
        t0 = fd2.define_tensor(shape=[-1, 1], contiguity=[True, None], dtype=DataType.Float)
        fd2.add_output(fd2.ops.sum(t0, dims=[1]))
        fd2.add_output(fd2.ops.max(t0, dims=[1], keepdim=True))
    assert reduction_tvs(fd2.fusion) == []
    assert [type(e).__name__ for e in fd2.fusion.exprs()] == ["SqueezeOp", "SqueezeOp", "BroadcastOp"]
    x = torch.randn(8, 1)
    s, m = evaluate(fd2.fusion, [x])
    assert torch.equal(s, x.sum(1)) and torch.equal(m, x.amax(1, keepdim=True))


def rms_norm_backward_rstd(rows: int, cols: int, dt: DataType) -> tuple[FusionDefinition, list]:
    """RMS-norm backward written from rstd = 1 / rms: grad_input = rstd * (g * w - x_hat *
    mean(g * w * x_hat)), grad_weight = sum over the rows of g * x_hat."""
    with FusionDefinition() as fd:
        g = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=dt)
        x = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=dt)
        rstd = fd.define_tensor(shape=[-1, 1], contiguity=[True, None], dtype=DataType.Float)
        w = fd.define_tensor(shape=[-1], contiguity=[True], dtype=dt)
        if dt != DataType.Float:
            g, x, w = (fd.ops.cast(t, DataType.Float) for t in (g, x, w))
        full = fd.ops.shape(x)
        rb = fd.ops.broadcast_in_dim(rstd, shape=full, broadcast_dims=[0, 1])
        x_hat = fd.ops.mul(x, rb)
        gw = fd.ops.mul(g, fd.ops.broadcast_in_dim(w, shape=full, broadcast_dims=[1]))
        s = fd.ops.div(fd.ops.sum(fd.ops.mul(gw, x_hat), dims=[1], keepdim=True), fd.ops.size(x, 1))
        s = fd.ops.broadcast_in_dim(s, shape=full, broadcast_dims=[0, 1])
        grad_input = fd.ops.mul(rb, fd.ops.sub(gw, fd.ops.mul(x_hat, s)))
        grad_weight = fd.ops.sum(fd.ops.mul(g, x_hat), dims=[0])
        for out in (grad_input, grad_weight):
            fd.add_output(out if dt == DataType.Float else fd.ops.cast(out, dt))
    gen = torch.Generator().manual_seed(0)
    xf = torch.randn(rows, cols, generator=gen)
    r = (xf.pow(2).mean(1, keepdim=True) + 1e-5).rsqrt()
    tdt = _torch_dtype(dt)
    return fd, [torch.randn(rows, cols, generator=gen).to(tdt), xf.to(tdt), r,
                torch.randn(cols, generator=gen).to(tdt)]


def test_a_weight_is_not_a_row_buffer_of_the_circular_buffer():
    """Only inputs with a row go to the shared-memory circular buffer, a row at a time. The
    [H] weight (a persistent buffer's input once bf16 buffers are projected to inputs) has
    no row axis and used to be put there too: scheduling then failed to inline its 1-D
    cache at position 2."""
    fd, xs = rms_norm_backward_rstd(64, 96, DataType.BFloat16)
    p = heuristics(fd, xs, "inner_outer_persistent")
    assert p.project_persistent_buffers
    g, _x, _rstd, w = fd.fusion.inputs
    assert w.short_name not in p.smem_persistent_buffers
    assert g.short_name in p.smem_persistent_buffers
    schedule(fd, xs, "inner_outer_persistent")


@needs_gxx
@pytest.mark.parametrize("shape", [(64, 96), (1000, 33), (256, 1024)])
@pytest.mark.parametrize("dt", _NORM_DTYPES, ids=lambda d: d.name)
def test_rms_norm_backward_from_rstd_emulated(shape: tuple[int, int], dt: DataType):
    fd, xs = rms_norm_backward_rstd(*shape, dt)
    assert _emulate(fd, xs) == ["inner_outer_persistent"]


@needs_gxx
def test_a_tensor_read_before_and_after_a_reduction_persists():
    """RMS-norm backward: the grad_out cache feeds grad_out * w (summed per row) and
    grad_out * x_hat (summed over the rows), whose loop nest shares 1 / rms with grad_input,
    computed from the per-row sum. Inlined into all of them, it joined the loops before and
    after the reduction into one nest (a dependence cycle in the lowering). The cheapest
    tensor whose inlining at the iteration axes parts the nest is kept instead: the
    broadcast 1 / rms, one element a thread, not a row of grad_out. (On an A100: the rows
    stay in registers there and the float grad_out * w is not projected to the inputs.)"""
    fd, xs = rms_norm_backward(1000, 33, DataType.Float)
    t = Trace()
    schedule(fd, xs, "inner_outer_persistent", dev=A100, trace=t)
    held = [e for e in t.of_kind("transform") if "parting the loop nest" in e.message]
    assert held
    for e in held:
        tv = next(x for x in fd.fusion.tensors() if x.short_name == e.subject)
        assert tv.compute_at_pos == 4
        assert "array of 1 element(s)" in e.message
        assert all(i.is_broadcast for i in tv.domain.logical[1:])
    fd, xs = rms_norm_backward(1000, 33, DataType.Float)
    assert _emulate(fd, xs) == ["inner_outer_persistent"]
    # The inner persistent schedule has the same hazard: a row sum of (g * w) * x next to
    # an output g * x / rms that shares 1 / rms with the normalized output.
    with FusionDefinition() as fd:
        g = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
        x = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
        rms = fd.define_tensor(shape=[-1, 1], contiguity=[True, None], dtype=DataType.Float)
        w = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float)
        full = fd.ops.shape(x)
        inv = fd.ops.reciprocal(fd.ops.broadcast_in_dim(rms, shape=full, broadcast_dims=[0, 1]))
        a = fd.ops.mul(g, fd.ops.broadcast_in_dim(w, shape=full, broadcast_dims=[1]))
        s = fd.ops.sum(fd.ops.mul(a, x), dims=[1], keepdim=True)
        fd.add_output(fd.ops.sub(fd.ops.mul(a, inv), fd.ops.mul(fd.ops.mul(x, s), inv)))
        fd.add_output(fd.ops.mul(fd.ops.mul(g, x), inv))
    gen = torch.Generator().manual_seed(0)
    xs = [torch.randn(1000, 33, generator=gen), torch.randn(1000, 33, generator=gen),
          torch.rand(1000, 1, generator=gen) + 0.5, torch.randn(33, generator=gen)]
    assert _emulate(fd, xs) == ["inner_persistent"]



def rms_norm_backward_3d(rows: int, cols: int, dt: DataType) -> tuple[FusionDefinition, list]:
    """rms_norm_backward in the form of a Llama-2 trace: [1, N, H] tensors, rms [1, N, 1],
    the per-row sum over dims [0, 2] and grad_weight's over [0, 1]."""
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[1, -1, -1], contiguity=[None, True, True], dtype=dt)
        rms = fd.define_tensor(shape=[1, -1, 1], contiguity=[None, True, None], dtype=DataType.Float)
        g = fd.define_tensor(shape=[1, -1, -1], contiguity=[None, True, True], dtype=dt)
        w = fd.define_tensor(shape=[-1], contiguity=[True], dtype=dt)
        if dt != DataType.Float:
            x, g, w = (fd.ops.cast(t, DataType.Float) for t in (x, g, w))
        full = fd.ops.shape(x)
        rb = fd.ops.broadcast_in_dim(rms, shape=full, broadcast_dims=[0, 1, 2])
        inv = fd.ops.reciprocal(rb)
        x_hat = fd.ops.mul(x, inv)
        gw = fd.ops.mul(g, fd.ops.broadcast_in_dim(w, shape=full, broadcast_dims=[2]))
        grad_weight = fd.ops.sum(fd.ops.mul(g, x_hat), dims=[0, 1])
        s = fd.ops.sum(fd.ops.mul(fd.ops.mul(fd.ops.neg(gw), x), fd.ops.reciprocal(fd.ops.pow(rb, 2.0))),
                       dims=[0, 2])
        s = fd.ops.div(s, fd.ops.mul(fd.ops.size(x, 2), 2.0))
        s = fd.ops.broadcast_in_dim(s, shape=full, broadcast_dims=[1])
        grad_input = fd.ops.add(fd.ops.mul(gw, inv), fd.ops.mul(fd.ops.mul(fd.ops.mul(s, 2.0), x), inv))
        for out in (grad_input, grad_weight):
            fd.add_output(out if dt == DataType.Float else fd.ops.cast(out, dt))
    gen = torch.Generator().manual_seed(0)
    xf = torch.randn(1, rows, cols, generator=gen)
    r = (xf.pow(2).mean(2, keepdim=True) + 1e-5).sqrt()
    tdt = _torch_dtype(dt)
    return fd, [xf.to(tdt), r, torch.randn(1, rows, cols, generator=gen).to(tdt),
                torch.randn(cols, generator=gen).to(tdt)]


@needs_gxx
@pytest.mark.parametrize("dt", _NORM_DTYPES, ids=lambda d: d.name)
def test_a_vectorized_inner_reduction_still_keeps_its_inputs_across_it(dt: DataType):
    """With a vectorized inner reduction, rfactor_serial gives the vector axis to a
    per-thread partial, after which a [1, N, H] row sum over dims [0, 2] no longer reads as
    an inner reduction; the reductions were told apart after it, so no tensor was kept
    across the row sum: the Llama-2 RMS-norm backward (llama2_rms_norm_bwd_scalar_inputs)
    at [1, 16, 128] failed to lower with a dependence cycle and ran as five kernels."""
    fd, xs = rms_norm_backward_3d(64, 128, dt)
    assert heuristics(fd, xs, "inner_outer_persistent").unroll_factor_inner_reduction > 1
    assert _emulate(fd, xs) == ["inner_outer_persistent"]


def test_a_reduction_of_a_middle_axis_is_not_combined_inner_outer():
    """mean over [0, 2] of [4, 6, 24] reads as [R, I, R], prod over [1] as [I, R, I]: neither is
    an inner [I.., R..] or outer [R.., I..] reduction, so inner_outer refuses the group by
    nvFuser's rule (checkIfReductionsAreInnerOuter) instead of accepting a kernel that its
    lowering must then refuse (it read another block's partials)."""
    from engine.compile import compile_fusion

    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1, -1, -1], contiguity=True, dtype=DataType.Float)
        fd.add_output(fd.ops.prod(fd.ops.exp(t0), dims=[1]))
        fd.add_output(fd.ops.sub(t0, fd.ops.mean(t0, dims=[0, 2], keepdim=True)))
    xs = [torch.randn(4, 6, 24, generator=torch.Generator().manual_seed(0))]
    verdict = registry.verdict(SchedulerType.inner_outer_persistent, fd.fusion, None)
    assert not verdict.accepted
    assert verdict.reason == ("to use combined reduction, inner reduction tensor should be [I,I,...,R,R] "
                              "and outer reduction tensor should be [R,R,...,I,I]")
    cf = compile_fusion(fd, xs)
    assert not [e for e in cf.trace if "failed to lower" in str(e) or "is refused for" in str(e)]


def test_a_reduced_unit_axis_leaves_the_rms_norm_backward_combined():
    """The RMSNorm backward of a [1, S, H] input reduces its unit axis with the others
    ([rS{1}, iS, rS] inner, [rS{1}, rS, iS] outer): nvFuser's pattern check would refuse it;
    here the unit axis is left out of the pattern, and the norm stays one kernel. (The
    file's [10, H] weight scaling shares no tensor with the norm: a pointwise kernel of its
    own, which the combined kernel's threads would each have run whole.)"""
    from engine.compile import compile_fusion

    root = Path(__file__).parents[1] / "realworld" / "scripts"
    fd = load_fusion(root / "llama2_rms_norm_bwd_scalar_inputs.py")
    cf = compile_fusion(fd, fd.example_inputs(device="cpu", seed=0))
    assert [s.scheduler for s in cf.segments] == ["pointwise", "inner_outer_persistent"]


def _batch_norm_bwd_real():
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    from scripts.scales import Scale, scaled_fusion

    path = Path(__file__).resolve().parents[1] / "realworld/scripts/batch_norm_bwd_train_fp16_nchw.py"
    small = load_fusion(path)
    xs0 = small.example_inputs(seed=0)
    return scaled_fusion(path, path.read_text(), Scale("real", {5: 256, 12: 256, 7: 14}), xs0,
                         small.input_specs, 1 << 30, "cpu")


def test_batch_norm_backward_at_its_real_size_fits_the_shared_memory_it_planned():
    # BatchNorm backward, fp16 NCHW [256, 256, 14, 14], on the H200 model: its inner-persistent
    # kernel once asked for 409648 bytes of shared memory where the heuristic had planned
    # half: a buffer the projection shared between uses on both sides of a reduction was
    # kept besides the inputs. It is one kernel holding what the heuristic counted.
    from engine import compile_fusion
    from engine.config import Options

    fd, xs = _batch_norm_bwd_real()
    cf = compile_fusion(fd, xs, Options(device_model="H200"))
    kernels = [s for s in cf.segments if s.is_kernel]
    assert [s.scheduler for s in kernels] == ["inner_persistent"]
    planned = kernels[0].params.lparams.smem
    assert planned <= kernels[0].launch.shared_mem_bytes <= planned + 16384  # + reduction scratch
    assert kernels[0].launch.shared_mem_bytes <= 232448


def test_a_kernel_asking_for_more_shared_memory_than_the_device_has_is_refused_at_compile(monkeypatch):
    # A lowering that asks for more shared memory than the heuristic planned (simulated:
    # every persistent kernel's request raised past the device's 227 KB, as a BatchNorm
    # backward's once was) is refused when lowered, not at launch, and the segmenter places
    # the ops with other schedulers.
    from dataclasses import replace

    from engine import compile_fusion, compile_stages
    from engine.config import Options

    real = compile_stages.lower_fusion

    def greedy(fusion, env, name, *args, **kwargs):
        low = real(fusion, env, name, *args, **kwargs)
        if "persistent" in name:
            low.kernel.launch = replace(low.kernel.launch, shared_mem_bytes=300 * 1024)
        return low

    monkeypatch.setattr(compile_stages, "lower_fusion", greedy)
    fd, xs = _batch_norm_bwd_real()
    cf = compile_fusion(fd, xs, Options(device_model="H200"))
    kernels = [s for s in cf.segments if s.is_kernel]
    assert kernels and all("persistent" not in s.scheduler for s in kernels)
    assert any("asks for 307200 bytes of dynamic shared memory per block" in e.message
               and "refused" in e.message for e in cf.trace.events)


def test_instance_norm_weight_grads_are_no_outer_reduction_of_the_combined_kernel():
    # InstanceNorm2d backward (realworld instance_norm2d_bwd_fp16_per_sample_stats): the sums
    # over H, W are inner reductions of [N, C, H, W]; the weight grads then sum their [N, C]
    # results over N. inner_outer_persistent took both as one combined kernel, which cannot
    # give an outer sum over part of another block's rows: every try failed to lower, the ops
    # were isolated and ran as 17 kernels at the real size [8, 128, 64, 64]. As nvFuser
    # (reduction root size, isReductionIterationAxisMatched), the outer reductions must reduce
    # exactly the inner ones' iteration axes: one inner-persistent kernel and two reductions.
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    from engine import compile_fusion
    from engine.config import Options
    from engine.reference import evaluate
    from scripts.scales import real_scale, scaled_fusion

    path = Path(__file__).resolve().parents[1] / "realworld/scripts/instance_norm2d_bwd_fp16_per_sample_stats.py"
    small = load_fusion(path)
    xs0 = small.example_inputs(seed=0)
    fd, xs = scaled_fusion(path, path.read_text(), real_scale(path.read_text()), xs0, small.input_specs,
                           1 << 30, "cpu")
    cf = compile_fusion(fd, xs, Options(device_model="H200"))
    assert [s.scheduler for s in cf.segments] == ["inner_persistent", "reduction", "reduction"]
    assert not any("failed to lower" in e.message for e in cf.trace.events)
    # the same segmentation at the script's own size, and its values
    own = compile_fusion(small, xs0)
    assert [s.scheduler for s in own.segments] == ["inner_persistent", "reduction", "reduction"]
    for o, r in zip(own.run(xs0, backend="emulate"), evaluate(small.fusion, xs0)):
        torch.testing.assert_close(o, r, rtol=1e-2, atol=1e-2)


def test_inner_outer_needs_the_outer_reductions_to_reduce_the_inner_rows():
    from engine.schedule.normalization import inner_outer_shape_reason

    with FusionDefinition() as fd:  # LayerNorm-backward-like: [N, H] rows and columns
        t0 = fd.define_tensor(shape=[-1, -1], dtype=DataType.Float)
        fd.add_output(fd.ops.sum(t0, [1]))
        fd.add_output(fd.ops.sum(t0, [0]))
    reds = [t for t in fd.fusion.tensors() if any(i.is_reduction for i in t.domain.logical)]
    assert inner_outer_shape_reason(reds) is None
    with FusionDefinition() as fd:  # an outer sum over N of [N, C] sums over H, W
        t0 = fd.define_tensor(shape=[-1, -1, -1, -1], dtype=DataType.Float)
        t1 = fd.ops.sum(t0, [2, 3])
        fd.add_output(fd.ops.sum(t1, [0]))
    reds = [t for t in fd.fusion.tensors() if any(i.is_reduction for i in t.domain.logical)]
    assert "reduction root size" in inner_outer_shape_reason(reds)
    with FusionDefinition() as fd:  # same rank, but the outer sum leaves a row axis
        t0 = fd.define_tensor(shape=[-1, -1, -1], dtype=DataType.Float)
        fd.add_output(fd.ops.sum(t0, [2]))
        fd.add_output(fd.ops.sum(t0, [0]))
    reds = [t for t in fd.fusion.tensors() if any(i.is_reduction for i in t.domain.logical)]
    assert "iteration axis" in inner_outer_shape_reason(reds)


@pytest.mark.parametrize("dev", ["H100", "A100"])
def test_float_rows_are_projected_to_the_inputs_where_they_are_staged(dev: str):
    """A float RMS-norm backward keeps grad_out * w across its row sum. Where the rows are
    staged in shared memory a step ahead (sm_90), that buffer is recomputed from grad_out,
    which is staged with x: both rows are copied asynchronously. Where the rows stay in
    registers, projecting float buffers to float inputs saves nothing and is not done."""
    fd, xs = rms_norm_backward(256, 1024, DataType.Float)
    x, _rms, g, w = fd.fusion.inputs
    p = schedule(fd, xs, "inner_outer_persistent", dev=model(dev))
    if dev == "H100":
        assert p.project_persistent_buffers and p.circular_buffer_stages == 2
        assert {x.short_name, g.short_name} <= set(p.smem_persistent_buffers)
        assert w.short_name not in p.smem_persistent_buffers
    else:
        assert not p.project_persistent_buffers and not p.smem_persistent_buffers
