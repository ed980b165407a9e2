"""Schedules that the lowering takes: samples whose scheduling decided whether they lower
(indexing-op tables kept global, resize propagated to cached inputs, block quantization
accepted by pointwise), compiled, emulated on the CPU and compared with the reference."""

from pathlib import Path

import pytest
import torch

from engine import DataType, FusionDefinition, load_fusion
from engine.compile import compile_fusion
from engine.ir import exprs as ex
from engine.ir.tensorview import MemoryType
from engine.reference import evaluate
from engine.schedule import schedule_fusion, tools
from tests.emulation import needs_gxx

SAMPLES = Path(__file__).resolve().parents[2] / "sample_fusions"


def close(out: torch.Tensor, ref: torch.Tensor) -> None:
    assert out.shape == ref.shape and out.dtype == ref.dtype
    if out.element_size() == 1 and out.dtype.is_floating_point:  # fp8 / packed fp4
        assert torch.equal(out.view(torch.uint8), ref.view(torch.uint8))
        return
    if not out.dtype.is_floating_point:
        assert torch.equal(out, ref)
        return
    tol = 1e-5 if out.dtype in (torch.float32, torch.float64) else 1e-2
    torch.testing.assert_close(out.double(), ref.double(), rtol=tol,
                               atol=tol * max(1.0, ref.abs().max().item()))


def emulate(name: str) -> object:
    fd = load_fusion(SAMPLES / f"{name}.py")
    xs = fd.example_inputs(seed=0)
    cf = compile_fusion(fd, xs)
    outs = cf.run(xs, backend="emulate")
    refs = evaluate(fd.fusion, xs)
    assert len(outs) == len(refs)
    for o, r in zip(outs, refs):
        close(o, r)
    return cf


def per_thread_elements(tv) -> int:
    """Elements a thread holds of a local tensor: its loop axes right of ca_pos that no
    block or thread index binds (serial, unrolled, vectorized)."""
    n = 1
    for i in tv.domain.loop[tv.compute_at_pos:]:
        pt = i.parallel_type
        if pt.is_block_dim or pt.is_thread_dim or i.is_broadcast:
            continue
        assert i.extent.is_const, f"{tv}: symbolic loop extent {i}"
        n *= i.extent.value
    return n


def assert_locals_inlined(cf, limit: int = 64) -> None:
    """Every local tensor of every kernel is inlined down to a few elements a thread (a
    `full` read as its fill value is never stored)."""
    from engine.lower.pipeline import constant_fulls

    for seg in cf.segments:
        if not seg.is_kernel:
            continue
        constants = constant_fulls(seg.fusion, seg.fusion.exprs())
        for tv in seg.fusion.tensors():
            if getattr(tv, "memory_type", None) == MemoryType.Local and tv not in constants:
                assert per_thread_elements(tv) <= limit, f"segment {seg.id}: {tv}"


# ---- indexing ops: the lookup table stays in global memory -----------------------------------

def test_lookup_tables_are_global_only_and_not_cached():
    with FusionDefinition() as fd:
        a = fd.define_tensor(shape=[-1, -1], dtype=DataType.Float)
        i = fd.define_tensor(shape=[-1, -1], dtype=DataType.Int)
        fd.add_output(fd.ops.relu(fd.ops.take_along_axis(a, i, dim=1)))
    f = fd.fusion
    table, index = f.inputs
    assert tools.lookup_inputs(f) == {table}
    assert table in tools.global_only(f)
    xs = [torch.randn(64, 40), torch.randint(0, 40, (64, 8))]
    before = fd.execute(xs)
    kind, _ = schedule_fusion(f, xs)
    assert str(kind) == "pointwise"
    gather = next(e for e in f.exprs() if isinstance(e, ex.GatherOp))
    # The gather reads the table itself (global); the index goes through a local cache.
    assert gather.inputs[0] is table and table.memory_type == MemoryType.Global
    assert gather.inputs[1] is not index
    assert torch.equal(fd.execute(xs)[0], before[0])


@needs_gxx
def test_cross_entropy_looks_up_the_logits_and_matches_the_reference():
    cf = emulate("cross_entropy")
    kinds = [s.scheduler for s in cf.segments]
    assert kinds == ["inner_persistent", "reduction"]
    # The look-up reads the logits (the fusion input) in the persistent kernel: only the
    # per-row losses cross the cut, not the [rows, classes] log-softmax.
    (crossing,) = cf.segments[1].input_vals
    assert [i.extent.value for i in crossing.domain.logical if not i.is_reduction][1:] == [1]


# ---- pads and cats: padded inputs are read from global memory -----------------------------------

def test_inputs_read_by_a_pad_are_not_cached():
    """A cache of a padded input would keep the unpadded loop domain (propagation from
    the padded reference stops at the pad's Resize), never inlined: the input is read
    from global memory where the pad needs it, as nvFuser's cacheInputs."""
    with FusionDefinition() as fd:
        a = fd.define_tensor(shape=[-1, -1], dtype=DataType.Float)
        b = fd.define_tensor(shape=[-1, -1], dtype=DataType.Float)
        p = fd.ops.pad(a, [0, 2, 0, 0])
        fd.add_output(fd.ops.cat([p, fd.ops.neg(b)], dim=1))
    f = fd.fusion
    a, b = f.inputs
    assert tools.read_by_resize(f, a) and not tools.read_by_resize(f, b)
    caches = tools.cache_inputs(f)
    assert [c.definition.inputs[0] for c in caches] == [b]
    pad = next(e for e in f.exprs() if isinstance(e, ex.PadOp))
    assert pad.inputs[0] is a


@needs_gxx
def test_rope_bwd_small_lowers_every_segment_inlined_and_matches_the_reference():
    cf = emulate("seed003_rope_bwd_small")
    assert_locals_inlined(cf)
    # The last segment pads and concatenates q's and k's gradients (T29, T52) and v's, a
    # full of zeros after folding, which it reads as its fill value.
    last = cf.segments[-1]
    assert last.scheduler == "pointwise" and len(last.inputs) == 2
    pads = [e for e in last.fusion.exprs() if isinstance(e, ex.PadOp)]
    assert len(pads) == 3
    assert all(e.inputs[0] in last.fusion.inputs or isinstance(e.inputs[0].definition, ex.FullOp) for e in pads)


# ---- block quantization: accepted by pointwise, whole blocks per thread -----------------------

@pytest.mark.parametrize("name", ["seed004_nvfp4_quantize", "seed004_nvfp4_quantize_swizzled",
                                  "seed000_moe_layout_op"])
def test_block_quantization_segments_schedule_whole_blocks_per_thread(name):
    """The segment with the BlockQuantizationOp goes to pointwise at the samples' own
    sizes; each thread's innermost loop of the quantized output is one 16-element block,
    the block scales iterate [BIDx, TIDx] (one scale per thread and block), and the
    quantized input is inlined at TIDx (16 elements a thread). Emulation waits for the
    lowering of BlockQuantizationOp (engine/lower refuses fp4 outputs for now)."""
    from engine.ir.iterdomain import ParallelType
    from engine.ir.quant_exprs import BlockQuantizationOp
    from engine.schedule import registry
    from engine.schedule.runtime_info import SchedulerRuntimeInfo
    from engine.segment import segment_fusion

    fd = load_fusion(SAMPLES / f"{name}.py")
    xs = fd.example_inputs(seed=0)
    sf = segment_fusion(fd.fusion, xs)
    group = next(g for g in sf.groups
                 if any(isinstance(e, BlockQuantizationOp) for e in g.exprs))
    sub, _ = group.make_fusion()
    # The quantization's group reads fusion inputs only (its values and offsets).
    args = [xs[fd.fusion.inputs.index(v)] for v in group.inputs]
    info = SchedulerRuntimeInfo(sub, args)
    _, first = registry.can_schedule(sub, info)
    assert str(first) == "pointwise"
    s = registry.get(first)
    p = s.compute_heuristics(sub, info)
    s.schedule(sub, p)
    q = next(e for e in sub.exprs() if isinstance(e, BlockQuantizationOp))
    quantized, scales, x = q.quantized, q.block_scales, q.inputs[0]
    pt = ParallelType
    assert [i.parallel_type for i in quantized.loop()] == [pt.grid_x, pt.block_x, pt.unroll]
    assert quantized.axis(-1).extent.value == 16
    assert [i.parallel_type for i in scales.loop()] == [pt.grid_x, pt.block_x]
    assert x.memory_type == MemoryType.Local and x.compute_at_pos == 2
    for tv in sub.tensors():
        if getattr(tv, "memory_type", None) == MemoryType.Local:
            assert per_thread_elements(tv) <= 16, tv
        if tv in sub.outputs and tv.nloop:
            # Every output (the layout op's too) is spread over the same grid and block.
            assert [i.parallel_type for i in tv.loop()[:2]] == [pt.grid_x, pt.block_x], tv
