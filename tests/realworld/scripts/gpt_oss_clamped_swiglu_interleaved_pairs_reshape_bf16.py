# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on gpt-oss's expert activation (HF GptOssExperts: gate_up[..., ::2] and
# gate_up[..., 1::2], gate clamped above at 7, up clamped to [-7, 7], glu = gate *
# sigmoid(1.702 * gate), (up + 1) * glu) as Thunder hands it to nvFuser, the interleaved
# de-interleave written as a reshape of the [T, 2I] projection to [T, I, 2] with the two
# pair slots sliced out and squeezed (the stride-2 slices nvFuser long lacked); clamps with
# an infinite lower bound for the gate, float math, bf16 out (intermediate 2880).
# real-sizes: 20=2880 13=4096
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[13, 40], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[1, 0])
    T5 = fd.ops.reshape(T0, new_shape=[13, 20, 2])
    T18 = fd.ops.slice(T5, start_indices=[0, 0, 0], end_indices=[13, 20, 1], strides=[1, 1, 1], manual_normalization=0)
    T19 = fd.ops.squeeze(T18, dims=[2])
    T32 = fd.ops.slice(T5, start_indices=[0, 0, 1], end_indices=[13, 20, 2], strides=[1, 1, 1], manual_normalization=0)
    T33 = fd.ops.squeeze(T32, dims=[2])
    T34 = fd.ops.cast(T19, dtype=DataType.Float)
    T35 = fd.ops.cast(T33, dtype=DataType.Float)
    S36 = fd.define_scalar(7.00000, dtype=DataType.Double)
    S37 = fd.define_scalar(-7.00000, dtype=DataType.Double)
    S38 = fd.define_scalar(float('-inf'), dtype=DataType.Double)
    T39 = fd.ops.clamp(T34, S38, S36)
    T40 = fd.ops.clamp(T35, S37, S36)
    S41 = fd.define_scalar(1.70200, dtype=DataType.Double)
    T42 = fd.ops.mul(T39, S41)
    T43 = fd.ops.sigmoid(T42)
    T44 = fd.ops.mul(T39, T43)
    S45 = fd.define_scalar(1.00000, dtype=DataType.Double)
    T46 = fd.ops.add(T40, S45)
    T47 = fd.ops.mul(T46, T44)
    T48 = fd.ops.cast(T47, dtype=DataType.BFloat16)
    fd.add_output(T48)


with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((13, 40), dtype=torch.bfloat16, device='cuda:0'),
]
fd.execute(inputs)
