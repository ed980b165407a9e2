# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on Thunder embedding fusions (NVIDIA/Fuser PR adding embedding_fwd):
# fd.ops.embedding_fwd(indices, weight, padding_idx, max_norm, norm_type,
# scale_grad_by_freq, sparse) with the optional arguments left None.
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Int, is_cpu=False)
    T1 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False)
    T2 = fd.ops.embedding_fwd(T0, T1, None, None, None, None, None)
    fd.add_output(T2)


with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.randint(0, 32, (2, 5), dtype=torch.int64, device='cuda:0'),
    torch.testing.make_tensor((32, 16), dtype=torch.bfloat16, device='cuda:0'),
]
fd.execute(inputs)
