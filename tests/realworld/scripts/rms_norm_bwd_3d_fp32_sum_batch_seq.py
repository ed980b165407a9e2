# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on NVIDIA/Fuser issue #1706 (test_repro.py, an RMSNorm backward from a Llama
# trace with sums over [0, 1] of [B, S, H] tensors) in float32 at a width of 5040 (an
# even width that is no multiple of 128), batch 2: grad_weight is a sum over batch and
# sequence of g * x * rstd, grad_input uses a per-row sum over the hidden axis broadcast
# back through [B, S, 1]; rstd comes in as [B, S, 1].
# real-sizes: 12=2048 70=5040
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, -1, -1], contiguity=[True, True, True], dtype=DataType.Float, is_cpu=False, stride_order=[2, 1, 0])
    T1 = fd.define_tensor(shape=[-1, -1, 1], contiguity=[True, True, None], dtype=DataType.Float, is_cpu=False, stride_order=[2, 1, 0])
    T2 = fd.define_tensor(shape=[-1, -1, -1], contiguity=[True, True, True], dtype=DataType.Float, is_cpu=False, stride_order=[2, 1, 0])
    T3 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float, is_cpu=False, stride_order=[0])
    V4 = fd.ops.shape(T0)
    T5 = fd.ops.broadcast_in_dim(T1, shape=V4, broadcast_dims=[0, 1, 2])
    T6 = fd.ops.mul(T0, T5)
    T7 = fd.ops.mul(T2, T6)
    T8 = fd.ops.sum(T7, dims=[0, 1], keepdim=False, dtype=DataType.Null)
    T9 = fd.ops.broadcast_in_dim(T3, shape=V4, broadcast_dims=[2])
    T10 = fd.ops.mul(T2, T9)
    T11 = fd.ops.mul(T10, T5)
    T12 = fd.ops.mul(T10, T0)
    T13 = fd.ops.sum(T12, dims=[2], keepdim=False, dtype=DataType.Null)
    S14 = fd.ops.size(T0, dim=0)
    S15 = fd.ops.size(T0, dim=1)
    V16 = fd.define_vector([S14, S15, 1], dtype=DataType.Int)
    T17 = fd.ops.broadcast_in_dim(T13, shape=V16, broadcast_dims=[0, 1])
    S18 = fd.define_scalar(3.00000, dtype=DataType.Double)
    T19 = fd.ops.pow(T1, S18)
    T20 = fd.ops.mul(T17, T19)
    S21 = fd.ops.size(T0, dim=2)
    T22 = fd.ops.div(T20, S21)
    T23 = fd.ops.broadcast_in_dim(T22, shape=V4, broadcast_dims=[0, 1, 2])
    T24 = fd.ops.mul(T23, T0)
    T25 = fd.ops.sub(T11, T24)
    fd.add_output(T25)
    fd.add_output(T8)


with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.randn((2, 12, 70), dtype=torch.float32, device='cuda:0'),
    torch.testing.make_tensor((2, 12, 1), dtype=torch.float32, device='cuda:0', low=0.5, high=2.0),
    torch.randn((2, 12, 70), dtype=torch.float32, device='cuda:0'),
    torch.randn((70,), dtype=torch.float32, device='cuda:0'),
]
fd.execute(inputs)
