# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on how NVIDIA/Fuser tests/python/test_python_frontend.py and issue repros end:
# fd.execute with _enable_options/_disable_options and profile=, the outputs indexed and
# unpacked, printed with fd.last_cuda_code()/fd.fusion_ir(), two runs compared with
# torch.testing.assert_close, and fd.validate.
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id50(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False)
    T1 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.BFloat16, is_cpu=False)
    T2 = fd.ops.cast(T0, dtype=DataType.Float)
    T3 = fd.ops.cast(T1, dtype=DataType.Float)
    T4 = fd.ops.mul(T2, T2)
    T5 = fd.ops.mean(T4, dims=[1], keepdim=True)
    S6 = fd.define_scalar(1e-06, dtype=DataType.Double)
    T7 = fd.ops.add(T5, S6)
    T8 = fd.ops.rsqrt(T7)
    T9 = fd.ops.mul(T2, T8)
    T10 = fd.ops.broadcast_in_dim(T3, shape=[32, 64], broadcast_dims=[1])
    T11 = fd.ops.mul(T9, T10)
    T12 = fd.ops.cast(T11, dtype=DataType.BFloat16)
    fd.add_output(T12)


with FusionDefinition() as fd:
    nvfuser_fusion_id50(fd)

inputs = [
    torch.randn((32, 64), dtype=torch.bfloat16, device='cuda:0'),
    torch.randn((64,), dtype=torch.bfloat16, device='cuda:0'),
]
outputs = fd.execute(inputs, _enable_options=["kernel_profile"], _disable_options=["kernel_reuse"], profile=False)
out = outputs[0]
print(out.shape, out.dtype)
print(fd.last_cuda_code())
print(fd.fusion_ir())
out2, = fd.execute(inputs)
torch.testing.assert_close(out, out2, rtol=0, atol=0)
fd.validate(inputs, [out2])
