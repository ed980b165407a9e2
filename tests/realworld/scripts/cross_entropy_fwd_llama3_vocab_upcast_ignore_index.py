# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on the Thunder forward trace of F.cross_entropy(logits.float(), labels,
# ignore_index=-100) over Llama-3's 128256-token vocabulary (the loss of LitGPT / HF
# LlamaForCausalLM, 8192 tokens per step): bf16 logits upcast, log_softmax as amax / sub /
# exp / sum / log, ignored labels replaced by 0 with where before take_along_axis, the
# masked negative log-likelihood summed and divided by the count of kept tokens (a Bool
# sum cast to float). The row max and the log of the row sum [N, 1] are saved outputs.
# real-sizes: 24=8192 200=128256
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id13(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[24, 200], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[1, 0])
    T1 = fd.define_tensor(shape=[24], contiguity=[True], dtype=DataType.Int, is_cpu=False, stride_order=[0])
    T2 = fd.ops.cast(T0, dtype=DataType.Float)
    T3 = fd.ops.max(T2, dims=[1], keepdim=False, dtype=DataType.Null)
    T4 = fd.ops.broadcast_in_dim(T3, shape=[24, 1], broadcast_dims=[0])
    T5 = fd.ops.broadcast_in_dim(T4, shape=[24, 200], broadcast_dims=[0, 1])
    T6 = fd.ops.sub(T2, T5)
    T7 = fd.ops.exp(T6)
    T8 = fd.ops.sum(T7, dims=[1], keepdim=False, dtype=DataType.Null)
    T9 = fd.ops.broadcast_in_dim(T8, shape=[24, 1], broadcast_dims=[0])
    T10 = fd.ops.log(T9)
    T11 = fd.ops.broadcast_in_dim(T10, shape=[24, 200], broadcast_dims=[0, 1])
    T12 = fd.ops.sub(T6, T11)
    S13 = fd.define_scalar(-100, dtype=DataType.Int)
    T14 = fd.ops.ne(T1, S13)
    S15 = fd.define_scalar(0, dtype=DataType.Int)
    T16 = fd.ops.where(T14, T1, S15)
    T17 = fd.ops.broadcast_in_dim(T16, shape=[24, 1], broadcast_dims=[0])
    T18 = fd.ops.take_along_axis(T12, T17, dim=1)
    T19 = fd.ops.squeeze(T18, dims=[1])
    T20 = fd.ops.neg(T19)
    S21 = fd.define_scalar(0.00000, dtype=DataType.Double)
    T22 = fd.ops.where(T14, T20, S21)
    T23 = fd.ops.sum(T22, dims=[0], keepdim=False, dtype=DataType.Null)
    T24 = fd.ops.sum(T14, dims=[0], keepdim=False, dtype=DataType.Null)
    T25 = fd.ops.cast(T24, dtype=DataType.Float)
    T26 = fd.ops.div(T23, T25)
    fd.add_output(T26)
    fd.add_output(T4)
    fd.add_output(T10)


with FusionDefinition() as fd:
    nvfuser_fusion_id13(fd)

inputs = [
    torch.testing.make_tensor((24, 200), dtype=torch.bfloat16, device='cuda:0', low=-6, high=6),
    torch.randint(0, 200, (24,), dtype=torch.int64, device='cuda:0'),
]
fd.execute(inputs)
