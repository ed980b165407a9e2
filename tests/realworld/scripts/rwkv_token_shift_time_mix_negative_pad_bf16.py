# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on RWKV-4's time mixing (BlinkDL RWKV-LM, RWKV_TimeMix.forward) as Thunder hands it
# to nvFuser: the token shift nn.ZeroPad2d((0, 0, 1, -1)) is a pad of the time axis by one
# step in front and minus one at the end (a negative pad: the last step is cut), then the
# three mixes x * time_mix + shifted * (1 - time_mix) for k, v and r with [1, 1, C] mixing
# weights, computed in float from the bf16 stream and cast back for the k/v/r projections.
# real-sizes: 3=4 7=1024 40=4096
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id2(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[3, 7, 40], contiguity=[True, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[2, 1, 0])
    T1 = fd.define_tensor(shape=[1, 1, 40], contiguity=[None, None, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[2, 1, 0])
    T2 = fd.define_tensor(shape=[1, 1, 40], contiguity=[None, None, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[2, 1, 0])
    T3 = fd.define_tensor(shape=[1, 1, 40], contiguity=[None, None, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[2, 1, 0])
    S4 = fd.define_scalar(0.00000, dtype=DataType.Double)
    T5 = fd.ops.pad(T0, [0, 0, 1, -1, 0, 0], S4)
    T6 = fd.ops.cast(T0, dtype=DataType.Float)
    T7 = fd.ops.cast(T5, dtype=DataType.Float)
    T8 = fd.ops.broadcast_in_dim(T1, shape=[3, 7, 40], broadcast_dims=[0, 1, 2])
    T9 = fd.ops.cast(T8, dtype=DataType.Float)
    T10 = fd.ops.mul(T6, T9)
    S11 = fd.define_scalar(1.00000, dtype=DataType.Double)
    T12 = fd.ops.sub(S11, T9)
    T13 = fd.ops.mul(T7, T12)
    T14 = fd.ops.add(T10, T13)
    T15 = fd.ops.cast(T14, dtype=DataType.BFloat16)
    T16 = fd.ops.broadcast_in_dim(T2, shape=[3, 7, 40], broadcast_dims=[0, 1, 2])
    T17 = fd.ops.cast(T16, dtype=DataType.Float)
    T18 = fd.ops.mul(T6, T17)
    T19 = fd.ops.sub(S11, T17)
    T20 = fd.ops.mul(T7, T19)
    T21 = fd.ops.add(T18, T20)
    T22 = fd.ops.cast(T21, dtype=DataType.BFloat16)
    T23 = fd.ops.broadcast_in_dim(T3, shape=[3, 7, 40], broadcast_dims=[0, 1, 2])
    T24 = fd.ops.cast(T23, dtype=DataType.Float)
    T25 = fd.ops.mul(T6, T24)
    T26 = fd.ops.sub(S11, T24)
    T27 = fd.ops.mul(T7, T26)
    T28 = fd.ops.add(T25, T27)
    T29 = fd.ops.cast(T28, dtype=DataType.BFloat16)
    fd.add_output(T15)
    fd.add_output(T22)
    fd.add_output(T29)


with FusionDefinition() as fd:
    nvfuser_fusion_id2(fd)

inputs = [
    torch.testing.make_tensor((3, 7, 40), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((1, 1, 40), dtype=torch.bfloat16, device='cuda:0', low=0, high=1),
    torch.testing.make_tensor((1, 1, 40), dtype=torch.bfloat16, device='cuda:0', low=0, high=1),
    torch.testing.make_tensor((1, 1, 40), dtype=torch.bfloat16, device='cuda:0', low=0, high=1),
]
fd.execute(inputs)
