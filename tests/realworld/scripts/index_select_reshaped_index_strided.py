# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on NVIDIA/Fuser issue #1129 (tests/python/direct/test_repro.py test_issue1129):
# an Int64 index matrix flattened with reshape(new_shape=[S]) before index_select along
# dim 0 of a float table, the gathered rows reshaped back to [5, 5, D]; both inputs given
# as torch.randn(numel).as_strided(...). The table is shrunk from 2016x64 to 40x8.
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Int, is_cpu=False)
    T1 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float, is_cpu=False)
    S2 = fd.define_scalar(25, dtype=DataType.Int)
    T4 = fd.ops.reshape(T0, new_shape=[S2])
    T5 = fd.ops.index_select(T1, T4, dim=0)
    S6 = fd.define_scalar(5, dtype=DataType.Int)
    S7 = fd.define_scalar(5, dtype=DataType.Int)
    S8 = fd.define_scalar(8, dtype=DataType.Int)
    T10 = fd.ops.reshape(T5, new_shape=[S6, S7, S8])
    fd.add_output(T10)


with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.randint(0, 10, (25,), dtype=torch.int64, device='cuda:0').as_strided((5, 5), (5, 1)),
    torch.randn((320,), dtype=torch.float32, device='cuda:0').as_strided((40, 8), (8, 1)),
]
fd.execute(inputs)
