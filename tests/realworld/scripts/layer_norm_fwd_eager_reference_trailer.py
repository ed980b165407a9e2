# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on layer_norm forward repros in NVIDIA/Fuser issues (Thunder's bf16 layer_norm as
# printed by nvFuser's repro dump), as their authors post them: the printed fusion, then
# their own eager check pasted below fd.execute -- torch.nn.functional.layer_norm on the
# float inputs, torch.testing.assert_close with loose bf16 tolerances, the max abs error
# printed, and the generated kernel printed. The loader skips that checking code unread.
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id3(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[1, 0])
    T1 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[0])
    T2 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[0])
    T3 = fd.ops.cast(T0, dtype=DataType.Float)
    T4, T5 = fd.ops.var_mean(T3, dims=[1], correction=0, keepdim=False)
    T6 = fd.ops.broadcast_in_dim(T4, shape=[24, 1], broadcast_dims=[0])
    T7 = fd.ops.broadcast_in_dim(T5, shape=[24, 1], broadcast_dims=[0])
    S8 = fd.define_scalar(1.00000e-05, dtype=DataType.Double)
    T9 = fd.ops.add(T6, S8)
    T10 = fd.ops.rsqrt(T9)
    T11 = fd.ops.broadcast_in_dim(T7, shape=[24, 320], broadcast_dims=[0, 1])
    T12 = fd.ops.sub(T3, T11)
    T13 = fd.ops.broadcast_in_dim(T10, shape=[24, 320], broadcast_dims=[0, 1])
    T14 = fd.ops.mul(T12, T13)
    T15 = fd.ops.broadcast_in_dim(T1, shape=[24, 320], broadcast_dims=[1])
    T16 = fd.ops.cast(T15, dtype=DataType.Float)
    T17 = fd.ops.mul(T14, T16)
    T18 = fd.ops.broadcast_in_dim(T2, shape=[24, 320], broadcast_dims=[1])
    T19 = fd.ops.cast(T18, dtype=DataType.Float)
    T20 = fd.ops.add(T17, T19)
    T21 = fd.ops.cast(T20, dtype=DataType.BFloat16)
    fd.add_output(T21)
    fd.add_output(T5)
    fd.add_output(T10)


with FusionDefinition() as fd:
    nvfuser_fusion_id3(fd)

inputs = [
    torch.randn((24, 320), dtype=torch.bfloat16, device='cuda:0'),
    torch.randn((320,), dtype=torch.bfloat16, device='cuda:0'),
    torch.randn((320,), dtype=torch.bfloat16, device='cuda:0'),
]
out = fd.execute(inputs)

# --- my check against eager ---
x, w, b = inputs
ref = torch.nn.functional.layer_norm(x.float(), (x.shape[-1],), w.float(), b.float(), 1e-5)
var, mean = torch.var_mean(x.float(), dim=-1, correction=0)
torch.testing.assert_close(out[0].float(), ref, atol=1e-2, rtol=1e-2)
torch.testing.assert_close(out[1], mean)
torch.testing.assert_close(out[2], torch.rsqrt(var + 1e-5))
print("max abs err:", (out[0].float() - ref).abs().max().item())
print(fd.last_cuda_code())
