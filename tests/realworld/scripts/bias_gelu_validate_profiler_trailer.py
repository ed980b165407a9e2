# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on lightning-thunder issue repros of the nanoGPT MLP's bias + tanh-GELU fusion
# (bf16), as their authors extend nvFuser's printed repro: the eager reference under
# torch.no_grad(), fd.validate against it, a torch.profiler run over a few executions with
# its table printed, and a hand-written mismatch check that raises with the error in an
# f-string. Everything after the first fd.execute is skipped unread by the loader.
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id2(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, -1, -1], contiguity=[True, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[2, 1, 0])
    T1 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[0])
    T2 = fd.ops.cast(T0, dtype=DataType.Float)
    T3 = fd.ops.broadcast_in_dim(T1, shape=[2, 16, 192], broadcast_dims=[2])
    T4 = fd.ops.cast(T3, dtype=DataType.Float)
    T5 = fd.ops.add(T2, T4)
    S6 = fd.define_scalar(0.500000, dtype=DataType.Double)
    T7 = fd.ops.mul(S6, T5)
    T8 = fd.ops.mul(T5, T5)
    T9 = fd.ops.mul(T8, T5)
    S10 = fd.define_scalar(0.0447150, dtype=DataType.Double)
    T11 = fd.ops.mul(S10, T9)
    T12 = fd.ops.add(T5, T11)
    S13 = fd.define_scalar(0.797885, dtype=DataType.Double)
    T14 = fd.ops.mul(S13, T12)
    T15 = fd.ops.tanh(T14)
    S16 = fd.define_scalar(1.00000, dtype=DataType.Double)
    T17 = fd.ops.add(S16, T15)
    T18 = fd.ops.mul(T7, T17)
    T19 = fd.ops.cast(T18, dtype=DataType.BFloat16)
    fd.add_output(T19)


with FusionDefinition() as fd:
    nvfuser_fusion_id2(fd)

inputs = [
    torch.testing.make_tensor((2, 16, 192), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((192,), dtype=torch.bfloat16, device='cuda:0'),
]
nvf_out = fd.execute(inputs)

with torch.no_grad():
    x, bias = inputs
    ref = torch.nn.functional.gelu(x.float() + bias.float(), approximate="tanh").to(torch.bfloat16)
fd.validate(inputs, [ref])

from torch.profiler import profile, ProfilerActivity

with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], record_shapes=True) as prof:
    for _ in range(5):
        fd.execute(inputs)
    torch.cuda.synchronize()
print(prof.key_averages().table(sort_by="cuda_time_total", row_limit=10))

if not torch.allclose(nvf_out[0].float(), ref.float(), atol=1e-2, rtol=1e-2):
    err = (nvf_out[0].float() - ref.float()).abs()
    raise AssertionError(f"mismatch: max {err.max().item():.3e} at {err.argmax().item()}")
