# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on NVIDIA/Fuser issue #4840 (test_repro.py
# test_reduction_reference_missing_input_ids, a Thunder RoPE backward in half): [1, H, S, D]
# grads stored as [1, S, H, D] (stride_order=[3, 1, 2, 0], given by as_strided) permuted
# back, cos/sin with stride 0 on the heads axis, the rotate-half gradient built from
# 5-D broadcasts padded on the second-to-last axis, a fused qkv input sliced and reshaped
# to [.., 2, D/2] and sliced + squeezed (squeeze_expanded=False), full() of an empty
# [.., 0] float padded as a zero accumulator, the q/k/v grads cat along the last axis,
# reshaped to 2-D and transposed, and cos/sin grads summed over [0, 2]. Shrunk: 16 heads
# -> 4, S 4096 -> 6, D 128 -> 8.
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[1, 4, 6, 8], contiguity=[None, True, True, True], dtype=DataType.Half, is_cpu=False, stride_order=[3, 1, 2, 0])
    T1 = fd.define_tensor(shape=[1, 6, 4, 8], contiguity=[None, True, True, True], dtype=DataType.Half, is_cpu=False, stride_order=[3, 2, 1, 0])
    T2 = fd.define_tensor(shape=[1, 4, 6, 8], contiguity=[None, True, True, True], dtype=DataType.Half, is_cpu=False, stride_order=[3, 1, 2, 0])
    T3 = fd.define_tensor(shape=[1, 6, 4, 8], contiguity=[None, True, None, True], dtype=DataType.Float, is_cpu=False, stride_order=[3, 2, 1, 0])
    T4 = fd.define_tensor(shape=[1, 6, 96], contiguity=[None, True, True], dtype=DataType.Half, is_cpu=False, stride_order=[2, 1, 0])
    T5 = fd.define_tensor(shape=[1, 4, 6, 8], contiguity=[None, True, True, True], dtype=DataType.Half, is_cpu=False, stride_order=[3, 1, 2, 0])
    T6 = fd.define_tensor(shape=[1, 6, 4, 8], contiguity=[None, True, None, True], dtype=DataType.Float, is_cpu=False, stride_order=[3, 2, 1, 0])
    T7 = fd.define_tensor(shape=[1, 6, 4, 8], contiguity=[None, True, True, True], dtype=DataType.Half, is_cpu=False, stride_order=[3, 2, 1, 0])
    T8 = fd.ops.permute(T0, dims=[0, 2, 1, 3])
    T9 = fd.ops.cast(T8, dtype=DataType.Float)
    T10 = fd.ops.cast(T1, dtype=DataType.Float)
    T11 = fd.ops.add(T10, T9)
    T12 = fd.ops.permute(T2, dims=[0, 2, 1, 3])
    T13 = fd.ops.cast(T12, dtype=DataType.Float)
    T29 = fd.ops.slice(T11, start_indices=[0, 0, 0, 0], end_indices=[1, 6, 4, 8], strides=[1, 1, 1, 1], manual_normalization=0)
    T45 = fd.ops.slice(T13, start_indices=[0, 0, 0, 0], end_indices=[1, 6, 4, 8], strides=[1, 1, 1, 1], manual_normalization=0)
    T46 = fd.ops.mul(T3, T29)
    T47 = fd.ops.mul(T3, T45)
    T63 = fd.ops.slice(T46, start_indices=[0, 0, 0, 0], end_indices=[1, 6, 4, 4], strides=[1, 1, 1, 1], manual_normalization=0)
    T79 = fd.ops.slice(T47, start_indices=[0, 0, 0, 0], end_indices=[1, 6, 4, 4], strides=[1, 1, 1, 1], manual_normalization=0)
    T95 = fd.ops.slice(T46, start_indices=[0, 0, 0, 4], end_indices=[1, 6, 4, 8], strides=[1, 1, 1, 1], manual_normalization=0)
    T96 = fd.ops.neg(T63)
    T112 = fd.ops.slice(T47, start_indices=[0, 0, 0, 4], end_indices=[1, 6, 4, 8], strides=[1, 1, 1, 1], manual_normalization=0)
    T113 = fd.ops.neg(T79)
    T120 = fd.ops.broadcast_in_dim(T95, shape=[1, 6, 4, 1, 4], broadcast_dims=[0, 1, 2, 4])
    T127 = fd.ops.broadcast_in_dim(T96, shape=[1, 6, 4, 1, 4], broadcast_dims=[0, 1, 2, 4])
    T134 = fd.ops.broadcast_in_dim(T112, shape=[1, 6, 4, 1, 4], broadcast_dims=[0, 1, 2, 4])
    T141 = fd.ops.broadcast_in_dim(T113, shape=[1, 6, 4, 1, 4], broadcast_dims=[0, 1, 2, 4])
    S142 = fd.define_scalar(0.00000, dtype=DataType.Double)
    T154 = fd.ops.pad(T120, [0, 0, 0, 1, 0, 0, 0, 0, 0, 0], S142)
    S155 = fd.define_scalar(0.00000, dtype=DataType.Double)
    T167 = fd.ops.pad(T127, [0, 0, 1, 0, 0, 0, 0, 0, 0, 0], S155)
    S168 = fd.define_scalar(0.00000, dtype=DataType.Double)
    T180 = fd.ops.pad(T134, [0, 0, 0, 1, 0, 0, 0, 0, 0, 0], S168)
    S181 = fd.define_scalar(0.00000, dtype=DataType.Double)
    T193 = fd.ops.pad(T141, [0, 0, 1, 0, 0, 0, 0, 0, 0, 0], S181)
    T206 = fd.ops.slice(T4, start_indices=[0, 0, 0], end_indices=[1, 6, 32], strides=[1, 1, 1], manual_normalization=0)
    T219 = fd.ops.slice(T4, start_indices=[0, 0, 32], end_indices=[1, 6, 64], strides=[1, 1, 1], manual_normalization=0)
    T220 = fd.ops.add(T167, T154)
    T221 = fd.ops.add(T193, T180)
    T227 = fd.ops.reshape(T206, new_shape=[1, 6, 4, 8])
    T233 = fd.ops.reshape(T219, new_shape=[1, 6, 4, 8])
    T234 = fd.ops.permute(T5, dims=[0, 2, 1, 3])
    S235 = fd.define_scalar(0, dtype=DataType.Int)
    T241 = fd.ops.full(shape=[1, 6, 4, 0], fill_value=S235, dtype=DataType.Float)
    T242 = fd.ops.mul(T6, T29)
    T248 = fd.ops.reshape(T220, new_shape=[1, 6, 4, 8])
    T249 = fd.ops.mul(T6, T45)
    T255 = fd.ops.reshape(T221, new_shape=[1, 6, 4, 8])
    T256 = fd.ops.cast(T227, dtype=DataType.Float)
    T257 = fd.ops.cast(T233, dtype=DataType.Float)
    T258 = fd.ops.cast(T234, dtype=DataType.Float)
    T259 = fd.ops.cast(T7, dtype=DataType.Float)
    S260 = fd.define_scalar(0.00000, dtype=DataType.Double)
    T270 = fd.ops.pad(T241, [0, 8, 0, 0, 0, 0, 0, 0], S260)
    T271 = fd.ops.add(T248, T242)
    T272 = fd.ops.add(T255, T249)
    T279 = fd.ops.reshape(T256, new_shape=[1, 6, 4, 2, 4])
    T286 = fd.ops.reshape(T257, new_shape=[1, 6, 4, 2, 4])
    T287 = fd.ops.add(T259, T258)
    T288 = fd.ops.add(T271, T270)
    T289 = fd.ops.add(T272, T270)
    T308 = fd.ops.slice(T279, start_indices=[0, 0, 0, 1, 0], end_indices=[1, 6, 4, 2, 4], strides=[1, 1, 1, 1, 1], manual_normalization=0)
    T327 = fd.ops.slice(T286, start_indices=[0, 0, 0, 1, 0], end_indices=[1, 6, 4, 2, 4], strides=[1, 1, 1, 1, 1], manual_normalization=0)
    T328 = fd.ops.cast(T287, dtype=DataType.Half)
    T329 = fd.ops.cast(T288, dtype=DataType.Half)
    T330 = fd.ops.cast(T289, dtype=DataType.Half)
    T349 = fd.ops.slice(T279, start_indices=[0, 0, 0, 0, 0], end_indices=[1, 6, 4, 1, 4], strides=[1, 1, 1, 1, 1], manual_normalization=0)
    T350 = fd.ops.squeeze(T308, dims=[3], squeeze_expanded=False)
    T369 = fd.ops.slice(T286, start_indices=[0, 0, 0, 0, 0], end_indices=[1, 6, 4, 1, 4], strides=[1, 1, 1, 1, 1], manual_normalization=0)
    T370 = fd.ops.squeeze(T327, dims=[3], squeeze_expanded=False)
    T375 = fd.ops.reshape(T328, new_shape=[1, 6, 32])
    T380 = fd.ops.reshape(T329, new_shape=[1, 6, 32])
    T385 = fd.ops.reshape(T330, new_shape=[1, 6, 32])
    T386 = fd.ops.squeeze(T349, dims=[3], squeeze_expanded=False)
    T387 = fd.ops.neg(T350)
    T388 = fd.ops.squeeze(T369, dims=[3], squeeze_expanded=False)
    T389 = fd.ops.neg(T370)
    T390 = fd.ops.cat([T385, T380, T375], dim=2, manual_padding=0)
    T391 = fd.ops.cat([T387, T386], dim=-1, manual_padding=0)
    T392 = fd.ops.cat([T389, T388], dim=-1, manual_padding=0)
    T393 = fd.ops.cast(T390, dtype=DataType.Float)
    T394 = fd.ops.mul(T256, T45)
    T395 = fd.ops.mul(T257, T29)
    T396 = fd.ops.mul(T391, T45)
    T397 = fd.ops.mul(T392, T29)
    S398 = fd.define_scalar(2.00000, dtype=DataType.Double)
    T399 = fd.ops.mul(S398, T393)
    T400 = fd.ops.sum(T394, dims=[0, 2], keepdim=False, dtype=DataType.Null)
    T401 = fd.ops.sum(T395, dims=[0, 2], keepdim=False, dtype=DataType.Null)
    T402 = fd.ops.sum(T396, dims=[0, 2], keepdim=False, dtype=DataType.Null)
    T403 = fd.ops.sum(T397, dims=[0, 2], keepdim=False, dtype=DataType.Null)
    T407 = fd.ops.reshape(T399, new_shape=[6, 96])
    T413 = fd.ops.broadcast_in_dim(T400, shape=[1, 6, 1, 8], broadcast_dims=[1, 3])
    T419 = fd.ops.broadcast_in_dim(T401, shape=[1, 6, 1, 8], broadcast_dims=[1, 3])
    T425 = fd.ops.broadcast_in_dim(T402, shape=[1, 6, 1, 8], broadcast_dims=[1, 3])
    T431 = fd.ops.broadcast_in_dim(T403, shape=[1, 6, 1, 8], broadcast_dims=[1, 3])
    T432 = fd.ops.permute(T407, dims=[1, 0])
    T436 = fd.ops.reshape(T390, new_shape=[6, 96])
    T437 = fd.ops.add(T419, T413)
    T438 = fd.ops.add(T431, T425)
    fd.add_output(T432)
    fd.add_output(T407)
    fd.add_output(T436)
    fd.add_output(T437)
    fd.add_output(T438)


with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((192,), dtype=torch.float16, device='cuda:0', low=-1, high=1).as_strided((1, 4, 6, 8), (192, 8, 32, 1)),
    torch.testing.make_tensor((1, 6, 4, 8), dtype=torch.float16, device='cuda:0', low=-1, high=1),
    torch.testing.make_tensor((192,), dtype=torch.float16, device='cuda:0', low=-1, high=1).as_strided((1, 4, 6, 8), (192, 8, 32, 1)),
    torch.testing.make_tensor((48,), dtype=torch.float32, device='cuda:0', low=-1, high=1).as_strided((1, 6, 4, 8), (48, 8, 0, 1)),
    torch.testing.make_tensor((1, 6, 96), dtype=torch.float16, device='cuda:0', low=-1, high=1),
    torch.testing.make_tensor((192,), dtype=torch.float16, device='cuda:0', low=-1, high=1).as_strided((1, 4, 6, 8), (192, 8, 32, 1)),
    torch.testing.make_tensor((48,), dtype=torch.float32, device='cuda:0', low=-1, high=1).as_strided((1, 6, 4, 8), (48, 8, 0, 1)),
    torch.testing.make_tensor((1, 6, 4, 8), dtype=torch.float16, device='cuda:0', low=-1, high=1),
]
fd.validate(inputs)
