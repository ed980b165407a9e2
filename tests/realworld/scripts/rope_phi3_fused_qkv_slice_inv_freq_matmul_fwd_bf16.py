# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on hf_phi3_rope_fwd in NVIDIA/Fuser benchmarks/python/test_rope.py (HF Phi-3's
# attention prologue as Thunder hands it over, head_dim 96): the fused qkv projection
# [B, S, 3*H*D] sliced along its last axis into q, k and v, each reshaped to heads and
# transposed; the rotary angles computed in the fusion as inv_freq [D/2] (bf16, broadcast to
# [1, D/2, 1]) matmul position_ids [1, S] (int64, broadcast to [1, 1, S]) in float,
# transposed, cat with itself, cos/sin cast to bf16 and broadcast to [B, H, S, D] (returned
# as outputs, saved for the backward); rotate-half on q and k; v returned permuted.
# real-sizes: 12=96 13=2048 6=48 5=32
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[2, 13, 180], contiguity=[True, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[2, 1, 0])
    T1 = fd.define_tensor(shape=[6], contiguity=[True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[0])
    T2 = fd.define_tensor(shape=[1, 13], contiguity=[None, True], dtype=DataType.Int, is_cpu=False, stride_order=[1, 0])
    T15 = fd.ops.slice(T0, start_indices=[0, 0, 0], end_indices=[2, 13, 60], strides=[1, 1, 1], manual_normalization=0)
    T28 = fd.ops.slice(T0, start_indices=[0, 0, 60], end_indices=[2, 13, 120], strides=[1, 1, 1], manual_normalization=0)
    T41 = fd.ops.slice(T0, start_indices=[0, 0, 120], end_indices=[2, 13, 180], strides=[1, 1, 1], manual_normalization=0)
    T47 = fd.ops.reshape(T15, new_shape=[2, 13, 5, 12])
    T48 = fd.ops.permute(T47, dims=[0, 2, 1, 3])
    T54 = fd.ops.reshape(T28, new_shape=[2, 13, 5, 12])
    T55 = fd.ops.permute(T54, dims=[0, 2, 1, 3])
    T61 = fd.ops.reshape(T41, new_shape=[2, 13, 5, 12])
    T62 = fd.ops.permute(T61, dims=[0, 2, 1, 3])
    T67 = fd.ops.broadcast_in_dim(T1, shape=[1, 6, 1], broadcast_dims=[1])
    T68 = fd.ops.cast(T67, dtype=DataType.Float)
    T73 = fd.ops.broadcast_in_dim(T68, shape=[1, 6, 1], broadcast_dims=[0, 1, 2])
    T78 = fd.ops.broadcast_in_dim(T2, shape=[1, 1, 13], broadcast_dims=[0, 2])
    T79 = fd.ops.cast(T78, dtype=DataType.Float)
    T80 = fd.ops.matmul(T73, T79)
    T81 = fd.ops.permute(T80, dims=[0, 2, 1])
    T82 = fd.ops.cat([T81, T81], dim=-1, manual_padding=0)
    T83 = fd.ops.cos(T82)
    T84 = fd.ops.sin(T82)
    T85 = fd.ops.cast(T83, dtype=DataType.BFloat16)
    T86 = fd.ops.cast(T84, dtype=DataType.BFloat16)
    T92 = fd.ops.broadcast_in_dim(T85, shape=[1, 1, 13, 12], broadcast_dims=[0, 2, 3])
    T98 = fd.ops.broadcast_in_dim(T86, shape=[1, 1, 13, 12], broadcast_dims=[0, 2, 3])
    T104 = fd.ops.broadcast_in_dim(T92, shape=[2, 5, 13, 12], broadcast_dims=[0, 1, 2, 3])
    T110 = fd.ops.broadcast_in_dim(T98, shape=[2, 5, 13, 12], broadcast_dims=[0, 1, 2, 3])
    T111 = fd.ops.cast(T104, dtype=DataType.Float)
    T112 = fd.ops.cast(T110, dtype=DataType.Float)
    T128 = fd.ops.slice(T48, start_indices=[0, 0, 0, 0], end_indices=[2, 5, 13, 6], strides=[1, 1, 1, 1], manual_normalization=0)
    T144 = fd.ops.slice(T48, start_indices=[0, 0, 0, 6], end_indices=[2, 5, 13, 12], strides=[1, 1, 1, 1], manual_normalization=0)
    T145 = fd.ops.cast(T144, dtype=DataType.Float)
    T146 = fd.ops.neg(T145)
    T147 = fd.ops.cast(T146, dtype=DataType.BFloat16)
    T148 = fd.ops.cat([T147, T128], dim=-1, manual_padding=0)
    T149 = fd.ops.cast(T48, dtype=DataType.Float)
    T150 = fd.ops.mul(T149, T111)
    T151 = fd.ops.cast(T148, dtype=DataType.Float)
    T152 = fd.ops.mul(T151, T112)
    T153 = fd.ops.add(T150, T152)
    T154 = fd.ops.cast(T153, dtype=DataType.BFloat16)
    T170 = fd.ops.slice(T55, start_indices=[0, 0, 0, 0], end_indices=[2, 5, 13, 6], strides=[1, 1, 1, 1], manual_normalization=0)
    T186 = fd.ops.slice(T55, start_indices=[0, 0, 0, 6], end_indices=[2, 5, 13, 12], strides=[1, 1, 1, 1], manual_normalization=0)
    T187 = fd.ops.cast(T186, dtype=DataType.Float)
    T188 = fd.ops.neg(T187)
    T189 = fd.ops.cast(T188, dtype=DataType.BFloat16)
    T190 = fd.ops.cat([T189, T170], dim=-1, manual_padding=0)
    T191 = fd.ops.cast(T55, dtype=DataType.Float)
    T192 = fd.ops.mul(T191, T111)
    T193 = fd.ops.cast(T190, dtype=DataType.Float)
    T194 = fd.ops.mul(T193, T112)
    T195 = fd.ops.add(T192, T194)
    T196 = fd.ops.cast(T195, dtype=DataType.BFloat16)
    fd.add_output(T62)
    fd.add_output(T104)
    fd.add_output(T110)
    fd.add_output(T154)
    fd.add_output(T196)


with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((2, 13, 180), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((6,), dtype=torch.bfloat16, device='cuda:0', low=0.0, high=1.0),
    torch.randint(0, 13, (1, 13), dtype=torch.int64, device='cuda:0'),
]
fd.execute(inputs)
