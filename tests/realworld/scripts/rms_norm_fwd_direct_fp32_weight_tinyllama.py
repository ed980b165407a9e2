# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on NVIDIA/Fuser benchmarks/python/test_rmsnorm_fwd_weightfp32.py rewritten in the
# nvfuser_direct spelling (python_direct: positional dtype in cast, plain Python floats as
# scalars, fd.ops.sum with a positional dim list) at a TinyLlama-1.1B width (2048): bf16
# activations, an fp32 weight, sum of squares times 1/H, rsqrt, bf16 output and the float
# inverse rms [N, 1].
# real-sizes: 24=16384 32=2048
import torch
from nvfuser_direct import FusionDefinition, DataType


def nvfuser_fusion(fd : FusionDefinition) -> None :
    tv0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False)
    tv1 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float, is_cpu=False)
    tv2 = fd.ops.cast(tv0, DataType.Float)
    tv3 = fd.ops.mul(tv2, tv2)
    tv4 = fd.ops.sum(tv3, [1], True)
    tv5 = fd.ops.mul(tv4, 0.03125)
    tv6 = fd.ops.add(tv5, 1e-05)
    tv7 = fd.ops.rsqrt(tv6)
    tv8 = fd.ops.mul(tv2, tv7)
    tv9 = fd.ops.broadcast(tv1, [True, False])
    tv10 = fd.ops.mul(tv8, tv9)
    tv11 = fd.ops.cast(tv10, DataType.BFloat16)
    fd.add_output(tv11)
    fd.add_output(tv7)


with FusionDefinition() as fd:
    nvfuser_fusion(fd)

inputs = [
    torch.randn((24, 32), dtype=torch.bfloat16, device='cuda:0'),
    torch.randn((32,), dtype=torch.float32, device='cuda:0'),
]
fd.execute(inputs)
