"""Multi-device fusions on 2 CPU processes over gloo (the torchrun environment), values
against the unsharded computation in torch: tests.multidevice.cases."""

import pytest

from tests.multidevice.harness import batched, run_batch

REFERENCE = ["pointwise_logical_gather", "pointwise_sharded", "column_parallel_linear",
             "row_parallel_linear_with_bias", "linear_reduce_scatter", "tp_mlp", "sp_mlp", "sp_mlp_overlap", "ddp_batch",
             "sum_over_devices", "row_parallel_matmul", "pipeline_send_recv", "mesh_2d", "reshape_keeps_sharded_axis",
             "mean_over_devices", "compiled_program", "column_parallel_matmul", "sharded_then_replicated_output",
             "communication_ops", "head_parallel_attention", "whole_tensor_for_a_shard", "sp_layer_norm",
             "expand_to_sharded_axis", "sharded_expanded_input", "permuted_between_regions",
             "heads_from_sharded_reshape", "linear_backward_symbolic_tokens", "heads_merged_back",
             "tp_attention_block", "attention_device_axis", "sp_mlp_ring", "column_parallel_linear_ring",
             "linear_logical_split", "sp_mlp_overlap_uneven_rows", "row_parallel_matmul_manual_rfactor",
             "row_parallel_linear_manual_rfactor", "row_parallel_matmul_manual_rfactor_scatter"]


@pytest.mark.parametrize("case", REFERENCE)
def test_two_ranks_reference(case: str, request: pytest.FixtureRequest) -> None:
    batched(request, case, world=2, backend="reference")


@pytest.mark.parametrize("case", ["tp_mlp", "sp_mlp", "sp_layer_norm", "expand_to_sharded_axis",
                                  "sharded_expanded_input", "permuted_between_regions", "heads_from_sharded_reshape",
                                  "linear_backward_symbolic_tokens", "heads_merged_back",
             "tp_attention_block", "attention_device_axis", "sp_mlp_ring", "linear_logical_split",
             "row_parallel_matmul_manual_rfactor", "row_parallel_linear_manual_rfactor"])
def test_two_ranks_emulated_kernels(case: str, request: pytest.FixtureRequest) -> None:
    """The regions compiled to CUDA and run by the emulator on each rank."""
    batched(request, case, world=2, backend="emulate")


@pytest.mark.parametrize("case", ["sp_mlp_ring", "column_parallel_linear_ring", "sp_mlp_overlap"])
def test_four_ranks_pipelines(case: str, request: pytest.FixtureRequest) -> None:
    """The stream pipelines on 4 ranks: a ring of 3 shifts per block (each forwarded on), and
    the collective chunks of a team larger than 2."""
    batched(request, case, world=4, backend="reference")


def test_a_batch_reports_each_case_and_stops_at_a_failure() -> None:
    """A case that fails ends the batch with its own traceback; the cases after it are left
    for `batched` to run alone."""
    out = run_batch(["ddp_batch", "no_such_case", "pointwise_sharded"], world=2, backend="reference")
    assert out["ddp_batch"] == ""
    assert out["no_such_case"].startswith("rank ") and "AttributeError" in out["no_such_case"]
    assert "pointwise_sharded" not in out
