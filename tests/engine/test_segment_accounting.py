"""What the segmenter and the persistent schedulers count: a tensor read by two reductions of
one pass is no persistent buffer for the reduction scheduler (engine.analysis.persistent),
an expanded broadcast keeps one value per row (bytes_per_row), a window of an input is read in
place by the reduction-based schedulers, and a kernel that fails to lower over one tensor
first has that tensor's op kept apart (engine.compile). Real sizes are compiled for the H200
model on the CPU; values are checked on the emulator at the scripts' own small sizes."""

from __future__ import annotations

from pathlib import Path

import torch

from engine import compile_fusion, load_fusion, loads_fusion
from engine.analysis.persistent import persistent_buffers
from engine.config import Options
from engine.reference import evaluate
from scripts.ptxas_check import compile_at
from scripts.scales import real_scale
from tests.emulation import needs_gxx

SCRIPTS = Path(__file__).resolve().parents[1] / "realworld" / "scripts"


def _real(name: str):
    path = SCRIPTS / f"{name}.py"
    text = path.read_text()
    fd = loads_fusion(text, filename=str(path))
    xs = fd.example_inputs(device="cpu", seed=0)
    return compile_at(path, text, xs, fd.input_specs or [None] * len(xs), real_scale(text), 1 << 31)


def _emulated(name: str) -> list[str]:
    fd = load_fusion(SCRIPTS / f"{name}.py")
    xs = fd.example_inputs(device="cpu", seed=0)
    cf = compile_fusion(fd, xs, Options(device_model="H200"))
    for o, r in zip(cf.run(xs, backend="emulate"), evaluate(fd.fusion, xs), strict=True):
        tol = 1e-4 if o.dtype == torch.float32 else 2e-2
        torch.testing.assert_close(o.double(), r.double(), rtol=tol, atol=tol * max(1.0, r.abs().max().item()))
    return [s.scheduler for s in cf.segments]


MASKED_MEAN = """
import torch
from nvfuser import FusionDefinition, DataType
with FusionDefinition() as fd:
    T0 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float)
    T1 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Bool)
    S0 = fd.define_scalar(0.0, dtype=DataType.Double)
    T2 = fd.ops.where(T1, T0, S0)
    T3 = fd.ops.sum(T2, dims=[0])
    T4 = fd.ops.cast(T1, dtype=DataType.Float)
    T5 = fd.ops.sum(T4, dims=[0])
    T6 = fd.ops.div(T3, T5)
    S1 = fd.define_scalar(0.5, dtype=DataType.Double)
    T7 = fd.ops.mul(T6, S1)
    fd.add_output(T7)
inputs = [torch.randn(256), torch.rand(256) > 0.3]
"""


def test_a_mask_read_by_a_sum_and_by_its_count_is_no_buffer_of_one_pass() -> None:
    fd = loads_fusion(MASKED_MEAN)
    mask = fd.fusion.inputs[1]
    # The persistent schedulers compute each reduction in a loop nest of its own: for them the
    # mask persists; one pass computes both sums.
    assert mask in persistent_buffers(fd.fusion).persistent_buffers
    assert not persistent_buffers(fd.fusion, same_pass=True).persistent_buffers
    cf = compile_fusion(fd, fd.example_inputs(device="cpu", seed=0), Options(device_model="H200"))
    # The scalar math after the sums stays in their kernel (it was a host segment of its own).
    assert [s.scheduler for s in cf.segments] == ["reduction"]


@needs_gxx
def test_label_smoothing_cross_entropy_is_two_kernels_matching_the_reference() -> None:
    # log_softmax, the target and uniform terms masked for ignore_index, both averaged over the
    # kept rows: nvFuser's two kernels, the 0-dim combination inside the second.
    assert _emulated("cross_entropy_label_smoothing_fwd_imagenet_1000") == ["inner_persistent", "reduction"]


def test_an_expanded_broadcast_keeps_one_value_per_row() -> None:
    # GPT-2 XL LayerNorm backward with the mean expanded along H ([B, S, H], stride 0): the
    # buffers projected to the bf16 inputs are smaller than the float buffers once the mean
    # counts one float a row (it counted H), and its shared-memory copy is one value a row,
    # not a loop over the expansion.
    cf = _real("layer_norm_bwd_3d_expanded_stats_residual_grad_bf16")
    (seg,) = [s for s in cf.segments if s.is_kernel]
    assert "(projected)" in seg.params.derivation[0]
    body = seg.cuda_source[seg.cuda_source.index('extern "C"'):]
    assert "< 1600; ++" not in body


@needs_gxx
def test_slices_of_an_input_are_read_in_place_by_the_persistent_kernel() -> None:
    # DiT's adaLN: the [B, 6D] conditioning sliced into chunks that shift, scale and gate a
    # LayerNorm: one kernel (the slices were host segments, each copied before it).
    assert _emulated("dit_gate_residual_layer_norm_modulate_chunk6_bf16") == ["inner_persistent"]


def test_a_tensor_that_fails_to_lower_has_its_op_kept_apart_first(monkeypatch) -> None:
    # A kernel whose lowering fails over one tensor (an axis it cannot index, say) has that
    # tensor's op kept apart first; before, the scheduler was refused for the group and then
    # every op of it became a segment of its own (decode-step RoPE: 23 segments, 17 kernels).
    import engine.compile_stages as stages
    from engine.errors import CompileError

    text = """
import torch
from nvfuser import FusionDefinition, DataType
with FusionDefinition() as fd:
    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
    S0 = fd.define_scalar(1.0, dtype=DataType.Double)
    T1 = fd.ops.add(T0, S0)
    T2 = fd.ops.exp(T1)
    T3 = fd.ops.mul(T2, T1)
    T4 = fd.ops.sum(T3, dims=[1])
    T5 = fd.ops.sub(T3, S0)
    fd.add_output(T4)
    fd.add_output(T5)
inputs = [torch.randn(64, 96)]
"""
    fd = loads_fusion(text)
    lower = stages.lower_fusion

    def failing(fusion, *args, **kwargs):
        made = {e.outputs[0].short_name for e in fusion.exprs() if e.op_name != "set"}
        if "T2" in made and len(made) > 1:
            raise CompileError("T2: axis iS5 cannot be indexed from the loop nest", tensor="T2")
        return lower(fusion, *args, **kwargs)

    monkeypatch.setattr(stages, "lower_fusion", failing)
    xs = fd.example_inputs(device="cpu", seed=0)
    cf = compile_fusion(fd, xs, Options(device_model="H200"))
    notes = [e.message for e in cf.trace.events if e.kind == "segment"]
    assert any("T2: axis iS5 cannot be indexed" in m and "the op producing it is segmented apart" in m
               for m in notes), notes
    alone = [s for s in cf.segments if any(v.short_name == "T2" for v in s.output_vals)]
    assert len(alone) == 1 and [e.op_name for e in alone[0].fusion.exprs() if e.op_name != "set"] == ["unary"]
    # The other ops stay together: not every op apart.
    assert len(cf.segments) <= 4
    for o, r in zip(cf.run(xs, backend="reference"), evaluate(fd.fusion, xs), strict=True):
        torch.testing.assert_close(o, r)


@needs_gxx
def test_decode_rope_with_index_select_is_no_more_kernels_than_nvfusers() -> None:
    # Decode-step RoPE with index_select of cos/sin: its resize kernels once failed to lower
    # and every op of a failed group became a segment of its own (23 segments, 17 kernels).
    name = "rope_decode_step_index_select_cos_sin_kv_cache_cat_bf16"
    cf = _real(name)
    assert sum(s.is_kernel for s in cf.segments) <= 6
    assert len(_emulated(name)) == len(cf.segments)


def test_a_vectorized_cache_of_an_input_broadcast_into_the_reference_lowers() -> None:
    # litGPT's GPT-NeoX attention prologue at its model scale: a resize kernel's vectorized
    # cache of the cos/sin slices sits in loops that run the (larger) reference's ids, its
    # vector loop outside them. Its index comes through its consumers' vector axes; before,
    # the kernel failed to lower and was scheduled again unvectorized. 5 kernels, all
    # vectorized as planned.
    from scripts.scales import input_values, model_scale

    path = SCRIPTS / "litgpt_neox_qkv_permute_slice_rope_cat_empty.py"
    text = path.read_text()
    fd = loads_fusion(text, filename=str(path))
    xs = fd.example_inputs(device="cpu", seed=0)
    values, _ = input_values(xs)
    cf = compile_at(path, text, xs, fd.input_specs or [None] * len(xs), model_scale(values), 1 << 31)
    assert sum(s.is_kernel for s in cf.segments) <= 5
    assert not any("the vectorized kernel failed to lower" in " ".join(s.params.derivation)
                   for s in cf.segments if s.params is not None)


def test_a_broadcast_cos_sin_cache_keeps_the_resize_kernel_vectorized_and_exact() -> None:
    # NeoX partial-rotary RoPE backward: cos/sin [S, rotary] broadcast over batch and heads
    # into a cat over each head's [3 * D]; the kernel is vectorized and its values are the
    # reference's (emulated CUDA).
    assert _emulated("rope_neox_partial_rotary_bwd_pad_pass_through_bf16") == ["resize"]
    fd = load_fusion(SCRIPTS / "rope_neox_partial_rotary_bwd_pad_pass_through_bf16.py")
    cf = compile_fusion(fd, fd.example_inputs(device="cpu", seed=0), Options(device_model="H200"))
    assert cf.segments[0].params.vectorization_factor > 1
    assert "failed to lower" not in " ".join(cf.segments[0].params.derivation)
