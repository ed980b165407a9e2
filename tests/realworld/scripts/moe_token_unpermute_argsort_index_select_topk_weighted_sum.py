# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on the combine step of a dropless MoE layer (Megatron's unpermute /
# Llama4MoE.run_routed_experts in NVIDIA/Fuser tests/python/test_moe.py, top-2 routing) as
# Thunder hands it to nvFuser: the inverse permutation as a stable argsort of the
# token-to-slot order [T*k], the expert outputs [T*k, H] gathered back into token order
# with index_select, reshaped to [T, k, H], weighted by the float topk weights broadcast
# over H, summed over k and added to the residual; bf16 out, the inverse order returned.
# real-sizes: 24=4096 13=4096
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[26, 24], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[1, 0])
    T1 = fd.define_tensor(shape=[26], contiguity=[True], dtype=DataType.Int, is_cpu=False, stride_order=[0])
    T2 = fd.define_tensor(shape=[13, 2], contiguity=[True, True], dtype=DataType.Float, is_cpu=False, stride_order=[1, 0])
    T3 = fd.define_tensor(shape=[13, 24], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[1, 0])
    T4 = fd.ops.argsort(T1, dim=0, descending=False, stable=True)
    T5 = fd.ops.index_select(T0, T4, dim=0)
    T10 = fd.ops.reshape(T5, new_shape=[13, 2, 24])
    T11 = fd.ops.cast(T10, dtype=DataType.Float)
    T16 = fd.ops.broadcast_in_dim(T2, shape=[13, 2, 24], broadcast_dims=[0, 1])
    T17 = fd.ops.mul(T11, T16)
    T18 = fd.ops.sum(T17, dims=[1], keepdim=False, dtype=DataType.Null)
    T19 = fd.ops.cast(T3, dtype=DataType.Float)
    T20 = fd.ops.add(T18, T19)
    T21 = fd.ops.cast(T20, dtype=DataType.BFloat16)
    fd.add_output(T21)
    fd.add_output(T4)


with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((26, 24), dtype=torch.bfloat16, device='cuda:0'),
    torch.randint(0, 26, (26,), dtype=torch.int64, device='cuda:0'),
    torch.testing.make_tensor((13, 2), dtype=torch.float32, device='cuda:0', low=0.0, high=1.0),
    torch.testing.make_tensor((13, 24), dtype=torch.bfloat16, device='cuda:0'),
]
fd.execute(inputs)
