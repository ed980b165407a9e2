"""Views that host ops make of an input and a kernel reads (engine.segment.sizes.Sizes._host_view):
the kernel is compiled for the view's own strides and address, and a run hands it the view
uncopied. Real sizes are compiled for the H200 model on the CPU; values are checked on the
emulator at the scripts' own small sizes."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

import engine.host.plan as plan
from engine import compile_fusion, load_fusion, loads_fusion
from engine.config import Options
from engine.reference import evaluate
from scripts.ptxas_check import compile_at
from scripts.scales import real_scale
from tests.emulation import needs_gxx

SCRIPTS = Path(__file__).resolve().parents[1] / "realworld" / "scripts"
# Llama-2 RoPE on a fused [B, S, 3 * H * D] QKV projection: a reshape, a permute and a slice
# (host views of the input) feed the two rotation kernels.
FUSED_QKV = SCRIPTS / "rope_llama2_fused_qkv_fwd_empty_tail_cat_bf16.py"
# gpt-oss's de-interleave: the [T, 2I] projection reshaped to [T, I, 2], the two pair slots
# sliced out and squeezed: every other element of the input.
GPT_OSS = SCRIPTS / "gpt_oss_clamped_swiglu_interleaved_pairs_reshape_bf16.py"


def _real(path: Path):
    text = path.read_text()
    fd = loads_fusion(text, filename=str(path))
    xs = fd.example_inputs(device="cpu", seed=0)
    return compile_at(path, text, xs, fd.input_specs or [None] * len(xs), real_scale(text), 1 << 31)


def test_a_fused_qkv_rope_reads_its_input_in_one_vectorized_kernel() -> None:
    # q's and k's rotations meet only at the fused input (and cos/sin): one resize kernel
    # aligns them apart (engine.schedule.resize_components) and reads the [B, S, 3 * H * D]
    # input through its own reshape, permute and slices, 8 bf16 a vector; no host view and
    # no copy of one.
    cf = _real(FUSED_QKV)
    assert [s.scheduler for s in cf.segments] == ["resize"]
    assert not cf.segmented.sizes.viewed
    assert cf.segments[0].params.vectorization_factor == 8


def test_a_view_that_reorders_the_innermost_axis_is_laid_out_as_before() -> None:
    # A permute that moves the innermost axis would make a kernel read it strided: such a
    # view stands as the engine lays out any intermediate (a copy at run time); a slice of
    # the same input keeps its own strides and address.
    from engine.segment.sizes import Sizes

    text = """
import torch
from nvfuser import FusionDefinition, DataType
with FusionDefinition() as fd:
    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
    T1 = fd.ops.permute(T0, dims=[1, 0])
    T2 = fd.ops.slice(T0, start_indices=[0, 4], end_indices=[64, 48])
    fd.add_output(T1)
    fd.add_output(T2)
inputs = [torch.randn(64, 48)]
"""
    fd = loads_fusion(text)
    sizes = Sizes(fd.fusion, fd.example_inputs(device="cpu", seed=0))
    t1, t2 = fd.fusion.outputs
    assert sizes.tensor(t1).stride() == (64, 1) and sizes.tensor(t1).storage_offset() == 0
    assert sizes.tensor(t2).stride() == (48, 1) and sizes.tensor(t2).storage_offset() == 4
    assert sizes.viewed == {t2.short_name}


@needs_gxx
@pytest.mark.parametrize("script", ["FUSED_QKV", "GPT_OSS"])
def test_the_views_reach_the_kernels_uncopied_and_the_values_match(monkeypatch, script: str) -> None:
    # GPT_OSS: views with gaps (every other element), read at their strides.
    fd = load_fusion({"FUSED_QKV": FUSED_QKV, "GPT_OSS": GPT_OSS}[script])
    xs = fd.example_inputs(device="cpu", seed=0)
    cf = compile_fusion(fd, xs, Options(device_model="H200"))
    laid: list[str] = []
    finish = plan.finish_output

    def recording(v, t):
        laid.append(v.short_name)
        return finish(v, t)

    monkeypatch.setattr(plan, "finish_output", recording)
    outs = cf.run(xs, backend="emulate")
    viewed = cf.segmented.sizes.viewed
    assert not viewed & set(laid)
    assert viewed or script == "FUSED_QKV"  # its kernel reads the input itself (above)
    for o, r in zip(outs, evaluate(fd.fusion, xs), strict=True):
        torch.testing.assert_close(o.double(), r.double(), rtol=2e-2, atol=2e-2)


def _segments(text: str) -> list[str]:
    fd = loads_fusion(text)
    cf = compile_fusion(fd, fd.example_inputs(device="cpu", seed=0), Options(device_model="H200"))
    return [s.scheduler for s in cf.segments]


_HEAD = """
import torch
from nvfuser import FusionDefinition, DataType
with FusionDefinition() as fd:
    T0 = fd.define_tensor(shape=[-1, -1, -1], contiguity=[True, True, True], dtype=DataType.BFloat16)
"""


def test_a_reshape_that_merges_an_expanded_axis_is_a_copy_kernel_not_an_alias() -> None:
    # GQA's repeat_kv: [B, Hkv, S, D] -> [B, Hkv, n_rep (expanded), S, D] -> [B, Hkv * n_rep, S, D]
    # writes every repeated value (torch's reshape copies): a kernel, not a host view.
    text = _HEAD + """
    T1 = fd.ops.broadcast_in_dim(T0, shape=[4, 1, 64, 32], broadcast_dims=[0, 2, 3])
    T2 = fd.ops.expand(T1, shape=[4, 7, 64, 32])
    T3 = fd.ops.reshape(T2, new_shape=[28, 64, 32])
    fd.add_output(T3)
inputs = [torch.randn(4, 64, 32, dtype=torch.bfloat16)]
"""
    assert _segments(text) == ["pointwise"]


def test_a_reshape_merging_permuted_axes_is_a_copy_kernel_not_an_alias() -> None:
    # Attention's [B, H, S, D] -> [B, S, H, D] -> [B, S, H * D]: the merge of the permuted
    # axes copies.
    text = _HEAD + """
    T1 = fd.ops.permute(T0, dims=[1, 0, 2])
    T2 = fd.ops.reshape(T1, new_shape=[64, 128])
    fd.add_output(T2)
inputs = [torch.randn(4, 64, 32, dtype=torch.bfloat16)]
"""
    assert _segments(text) != ["expr_eval"]


def test_views_that_copy_nothing_stay_host_aliases() -> None:
    # A reshape of the contiguous input, then a permute and a slice: views, no kernel.
    text = _HEAD + """
    T1 = fd.ops.reshape(T0, new_shape=[4, 64, 4, 8])
    T2 = fd.ops.permute(T1, dims=[0, 2, 1, 3])
    T3 = fd.ops.slice(T2, start_indices=[0, 0, 0, 0], end_indices=[4, 2, 64, 8])
    fd.add_output(T3)
inputs = [torch.randn(4, 64, 32, dtype=torch.bfloat16)]
"""
    assert _segments(text) == ["expr_eval"]



def test_a_view_with_gaps_is_read_at_its_strides_by_one_kernel() -> None:
    cf = _real(GPT_OSS)
    assert [s.scheduler for s in cf.segments] == ["expr_eval", "pointwise"]
    gate, up = cf.segments[0].output_vals
    assert {gate.short_name, up.short_name} <= cf.segmented.sizes.viewed
    view = cf.segmented.sizes.tensor(up)
    assert tuple(view.shape) == (4096, 2880) and view.stride() == (5760, 2)
    assert view.storage_offset() == 1
    kernel = cf.segments[1]
    for v in kernel.fusion.inputs:
        # The rows follow each other (5760 = 2 x 2880); the innermost axis steps over the
        # other pair slot: the kernel reads it at its runtime stride.
        assert v.domain.contiguity == [True, False], v.short_name
    assert f"{up.short_name}.alloc_stride[1]" in kernel.cuda_source


def test_a_permuted_view_with_gaps_is_still_laid_out() -> None:
    # Strides that are not in logical order and an innermost stride above one: a kernel
    # would read it against its layout, so it is laid out (copied) as before.
    from engine.segment.sizes import Sizes, in_logical_order

    text = """
import torch
from nvfuser import FusionDefinition, DataType
with FusionDefinition() as fd:
    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
    T1 = fd.ops.slice(T0, start_indices=[0, 0], end_indices=[64, 32])
    T2 = fd.ops.permute(T1, dims=[1, 0])
    fd.add_output(T2)
inputs = [torch.randn(64, 48)]
"""
    fd = loads_fusion(text)
    sizes = Sizes(fd.fusion, fd.example_inputs(device="cpu", seed=0))
    (t2,) = fd.fusion.outputs
    assert not in_logical_order(torch.empty(64, 48).as_strided((32, 64), (1, 48)))
    assert sizes.tensor(t2).stride() == (64, 1) and not sizes.viewed


GEMMA_MQA = SCRIPTS / "rope_gemma_mqa_single_kv_head_expand_bf16.py"


@needs_gxx
def test_a_broadcast_in_dim_that_expands_an_output_is_a_view_not_a_copy(monkeypatch) -> None:
    # Gemma's single kv head given to every query head: broadcast_in_dim's set before its
    # expand, on a kernel's result (the rotated key) and on an input (the value). Both
    # outputs are views, as nvFuser's LoadStoreOp::evaluate returns them: no copy per call.
    fd = loads_fusion(GEMMA_MQA.read_text(), filename=str(GEMMA_MQA))
    xs = fd.example_inputs(seed=0)
    cf = compile_fusion(fd, xs)
    cf.run(xs, backend="emulate")
    copies = []
    clone = torch.Tensor.clone
    monkeypatch.setattr(torch.Tensor, "clone", lambda t, *a, **k: copies.append(t.shape) or clone(t, *a, **k))
    outs = cf.run(xs, backend="emulate")
    monkeypatch.undo()
    assert copies == []
    for o, r in zip(outs, evaluate(fd.fusion, xs), strict=True):
        assert torch.equal(o, r) and o.stride() == r.stride()
    assert outs[2].untyped_storage().data_ptr() == xs[2].untyped_storage().data_ptr()


def test_a_set_that_is_an_output_stays_a_copy() -> None:
    text = _HEAD + """
    T1 = fd.ops.set(T0)
    fd.add_output(T1)
inputs = [torch.randn(4, 64, 32, dtype=torch.bfloat16)]
"""
    fd = loads_fusion(text)
    (x,) = fd.example_inputs(seed=0)
    (out,) = evaluate(fd.fusion, [x])
    assert torch.equal(out, x) and out.untyped_storage().data_ptr() != x.untyped_storage().data_ptr()
