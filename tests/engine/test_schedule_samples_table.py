"""Every bundled sample, compiled at its example inputs: which scheduler takes each segment,
and the verdicts of the others as the segmenter recorded them (nvFuser's priority order:
the accepting scheduler is the first that accepts; every earlier one says why it refused)."""

from pathlib import Path

import pytest

from engine import load_fusion
from engine.compile import compile_fusion
from engine.schedule.base import PRIORITY, SchedulerType
from tests.multidevice.samples import MULTIDEVICE

SAMPLES = Path(__file__).resolve().parents[2] / "sample_fusions"

# Segment schedulers in run order. "user": seed 002's fusions carry their own schedule.
SEGMENTS = {
    # the label's log-probability is looked up in the logits inside the persistent kernel
    # (engine.gather_first); the batch mean is a reduction of its own
    "cross_entropy": ["inner_persistent", "reduction"],
    "gelu_bias": ["pointwise"],
    "layer_norm": ["inner_persistent"],
    "outer_reduction": ["reduction"],
    "reshape_chain": ["pointwise"],
    "rms_norm": ["inner_persistent"],
    "seed000_moe_layout_op": ["pointwise", "expr_eval"],
    "seed001_inner_outer_alloc": ["inner_outer_persistent"],
    "seed002_stream_matmul_m": ["expr_eval"],
    "seed002_stream_reduction": ["user"],
    "seed002_stream_single_set": ["user"],
    "seed002_stream_three_sets_disjoint": ["user"],
    "seed002_stream_two_sets": ["user"],
    # the reshapes of the q/k grads are read inside the resize kernels; the reduction's
    # keepdim broadcast, left unresolved, is written by the reduction kernel
    "seed003_rope_bwd": ["resize", "resize", "reduction", "pointwise"],
    "seed003_rope_bwd_small": ["resize", "resize", "reduction", "pointwise"],
    "seed004_nvfp4_quantize": ["pointwise"],
    "seed004_nvfp4_quantize_swizzled": ["pointwise"],
    "softmax": ["inner_persistent"],
    "transpose": ["pointwise"],
}

# Refusals that say why a segment is not another kind (a few per sample, nvFuser's words).
REFUSALS = {
    "softmax": {SchedulerType.reduction: "need persistent", SchedulerType.pointwise: "no support for reduction ops"},
    "gelu_bias": {SchedulerType.reduction: "No reduction op to schedule"},
    "seed003_rope_bwd_small": {SchedulerType.pointwise: "First input of SliceOp must be fusion input."},
    "transpose": {SchedulerType.transpose: "Transpose scheduler does not perform well on small problem sizes."},
}


def test_every_sample_is_listed():
    # The multi-device samples have no single compilation (compile_fusion refuses them):
    # tests/multidevice/test_multidevice_samples.py checks their programs and values.
    assert {p.stem for p in SAMPLES.glob("*.py")} == set(SEGMENTS) | set(MULTIDEVICE)


@pytest.mark.parametrize("name", sorted(SEGMENTS))
def test_segment_schedulers_and_the_verdicts_of_the_others(name):
    fd = load_fusion(SAMPLES / f"{name}.py")
    cf = compile_fusion(fd, fd.example_inputs(seed=0))
    assert [s.scheduler for s in cf.segments] == SEGMENTS[name]
    if cf.segmented is None:
        return  # a user schedule is taken as written: no scheduler was asked
    groups = sorted(cf.segmented.groups, key=lambda g: g.id)
    assert [g.scheduler for g in groups] == SEGMENTS[name]
    for g in groups:
        verdicts = {v.scheduler: v for v in g.verdicts}
        assert list(verdicts) == PRIORITY, g.name
        taken = SchedulerType(g.scheduler)
        assert verdicts[taken].accepted and str(verdicts[taken]) == f"Scheduler _{taken}_ ***accepted***"
        for kind in PRIORITY[:PRIORITY.index(taken)]:
            v = verdicts[kind]
            assert not v.accepted and v.reason, (g.name, kind)
            assert str(v) == f"Scheduler _{kind}_ ***rejected*** because : {v.reason}"
    first = groups[0] if name != "seed003_rope_bwd_small" else next(g for g in groups if g.scheduler == "resize")
    for kind, reason in REFUSALS.get(name, {}).items():
        v = {v.scheduler: v for v in first.verdicts}[kind]
        assert not v.accepted and reason in v.reason, (kind, v.reason)
