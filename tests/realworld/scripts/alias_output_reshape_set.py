# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on NVIDIA/Fuser issue #3833 (Thunder, 2025): a reshape that drops a leading
# size-1 dim, its set() written back into another input with fd.add_output(T, alias)
# (Thunder's in-place copy_), the reshape itself also an output, and the outputs read
# from fd.execute and printed.
import torch
from nvfuser import FusionDefinition, DataType

def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[1, 1, 576], contiguity=[None, None, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[2, 1, 0])
    T1 = fd.define_tensor(shape=[1, 576], contiguity=[None, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[1, 0])
    T5 = fd.ops.reshape(T0, new_shape=[1, 576])
    T6 = fd.ops.set(T5)
    fd.add_output(T6, T1)
    fd.add_output(T5)

with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((1, 1, 576), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((1, 576), dtype=torch.bfloat16, device='cuda:0'),
]
out = fd.execute(inputs)
print(f"$$$ {out = }")
