# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on Mamba's causal_conv1d_update in a decode step (HF MambaMixer slow path:
# conv_state = conv_state.roll(shifts=-1, dims=-1); conv_state[:, :, -1] = hidden;
# hidden = sum(conv_state * conv1d.weight[:, 0, :], dim=-1) + bias; act) as Thunder hands it
# to nvFuser: the roll-and-overwrite written as a slice dropping the oldest column and a cat
# of the new [B, D] column broadcast to [B, D, 1], the state written back into its input
# with fd.add_output(T, alias), the depthwise conv as a float mul + sum over the kernel
# axis, plus bias, fd.ops.silu, bf16 out (mamba-2.8b: d_inner 5120, d_conv 4).
# real-sizes: 20=5120
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[2, 20, 4], contiguity=[True, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[2, 1, 0])
    T1 = fd.define_tensor(shape=[2, 20], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[1, 0])
    T2 = fd.define_tensor(shape=[20, 4], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[1, 0])
    T3 = fd.define_tensor(shape=[20], contiguity=[True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[0])
    T16 = fd.ops.slice(T0, start_indices=[0, 0, 1], end_indices=[2, 20, 4], strides=[1, 1, 1], manual_normalization=0)
    T21 = fd.ops.broadcast_in_dim(T1, shape=[2, 20, 1], broadcast_dims=[0, 1])
    T22 = fd.ops.cat([T16, T21], dim=2, manual_padding=0)
    T27 = fd.ops.broadcast_in_dim(T2, shape=[2, 20, 4], broadcast_dims=[1, 2])
    T28 = fd.ops.cast(T22, dtype=DataType.Float)
    T29 = fd.ops.cast(T27, dtype=DataType.Float)
    T30 = fd.ops.mul(T28, T29)
    T31 = fd.ops.sum(T30, dims=[2], keepdim=False, dtype=DataType.Null)
    T35 = fd.ops.broadcast_in_dim(T3, shape=[2, 20], broadcast_dims=[1])
    T36 = fd.ops.cast(T35, dtype=DataType.Float)
    T37 = fd.ops.add(T31, T36)
    T38 = fd.ops.silu(T37)
    fd.add_output(T22, T0)
    T39 = fd.ops.cast(T38, dtype=DataType.BFloat16)
    fd.add_output(T39)


with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((2, 20, 4), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((2, 20), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((20, 4), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((20,), dtype=torch.bfloat16, device='cuda:0'),
]
fd.execute(inputs)
