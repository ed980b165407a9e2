# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on HF Qwen2MoeSparseMoeBlock's shared expert (Qwen1.5-MoE-A2.7B: hidden 2048,
# shared_expert_intermediate_size 5632) as Thunder hands it to nvFuser with linears fused
# (cf. NVIDIA/Fuser tests/python/test_moe.py): the fused shared gate/up projection [T, 2I]
# sliced in halves, fd.ops.silu(gate) * up in float, the down projection as fd.ops.linear,
# the shared_expert_gate as a [1, H] linear whose sigmoid [T, 1] is broadcast over the
# hidden size, and the gated shared output added to the routed experts' output.
# real-sizes: 24=2048 22=5632 13=4096
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[13, 24], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[1, 0])
    T1 = fd.define_tensor(shape=[13, 24], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[1, 0])
    T2 = fd.define_tensor(shape=[13, 44], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[1, 0])
    T3 = fd.define_tensor(shape=[24, 22], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[1, 0])
    T4 = fd.define_tensor(shape=[1, 24], contiguity=[None, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[1, 0])
    T14 = fd.ops.slice(T2, start_indices=[0, 0], end_indices=[13, 22], strides=[1, 1], manual_normalization=0)
    T15 = fd.ops.cast(T14, dtype=DataType.Float)
    T25 = fd.ops.slice(T2, start_indices=[0, 22], end_indices=[13, 44], strides=[1, 1], manual_normalization=0)
    T26 = fd.ops.cast(T25, dtype=DataType.Float)
    T27 = fd.ops.silu(T15)
    T28 = fd.ops.mul(T27, T26)
    T29 = fd.ops.cast(T28, dtype=DataType.BFloat16)
    T30 = fd.ops.linear(T29, T3)
    T31 = fd.ops.linear(T0, T4)
    T32 = fd.ops.cast(T31, dtype=DataType.Float)
    T33 = fd.ops.sigmoid(T32)
    T37 = fd.ops.broadcast_in_dim(T33, shape=[13, 24], broadcast_dims=[0, 1])
    T38 = fd.ops.cast(T30, dtype=DataType.Float)
    T39 = fd.ops.mul(T37, T38)
    T40 = fd.ops.cast(T1, dtype=DataType.Float)
    T41 = fd.ops.add(T40, T39)
    T42 = fd.ops.cast(T41, dtype=DataType.BFloat16)
    fd.add_output(T42)


with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((13, 24), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((13, 24), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((13, 44), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((24, 22), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((1, 24), dtype=torch.bfloat16, device='cuda:0'),
]
fd.execute(inputs)
