# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on Swin Transformer's shifted-window block (torch.roll(x, (-shift, -shift),
# (1, 2)) then window_partition) as Thunder hands it to nvFuser: the roll decomposed into
# two slices cat in swapped order along each spatial axis (Thunder's roll lowering),
# the [B, H, W, C] map viewed as [B, H/w, w, W/w, w, C], permuted to
# [B, H/w, W/w, w, w, C] and reshaped to windows [B*nW, w*w, C]; Swin-T stage 1 sizes
# (56x56, window 7, shift 3, 96 channels).
# real-sizes: 15=56 12=96 5=7 3=8 2=3 25=49 9=64
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[1, 15, 15, 12], contiguity=[None, True, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[3, 2, 1, 0])
    T16 = fd.ops.slice(T0, start_indices=[0, 2, 0, 0], end_indices=[1, 15, 15, 12], strides=[1, 1, 1, 1], manual_normalization=0)
    T32 = fd.ops.slice(T0, start_indices=[0, 0, 0, 0], end_indices=[1, 2, 15, 12], strides=[1, 1, 1, 1], manual_normalization=0)
    T33 = fd.ops.cat([T16, T32], dim=1, manual_padding=0)
    T49 = fd.ops.slice(T33, start_indices=[0, 0, 2, 0], end_indices=[1, 15, 15, 12], strides=[1, 1, 1, 1], manual_normalization=0)
    T65 = fd.ops.slice(T33, start_indices=[0, 0, 0, 0], end_indices=[1, 15, 2, 12], strides=[1, 1, 1, 1], manual_normalization=0)
    T66 = fd.ops.cat([T49, T65], dim=2, manual_padding=0)
    T74 = fd.ops.reshape(T66, new_shape=[1, 3, 5, 3, 5, 12])
    T75 = fd.ops.permute(T74, dims=[0, 1, 3, 2, 4, 5])
    T80 = fd.ops.reshape(T75, new_shape=[9, 25, 12])
    fd.add_output(T80)


with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((1, 15, 15, 12), dtype=torch.bfloat16, device='cuda:0'),
]
fd.execute(inputs)
