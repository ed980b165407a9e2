# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on Lightning-AI/lightning-thunder PR #951 (SDPA integration for nvFuser, 2024)
# and the backward fusions it printed: sdpfa_bwd fed the saved output, the float
# log-sum-exp and the philox seed/offset as 0-dim CPU int64 tensors (is_cpu=True),
# dropout 0 and is_causal as scalars, the scale a runtime Double; the q/k/v gradients
# permuted back to [B, T, H, D], reshaped to [B, T, C] and cat into the fused qkv
# projection's gradient, plus its bias gradient summed over batch and time in float.
import torch
from nvfuser import FusionDefinition, DataType

def nvfuser_fusion_id2(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[2, 2, 8, 16], contiguity=[True, True, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[3, 2, 1, 0])
    T1 = fd.define_tensor(shape=[2, 2, 8, 16], contiguity=[True, True, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[3, 1, 2, 0])
    T2 = fd.define_tensor(shape=[2, 2, 8, 16], contiguity=[True, True, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[3, 1, 2, 0])
    T3 = fd.define_tensor(shape=[2, 2, 8, 16], contiguity=[True, True, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[3, 1, 2, 0])
    T4 = fd.define_tensor(shape=[2, 2, 8, 16], contiguity=[True, True, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[3, 1, 2, 0])
    T5 = fd.define_tensor(shape=[2, 2, 8], contiguity=[True, True, True], dtype=DataType.Float, is_cpu=False, stride_order=[2, 1, 0])
    T6 = fd.define_tensor(shape=[], contiguity=[], dtype=DataType.Int, is_cpu=True)
    T7 = fd.define_tensor(shape=[], contiguity=[], dtype=DataType.Int, is_cpu=True)
    S8 = fd.define_scalar(None, dtype=DataType.Double)
    S9 = fd.define_scalar(0.00000, dtype=DataType.Double)
    S10 = fd.define_scalar(True, dtype=DataType.Bool)
    T11, T12, T13 = fd.ops.sdpfa_bwd(T0, T1, T2, T3, T4, T5, S9, S10, T6, T7, S8)
    T14 = fd.ops.permute(T11, dims=[0, 2, 1, 3])
    T15 = fd.ops.permute(T12, dims=[0, 2, 1, 3])
    T16 = fd.ops.permute(T13, dims=[0, 2, 1, 3])
    T17 = fd.ops.reshape(T14, new_shape=[2, 8, 32])
    T18 = fd.ops.reshape(T15, new_shape=[2, 8, 32])
    T19 = fd.ops.reshape(T16, new_shape=[2, 8, 32])
    T20 = fd.ops.cat([T17, T18, T19], dim=2, manual_padding=0)
    T21 = fd.ops.cast(T20, dtype=DataType.Float)
    T22 = fd.ops.sum(T21, dims=[0, 1], keepdim=False, dtype=DataType.Null)
    T23 = fd.ops.cast(T22, dtype=DataType.BFloat16)
    T24 = fd.ops.reshape(T20, new_shape=[16, 96])
    fd.add_output(T23)
    fd.add_output(T24)

with FusionDefinition() as fd:
    nvfuser_fusion_id2(fd)

inputs = [
    torch.testing.make_tensor((2, 2, 8, 16), dtype=torch.bfloat16, device='cuda:0'),
    torch.randn((512,), dtype=torch.bfloat16, device='cuda:0').as_strided((2, 2, 8, 16), (256, 16, 32, 1)),
    torch.randn((512,), dtype=torch.bfloat16, device='cuda:0').as_strided((2, 2, 8, 16), (256, 16, 32, 1)),
    torch.randn((512,), dtype=torch.bfloat16, device='cuda:0').as_strided((2, 2, 8, 16), (256, 16, 32, 1)),
    torch.randn((512,), dtype=torch.bfloat16, device='cuda:0').as_strided((2, 2, 8, 16), (256, 16, 32, 1)),
    torch.testing.make_tensor((2, 2, 8), dtype=torch.float32, device='cuda:0'),
    torch.tensor(8051),
    torch.tensor(0),
    0.25,
]
fd.execute(inputs)
