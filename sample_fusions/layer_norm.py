# LayerNorm forward over the last axis of a bf16 activation, computed in float:
# y = (x - mean) * rsqrt(var + eps) * weight + bias; also returns mean and rstd.
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False)
    T1 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.BFloat16, is_cpu=False)
    T2 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.BFloat16, is_cpu=False)
    T3 = fd.ops.cast(T0, dtype=DataType.Float)
    T4, T5 = fd.ops.var_mean(T3, dims=[1], correction=0, keepdim=False)
    S6 = fd.define_scalar(1e-05, dtype=DataType.Double)
    T7 = fd.ops.add(T4, S6)
    T8 = fd.ops.rsqrt(T7)
    T9 = fd.ops.broadcast_in_dim(T5, shape=[32, 256], broadcast_dims=[0])
    T10 = fd.ops.sub(T3, T9)
    T11 = fd.ops.broadcast_in_dim(T8, shape=[32, 256], broadcast_dims=[0])
    T12 = fd.ops.mul(T10, T11)
    T13 = fd.ops.cast(T1, dtype=DataType.Float)
    T14 = fd.ops.broadcast_in_dim(T13, shape=[32, 256], broadcast_dims=[1])
    T15 = fd.ops.mul(T12, T14)
    T16 = fd.ops.cast(T2, dtype=DataType.Float)
    T17 = fd.ops.broadcast_in_dim(T16, shape=[32, 256], broadcast_dims=[1])
    T18 = fd.ops.add(T15, T17)
    T19 = fd.ops.cast(T18, dtype=DataType.BFloat16)
    fd.add_output(T19)
    fd.add_output(T5)
    fd.add_output(T8)


with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((32, 256), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((256,), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((256,), dtype=torch.bfloat16, device='cuda:0'),
]
fd.execute(inputs)
