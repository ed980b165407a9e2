# Found by tests/fuzz (fusion-3-72, seed 3): the pointwise scheduler accepts the three ops (T3 = T0 - T1
# with T1's expanded axis 0, relu and eq of T0), but the kernel cannot index T1's cache (T0's cache is
# inlined into loops of 3*i3 and 192*i3). The segment failed to compile; compile_fusion now segments the
# ops of a segment that fails to lower again, each apart (three kernels), and says so in the trace.
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[3, 1, -1], contiguity=[True, None, True], dtype=DataType.Float, stride_order=None)
    T1 = fd.define_tensor(shape=[-1, 64, -1], contiguity=[None, True, True], dtype=DataType.Float, stride_order=None)
    T2 = fd.ops.reshape(T1, [192, 5])
    T3 = fd.ops.sub(T0, T1)
    T4 = fd.ops.relu(T0)
    S5 = fd.define_scalar(dtype=DataType.Double)
    T6 = fd.ops.eq(T0, S5)
    fd.add_output(T6)
    fd.add_output(T3)
    fd.add_output(T4)


with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((3, 1, 5), dtype=torch.float32, device='cuda:0'),
    torch.randn(320, dtype=torch.float32, device='cuda:0').as_strided((3, 64, 5), (0, 5, 1)),
    -2.0,
]
fd.execute(inputs)
