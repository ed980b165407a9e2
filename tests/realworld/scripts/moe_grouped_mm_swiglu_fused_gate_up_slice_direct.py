# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on GroupedSwiGLU in NVIDIA/Fuser tests/python/test_moe.py and test_grouped_mlp in
# tests/python/multidevice/test_transformer.py (nvfuser_direct spelling): tokens [T, H]
# sorted by expert, fd.ops.grouped_mm with fused per-expert gate/up weights [E, H, 2I] and
# int32 cumulative offsets [E], the [T, 2I] result sliced into gate and up halves,
# fd.ops.silu(gate) * up in float cast to bf16, and the down projection as a second
# grouped_mm with [E, I, H].
# real-sizes: 24=2048 20=1408 13=4096
import torch
from nvfuser_direct import FusionDefinition, DataType


def nvfuser_fusion(fd : FusionDefinition) -> None :
    tv0 = fd.define_tensor(shape=[13, 24], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False)
    tv1 = fd.define_tensor(shape=[8, 24, 40], contiguity=[True, True, True], dtype=DataType.BFloat16, is_cpu=False)
    tv2 = fd.define_tensor(shape=[8, 20, 24], contiguity=[True, True, True], dtype=DataType.BFloat16, is_cpu=False)
    tv3 = fd.define_tensor(shape=[8], contiguity=[True], dtype=DataType.Int32, is_cpu=False)
    tv4 = fd.ops.grouped_mm(tv0, tv1, tv3)
    tv5 = fd.ops.slice(tv4, start_indices=[0, 0], end_indices=[13, 20], strides=[1, 1], manual_normalization=True)
    tv6 = fd.ops.slice(tv4, start_indices=[0, 20], end_indices=[13, 40], strides=[1, 1], manual_normalization=True)
    tv7 = fd.ops.cast(tv5, dtype=DataType.Float)
    tv8 = fd.ops.silu(tv7)
    tv9 = fd.ops.cast(tv6, dtype=DataType.Float)
    tv10 = fd.ops.mul(tv8, tv9)
    tv11 = fd.ops.cast(tv10, dtype=DataType.BFloat16)
    tv12 = fd.ops.grouped_mm(tv11, tv2, tv3)
    fd.add_output(tv12)


with FusionDefinition() as fd:
    nvfuser_fusion(fd)

inputs = [
    torch.testing.make_tensor((13, 24), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((8, 24, 40), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((8, 20, 24), dtype=torch.bfloat16, device='cuda:0'),
    torch.tensor([1, 3, 4, 6, 8, 9, 11, 13], dtype=torch.int32, device='cuda:0'),
]
fd.execute(inputs)
