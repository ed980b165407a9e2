"""A fusion without tensor inputs (scalars, iota, full) runs compiled on the GPU when there
is one, as nvFuser runs it on its default device (pytest -m gpu)."""

from pathlib import Path

import pytest

from engine import loads_fusion
from engine.reference import evaluate
from tests.fuzz.harness import mismatch_reason

SCRIPTS = Path(__file__).resolve().parents[1] / "realworld" / "scripts"


@pytest.mark.gpu
@pytest.mark.parametrize("name", ["rope_llama31_scaled_inv_freq_where_chain_cos_sin",
                                  "iota_causal_mask_bf16_lowest_full", "full_slice_cast_no_inputs"])
def test_a_fusion_without_tensor_inputs_runs_on_the_gpu(name: str) -> None:
    path = SCRIPTS / f"{name}.py"
    fd = loads_fusion(path.read_text(), filename=str(path))
    xs = fd.example_inputs(seed=0)
    outs = fd.execute(xs)
    assert outs and all(o.is_cuda for o in outs)
    assert fd.__dict__.get("_compiled"), "not compiled: the reference evaluator ran it"
    for got, want in zip(outs, evaluate(fd.fusion, xs)):
        assert mismatch_reason(got.cpu(), want.cpu()) is None
