# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on nvfuser_cross_entropy_fusion of NVIDIA/Fuser
# benchmarks/python/test_cross_entropy_loss.py (F.cross_entropy(logits, labels,
# reduction='none') with batch 4096) at Phi-3's 32064-token vocabulary: lse per row from
# max / exp / sum / log, sizes as `T0.size(k)` in define_vector, the target logit read
# with fd.ops.gather straight from the bf16 input and squeezed, loss = lse - target cast
# to bf16 per row.
# real-sizes: 16=4096 48=32064
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[1, 0])
    T1 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Int, is_cpu=False, stride_order=[0])
    T2 = fd.ops.cast(T0, dtype=DataType.Float)
    T3 = fd.ops.max(T2, dims=[1], keepdim=False, dtype=DataType.Null)
    V4 = fd.define_vector([T0.size(0), 1], dtype=DataType.Int)
    T5 = fd.ops.broadcast_in_dim(T3, shape=V4, broadcast_dims=[0])
    V6 = fd.define_vector([T0.size(0), T0.size(1)], dtype=DataType.Int)
    T7 = fd.ops.broadcast_in_dim(T5, shape=V6, broadcast_dims=[0, 1])
    T8 = fd.ops.sub(T2, T7)
    T9 = fd.ops.exp(T8)
    T10 = fd.ops.sum(T9, dims=[1], keepdim=False, dtype=DataType.Null)
    T11 = fd.ops.log(T10)
    T12 = fd.ops.add(T11, T3)
    T13 = fd.ops.broadcast_in_dim(T1, shape=V4, broadcast_dims=[0])
    T14 = fd.ops.gather(T0, T13, dim=1)
    T15 = fd.ops.squeeze(T14, dims=[1])
    T16 = fd.ops.cast(T15, dtype=DataType.Float)
    T17 = fd.ops.sub(T12, T16)
    T18 = fd.ops.cast(T17, dtype=DataType.BFloat16)
    fd.add_output(T18)


with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.randn((16, 48), dtype=torch.bfloat16, device='cuda:0'),
    torch.randint(0, 48, (16,), dtype=torch.int64, device='cuda:0'),
]
fd.execute(inputs)
