# Found by tests/fuzz (fusion-42-452): full-range slices of broadcast axes beside a real slice.
# The resize scheduler accepted the segment, but its input cache, shared by three broadcasts,
# conflicted after caching (its checks do not replay the caches and output forks): the compile
# crashed. A scheduler that fails on a segment it accepted now has the segment's ops segmented
# again, apart, as a kernel that fails to lower does.
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, 31], contiguity=[True, True], dtype=DataType.Bool, stride_order=None)
    T1 = fd.define_tensor(shape=[1, 1], contiguity=[None, None], dtype=DataType.Int, stride_order=[1, 0])
    T2 = fd.define_tensor(shape=[64, -1], contiguity=[True, False], dtype=DataType.BFloat16, stride_order=None)
    T3 = fd.ops.broadcast_in_dim(T1, shape=[2, 1, 1, 1], broadcast_dims=[0, 1])
    T4 = fd.ops.slice(T2, start_indices=[0, 0], end_indices=[64, 1])
    T5 = fd.ops.slice(T3, start_indices=[0, 0, 0, 0], end_indices=[2, 1, 1, 1])
    T6 = fd.ops.neg(T5)
    T7 = fd.ops.neg(T5)
    T8 = fd.ops.neg(T7)
    T9 = fd.ops.gt(T8, 2)
    T10 = fd.ops.where(T9, T8, T1)
    T11 = fd.ops.add(T7, T1)
    fd.add_output(T11)
    fd.add_output(T3)
    fd.add_output(T4)
    fd.add_output(T5)
    fd.add_output(T6)
    fd.add_output(T7)
    fd.add_output(T8)
    fd.add_output(T10)


with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((64, 31), dtype=torch.bool, device='cuda:0'),
    torch.testing.make_tensor((1, 1), dtype=torch.int64, device='cuda:0'),
    torch.randn(3967, dtype=torch.bfloat16, device='cuda:0').as_strided((64, 31), (62, 2)),
]
fd.execute(inputs)
