# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on a Thunder trace of the sampling step of LitGPT generate (logits of the last
# position divided by a temperature, then softmax over GPT-2's odd 50257-token vocabulary):
# bf16 logits [B, V], the temperature a Double scalar input (define_scalar(None) and a
# Python float in the inputs list), upcast to float, amax / sub / exp / sum / div with
# keepdim=False reductions and broadcast_in_dim; float probabilities out.
# real-sizes: 6=64 157=50257
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id2(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[1, 0])
    S1 = fd.define_scalar(None, dtype=DataType.Double)
    T2 = fd.ops.cast(T0, dtype=DataType.Float)
    T3 = fd.ops.div(T2, S1)
    T4 = fd.ops.max(T3, dims=[1], keepdim=False, dtype=DataType.Null)
    T5 = fd.ops.broadcast_in_dim(T4, shape=[6, 1], broadcast_dims=[0])
    T6 = fd.ops.broadcast_in_dim(T5, shape=[6, 157], broadcast_dims=[0, 1])
    T7 = fd.ops.sub(T3, T6)
    T8 = fd.ops.exp(T7)
    T9 = fd.ops.sum(T8, dims=[1], keepdim=False, dtype=DataType.Null)
    T10 = fd.ops.broadcast_in_dim(T9, shape=[6, 1], broadcast_dims=[0])
    T11 = fd.ops.broadcast_in_dim(T10, shape=[6, 157], broadcast_dims=[0, 1])
    T12 = fd.ops.div(T8, T11)
    fd.add_output(T12)


with FusionDefinition() as fd:
    nvfuser_fusion_id2(fd)

inputs = [
    torch.testing.make_tensor((6, 157), dtype=torch.bfloat16, device='cuda:0', low=-8, high=8),
    0.8,
]
fd.execute(inputs)
