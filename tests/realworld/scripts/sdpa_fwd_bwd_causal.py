# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on NVIDIA/Fuser tests/python/test_sdpa.py (test_sdpa_fwd_bwd) and Thunder's
# sdpa backward traces: sdpfa_fwd with is_causal and a scale, its outputs (output,
# log_sumexp, philox seed and offset) fed to sdpfa_bwd with a grad_output input.
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id40(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, -1, -1, -1], contiguity=[True, True, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[3, 2, 1, 0])
    T1 = fd.define_tensor(shape=[-1, -1, -1, -1], contiguity=[True, True, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[3, 2, 1, 0])
    T2 = fd.define_tensor(shape=[-1, -1, -1, -1], contiguity=[True, True, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[3, 2, 1, 0])
    T3 = fd.define_tensor(shape=[-1, -1, -1, -1], contiguity=[True, True, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[3, 2, 1, 0])
    S4 = fd.define_scalar(0.0, dtype=DataType.Double)
    S5 = fd.define_scalar(True, dtype=DataType.Bool)
    S6 = fd.define_scalar(0.125, dtype=DataType.Double)
    T7, T8, T9, T10 = fd.ops.sdpfa_fwd(T0, T1, T2, dropout_p=S4, is_causal=S5, scale=S6)
    T11, T12, T13 = fd.ops.sdpfa_bwd(T3, T0, T1, T2, T7, T8, S4, S5, T9, T10, S6)
    fd.add_output(T7)
    fd.add_output(T11)
    fd.add_output(T12)
    fd.add_output(T13)


with FusionDefinition() as fd:
    nvfuser_fusion_id40(fd)

inputs = [
    torch.randn((1, 2, 16, 64), dtype=torch.bfloat16, device='cuda:0'),
    torch.randn((1, 2, 16, 64), dtype=torch.bfloat16, device='cuda:0'),
    torch.randn((1, 2, 16, 64), dtype=torch.bfloat16, device='cuda:0'),
    torch.randn((1, 2, 16, 64), dtype=torch.bfloat16, device='cuda:0'),
]
fd.execute(inputs)
