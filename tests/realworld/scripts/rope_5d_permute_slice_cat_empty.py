# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on NVIDIA/Fuser issue #3292 (test_repro.py test_issue3292, a Thunder trace): a
# fused projection reshaped to [B, S, 1, 9, D] and permuted, a slice of 7 of the 9 heads,
# reshape to [B, 7, S, D], rotate-half with neg + cat (manual_padding=0), squares summed,
# and a final cat with an empty slice [..., 0:0]; dead rotate-half branches stay in the
# definition. Shrunk from head dim 64 to 8.
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T2 = fd.define_tensor(shape=[5, 5, 72], contiguity=[True, True, True], dtype=DataType.Float, is_cpu=False, stride_order=[2, 1, 0])
    T30 = fd.ops.reshape(T2, new_shape=[5, 5, 1, 9, 8])
    T31 = fd.ops.permute(T30, dims=[0, 2, 3, 1, 4])
    T50 = fd.ops.slice(T31, start_indices=[0, 0, 0, 0, 0], end_indices=[5, 1, 7, 5, 8], strides=[1, 1, 1, 1, 1], manual_normalization=0)
    T108 = fd.ops.reshape(T50, new_shape=[5, 7, 5, 8])
    T136 = fd.ops.slice(T108, start_indices=[0, 0, 0, 0], end_indices=[5, 7, 5, 4], strides=[1, 1, 1, 1], manual_normalization=0)
    T152 = fd.ops.slice(T108, start_indices=[0, 0, 0, 4], end_indices=[5, 7, 5, 8], strides=[1, 1, 1, 1], manual_normalization=0)
    T153 = fd.ops.neg(T152)
    T154 = fd.ops.cat([T153, T136], dim=-1, manual_padding=0)
    T161 = fd.ops.mul(T108, T108)
    T168 = fd.ops.mul(T154, T154)
    T169 = fd.ops.add(T161, T168)
    T185 = fd.ops.slice(T108, start_indices=[0, 0, 0, 0], end_indices=[5, 7, 5, 4], strides=[1, 1, 1, 1], manual_normalization=0)
    T201 = fd.ops.slice(T108, start_indices=[0, 0, 0, 4], end_indices=[5, 7, 5, 8], strides=[1, 1, 1, 1], manual_normalization=0)
    T202 = fd.ops.neg(T201)
    T203 = fd.ops.cat([T202, T185], dim=-1, manual_padding=0)
    T205 = fd.ops.mul(T203, T203)
    T222 = fd.ops.slice(T108, start_indices=[0, 0, 0, 0], end_indices=[5, 7, 5, 0], strides=[1, 1, 1, 1], manual_normalization=0)
    T223 = fd.ops.cat([T169, T222], dim=-1, manual_padding=0)
    fd.add_output(T223)


with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((5, 5, 72), dtype=torch.float32, device='cuda:0'),
]
fd.execute(inputs)
