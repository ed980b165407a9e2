"""A lookup table that is a cast of a fusion input is read as the input itself
(engine.concretize.index_before_cast): index(cast(x)) = cast(index(x)). Found on
cross_entropy_fused_loss_and_grad_llmc_vocab50304 (H200 run 8: 5 kernels, nvFuser 1): the
take_along_axis of the label's logit read the float cast of the bf16 logits, which a kernel
may only read from global memory, so a kernel wrote a float copy of all the logits and the
forwarding of every other input cast was turned off with it."""

from __future__ import annotations

import sys
from pathlib import Path

import torch

from engine import DataType, FusionDefinition, load_fusion
from engine.compile import compile_fusion
from engine.config import Options
from engine.ir import exprs as ex
from engine.reference import evaluate

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "tests/realworld/scripts/cross_entropy_fused_loss_and_grad_llmc_vocab50304.py"


def _gathers(fusion):
    return [e for e in fusion.exprs() if isinstance(e, ex.GatherOp)]


def test_fused_cross_entropy_reads_the_logits_once():
    sys.path.insert(0, str(ROOT))
    from scripts.scales import Scale, scaled_fusion

    small = load_fusion(SCRIPT)
    xs0 = small.example_inputs(seed=0)
    # the real vocabulary, fewer tokens (8192 at the real size)
    fd, xs = scaled_fusion(SCRIPT, SCRIPT.read_text(), Scale("real", {16: 64, 144: 50304}), xs0,
                           small.input_specs, 1 << 30, "cpu")
    cf = compile_fusion(fd, xs, Options(device_model="H200"))
    # One kernel: the exp(x - max) the gradient needs is recomputed from the logits and the
    # max (tests/engine/test_persistent_projection.py), not passed on as a float row.
    assert [s.scheduler for s in cf.segments] == ["inner_persistent"]
    assert all(e.inputs[0] in cf.fusion.inputs for e in _gathers(cf.fusion))
    # no segment writes the float cast of the logits for another to look up
    for s in cf.segments:
        for v in s.output_vals:
            d = v.definition
            assert not (isinstance(d, ex.UnaryOp) and d.op == "cast" and d.input is cf.fusion.inputs[0]), v
    assert not any("segmented again without it" in e.message for e in cf.trace.events)


def test_own_size_is_one_kernel_with_the_reference_values():
    fd = load_fusion(SCRIPT)
    xs = fd.example_inputs(seed=0)
    cf = compile_fusion(fd, xs)
    assert [s.scheduler for s in cf.segments] == ["inner_persistent"]
    for o, r in zip(cf.run(xs, backend="emulate"), evaluate(fd.fusion, xs)):
        torch.testing.assert_close(o, r, rtol=1e-2, atol=1e-2)


def test_select_and_index_select_of_a_cast_read_the_input():
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1, -1], dtype=DataType.BFloat16)
        t1 = fd.define_tensor(shape=[-1], dtype=DataType.Int)
        t2 = fd.ops.cast(t0, DataType.Float)
        fd.add_output(fd.ops.index_select(t2, t1, 0))
        fd.add_output(fd.ops.select(t2, fd.define_scalar(1, dtype=DataType.Int), 1))
        fd.add_output(fd.ops.exp(t2))
    g = torch.Generator().manual_seed(0)
    xs = [torch.randn(6, 5, dtype=torch.bfloat16, generator=g), torch.tensor([4, 0, 2])]
    cf = compile_fusion(fd, xs)
    picks = [e for e in cf.fusion.exprs() if isinstance(e, (ex.IndexSelectOp, ex.SelectOp))]
    assert len(picks) == 2 and all(e.inputs[0] is cf.fusion.inputs[0] for e in picks)
    got, want = cf.run(xs, backend="emulate"), evaluate(fd.fusion, xs)
    # The picks are copies (exact); exp is the C library's against torch's (within an ulp).
    for o, r in zip(got[:2], want[:2]):
        assert o.dtype == r.dtype and torch.equal(o, r)
    torch.testing.assert_close(got[2], want[2], rtol=1e-6, atol=0)
