"""Real-world repro scripts (tests/realworld/scripts): nvFuser python-frontend files in the
spellings of 2022-2026 (old and new argument names, Thunder traces, nvfuser_direct), each
loaded without executing it, compiled (segment, schedule, lower, render), emulated on the
CPU and compared with the reference evaluator. Scripts using what the engine genuinely
lacks are refused, and the test pins the message (op and line). Each script's header
names the issue or file it is modelled on."""

from pathlib import Path

import pytest
import torch

from engine import load_fusion
from engine.compile import compile_fusion
from engine.errors import CompileError, FusionFileError
from engine.reference import evaluate
from tests.emulation import needs_gxx

SCRIPTS = Path(__file__).resolve().parent / "scripts"

# Scripts that load, compile and match the reference on the emulator.
WORKS = [
    "addcmul_threshold_stride_order", "alias_running_stats", "argsort_gather", "attn_out_transpose_strided",
    "batch_norm_train", "causal_mask_triu", "cross_entropy_bwd_onehot", "cross_entropy_ignore_index",
    "cross_entropy_negative_pad", "cumsum_position_ids", "direct_alpha_bmm", "direct_frontend",
    "dropout_layer_norm_bwd_bool_mask", "embedding_bwd_index_put", "embedding_fwd", "execute_device_scalars",
    "expand_where_clamp", "factories", "fp8_cast", "fp8_per_tensor_amax_scale", "full_symbolic",
    "gelu_erf_bwd", "gelu_tanh", "gelu_tanh_bwd_bias_grad", "group_norm_fwd_var_mean", "grouped_mm_moe",
    "hf_attn_softmax_dropout", "index_select_gather", "instance_norm_keepdim_stats",
    "int_bigram_hash_bitwise", "iota_arange", "layer_norm_bwd", "layer_norm_bwd_recompute",
    "layer_norm_var_mean", "llama4_moe_token_dispatch", "llama_embedding_causal_mask",
    "llama_rope_gqa_expand", "matmul_linear", "mean_sub_col_sum", "nanogpt_attn_masked_fill_dropout",
    "old_define_constant", "old_max_axes", "rand_like", "reshape_define_vector", "reshape_original_shape",
    "rms_norm_bwd", "rms_norm_residual_fp32_weight", "rope_bwd_pad_gqa_sum", "rope_cat_pad",
    "rope_cat_python_operators", "rope_without_cat_6d_sum", "scalar_arith", "scale_bias_relu_bwd_expand",
    "scatter", "sched_auto_scheduler_heuristic", "sched_block_grid_reduction",
    "sched_cache_after_streaming_unroll", "sched_cpu_scalar_stride_order_out",
    "sched_expanded_input_vectorize", "sched_inline_at_selected", "sched_max_sub_rfactor",
    "sched_pointwise_merge_split_tidx", "sched_reorder_outer_split_unroll", "sched_smem_cache_pointwise",
    "sched_sum_rfactor_donut", "sched_transform_like_inline_most", "sched_two_fusion_classes",
    "sched_var_mean_cache_fork_rfactor", "nvfp4_block_quantize_direct",
    "sched_vectorize_non_divisible", "sdpa_fwd", "set_segment_set",
    "silu_mul_bwd", "size_shape_ops", "sizes_strides", "slice_strides", "softmax_bwd_bf16_roundtrip",
    "softmax_dims", "special_math", "squeeze_forms", "stride_order_channels_last", "subclass_schedule",
    "swiglu_chunk_silu_mul", "symbolic_sizes_contiguous", "tensor_sizes_bcast",
    "timestep_sinusoidal_embedding", "topk_router", "two_fusion_functions", "uniform_dropout",
    "var_correction",
    # nvFuser's own python tests (tests/python, opinfos, benchmarks), as repro scripts
    "reshape_scalar_first_ceil_div", "dynamic_reshape_int32_scalars", "from_pytorch_sum_positional",
    "scalar_compare_bitwise_runtime", "int_div_mod_truediv", "inputs_transposed_expanded_half",
    "batch_norm_inference_channels_last", "empty_tensor_reshape_sum", "welford_mean_var",
    "reductions_min_prod_mean_keepdim", "lerp_addcmul_rounding", "nan_inf_predicates_atan2",
    "normal_randn_like_seeded", "select_slice_runtime_scalars", "pad_value_cat_manual_padding",
    "gather_smaller_index_select_dim1", "iota_runtime_start_step", "sdpa_fwd_bwd_causal",
    "topk_smallest_argsort_desc_cumsum", "squeeze_expanded_broadcast_symbolic",
    "matmul_batched_broadcast_linear3d", "execute_options_validate_trailer",
    # Modelled on repros posted in NVIDIA/Fuser, csarofeen/pytorch and Lightning-AI/lightning-thunder issues.
    "falcon_qkv_reshape_permute_rope",
    "torch_c_nvfuser_view_gelu",
    "var_mean_view_contiguous_false",
    "duplicate_cast_sums_as_strided",
    "bcast_contiguity_stride_order_transposed",
    "alias_output_reshape_set",
    "qwen_rms_norm_float_inv_freq",
    "rope_bwd_noncontig_stride_order",
    "uniform_philox_seed_offset_expanded",
    "double_bcast_div_output_shape",
    "sum_broadcast_axis_transposed_inputs",
    "cat_reshape_define_vector_qkv", "slice_clip_symbolic_indices", "sdpa_bwd_cpu_philox_qkv_cat",
    "nanogpt_block_fwd_ln_linear_gelu", "direct_positional_defaults", "old_reshape_original_shape_log_softmax",
    # Repros ending in their authors' own checking code (eager references, numpy, timing
    # loops, profilers, helpers), skipped unread after the run: see CHECKING_CODE.
    "layer_norm_fwd_eager_reference_trailer", "rms_norm_fwd_timing_loop_perf_counter",
    "softmax_bwd_numpy_allclose_trailer", "bias_gelu_validate_profiler_trailer",
    "subclass_two_outputs_check_helper_trailer",
    # Op coverage: integer/bool operands of float ops, abs(), define_vector(size=n).
    "thunder_div_reciprocal_int_counts", "python_operators_abs_l1_loss", "direct_define_vector_size_reshape",
    "select_runtime_negative_index", "zero_dim_loss_sum", "scalar_where_lr_warmup_adam",
    # Inputs lists in the forms Thunder's dumps, nvFuser's repro printer and hand-written
    # repros use (torch.Size, broadcast_to, float("inf"), slicing, arithmetic, seeds, names).
    "thunder_dump_randint_size_broadcast_to", "repro_printer_inf_scalars_bool_strided",
    "handwritten_sliced_scaled_inputs_seed",
    # NVIDIA/Fuser tests/python/direct/test_repro.py (issue repros, shrunk to CPU sizes).
    "index_select_reshaped_index_strided", "cat_empty_last_dim_strided", "empty_bf16_full_sums_dead_code",
    "var_mean_size1_reshape_eps_input", "var_mean_broadcast_axis_half", "rope_slice_pad_expanded_cos_sin",
    "half_expanded_reshape_broadcast_mul", "sum_reshape_mul_sum_contiguity_bool",
    "llama2_rms_norm_bwd_scalar_inputs", "full_slice_cast_no_inputs", "rope_bwd_interleaved_pad_int_scalar_inputs",
    "rms_norm_linear_rope_cat_empty_slice", "from_pytorch_rope_sin_cos_cat_empty",
    "permute_stride_order_reshape_shape_linear", "linear_3d_output_and_scaled", "where_bool_expanded_mask_slice",
    "matmul_broadcast_k_sum", "int_cat_empty_where_wrap_index", "alias_zero_dim_input_broadcast_inplace",
    "alias_two_zero_dim_inputs_sum_inplace", "alias_implicit_broadcast_input_inplace",
    "slice_neg_slice_default_dtype", "squeeze_slice_positional_args", "broadcast_one_input_two_extents",
    "rope_5d_permute_slice_cat_empty", "linear_bias_square", "rope_bwd_gqa_full_empty_pad_cat",
    "group_norm_silu_bwd_negative_pad", "iota_causal_mask_bf16_lowest_full",
    "gemma_rms_norm_bwd_reshape_permute_out", "layer_norm_bwd_3d_reshape_weight_grads",
    "layer_norm_bwd_expanded_stats_transpose_tile", "rms_norm_bwd_stride_order_size1_middle",
    "layer_norm_bwd_sum_over_broadcast_axes", "rms_norm_bwd_zero_dim_tensor_scale",
    "gqa_8d_broadcast_reshape_rope_silu", "rope_interleaved_stride2_cat_reshape",
    "rope_bwd_qkv_pad_squeeze_cat_half", "rope_iota_index_select_partial_gelu",
    "size_define_vector_reshape_squeeze_stride_order_out",
    # NVIDIA/Fuser tests/python/llama_inf_tests (graph_0, graph_2) and tests/python/direct
    # (test_high_complexity.py), nearer their authors' sizes.
    "llama_decoder_mlp_rmsnorm_lm_head", "llama_inf_embedding_mask_hidden2048",
    "qwen2_rope_dropout_gqa_repeat_cat", "nanogpt_split_qkv_slice_reshape_permute",
    "prim_layer_norm_sum_div_keepdim", "litgpt_neox_qkv_permute_slice_rope_cat_empty",
]

# Scripts whose checking code after the run is skipped unread: the lines of the first and
# the last statement skipped, and how many statements were.
CHECKING_CODE = {
    "layer_norm_fwd_eager_reference_trailer": (49, 56, 8),
    "rms_norm_fwd_timing_loop_perf_counter": (45, 63, 16),
    "softmax_bwd_numpy_allclose_trailer": (30, 37, 7),
    "bias_gelu_validate_profiler_trailer": (44, 59, 6),
    "subclass_two_outputs_check_helper_trailer": (33, 46, 9),
    "execute_options_validate_trailer": (35, 41, 7),
}

# Genuinely unsupported features: refused while loading, with the op and the line.
REFUSED = {
    "sched_merge_reduction_iter_illegal": "sched_merge_reduction_iter_illegal.py:17: self.sched.merge: T1: cannot "
                                          "merge iS4{8} and rS5{8}: iteration and reduction axes do not merge",
    "slice_step2": "slice_step2.py:9: fd.ops.slice: slice: T0 axis 1: only stride 1 is supported, got 2",
    "complex_constant": "complex_constant.py:11: fd.define_scalar: define_scalar: complex constants are "
                        "not supported",
    "uint64_hash_ids_refused": "uint64_hash_ids_refused.py:10: DataType.UInt64: nvFuser's unsigned 64-bit type is "
                               "not supported by this engine",
    "alphafold3_triangle_attention_bias_mask": "alphafold3_triangle_attention_bias_mask.py:38: fd.ops.sdpfa_fwd: "
                                               "sdpfa_fwd: query T10 must be 4-D ([N, H, seq, head]), got 5-D",
    "torch_c_nvfuser_rank_only_2022": "torch_c_nvfuser_rank_only_2022.py:12: fd.define_tensor: define_tensor(3): "
                                      "the rank-only form of the 2022 frontend (with fd.add_input) is not "
                                      "supported; give the sizes: shape=[-1, -1, -1]",
}

# Loaded fine; the code generator has no complex arithmetic: refused at compile time.
COMPILE_REFUSED = {
    "complex_mul": "mul: complex types (std::complex<float>) are not supported by the CUDA code generator",
}

# Engine bugs these scripts found (scheduling/lowering, outside the frontend): strict xfail,
# so a fix shows up as XPASS and the script moves to WORKS.
KNOWN_BUGS: dict[str, str] = {
}


def test_every_script_is_listed():
    listed = {*WORKS, *REFUSED, *COMPILE_REFUSED, *KNOWN_BUGS}
    assert {p.stem for p in SCRIPTS.glob("*.py")} == listed
    assert len(listed) >= 30


def _close(out: torch.Tensor, ref: torch.Tensor) -> None:
    assert out.shape == ref.shape and out.dtype == ref.dtype
    if out.element_size() == 1 and out.dtype.is_floating_point:  # fp8: bit-exact
        assert torch.equal(out.view(torch.uint8), ref.view(torch.uint8))
    elif not out.dtype.is_floating_point:
        assert torch.equal(out, ref)
    else:
        tol = 1e-5 if out.dtype in (torch.float32, torch.float64) else 1e-2
        scale = ref.abs().max().item() if ref.numel() else 1.0  # an empty output has no max
        torch.testing.assert_close(out.double(), ref.double(), rtol=tol, atol=tol * max(1.0, scale))


def _emulate_and_compare(name: str) -> None:
    fd = load_fusion(SCRIPTS / f"{name}.py")
    xs = fd.example_inputs(seed=0)
    outs = compile_fusion(fd, xs).run(xs, backend="emulate")
    refs = evaluate(fd.fusion, fd.example_inputs(seed=0))
    assert len(outs) == len(refs) == len(fd.fusion.outputs)
    for o, r in zip(outs, refs):
        _close(o, r)


@needs_gxx
@pytest.mark.parametrize("name", WORKS)
def test_script_runs_on_the_emulator(name: str):
    _emulate_and_compare(name)


@pytest.mark.parametrize("name", sorted(CHECKING_CODE))
def test_checking_code_after_the_run_is_skipped_and_recorded(name: str):
    first, last, count = CHECKING_CODE[name]
    skipped = load_fusion(SCRIPTS / f"{name}.py").skipped_statements
    assert (skipped[0].first_line, skipped[-1].last_line, len(skipped)) == (first, last, count)
    assert all("checking code after the run" in s.reason for s in skipped)


def test_scripts_without_checking_code_skip_nothing():
    for name in ("two_fusion_functions", "sched_two_fusion_classes", "layer_norm_var_mean"):
        assert load_fusion(SCRIPTS / f"{name}.py").skipped_statements == []


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_unsupported_script_is_refused_with_op_and_line(name: str):
    with pytest.raises(FusionFileError) as info:
        load_fusion(SCRIPTS / f"{name}.py")
    assert REFUSED[name] in str(info.value)


@pytest.mark.parametrize("name", sorted(COMPILE_REFUSED))
def test_unsupported_dtype_is_refused_at_compile(name: str):
    fd = load_fusion(SCRIPTS / f"{name}.py")
    with pytest.raises(CompileError) as info:
        compile_fusion(fd, fd.example_inputs(seed=0))
    assert COMPILE_REFUSED[name] in str(info.value)


@needs_gxx
@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.xfail(reason=r, strict=True))
                                  for n, r in sorted(KNOWN_BUGS.items())])
def test_known_engine_bug(name: str):
    _emulate_and_compare(name)
