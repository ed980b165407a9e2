# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on a Thunder trace of an attention-mask step seen in the real-world sweep: a bool
# mask broadcast to 6-D, reshaped to [16, 16, 1] and expanded, a slice of an input with a
# stride-0 middle axis, two wheres. 8192 elements: launch-bound, a per-call overhead probe.
import torch
from nvfuser import FusionDefinition, DataType

def nvfuser_fusion_id2(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[1, 1, 16, 16], contiguity=[None, None, True, True], dtype=DataType.Bool, is_cpu=False, stride_order=[3, 2, 1, 0])
    T1 = fd.define_tensor(shape=[16, 16, 64], contiguity=[True, None, True], dtype=DataType.Float, is_cpu=False, stride_order=[2, 1, 0])
    T2 = fd.define_tensor(shape=[16, 16, 32], contiguity=[True, True, True], dtype=DataType.Float, is_cpu=False, stride_order=[2, 1, 0])
    T3 = fd.ops.broadcast_in_dim(T0, shape=[1, 1, 16, 16, 1, 1], broadcast_dims=[0, 1, 2, 3])
    T4 = fd.ops.reshape(T3, new_shape=[16, 16, 1])
    T5 = fd.ops.broadcast_in_dim(T4, shape=[16, 16, 32], broadcast_dims=[0, 1, 2])
    T6 = fd.ops.slice(T1, start_indices=[0, 0, 0], end_indices=[16, 16, 32], strides=[1, 1, 1])
    S7 = fd.define_scalar(0.0, dtype=DataType.Double)
    T8 = fd.ops.where(T5, T6, S7)
    T9 = fd.ops.where(T5, T2, T8)
    fd.add_output(T9)

with FusionDefinition() as fd:
    nvfuser_fusion_id2(fd)

inputs = [
    torch.randint(0, 2, (1, 1, 16, 16), dtype=torch.bool, device='cuda:0'),
    torch.randn((1024,), dtype=torch.float32, device='cuda:0').as_strided((16, 16, 64), (64, 0, 1)),
    torch.randn((16, 16, 32), dtype=torch.float32, device='cuda:0'),
]
fd.execute(inputs)
