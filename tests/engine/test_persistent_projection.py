"""Persistent buffers recomputed after a reduction from what the kernel already holds: the
fusion inputs and the results of the reductions before it (softmax's exp(x - max) from x and
the max), and inputs that an indexing op also looks up (the cross entropy's logits, gathered
at the label): cached for their element-wise uses, never kept whole for the lookup."""

from __future__ import annotations

from pathlib import Path

import torch

from engine import compile_fusion, load_fusion, loads_fusion
from engine.analysis.persistent import persistent_buffer_size, persistent_buffers, reduction_tvs
from engine.config import Options
from engine.reference import evaluate
from engine.runtime.device import model
from engine.schedule.runtime_info import SchedulerRuntimeInfo
from scripts.ptxas_check import compile_at
from scripts.scales import real_scale
from tests.emulation import needs_gxx

SCRIPTS = Path(__file__).resolve().parents[1] / "realworld" / "scripts"
# llm.c's fused classifier: per-token loss and the bf16 logits gradient from one read of the
# [8192, 50304] logits.
FUSED_CE = SCRIPTS / "cross_entropy_fused_loss_and_grad_llmc_vocab50304.py"

SOFTMAX_BF16 = """
import torch
from nvfuser import FusionDefinition, DataType
with FusionDefinition() as fd:
    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.BFloat16)
    T1 = fd.ops.cast(T0, dtype=DataType.Float)
    T2 = fd.ops.max(T1, dims=[1])
    T3 = fd.ops.broadcast(T2, [False, True])
    T4 = fd.ops.exp(fd.ops.sub(T1, T3))
    T5 = fd.ops.sum(T4, dims=[1])
    T6 = fd.ops.div(T4, fd.ops.broadcast(T5, [False, True]))
    fd.add_output(fd.ops.cast(T6, dtype=DataType.BFloat16))
inputs = [torch.randn(16, 4096, dtype=torch.bfloat16)]
"""


def test_exp_of_x_minus_max_is_recomputed_from_the_input_and_the_max() -> None:
    fd = loads_fusion(SOFTMAX_BF16)
    xs = fd.example_inputs(device="cpu", seed=0)
    assert not persistent_buffers(fd.fusion).projectable.get(
        persistent_buffers(fd.fusion).live_across[reduction_tvs(fd.fusion)[1]][0])
    pb = persistent_buffers(fd.fusion, through_results=True)
    mx, sm = reduction_tvs(fd.fusion)
    (e,) = pb.live_across[sm]
    assert e.definition.op == "exp"
    # x (bf16, the input) and the max, which the sum's pass already holds.
    assert pb.projectable[e] == sorted([fd.fusion.inputs[0], mx], key=lambda t: t.name)
    info = SchedulerRuntimeInfo(fd.fusion, xs, model("H200"))
    sz = persistent_buffer_size(fd.fusion, info, pb, 16)
    # A float row of exp, or the bf16 input row and one float of max.
    assert (sz.persistent_buffer_size, sz.projected_persistent_buffer_size) == (4096 * 4, 4096 * 2 + 4)


def test_the_recomputation_is_taken_only_where_the_rows_outgrow_the_registers() -> None:
    from engine.schedule.persistent_budget import buffer_bytes

    fd = loads_fusion(SOFTMAX_BF16)
    got = {}
    for cols in (4096, 65536):
        xs = [torch.empty(16, cols, dtype=torch.bfloat16, device="meta")]
        size, project, pb = buffer_bytes(fd.fusion, SchedulerRuntimeInfo(fd.fusion, xs, model("H200")))
        got[cols] = (size, project, pb.through_results)
    # 4096: exp(x - max) kept, 16 KB a row; 65536: 256 KB of exp a row is more than the
    # registers hold, so it is recomputed from x (128 KB) and the max.
    assert got == {4096: (4096 * 4, False, False), 65536: (65536 * 2 + 4, True, True)}


def test_a_looked_up_input_is_no_persistent_buffer() -> None:
    fd = load_fusion(FUSED_CE)
    pb = persistent_buffers(fd.fusion)
    # The logits are read again after the reductions only by the gather at the label.
    assert fd.fusion.inputs[0] not in pb.persistent_buffers


def test_the_fused_cross_entropy_at_its_vocabulary_is_one_persistent_kernel() -> None:
    text = FUSED_CE.read_text()
    fd = loads_fusion(text, filename=str(FUSED_CE))
    xs = fd.example_inputs(device="cpu", seed=0)
    cf = compile_at(FUSED_CE, text, xs, fd.input_specs or [None] * len(xs), real_scale(text), 1 << 31)
    (seg,) = cf.segments
    assert seg.scheduler == "inner_persistent"
    assert "projected to inputs" in " ".join(seg.params.derivation)
    src = seg.cuda_source[seg.cuda_source.index("__global__"):]
    # The logits row is loaded once, 16 bytes at a time; the label's logit is looked up in
    # global memory; no float row goes back to global memory between kernels.
    assert src.count("loadGlobal") == 1 and "8>(&T" in src
    assert "(nvfuser_index_t)(" in src
    assert not [v for v in seg.fusion.outputs if v.dtype.name == "Float" and v.ndim == 2]


@needs_gxx
def test_the_fused_cross_entropy_matches_the_reference() -> None:
    fd = load_fusion(FUSED_CE)
    xs = fd.example_inputs(device="cpu", seed=0)
    cf = compile_fusion(fd, xs, Options(device_model="H200"))
    assert [s.scheduler for s in cf.segments] == ["inner_persistent"]
    for o, r in zip(cf.run(xs, backend="emulate"), evaluate(fd.fusion, xs), strict=True):
        torch.testing.assert_close(o.double(), r.double(), rtol=1e-2, atol=1e-5)


LAYER_NORM_BWD = Path(__file__).resolve().parents[1] / "realworld" / "scripts" / "layer_norm_bwd.py"


@needs_gxx
def test_copies_recomputed_from_the_inputs_share_the_weight_cast_to_float() -> None:
    # Layer-norm backward at [4096, 6144] bf16 (one combined inner-outer kernel): the
    # buffers recomputed from the inputs after each inner sum need dy * w. The weight cast to
    # float holds no row axis: it is computed once before the rows and every copy reads it,
    # instead of each copy holding its own float copy of the weight (24 more registers each).
    fd = loads_fusion(LAYER_NORM_BWD.read_text())
    m, n = 4096, 6144
    xs = [torch.randn(m, n, dtype=torch.bfloat16), torch.randn(m, n, dtype=torch.bfloat16),
          torch.randn(m), torch.randn(m, 1), torch.randn(n, dtype=torch.bfloat16)]
    cf = compile_fusion(fd, xs, Options(device_model="H200"))
    (seg,) = cf.segments
    assert seg.scheduler == "inner_outer_persistent"
    # the weight and its copies into registers (cacheAfter), then the casts of those to float
    weight = {next(t for t in seg.fusion.inputs if str(t).startswith("T4_"))}
    for e in seg.fusion.exprs():
        if type(e).__name__ == "LoadStoreOp" and e.inputs[0] in weight:
            weight.add(e.outputs[0])
    casts = [e for e in seg.fusion.exprs()
             if getattr(e, "op", None) == "cast" and any(v in weight for v in e.inputs)]
    assert len(casts) == 1, [str(e) for e in casts]
    # the same values as the reference, on the emulator at a small size
    small = [(x[:64, :384] if x.dim() == 2 else x[:64] if x is xs[2] else x[:384]).contiguous() for x in xs]
    outs = compile_fusion(fd, small).run(small, backend="emulate")
    for o, r in zip(outs, evaluate(fd.fusion, small)):
        torch.testing.assert_close(o.float(), r.float(), rtol=2e-2, atol=2e-2)
