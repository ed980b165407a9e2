# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on the 2023 nvFuser repro printer (symbolic_sizes=, output_shape=, sum with
# axes= and keep_dim=) for the backward of log_softmax over a Llama-2
# vocabulary (32000) in float32, as torch._refs/PrimTorch traced it:
# grad_in = grad - exp(output) * sum(grad, -1); the per-row sum is broadcast back with
# literal output shapes.
# real-sizes: 24=8192 100=32000
import torch
from nvfuser import FusionDefinition, DataType

def nvfuser_fusion_id21(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(symbolic_sizes=[-1, -1], contiguity=[True, True], dtype=DataType.Float, is_cpu=False)
    T1 = fd.define_tensor(symbolic_sizes=[-1, -1], contiguity=[True, True], dtype=DataType.Float, is_cpu=False)
    T2 = fd.ops.exp(T1)
    T3 = fd.ops.sum(T0, axes=[1], keep_dim=False, dtype=DataType.Null)
    T4 = fd.ops.broadcast_in_dim(T3, output_shape=[24, 1], broadcast_dims=[0])
    T5 = fd.ops.broadcast_in_dim(T4, output_shape=[24, 100], broadcast_dims=[0, 1])
    T6 = fd.ops.mul(T2, T5)
    T7 = fd.ops.sub(T0, T6)
    fd.add_output(T7)

with FusionDefinition() as fd:
    nvfuser_fusion_id21(fd)

inputs = [
    torch.randn((24, 100), dtype=torch.float32, device='cuda:0'),
    torch.rand((24, 100), dtype=torch.float32, device='cuda:0') * -4.0 - 4.6,
]
fd.execute(inputs)
