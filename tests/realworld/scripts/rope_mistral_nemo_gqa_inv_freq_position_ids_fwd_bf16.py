# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on hf_mistral_nemo_rope_fwd in NVIDIA/Fuser benchmarks/python/test_rope.py (HF
# Mistral-NeMo attention prologue from Thunder: 32 query heads of 128 over a 5120-wide
# model, 8 key/value heads): q, k and v projections reshaped to heads and transposed; the
# rotary table built in the fusion from a bf16 inv_freq [64] and int64 position_ids [1, S]
# with a float matmul, cat of the angles with themselves, cos/sin cast to bf16 and returned
# as [1, 1, S, D]; rotate-half on q and k; the rotated key and the value repeated 4 times
# through a 5-D broadcast and reshaped to 32 heads.
# real-sizes: 16=128 13=4096 8=64 28=32 7=8 448=4096 112=1024
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[1, 13, 448], contiguity=[None, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[2, 1, 0])
    T1 = fd.define_tensor(shape=[1, 13, 112], contiguity=[None, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[2, 1, 0])
    T2 = fd.define_tensor(shape=[1, 13, 112], contiguity=[None, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[2, 1, 0])
    T3 = fd.define_tensor(shape=[8], contiguity=[True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[0])
    T4 = fd.define_tensor(shape=[1, 13], contiguity=[None, True], dtype=DataType.Int, is_cpu=False, stride_order=[1, 0])
    T10 = fd.ops.reshape(T0, new_shape=[1, 13, 28, 16])
    T11 = fd.ops.permute(T10, dims=[0, 2, 1, 3])
    T17 = fd.ops.reshape(T1, new_shape=[1, 13, 7, 16])
    T18 = fd.ops.permute(T17, dims=[0, 2, 1, 3])
    T24 = fd.ops.reshape(T2, new_shape=[1, 13, 7, 16])
    T25 = fd.ops.permute(T24, dims=[0, 2, 1, 3])
    T30 = fd.ops.broadcast_in_dim(T3, shape=[1, 8, 1], broadcast_dims=[1])
    T31 = fd.ops.cast(T30, dtype=DataType.Float)
    T36 = fd.ops.broadcast_in_dim(T31, shape=[1, 8, 1], broadcast_dims=[0, 1, 2])
    T41 = fd.ops.broadcast_in_dim(T4, shape=[1, 1, 13], broadcast_dims=[0, 2])
    T42 = fd.ops.cast(T41, dtype=DataType.Float)
    T43 = fd.ops.matmul(T36, T42)
    T44 = fd.ops.permute(T43, dims=[0, 2, 1])
    T45 = fd.ops.cat([T44, T44], dim=-1, manual_padding=0)
    T46 = fd.ops.cos(T45)
    T47 = fd.ops.sin(T45)
    T48 = fd.ops.cast(T46, dtype=DataType.BFloat16)
    T49 = fd.ops.cast(T47, dtype=DataType.BFloat16)
    T55 = fd.ops.broadcast_in_dim(T48, shape=[1, 1, 13, 16], broadcast_dims=[0, 2, 3])
    T61 = fd.ops.broadcast_in_dim(T49, shape=[1, 1, 13, 16], broadcast_dims=[0, 2, 3])
    T67 = fd.ops.broadcast_in_dim(T55, shape=[1, 28, 13, 16], broadcast_dims=[0, 1, 2, 3])
    T68 = fd.ops.cast(T67, dtype=DataType.Float)
    T69 = fd.ops.cast(T11, dtype=DataType.Float)
    T70 = fd.ops.mul(T69, T68)
    T86 = fd.ops.slice(T11, start_indices=[0, 0, 0, 0], end_indices=[1, 28, 13, 8], strides=[1, 1, 1, 1], manual_normalization=0)
    T102 = fd.ops.slice(T11, start_indices=[0, 0, 0, 8], end_indices=[1, 28, 13, 16], strides=[1, 1, 1, 1], manual_normalization=0)
    T103 = fd.ops.cast(T102, dtype=DataType.Float)
    T104 = fd.ops.neg(T103)
    T105 = fd.ops.cast(T104, dtype=DataType.BFloat16)
    T106 = fd.ops.cat([T105, T86], dim=-1, manual_padding=0)
    T112 = fd.ops.broadcast_in_dim(T61, shape=[1, 28, 13, 16], broadcast_dims=[0, 1, 2, 3])
    T113 = fd.ops.cast(T112, dtype=DataType.Float)
    T114 = fd.ops.cast(T106, dtype=DataType.Float)
    T115 = fd.ops.mul(T114, T113)
    T116 = fd.ops.add(T70, T115)
    T117 = fd.ops.cast(T116, dtype=DataType.BFloat16)
    T123 = fd.ops.broadcast_in_dim(T55, shape=[1, 7, 13, 16], broadcast_dims=[0, 1, 2, 3])
    T124 = fd.ops.cast(T123, dtype=DataType.Float)
    T125 = fd.ops.cast(T18, dtype=DataType.Float)
    T126 = fd.ops.mul(T125, T124)
    T142 = fd.ops.slice(T18, start_indices=[0, 0, 0, 0], end_indices=[1, 7, 13, 8], strides=[1, 1, 1, 1], manual_normalization=0)
    T158 = fd.ops.slice(T18, start_indices=[0, 0, 0, 8], end_indices=[1, 7, 13, 16], strides=[1, 1, 1, 1], manual_normalization=0)
    T159 = fd.ops.cast(T158, dtype=DataType.Float)
    T160 = fd.ops.neg(T159)
    T161 = fd.ops.cast(T160, dtype=DataType.BFloat16)
    T162 = fd.ops.cat([T161, T142], dim=-1, manual_padding=0)
    T168 = fd.ops.broadcast_in_dim(T61, shape=[1, 7, 13, 16], broadcast_dims=[0, 1, 2, 3])
    T169 = fd.ops.cast(T168, dtype=DataType.Float)
    T170 = fd.ops.cast(T162, dtype=DataType.Float)
    T171 = fd.ops.mul(T170, T169)
    T172 = fd.ops.add(T126, T171)
    T173 = fd.ops.cast(T172, dtype=DataType.BFloat16)
    T180 = fd.ops.broadcast_in_dim(T173, shape=[1, 7, 1, 13, 16], broadcast_dims=[0, 1, 3, 4])
    T187 = fd.ops.broadcast_in_dim(T180, shape=[1, 7, 4, 13, 16], broadcast_dims=[0, 1, 2, 3, 4])
    T193 = fd.ops.reshape(T187, new_shape=[1, 28, 13, 16])
    T200 = fd.ops.broadcast_in_dim(T25, shape=[1, 7, 1, 13, 16], broadcast_dims=[0, 1, 3, 4])
    T207 = fd.ops.broadcast_in_dim(T200, shape=[1, 7, 4, 13, 16], broadcast_dims=[0, 1, 2, 3, 4])
    T213 = fd.ops.reshape(T207, new_shape=[1, 28, 13, 16])
    fd.add_output(T55)
    fd.add_output(T61)
    fd.add_output(T117)
    fd.add_output(T193)
    fd.add_output(T213)


with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((1, 13, 448), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((1, 13, 112), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((1, 13, 112), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((8,), dtype=torch.bfloat16, device='cuda:0', low=0.0, high=1.0),
    torch.randint(0, 13, (1, 13), dtype=torch.int64, device='cuda:0'),
]
fd.execute(inputs)
