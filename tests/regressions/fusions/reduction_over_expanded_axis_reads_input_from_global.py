# Found by tests/fuzz (fusion-13-1903, on the GPU machine, refused): T1 [1, 17] broadcast to
# [5, 2, 1, 17] and summed over axes 0 (expanded) and 3. The reduction's reference merges the
# expanded axis with the input's, which the input's register cache cannot replay: each thread
# read elements another had loaded, and lowering refused. Inputs upstream of a reduction over
# an expanded axis are now read from global memory where needed.
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float, stride_order=None)
    T1 = fd.define_tensor(shape=[1, -1], contiguity=[None, True], dtype=DataType.Float, stride_order=None)
    T2 = fd.define_tensor(shape=[17, 1], contiguity=[True, None], dtype=DataType.Int32, stride_order=None)
    T3 = fd.ops.set(T2)
    T4 = fd.ops.minimum(T3, T1)
    T5 = fd.ops.permute(T4, dims=[1, 0])
    T6 = fd.ops.segment_set(T1)
    T7 = fd.ops.pad(T0, [1, 2, 1, 3], None)
    T8 = fd.ops.broadcast_in_dim(T1, shape=[5, 2, 1, 17], broadcast_dims=[0, 3])
    T9 = fd.ops.sum(T8, dims=[0, 3], keepdim=True)
    T10 = fd.ops.cat([T2, T3], dim=0)
    fd.add_output(T10)
    fd.add_output(T9)


with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((1, 17), dtype=torch.float32, device='cuda:0'),
    torch.testing.make_tensor((1, 17), dtype=torch.float32, device='cuda:0'),
    torch.testing.make_tensor((17, 1), dtype=torch.int32, device='cuda:0'),
]
fd.execute(inputs)
