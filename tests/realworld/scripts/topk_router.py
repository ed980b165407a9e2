# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on a mixture-of-experts router as Thunder hands it to nvFuser: softmax over the
# expert logits in float, topk(k=2) of the probabilities, the pair renormalised.
import torch
from nvfuser import FusionDefinition, DataType

def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False)
    T1 = fd.ops.cast(T0, dtype=DataType.Float)
    T2 = fd.ops.max(T1, dims=[1], keepdim=False, dtype=DataType.Null)
    T3 = fd.ops.broadcast_in_dim(T2, shape=[16, 1], broadcast_dims=[0])
    T4 = fd.ops.sub(T1, T3)
    T5 = fd.ops.exp(T4)
    T6 = fd.ops.sum(T5, dims=[1], keepdim=False, dtype=DataType.Null)
    T7 = fd.ops.broadcast_in_dim(T6, shape=[16, 1], broadcast_dims=[0])
    T8 = fd.ops.div(T5, T7)
    S9 = fd.define_scalar(2, dtype=DataType.Int)
    T10, T11 = fd.ops.topk(T8, S9, dim=1, largest=True, sorted=True)
    T12 = fd.ops.sum(T10, dims=[1], keepdim=True, dtype=DataType.Null)
    T13 = fd.ops.div(T10, T12)
    T14 = fd.ops.cast(T13, dtype=DataType.BFloat16)
    fd.add_output(T14)
    fd.add_output(T11)

with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((16, 8), dtype=torch.bfloat16, device='cuda:0'),
]
fd.execute(inputs)
