"""A group the segmenter leaves with no scheduler (its kernel failed to lower and its
scheduler was refused for it) is split, its ops segmented again each apart, rather than the
compile failing: the fusion still runs and matches the reference.

The case is the interleaved RoPE backward with forwarding off: its permuted view of the
input, materialized at a boundary, leaves a group whose kernel fails to lower (forwarded,
the view is recomputed by its readers and every group has a scheduler)."""

from pathlib import Path

import torch

from engine import compile_fusion, load_fusion
from engine.config import Options
from engine.reference import evaluate

SCRIPT = Path(__file__).resolve().parents[1] / "realworld" / "scripts" / "rope_interleaved_pairs_bwd_pad_pair_axis_bf16.py"


def test_an_unschedulable_group_is_segmented_again_apart() -> None:
    fd = load_fusion(SCRIPT)
    xs = fd.example_inputs(seed=0)
    cf = compile_fusion(fd, xs, options=Options(forwarding=False))
    notes = [e for e in cf.trace.events if e.kind == "segment" and e.data.get("rule") == "isolate"]
    assert any("no scheduler accepts the segment" in str(e) for e in notes)
    (out,), (want,) = cf.run(xs, backend="emulate"), evaluate(fd.fusion, xs)
    torch.testing.assert_close(out.float(), want.float(), rtol=1e-2, atol=1e-2)
