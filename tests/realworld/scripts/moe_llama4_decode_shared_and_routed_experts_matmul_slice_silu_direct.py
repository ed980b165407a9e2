# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on NVIDIA/Fuser issue #5377 (tests/python/direct/test_repro.py test_issue5377, a
# Llama-4 MoE decode step from thunderfx, nvfuser_direct spelling) and Llama4MoE in
# tests/python/test_moe.py: one token [1, H]; the shared SwiGLU expert as three
# fd.ops.linear calls with silu written as x * reciprocal(1 + exp(-x)); every routed expert
# fed the token (broadcast, expand to [E, 1, 1, H], squeeze) scaled by its sigmoid router
# score, a batched matmul with the fused [E, H, 2I] gate/up weights, the result sliced in
# halves (manual_normalization=True), silu(gate) * up, a matmul with [E, I, H] and a float
# sum over the experts (broadcast to [1, H]) added to the shared output; the bf16 router
# logits written back into an input with fd.add_output(tv, alias).
# real-sizes: 24=5120 20=8192 4=16
import torch
from nvfuser_direct import FusionDefinition, DataType


def nvfuser_fusion(fd : FusionDefinition) -> None :
    tv0 = fd.define_tensor(shape=[1, 4], contiguity=[None, True], dtype=DataType.BFloat16, is_cpu=False)
    tv1 = fd.define_tensor(shape=[1, 4], contiguity=[None, True], dtype=DataType.BFloat16, is_cpu=False)
    tv2 = fd.define_tensor(shape=[1, 24], contiguity=[None, True], dtype=DataType.BFloat16, is_cpu=False)
    tv3 = fd.define_tensor(shape=[4, 24, 40], contiguity=[True, True, True], dtype=DataType.BFloat16, is_cpu=False)
    tv4 = fd.define_tensor(shape=[4, 20, 24], contiguity=[True, True, True], dtype=DataType.BFloat16, is_cpu=False)
    tv5 = fd.define_tensor(shape=[20, 24], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False)
    tv6 = fd.define_tensor(shape=[20, 24], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False)
    tv7 = fd.define_tensor(shape=[24, 20], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False)
    tv8 = fd.ops.linear(tv2, tv5)
    tv9 = fd.ops.cast(tv8, dtype=DataType.Float)
    tv10 = fd.ops.neg(tv9)
    tv11 = fd.ops.exp(tv10)
    tv12 = fd.ops.add(1.00000, tv11)
    tv13 = fd.ops.reciprocal(tv12)
    tv14 = fd.ops.mul(tv9, tv13)
    tv15 = fd.ops.linear(tv2, tv6)
    tv16 = fd.ops.cast(tv15, dtype=DataType.Float)
    tv17 = fd.ops.mul(tv14, tv16)
    tv18 = fd.ops.cast(tv17, dtype=DataType.BFloat16)
    tv19 = fd.ops.linear(tv18, tv7)
    tv20 = fd.ops.broadcast(tv2, is_broadcast_dim=[True, False, True, False])
    tv21 = fd.ops.expand(tv20, shape=[4, 1, 1, 24])
    tv22 = fd.ops.squeeze(tv21, dims=[1, 2])
    tv23 = fd.ops.cast(tv22, dtype=DataType.Float)
    tv24 = fd.ops.cast(tv0, dtype=DataType.BFloat16)
    tv25 = fd.ops.cast(tv24, dtype=DataType.Float)
    tv26 = fd.ops.neg(tv25)
    tv27 = fd.ops.exp(tv26)
    tv28 = fd.ops.add(1.00000, tv27)
    tv29 = fd.ops.reciprocal(tv28)
    tv30 = fd.ops.cast(tv29, dtype=DataType.BFloat16)
    tv31 = fd.ops.squeeze(tv30, dims=[0])
    tv32 = fd.ops.broadcast(tv31, is_broadcast_dim=[False, True])
    tv33 = fd.ops.expand(tv32, shape=[4, 24])
    tv34 = fd.ops.cast(tv33, dtype=DataType.Float)
    tv35 = fd.ops.mul(tv23, tv34)
    tv36 = fd.ops.cast(tv35, dtype=DataType.BFloat16)
    tv37 = fd.ops.broadcast(tv36, is_broadcast_dim=[False, True, False])
    tv38 = fd.ops.matmul(tv37, tv3)
    tv39 = fd.ops.slice(tv38, start_indices=[0, 0, 0], end_indices=[4, 1, 20], strides=[1, 1, 1], manual_normalization=True)
    tv40 = fd.ops.slice(tv38, start_indices=[0, 0, 20], end_indices=[4, 1, 40], strides=[1, 1, 1], manual_normalization=True)
    tv41 = fd.ops.cast(tv39, dtype=DataType.Float)
    tv42 = fd.ops.neg(tv41)
    tv43 = fd.ops.exp(tv42)
    tv44 = fd.ops.add(1.00000, tv43)
    tv45 = fd.ops.reciprocal(tv44)
    tv46 = fd.ops.mul(tv41, tv45)
    tv47 = fd.ops.cast(tv40, dtype=DataType.Float)
    tv48 = fd.ops.mul(tv47, tv46)
    tv49 = fd.ops.cast(tv48, dtype=DataType.BFloat16)
    tv50 = fd.ops.matmul(tv49, tv4)
    tv51 = fd.ops.squeeze(tv50, dims=[1])
    tv52 = fd.ops.cast(tv51, dtype=DataType.Float)
    tv53 = fd.ops.sum(tv52, dims=[0], dtype=DataType.Float)
    tv54 = fd.ops.broadcast(tv53, is_broadcast_dim=[True, False])
    tv55 = fd.ops.cast(tv19, dtype=DataType.Float)
    tv56 = fd.ops.add(tv55, tv54)
    fd.add_output(tv24, tv1)
    tv57 = fd.ops.cast(tv56, dtype=DataType.BFloat16)
    fd.add_output(tv57)


with FusionDefinition() as fd:
    nvfuser_fusion(fd)

inputs = [
    torch.testing.make_tensor((1, 4), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((1, 4), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((1, 24), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((4, 24, 40), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((4, 20, 24), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((20, 24), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((20, 24), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((24, 20), dtype=torch.bfloat16, device='cuda:0'),
]
fd.execute(inputs)
