"""Segmenter: nvFuser's segmentation tests (ForwardFull, SegmenterHint, ...), seeds 000,
003 and 004, the printed form, make_fusion and group-by-group reference runs."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

import engine.ir.fusion as fusion_module
from engine import DataType, FusionDefinition, FusionDefinitionError, load_fusion
from engine.config import Options
from engine.errors import ScheduleError
from engine.ir import exprs as ex
from engine.ir.quant_exprs import BlockQuantizationOp, PreprocessGroupedMatmulInputSf
from engine.reference import evaluate
from engine.schedule.base import PRIORITY
from engine.segment import SegmentedFusion, segment_fusion
from engine.segment.fold import fold_zero_factories
from engine.trace import Trace

SAMPLES = Path(__file__).resolve().parents[2] / "sample_fusions"


def _bits(x: torch.Tensor) -> torch.Tensor:
    # torch compares no fp4 (or fp8) tensors: compare their bytes
    return x.view(torch.uint8) if x.dtype.itemsize == 1 and x.is_floating_point() else x


def same(a: list, b: list) -> bool:
    return len(a) == len(b) and all(
        x.dtype == y.dtype and x.shape == y.shape and torch.equal(_bits(x), _bits(y)) for x, y in zip(a, b)
    )


def check_reference(fd: FusionDefinition, sf: SegmentedFusion, xs: list) -> None:
    assert same(sf.run_reference(xs), evaluate(fd.fusion, xs))


# ---- seed 003 / SegmentationTest.ForwardFull ----------------------------------------------

def forward_full() -> FusionDefinition:
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1], dtype=DataType.Float)
        t1 = fd.ops.full([t0.axis(0).extent], 1.0, DataType.Float)
        t2 = fd.ops.add(t0, t1)
        t3 = fd.ops.segment_set(t2)
        t4 = fd.ops.add(t3, t1)
        fd.add_output(t4)
    return fd


def full_outputs(sf: SegmentedFusion) -> set:
    return {e.output for g in sf.groups for e in g.exprs if isinstance(e, ex.FullOp)}


def test_forward_full_recomputes_full_in_each_segment():
    fd = forward_full()
    x = torch.randn(1024)
    trace = Trace()
    sf = segment_fusion(fd.fusion, [x], trace=trace)
    assert len(sf.groups) == 2
    fulls = full_outputs(sf)
    assert len(fulls) == 1
    for g in sf.groups:
        assert any(isinstance(e, ex.FullOp) for e in g.exprs), g.name
        assert not fulls & set(g.inputs) and not fulls & set(g.outputs)
        # The kernel the pipeline compiles has its own full and never outputs it.
        sub, vmap = g.make_fusion()
        assert any(isinstance(e, ex.FullOp) for e in sub.exprs())
        assert all(not isinstance(o.definition, ex.FullOp) for o in sub.outputs)
        assert [v.short_name for v in sub.inputs] == [v.short_name for v in g.inputs]
    assert [e.val.short_name for e in sf.edges] == ["T3"]
    check_reference(fd, sf, [x])
    fwd = [e for e in trace.of_kind("forward") if e.data.get("forwarded")]
    assert [e.subject for e in fwd] == ["T1"] and fwd[0].data["factory"]


def test_forward_full_off_passes_the_full_output_through_memory():
    fd = forward_full()
    x = torch.randn(1024)
    trace = Trace()
    sf = segment_fusion(fd.fusion, [x], Options(forwarding=False), trace)
    assert len(sf.groups) == 2
    crossing = [e.val for e in sf.edges if isinstance(e.val.definition, ex.FullOp)]
    assert [v.short_name for v in crossing] == ["T1"]
    assert sum(isinstance(e, ex.FullOp) for g in sf.groups for e in g.exprs) == 1
    assert trace.of_kind("forward")[0].data["enabled"] is False
    check_reference(fd, sf, [x])


def test_a_permuted_view_of_an_input_is_recomputed_by_its_readers_not_copied():
    # A fused QKV projection reshaped into heads and permuted, then sliced into q, k and v:
    # the permuted view is forwarded, so each kernel indexes the input itself and no kernel
    # writes a permuted copy of it for another (the k heads' kernel read one, a copy of the
    # whole [B, S, (H + 2 * KV) * D] input).
    fd = load_fusion(REALWORLD / "rope_llama3_gqa_fused_qkv_fwd_expand_k_bf16.py")
    xs = fd.example_inputs(device="cpu", seed=0)
    trace = Trace()
    sf = segment_fusion(fd.fusion, xs, trace=trace)
    outputs = set(fd.fusion.outputs)
    for g in sf.groups:
        if g.scheduler != "expr_eval":
            assert set(g.outputs) <= outputs, [t.short_name for t in g.outputs]
    fwd = [e for e in trace.of_kind("forward") if e.data.get("forwarded")]
    assert any(e.data["start"] == "T0" and len(e.data["exprs"]) == 2 for e in fwd)
    check_reference(fd, sf, xs)


def test_forward_full_printing_follows_nvfuser():
    fd = forward_full()
    sf = segment_fusion(fd.fusion, [torch.randn(1024)])
    assert str(sf.groups[1]) == (
        "g{(pointwise)\n"
        "group id: 1\n"
        "inputs:\n"
        "  T3_g_float[iS3{i0}] float\n"
        "outputs:\n"
        "  T4_g_float[iS4{i0}] float\n"
        "\n\n"
        "T1_l_float[iS1{i0}]\n"
        "   = full({i0}, float(1));\n"
        "(0)\n"
        "T4_g_float[iS4{i0}]\n"
        "   = T3_g_float[iS3{i0}]\n"
        "   + T1_l_float[iS1{i0}];\n"
        "(3)\n"
        "}\n"
    )
    text = str(sf)
    assert text.startswith("Segmented_Fusion Dump: -- fusion segments:\nSegmented_Fusion{ \ngroups: \n"
                           "g{0, 1, 2}\n\ng{0, 3}\n\nedges: \ne{ g{0, 1, 2}\n -> g{0, 3}\n(T3_g_float[iS3{i0}]) }\n")
    assert "\ngroup details:\ng{(pointwise)\ngroup id: 0\n" in text
    assert text.endswith("} //Segmented_Fusion\n")


def test_segmentation_is_deterministic():
    a = segment_fusion(forward_full().fusion, [torch.randn(64)])
    b = segment_fusion(forward_full().fusion, [torch.randn(64)])
    assert str(a) == str(b)


# ---- seed 003 RoPE backward sample ----------------------------------------------------------

def test_rope_bwd_full_outputs_never_cross_and_cat_keeps_its_pads():
    fd = load_fusion(SAMPLES / "seed003_rope_bwd_small.py")
    xs = fd.example_inputs(device="cpu", seed=0)
    trace = Trace()
    sf = segment_fusion(fd.fusion, xs, trace=trace)
    assert len(sf.groups) > 1
    fulls = full_outputs(sf)
    assert len(fulls) == 2
    for g in sf.groups:
        assert not fulls & set(g.inputs), g.name
        assert not fulls & set(g.outputs), g.name
    cats = [(g, e) for g in sf.groups for e in g.exprs if isinstance(e, ex.CatOp)]
    assert len(cats) == 1
    group, cat = cats[0]
    assert all(isinstance(v.definition, ex.PadOp) and v.definition in group.exprs for v in cat.inputs)
    assert "g{(" in str(sf) and "group id: " in str(sf)
    check_reference(fd, sf, xs)
    # Every merge attempt names the groups and carries the verdicts in priority order: a refused
    # merge every scheduler's refusal, an accepted one those up to the scheduler that takes it
    # (nvFuser's tryMerge stops there).
    merges = trace.of_kind("merge")
    assert any(m.data["accepted"] for m in merges) and any(not m.data["accepted"] for m in merges)
    asked = [m for m in merges if m.data["verdicts"]]
    for m in asked:
        vs = m.data["verdicts"]
        assert [v["scheduler"] for v in vs] == [str(t) for t in PRIORITY[:len(vs)]]
        assert not any(v["accepted"] for v in vs[:-1])
        if m.data["accepted"]:
            assert vs[-1]["accepted"] and vs[-1]["scheduler"] == m.data["scheduler"]
        else:
            assert len(vs) == len(PRIORITY) and not vs[-1]["accepted"]
    assert all("+" in m.subject for m in merges)


def test_rope_bwd_each_rotary_path_is_one_resize_kernel_and_bf16_crosses():
    # Seed 003's segments: the q path (mul by cos/sin, slices, negation, pads) is one
    # resize segment reading the inputs, as is the k path; broadcast/expand of cos and sin
    # are recomputed in both. Casts move to the narrow side of each boundary, so the
    # reshapes that are left alone become views (expr_eval) and no fp32 tensor crosses.
    fd = load_fusion(SAMPLES / "seed003_rope_bwd_small.py")
    xs = fd.example_inputs(device="cpu", seed=0)
    trace = Trace()
    sf = segment_fusion(fd.fusion, xs, trace=trace)
    kinds = [g.scheduler for g in sf.groups]
    assert kinds.count("resize") == 2 and kinds.count("reduction") == 1
    assert sum(k != "expr_eval" for k in kinds) == 4
    # The v gradient (a sum of zeros over the grouped heads, cast and broadcast) folds to a
    # full of zeros, which the cat's segment reads as its fill value; so does q's zero term.
    assert [e.subject for e in trace.of_kind("fold")] == ["T9", "T54", "T55", "T56", "T57", "T58"]
    crossing = {e.val for e in sf.edges}
    assert all(v.dtype == DataType.BFloat16 for v in crossing), [v.short_name for v in crossing]
    q_path = sf.groups[0]
    assert q_path.scheduler == "resize" and [v.short_name for v in q_path.inputs] == ["T0", "T1", "T3"]
    assert trace.of_kind("narrow")
    check_reference(fd, sf, xs)


REALWORLD = Path(__file__).resolve().parents[1] / "realworld" / "scripts"


def test_deinterleaved_rotary_half_is_its_own_kernel_and_its_product_moves_to_its_reader():
    # DeepSeek V3's decoupled RoPE de-interleaves the rotary half (reshape [.., 32, 2],
    # transpose, reshape) before rotate-half and cat. As in nvFuser, the de-interleave is a
    # pointwise kernel of its own (the resize scheduler refuses the in-kernel transpose),
    # and the float product of its bf16 output with cos, first merged beside it, moves into
    # the resize kernel that reads it: only bf16 tensors cross. The kv projection's
    # permuted view is recomputed by its readers (forwarded), not copied by a kernel of its
    # own: 2 kernels where nvFuser has 4.
    fd = load_fusion(REALWORLD / "rope_deepseek_v3_mla_decoupled_rope_interleave_cat_bf16.py")
    xs = fd.example_inputs(device="cpu", seed=0)
    trace = Trace()
    sf = segment_fusion(fd.fusion, xs, trace=trace)
    kernels = [g for g in sf.groups if g.scheduler != "expr_eval"]
    assert [g.scheduler for g in kernels] == ["pointwise", "resize"]
    q_rot = kernels[0]
    assert [type(e).__name__ for e in q_rot.exprs][-4:] == ["LoadStoreOp", "ViewOp", "LoadStoreOp", "ViewOp"]
    crossing = {e.val for e in sf.edges}
    assert all(v.dtype == DataType.BFloat16 for v in crossing), [v.short_name for v in crossing]
    moved = [e for e in trace.of_kind("narrow") if "ops computing" in e.message]
    assert {e.subject for e in moved} == {"T55"}
    check_reference(fd, sf, xs)


def _zeros_reduced(fill: float) -> FusionDefinition:
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.BFloat16)
        z = fd.ops.full([8, 4, 64], fill, DataType.BFloat16)
        s = fd.ops.sum(fd.ops.cast(z, DataType.Float), dims=[1])
        b = fd.ops.cast(s, DataType.BFloat16)
        fd.add_output(fd.ops.cat([x, b], dim=0))
    return fd


def test_zero_factories_fold_and_a_pad_reads_the_fill_value():
    fd = _zeros_reduced(0.0)
    xs = [torch.randn(8, 64).to(torch.bfloat16)]
    trace = Trace()
    sf = segment_fusion(fd.fusion.clone()[0], xs, trace=trace)
    assert [e.data["op"] for e in trace.of_kind("fold")] == ["UnaryOp", "ReductionOp", "UnaryOp"]
    # No reduction is left: one segment, the cat reading the zeros where they are padded.
    assert [g.scheduler for g in sf.groups] == ["resize"]
    check_reference(fd, sf, xs)


def test_factories_of_other_values_do_not_fold():
    fusion = _zeros_reduced(1.5).fusion.clone()[0]
    before = str(fusion)
    assert fold_zero_factories(fusion) == 0 and str(fusion) == before


# ---- nvFuser's segmentation tests ----------------------------------------------------------

def test_segmenter_hint_cuts_after_the_segment_set():
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1, -1], dtype=DataType.Float)
        t1 = fd.ops.relu(t0)
        t2 = fd.ops.segment_set(t1)
        t3 = fd.ops.neg(t2)
        fd.add_output(t3)
    x = torch.randn(8, 32)
    sf = segment_fusion(fd.fusion, [x])
    assert len(sf.groups) == 2
    last = sf.groups[1]
    assert [type(e).__name__ for e in last.exprs] == ["UnaryOp"] and last.exprs[0].op == "neg"
    assert [v.short_name for v in last.inputs] == ["T2"]
    check_reference(fd, sf, [x])


def test_input_forwarding_until_binary_is_one_segment():
    with FusionDefinition() as fd:
        a = fd.define_tensor(shape=[-1, -1], dtype=DataType.Half)
        b = fd.define_tensor(shape=[-1, -1], dtype=DataType.Half)
        chains = []
        for t in (a, b):
            chains.append(fd.ops.sin(fd.ops.neg(fd.ops.cast(t, DataType.Float))))
        out = fd.ops.segment_set(fd.ops.add(*chains))
        fd.add_output(out)
    xs = [torch.randn(16, 32).half(), torch.randn(16, 32).half()]
    trace = Trace()
    sf = segment_fusion(fd.fusion, xs, trace=trace)
    assert len(sf.groups) == 1
    g = sf.groups[0]
    assert [v.short_name for v in g.inputs] == ["T0", "T1"]
    assert len(g.forwarded_exprs) == 6  # cast, neg, sin for each input
    assert len([e for e in trace.of_kind("forward") if e.data.get("forwarded")]) == 2
    check_reference(fd, sf, xs)


def test_privatized_upcast_each_reduction_reads_the_segment_set_output():
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[16, 32], dtype=DataType.BFloat16)
        t1 = fd.ops.segment_set(t0)
        t2 = fd.ops.cast(t1, DataType.Float)
        fd.add_output(fd.ops.sum(t2, [0]))
        fd.add_output(fd.ops.sum(t2, [1]))
    x = torch.randn(16, 32).bfloat16()
    trace = Trace()
    sf = segment_fusion(fd.fusion, [x], trace=trace)
    assert len(sf.groups) == 3
    reducers = [g for g in sf.groups if any(isinstance(e, ex.ReductionOp) for e in g.exprs)]
    assert len(reducers) == 2
    for g in reducers:
        assert [v.short_name for v in g.inputs] == ["T1"]
        assert g.inputs[0].dtype == DataType.BFloat16
        assert sum(isinstance(e, ex.UnaryOp) and e.op == "cast" for e in g.exprs) == 1
    assert trace.of_kind("privatize")
    check_reference(fd, sf, [x])


def test_privatized_upcast_folds_back_when_copies_share_a_group():
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1, -1], dtype=DataType.BFloat16)
        t1 = fd.ops.segment_set(t0)
        t2 = fd.ops.cast(t1, DataType.Float)
        fd.add_output(fd.ops.add(fd.ops.exp(t2), fd.ops.sin(t2)))
    x = torch.randn(8, 8).bfloat16()
    trace = Trace()
    sf = segment_fusion(fd.fusion, [x], trace=trace)
    casts = [e for g in sf.groups for e in g.exprs if isinstance(e, ex.UnaryOp) and e.op == "cast"]
    assert len(casts) == 1
    assert any(e.data.get("reverted") for e in trace.of_kind("privatize"))
    check_reference(fd, sf, [x])


def test_unrelated_outputs_are_two_segments():
    with FusionDefinition() as fd:
        a = fd.define_tensor(shape=[-1], dtype=DataType.Float)
        b = fd.define_tensor(shape=[-1, -1], dtype=DataType.Float)
        fd.add_output(fd.ops.relu(a))
        fd.add_output(fd.ops.neg(b))
    xs = [torch.randn(100), torch.randn(8, 16)]
    sf = segment_fusion(fd.fusion, xs)
    assert len(sf.groups) == 2 and not sf.edges
    check_reference(fd, sf, xs)


def reduction_then_broadcast_add() -> FusionDefinition:
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1, -1], dtype=DataType.Float)
        t1 = fd.ops.sum(t0, [1])
        t2 = fd.ops.broadcast(t1, [False, True])
        fd.add_output(fd.ops.add(t0, t2))
    return fd


def test_reduction_then_broadcast_add_is_one_persistent_segment_when_it_fits():
    fd = reduction_then_broadcast_add()
    x = torch.randn(64, 1024)
    sf = segment_fusion(fd.fusion, [x])
    assert [g.scheduler for g in sf.groups] == ["inner_persistent"]
    check_reference(fd, sf, [x])


def test_reduction_then_broadcast_add_splits_when_rows_do_not_fit():
    fd = reduction_then_broadcast_add()
    x = torch.randn(2, 1 << 17)  # 512 KiB rows: more than registers and shared memory hold
    trace = Trace()
    sf = segment_fusion(fd.fusion, [x], trace=trace)
    assert [g.scheduler for g in sf.groups] == ["reduction", "pointwise"]
    assert [e.val.short_name for e in sf.edges] == ["T1"]
    assert sf.edges[0].bytes == 2 * 4
    whole = trace.of_kind("segment")[0]
    persistent = next(v for v in whole.data["verdicts"] if v["scheduler"] == "inner_persistent")
    assert not persistent["accepted"] and persistent["reason"]
    check_reference(fd, sf, [x])


def test_whole_fusion_is_one_group_when_a_scheduler_accepts():
    fd = load_fusion(SAMPLES / "gelu_bias.py")
    xs = fd.example_inputs(device="cpu", seed=0)
    trace = Trace()
    sf = segment_fusion(fd.fusion, xs, trace=trace)
    assert len(sf.groups) == 1 and sf.groups[0].scheduler == "pointwise"
    assert len(sf.groups[0].exprs) == len(fd.fusion.exprs())
    assert not trace.of_kind("merge")
    check_reference(fd, sf, xs)


def test_group_fusion_schedules_standalone():
    from engine.schedule import schedule_fusion

    fd = forward_full()
    x = torch.randn(1024)
    sf = segment_fusion(fd.fusion, [x])
    values = {fd.fusion.inputs[0]: x}
    for g in sf.groups:
        sub, vmap = g.make_fusion()
        assert all(vmap[v] is c for v, c in zip(g.inputs, sub.inputs))
        args = g.input_values(values, sf.sizes.env)
        kind, _ = schedule_fusion(sub, args)
        assert str(kind) == g.scheduler
        values.update(zip(g.outputs, evaluate(g.make_fusion()[0], args)))
    # scheduling the clones left the complete fusion untouched
    assert all(t.domain.loop == t.domain.logical for t in fd.fusion.tensors())


# ---- graph ------------------------------------------------------------------------------------

def test_to_networkx_carries_schedulers_tensors_and_bytes():
    import networkx as nx

    fd = reduction_then_broadcast_add()
    sf = segment_fusion(fd.fusion, [torch.randn(4, 1 << 17)])
    g = sf.to_networkx()
    assert isinstance(g, nx.DiGraph)
    assert g.nodes[0]["scheduler"] == "reduction" and g.nodes[1]["scheduler"] == "pointwise"
    assert g.nodes[0]["outputs"] == ["T1"] and g.nodes[1]["inputs"] == ["T0", "T1"]
    assert g.edges[0, 1] == {"tensors": ["T1"], "bytes": 16}
    assert list(nx.topological_sort(g)) == [s.id for s in sf.groups]


# ---- seed 000: the layout op ------------------------------------------------------------------

M, K = 2048, 64  # large enough for the quantization's vectorization (the pointwise rule)


def layout_fusion(relu: bool = False) -> FusionDefinition:
    """Seed 000's MoE fusion with int64 offsets cast to int32 inside the fusion."""
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1], dtype=DataType.BFloat16)
        mat2 = fd.define_tensor(shape=[-1, -1, -1], dtype=DataType.Float4_e2m1fn, stride_order=[2, 0, 1])
        sf2 = fd.define_tensor(shape=[-1, -1, -1], dtype=DataType.Float8_e4m3fn)
        alpha = fd.define_tensor(shape=[-1], dtype=DataType.Float)
        sizes = fd.define_tensor(shape=[-1, 3], dtype=DataType.Int32)
        ino = fd.ops.cast(fd.define_tensor(shape=[-1], dtype=DataType.Int), DataType.Int32)
        outo = fd.ops.cast(fd.define_tensor(shape=[-1], dtype=DataType.Int), DataType.Int32)
        q, s = fd.ops.nv_block_quantize(x)
        lay = fd.ops.preprocess_grouped_matmul_input_sf(s, ino, outo)
        if relu:
            fd.add_output(fd.ops.relu(lay))
        else:
            fd.add_output(fd.ops.cutlass_nvfp4_grouped_mm(q, mat2, lay, sf2, alpha, sizes, ino, outo,
                                                          dtype=DataType.BFloat16))
    return fd


def layout_inputs() -> list[torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    m0 = 1000
    return [
        torch.randn(M, K, generator=g).bfloat16(),
        (torch.randint(0, 256, (2 * K // 2 * 128,), dtype=torch.uint8, generator=g)
         .as_strided((2, K // 2, 128), (K // 2 * 128, 1, K // 2)).view(torch.float4_e2m1fn_x2)),
        (torch.rand(2, 128, K // 16, generator=g) + 0.5).to(torch.float8_e4m3fn),
        torch.rand(2, generator=g) + 0.5,
        torch.tensor([[m0, 128, K], [M - m0, 128, K]], dtype=torch.int32),
        torch.tensor([0, m0]),
        torch.tensor([0, 1024]),
    ]


def test_layout_op_offsets_computed_inside_become_segment_inputs():
    fd = layout_fusion()
    xs = layout_inputs()
    trace = Trace()
    sf = segment_fusion(fd.fusion, xs, trace=trace)
    layout = next(e for e in fd.fusion.exprs() if isinstance(e, PreprocessGroupedMatmulInputSf))
    (lg,) = sf.group_of(layout)
    offsets = [layout.input_offsets, layout.output_offsets]
    assert all(v.definition.op == "cast" for v in offsets)
    assert all(v in lg.inputs and v not in lg.outputs for v in offsets)
    producers = {e.val: e.producer for e in sf.edges if e.consumer is lg}
    assert all(producers[v] is not lg for v in offsets)  # cut at the offsets
    # The layout op's output is a segment output read by the grouped matmul's segment.
    assert layout.output in lg.outputs
    (mm_group,) = [g for g in sf.groups if layout.output in g.inputs]
    assert mm_group.scheduler == "expr_eval"
    assert {e.subject for e in trace.of_kind("boundary")} >= {v.short_name for v in offsets}
    refused = [m for m in trace.of_kind("merge") if "must be a segment input" in m.data["reason"]]
    assert refused and all(not m.data["accepted"] for m in refused)
    check_reference(fd, sf, xs)


def test_layout_op_output_read_by_relu_is_refused_naming_it(monkeypatch):
    with pytest.raises(FusionDefinitionError, match=r"T11 is the output of preprocess_grouped.*UnaryOp relu"):
        layout_fusion(relu=True)
    # A fusion that slipped past the definition-time check is refused by the segmenter.
    monkeypatch.setattr(fusion_module, "EXPR_CHECKS", [])
    fd = layout_fusion(relu=True)
    with pytest.raises(FusionDefinitionError, match=r"T11 is the output of .*UnaryOp relu producing T12"):
        segment_fusion(fd.fusion, layout_inputs())


# ---- seed 004: block scales read inside the fusion ----------------------------------------------

def test_block_scales_read_inside_become_a_segment_output():
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1, -1], dtype=DataType.BFloat16)
        q, s = fd.ops.nv_block_quantize(t0)
        fd.add_output(q)
        fd.add_output(fd.ops.mul(fd.ops.cast(s, DataType.Float), fd.ops.cast(s, DataType.Float)))
    x = torch.randn(256, 1024).bfloat16()
    trace = Trace()
    sf = segment_fusion(fd.fusion, [x], trace=trace)
    bq = next(e for e in fd.fusion.exprs() if isinstance(e, BlockQuantizationOp))
    (g,) = sf.group_of(bq)
    scales = bq.block_scales
    assert scales in g.outputs and g.scheduler == "pointwise"
    assert scales.memory_type.value == "g"
    sub, vmap = g.make_fusion()
    assert vmap[scales] in sub.outputs
    assert trace.of_kind("boundary")[0].subject == scales.short_name
    # As the fusion stands (scales read, not output) the pointwise scheduler refuses it;
    # with the scales written out, one segment takes it all.
    from engine.schedule import registry
    from engine.schedule.runtime_info import SchedulerRuntimeInfo

    verdicts, _ = registry.can_schedule(fd.fusion, SchedulerRuntimeInfo(fd.fusion, [x]))
    pw = next(v for v in verdicts if str(v.scheduler) == "pointwise")
    assert not pw.accepted and "block scales is not a fusion output" in pw.reason
    assert len(sf.groups) == 1
    assert {v.short_name for v in g.outputs} == {bq.quantized.short_name, scales.short_name,
                                                 fd.fusion.outputs[1].short_name}
    check_reference(fd, sf, [x])


def test_a_segment_that_fails_to_lower_is_segmented_again_without_that_scheduler():
    """The pointwise scheduler takes all 15 ops of this causal mask, but its kernel would read
    a local tensor at elements another thread computed; instead of refusing the fusion,
    compile_fusion refuses pointwise for that group and segments again (two segments here),
    and the trace says why."""
    from engine.compile import compile_fusion

    path = Path(__file__).parents[1] / "realworld" / "scripts" / "iota_causal_mask_bf16_lowest_full.py"
    fd = load_fusion(path)
    xs = fd.example_inputs(seed=0)
    cf = compile_fusion(fd, xs)
    notes = [e.message for e in cf.trace if e.kind == "segment" and e.data.get("rule")]
    assert len(notes) == 1 and "at elements another thread computed" in notes[0]
    assert "pointwise is refused for these 15 ops and the fusion is segmented again" in notes[0]
    assert [s.scheduler for s in cf.segments] == ["pointwise"] * 2
    outs = cf.run(xs)
    refs = evaluate(fd.fusion, xs)
    for o, r in zip(outs, refs):
        assert torch.equal(o, r)


def test_a_producer_inlined_into_loops_of_different_sizes_runs_the_larger_loop():
    """Fuzz fusion-3-72: T0's cache is inlined into loops over 3*i3 (T0's own ops) and over
    192*i3 (T0 - T1, T1 expanded along axis 0). It once failed to lower ('cannot be
    indexed') and ran as three kernels; the loop now runs the larger of the two (nvFuser's
    loop promotion), indexing the smaller tensors through it: one kernel."""
    from engine.compile import compile_fusion

    path = Path(__file__).parents[1] / "regressions" / "fusions" / "lowering_failure_resegmented_fusion_3_72.py"
    fd = load_fusion(path)
    xs = fd.example_inputs(seed=0)
    cf = compile_fusion(fd, xs)
    assert [s.scheduler for s in cf.segments] == ["pointwise"]
    assert not [e for e in cf.trace if e.kind == "segment" and e.data.get("rule")]
    outs = cf.run(xs)
    refs = evaluate(fd.fusion, xs)
    for o, r in zip(outs, refs):
        assert torch.equal(o, r)


def test_a_refused_scheduler_is_not_asked_again_for_that_group():
    """Refusals name a scheduler whose kernel failed to lower for exactly one group of ops:
    the segmenter gives it that verdict without asking, and groups the ops otherwise."""
    from engine.segment.refusals import Refusals

    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[64, 128], dtype=DataType.Float)
        m = fd.ops.max(x, dims=[1], keepdim=True)
        e = fd.ops.exp(fd.ops.sub(x, m))
        fd.add_output(fd.ops.div(e, fd.ops.sum(e, dims=[1], keepdim=True)))
    xs = [torch.randn(64, 128)]
    assert [g.scheduler for g in segment_fusion(fd.fusion.clone()[0], xs).groups] == ["inner_persistent"]
    every = frozenset(e.name for e in fd.fusion.exprs())
    refusals = Refusals(schedulers={every: {"inner_persistent": "a kernel that read others' elements"}})
    sf = segment_fusion(fd.fusion.clone()[0], xs, trace=Trace(), refusals=refusals)
    assert len(sf.groups) > 1
    whole = next(e for e in sf.trace.events if e.kind == "segment" and e.subject == "fusion")
    verdict = next(v for v in whole.data["verdicts"] if v["scheduler"] == "inner_persistent")
    assert not verdict["accepted"] and "failed to lower: a kernel that read others' elements" in verdict["reason"]
    check_reference(fd, sf, xs)


def test_a_segment_unschedulable_with_forwarding_is_segmented_again_without_it():
    """Fuzz fusion-3-573: with sign(T0) forwarded into the pad's segment no scheduler takes it;
    compile_fusion segments again without input forwarding, and the trace says why."""
    from engine.compile import compile_fusion

    path = Path(__file__).parents[1] / "regressions" / "fusions" / "unschedulable_with_forwarding_fusion_3_573.py"
    fd = load_fusion(path)
    xs = fd.example_inputs(seed=0)
    with pytest.raises(ScheduleError, match="no scheduler accepts the segment of PadOp"):
        segment_fusion(fd.fusion.clone()[0], xs, Options(forwarding=True))
    cf = compile_fusion(fd, xs)
    assert not cf.options.forwarding
    notes = [e.message for e in cf.trace if e.kind == "segment" and e.data.get("rule") == "no_forwarding"]
    assert notes == ["no scheduler accepts the segment of PadOp producing T2 with input forwarding: "
                     "segmented again without it"]
    for o, r in zip(cf.run(xs), evaluate(fd.fusion, xs)):
        assert torch.equal(o, r)


def test_a_scheduler_refused_for_a_group_is_not_chosen_again_when_the_group_is_scheduled(monkeypatch):
    """The transpose scheduler's kernel fails to lower (patched to): refused for the group, the
    segmenter gives the same group to pointwise, and scheduling keeps that choice rather than
    asking the schedulers again (which would pick transpose, and fail again)."""
    import engine.compile_stages as compile_stages
    from engine.compile import compile_fusion
    from engine.errors import CompileError

    real = compile_stages.lower_fusion

    def failing(fusion, env, name, *args, **kwargs):
        if "transpose" in name:
            raise CompileError("patched: the transpose kernel fails to lower")
        return real(fusion, env, name, *args, **kwargs)

    monkeypatch.setattr(compile_stages, "lower_fusion", failing)
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1], dtype=DataType.Float)
        y = fd.define_tensor(shape=[-1, -1], dtype=DataType.Float)
        fd.add_output(fd.ops.add(fd.ops.permute(x, [1, 0]), y))
    xs = [torch.randn(512, 512), torch.randn(512, 512)]  # large enough for transpose to accept
    cf = compile_fusion(fd, xs)
    assert [s.scheduler for s in cf.segments] == ["pointwise"]
    notes = [e.message for e in cf.trace if e.kind == "segment" and e.data.get("rule") == "refuse_scheduler"]
    assert len(notes) == 1 and "transpose is refused for these 2 ops" in notes[0]
    torch.testing.assert_close(cf.run(xs, backend="emulate")[0], xs[0].t() + xs[1])


def test_an_intermediate_too_large_to_allocate_is_asked_about_by_its_sizes_only():
    """The segmenter asks the schedulers about each candidate group with its inputs; an
    intermediate input was an uninitialised CPU tensor of its full size. A batched matmul
    with K = 1 at [2048, 32768, 1] x [2048, 1, 16384] (matmul_broadcast_k_sum scaled up)
    then failed to compile: 'DefaultCPUAllocator: can't allocate memory: you tried to
    allocate 4398046511104 bytes'. Here: the outer product of two 2^20-element vectors
    (2^40 elements) crosses a segment boundary."""
    from engine.compile import compile_fusion

    n = 1 << 20
    with FusionDefinition() as fd:
        a = fd.define_tensor(shape=[-1, 1], contiguity=[True, None], dtype=DataType.Float)
        b = fd.define_tensor(shape=[1, -1], contiguity=[None, True], dtype=DataType.Float)
        c = fd.ops.segment_set(fd.ops.mul(a, b))
        fd.add_output(fd.ops.sum(c, dims=[0, 1]))
    cf = compile_fusion(fd, [torch.randn(n, 1), torch.randn(1, n)])
    assert len(cf.segments) == 2


def test_a_norm_after_a_view_of_its_input_is_one_persistent_kernel():
    # RMSNorm over heads of a reshaped input ([B, S, H*D] -> [B, S, H, D]) with a permuted
    # output: no scheduler takes the view with the norm, and pairwise merging stalls on half a
    # norm; the region after the view, tried whole, is one inner-persistent kernel
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[1, -1, -1], contiguity=[None, True, True], dtype=DataType.BFloat16)
        w = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.BFloat16)
        xf = fd.ops.cast(fd.ops.reshape(x, new_shape=[1, 6, 4, 16]), dtype=DataType.Float)
        ms = fd.ops.div(fd.ops.sum(fd.ops.mul(xf, xf), dims=[3], keepdim=True), 16.0)
        y = fd.ops.mul(xf, fd.ops.rsqrt(fd.ops.add(ms, 1e-6)))
        y = fd.ops.mul(y, fd.ops.cast(fd.ops.broadcast_in_dim(w, shape=[1, 6, 4, 16], broadcast_dims=[3]),
                                      dtype=DataType.Float))
        fd.add_output(fd.ops.permute(fd.ops.cast(y, dtype=DataType.BFloat16), dims=[0, 2, 1, 3]))
    xs = [torch.randn(1, 6, 64).bfloat16(), torch.randn(16).bfloat16()]
    sf = segment_fusion(fd.fusion, xs)
    assert [g.scheduler for g in sf.groups] == ["expr_eval", "inner_persistent"]


def _three_sums_of_one_input(fd: FusionDefinition) -> None:
    # Two casts of one input each summed over [0, 1] (a segment each: the casts are
    # different tensors), and one summed over [2]: the two outer sums share no path, only
    # the input, and one reduction kernel takes both (a sibling merge).
    t0 = fd.define_tensor(shape=[-1, -1, -1], contiguity=[True, True, True], dtype=DataType.BFloat16)
    a, b = fd.ops.cast(t0, DataType.Float), fd.ops.cast(t0, DataType.Float)
    fd.add_output(fd.ops.sum(b, [0, 1]))
    fd.add_output(fd.ops.sum(a, [0, 1]))
    fd.add_output(fd.ops.sum(a, [2]))


def test_sibling_kernels_that_read_one_input_merge():
    with FusionDefinition() as fd:
        _three_sums_of_one_input(fd)
    xs = [torch.randn(4, 8, 48).bfloat16()]
    trace = Trace()
    sf = segment_fusion(fd.fusion, xs, trace=trace)
    merged = [e for e in trace if e.kind == "merge" and e.message.startswith("sibling merge: merged")]
    assert merged, [e.message for e in trace if e.kind == "merge"][-5:]
    assert len(sf.groups) == 2
    check_reference(fd, sf, xs)


def test_no_sibling_merge_gives_a_reduction_kernel_a_pointwise_part():
    # sum(T0, 1) and T0 + sum(T1, 2) share only T0, but one is a reduction segment and the
    # other a pointwise one: a reduction kernel given the pointwise part ran slower than the
    # two kernels on an H200, so they stay apart.
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1, -1, 1], contiguity=[True, True, None], dtype=DataType.Float)
        t1 = fd.define_tensor(shape=[-1, 1, -1], contiguity=[True, None, True], dtype=DataType.Float)
        fd.add_output(fd.ops.mul(fd.ops.sum(t0, [1]), fd.ops.sum(t1, [1])))
        fd.add_output(fd.ops.add(t0, fd.ops.sum(t1, [2], keepdim=True)))
    xs = [torch.randn(32, 34, 1), torch.randn(32, 1, 34)]
    trace = Trace()
    sf = segment_fusion(fd.fusion, xs, trace=trace)
    assert not [e for e in trace if e.kind == "merge" and e.message.startswith("sibling merge")]
    check_reference(fd, sf, xs)
