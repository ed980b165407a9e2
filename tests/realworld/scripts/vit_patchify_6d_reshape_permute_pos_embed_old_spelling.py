# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on a ViT / MAE patchify (imgs.reshape(N, C, h, p, w, p), einsum
# 'nchpwq->nhwpqc', reshape(N, h*w, p*p*C)) as a 2023 Thunder trace handed it to nvFuser, in
# that era's spelling (cf. NVIDIA/Fuser issue #860: define_tensor(shape=[-1, ..]) with
# contiguity only, reshape(original_shape=, new_shape=), broadcast_in_dim(output_shape=)):
# a bf16 image batch [N, C, H, W] split into a 6-D [N, C, h, p, w, p], permuted to
# [N, h, w, p, p, C], flattened to patches [N, h*w, p*p*C] and a learned position embedding
# [1, h*w, p*p*C] added in float; the patches are returned too.
# real-sizes: 5=14 4=16 25=196 48=768
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, -1, -1, -1], contiguity=[True, True, True, True], dtype=DataType.BFloat16, is_cpu=False)
    T1 = fd.define_tensor(shape=[1, -1, -1], contiguity=[None, True, True], dtype=DataType.BFloat16, is_cpu=False)
    T15 = fd.ops.reshape(T0, original_shape=[2, 3, 20, 20], new_shape=[2, 3, 5, 4, 5, 4])
    T16 = fd.ops.permute(T15, dims=[0, 2, 4, 3, 5, 1])
    T27 = fd.ops.reshape(T16, original_shape=[2, 5, 5, 4, 4, 3], new_shape=[2, 25, 48])
    T32 = fd.ops.broadcast_in_dim(T1, output_shape=[2, 25, 48], broadcast_dims=[0, 1, 2])
    T33 = fd.ops.cast(T27, dtype=DataType.Float)
    T34 = fd.ops.cast(T32, dtype=DataType.Float)
    T35 = fd.ops.add(T33, T34)
    T36 = fd.ops.cast(T35, dtype=DataType.BFloat16)
    fd.add_output(T36)
    fd.add_output(T27)


with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((2, 3, 20, 20), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((1, 25, 48), dtype=torch.bfloat16, device='cuda:0'),
]
fd.execute(inputs)
