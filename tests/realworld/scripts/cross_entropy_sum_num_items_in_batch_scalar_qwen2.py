# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on a Thunder trace of HF's ForCausalLMLoss with num_items_in_batch (gradient
# accumulation: reduction='sum' divided by the token count of the whole accumulated batch)
# for Qwen2 (padded vocabulary 152064): the count arrives as an Int scalar input
# (define_scalar(None, dtype=DataType.Int), a Python int in the inputs list) and divides
# the summed, ignore-masked negative log-likelihood; the logits are upcast from bf16 (one
# 256-token chunk of the flattened logits, as chunked-loss trainers hand it over).
# real-sizes: 18=256 99=152064
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id5(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[1, 0])
    T1 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Int, is_cpu=False, stride_order=[0])
    S2 = fd.define_scalar(None, dtype=DataType.Int)
    T3 = fd.ops.cast(T0, dtype=DataType.Float)
    T4 = fd.ops.max(T3, dims=[1], keepdim=True, dtype=DataType.Null)
    T5 = fd.ops.sub(T3, T4)
    T6 = fd.ops.exp(T5)
    T7 = fd.ops.sum(T6, dims=[1], keepdim=True, dtype=DataType.Null)
    T8 = fd.ops.log(T7)
    T9 = fd.ops.sub(T5, T8)
    S10 = fd.define_scalar(-100, dtype=DataType.Int)
    T11 = fd.ops.ne(T1, S10)
    S12 = fd.define_scalar(0, dtype=DataType.Int)
    T13 = fd.ops.where(T11, T1, S12)
    V14 = fd.define_vector([T1.size(0), 1], dtype=DataType.Int)
    T15 = fd.ops.broadcast_in_dim(T13, shape=V14, broadcast_dims=[0])
    T16 = fd.ops.take_along_axis(T9, T15, dim=1)
    T17 = fd.ops.squeeze(T16, dims=[1])
    T18 = fd.ops.neg(T17)
    S19 = fd.define_scalar(0.00000, dtype=DataType.Double)
    T20 = fd.ops.where(T11, T18, S19)
    T21 = fd.ops.sum(T20, dims=[0], keepdim=False, dtype=DataType.Null)
    T22 = fd.ops.div(T21, S2)
    fd.add_output(T22)


with FusionDefinition() as fd:
    nvfuser_fusion_id5(fd)

inputs = [
    torch.randn((18, 99), dtype=torch.bfloat16, device='cuda:0'),
    torch.randint(0, 99, (18,), dtype=torch.int64, device='cuda:0'),
    54,
]
fd.execute(inputs)
