# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on the nvFuser-vs-torch.compile fusion dumper in Lightning-AI/lightning-thunder
# (thunder/dev_utils: arg_like_tensor_integer / arg_like_tensor_proxy_fp), whose inputs are
# written as torch.randint(low=, high=, size=torch.Size([...]), layout=torch.strided, ...),
# torch.tensor(data=..., ...).broadcast_to(torch.Size([...])) for a constant integer tensor
# and torch.randn(size=..., ...).as_strided(size, stride); the fusion is a GPT-style
# embedding lookup plus position ids and a scaled bias.
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id7(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[4, 64], contiguity=[True, True], dtype=DataType.Int, is_cpu=False, stride_order=[1, 0])
    T1 = fd.define_tensor(shape=[4, 64], contiguity=[None, None], dtype=DataType.Int, is_cpu=False, stride_order=[1, 0])
    T2 = fd.define_tensor(shape=[128, 32], contiguity=[True, True], dtype=DataType.Float, is_cpu=False, stride_order=[1, 0])
    T3 = fd.define_tensor(shape=[4, 64, 32], contiguity=[True, True, True], dtype=DataType.Float, is_cpu=False, stride_order=[1, 2, 0])
    T4 = fd.ops.add(T0, T1)
    T5 = fd.ops.reshape(T4, new_shape=[256])
    T6 = fd.ops.index_select(T2, T5, dim=0)
    T7 = fd.ops.reshape(T6, new_shape=[4, 64, 32])
    S8 = fd.define_scalar(0.500000, dtype=DataType.Double)
    T9 = fd.ops.mul(T3, S8)
    T10 = fd.ops.add(T7, T9)
    fd.add_output(T10)


with FusionDefinition() as fd:
    nvfuser_fusion_id7(fd)

inputs = [
  torch.randint(low=0, high=64, size=torch.Size([4, 64]), dtype=torch.int64, layout=torch.strided, device="cuda:0", requires_grad=False),
  torch.tensor(data=3, dtype=torch.int64, device="cuda:0", requires_grad=False).broadcast_to(torch.Size([4, 64])),
  torch.randn(size=torch.Size([128, 32]), dtype=torch.float32, layout=torch.strided, device="cuda:0", requires_grad=False),
  torch.randn(size=(4, 64, 32), dtype=torch.float32, layout=torch.strided, device="cuda", requires_grad=False).as_strided((4, 64, 32), (32, 128, 1)),
]
fd.execute(inputs)

tc = torch.compile(lambda *a: a)
tc(*inputs)
