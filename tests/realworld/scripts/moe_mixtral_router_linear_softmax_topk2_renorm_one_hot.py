# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on HF MixtralSparseMoeBlock's routing as a Thunder trace hands it to nvFuser
# (linear fused, cf. NVIDIA/Fuser tests/python/test_moe.py and benchmarks/python/
# test_llama4_inference.py): hidden [B, S, H] flattened to tokens, the router as
# fd.ops.linear without bias (bf16 logits, also an output), softmax in float, topk(2,
# sorted) of the probabilities renormalised by their sum and cast to bf16, and the expert
# mask one_hot(selected, E).permute(2, 1, 0) built as eq of the broadcast indices with an
# iota over the experts, cast to int64.
# real-sizes: 24=4096 13=4096
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[2, 13, 24], contiguity=[True, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[2, 1, 0])
    T1 = fd.define_tensor(shape=[8, 24], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[1, 0])
    T5 = fd.ops.reshape(T0, new_shape=[26, 24])
    T6 = fd.ops.linear(T5, T1)
    T7 = fd.ops.cast(T6, dtype=DataType.Float)
    T8 = fd.ops.max(T7, dims=[1], keepdim=False, dtype=DataType.Null)
    T12 = fd.ops.broadcast_in_dim(T8, shape=[26, 1], broadcast_dims=[0])
    T16 = fd.ops.broadcast_in_dim(T12, shape=[26, 8], broadcast_dims=[0, 1])
    T17 = fd.ops.sub(T7, T16)
    T18 = fd.ops.exp(T17)
    T19 = fd.ops.sum(T18, dims=[1], keepdim=False, dtype=DataType.Null)
    T23 = fd.ops.broadcast_in_dim(T19, shape=[26, 1], broadcast_dims=[0])
    T27 = fd.ops.broadcast_in_dim(T23, shape=[26, 8], broadcast_dims=[0, 1])
    T28 = fd.ops.div(T18, T27)
    S29 = fd.define_scalar(2, dtype=DataType.Int)
    T30, T31 = fd.ops.topk(T28, S29, dim=1, largest=True, sorted=True)
    T32 = fd.ops.sum(T30, dims=[1], keepdim=False, dtype=DataType.Null)
    T36 = fd.ops.broadcast_in_dim(T32, shape=[26, 1], broadcast_dims=[0])
    T40 = fd.ops.broadcast_in_dim(T36, shape=[26, 2], broadcast_dims=[0, 1])
    T41 = fd.ops.div(T30, T40)
    T42 = fd.ops.cast(T41, dtype=DataType.BFloat16)
    S43 = fd.define_scalar(8, dtype=DataType.Int)
    S44 = fd.define_scalar(0, dtype=DataType.Int)
    S45 = fd.define_scalar(1, dtype=DataType.Int)
    T46 = fd.ops.iota(S43, S44, S45, dtype=DataType.Int)
    T51 = fd.ops.broadcast_in_dim(T31, shape=[26, 2, 8], broadcast_dims=[0, 1])
    T56 = fd.ops.broadcast_in_dim(T46, shape=[26, 2, 8], broadcast_dims=[2])
    T57 = fd.ops.eq(T51, T56)
    T58 = fd.ops.cast(T57, dtype=DataType.Int)
    T59 = fd.ops.permute(T58, dims=[2, 1, 0])
    fd.add_output(T6)
    fd.add_output(T42)
    fd.add_output(T31)
    fd.add_output(T59)


with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((2, 13, 24), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((8, 24), dtype=torch.bfloat16, device='cuda:0'),
]
fd.execute(inputs)
