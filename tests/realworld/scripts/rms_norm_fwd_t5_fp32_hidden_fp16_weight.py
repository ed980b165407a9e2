# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on HF T5LayerNorm (an RMSNorm without mean subtraction or bias) in T5-XXL
# (d_model 4096, seq 512, batch 16) with the residual stream kept in float32 and fp16
# weights (T5's _keep_in_fp32 setup): variance from x.pow(2).mean(-1, keepdim=True), then
# the normalized hidden state is cast to the weight's dtype (fp16) and multiplied by the
# weight in fp16 (promoted to float and cast back), as the Thunder trace spells it.
# real-sizes: 3=16 8=512 64=4096
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id5(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[3, 8, 64], contiguity=[True, True, True], dtype=DataType.Float, is_cpu=False, stride_order=[2, 1, 0])
    T1 = fd.define_tensor(shape=[64], contiguity=[True], dtype=DataType.Half, is_cpu=False, stride_order=[0])
    S2 = fd.define_scalar(2.00000, dtype=DataType.Double)
    T3 = fd.ops.pow(T0, S2)
    T4 = fd.ops.sum(T3, dims=[2], keepdim=False, dtype=DataType.Null)
    T5 = fd.ops.broadcast_in_dim(T4, shape=[3, 8, 1], broadcast_dims=[0, 1])
    S6 = fd.define_scalar(64.0000, dtype=DataType.Double)
    T7 = fd.ops.div(T5, S6)
    S8 = fd.define_scalar(1.00000e-06, dtype=DataType.Double)
    T9 = fd.ops.add(T7, S8)
    T10 = fd.ops.rsqrt(T9)
    T11 = fd.ops.broadcast_in_dim(T10, shape=[3, 8, 64], broadcast_dims=[0, 1, 2])
    T12 = fd.ops.mul(T0, T11)
    T13 = fd.ops.cast(T12, dtype=DataType.Half)
    T14 = fd.ops.broadcast_in_dim(T1, shape=[3, 8, 64], broadcast_dims=[2])
    T15 = fd.ops.cast(T14, dtype=DataType.Float)
    T16 = fd.ops.cast(T13, dtype=DataType.Float)
    T17 = fd.ops.mul(T15, T16)
    T18 = fd.ops.cast(T17, dtype=DataType.Half)
    fd.add_output(T18)


with FusionDefinition() as fd:
    nvfuser_fusion_id5(fd)

inputs = [
    torch.randn((3, 8, 64), dtype=torch.float32, device='cuda:0'),
    torch.randn((64,), dtype=torch.float16, device='cuda:0'),
]
fd.execute(inputs)
