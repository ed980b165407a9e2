# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on DiT's unpatchify (facebookresearch/DiT models.py: x.reshape(N, h, w, p, p, c),
# einsum('nhwpqc->nchpwq'), reshape(N, c, h*p, h*p)) as a Thunder trace of the final layer
# hands it to nvFuser: the bf16 tokens [N, h*w, p*p*C] (DiT-XL/2 on 32x32 latents with
# learned sigma: 8 output channels) viewed 6-D, permuted to [N, C, h, p, w, p] and flattened
# to the image [N, C, h*p, w*p]; returned as is and scaled by 0.5 in float.
# real-sizes: 5=16 3=8 25=256
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[2, 25, 12], contiguity=[True, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[2, 1, 0])
    T8 = fd.ops.reshape(T0, new_shape=[2, 5, 5, 2, 2, 3])
    T9 = fd.ops.permute(T8, dims=[0, 5, 1, 3, 2, 4])
    T15 = fd.ops.reshape(T9, new_shape=[2, 3, 10, 10])
    T16 = fd.ops.cast(T15, dtype=DataType.Float)
    S17 = fd.define_scalar(0.50000, dtype=DataType.Double)
    T18 = fd.ops.mul(T16, S17)
    T19 = fd.ops.cast(T18, dtype=DataType.BFloat16)
    fd.add_output(T15)
    fd.add_output(T19)


with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((2, 25, 12), dtype=torch.bfloat16, device='cuda:0'),
]
fd.execute(inputs)
