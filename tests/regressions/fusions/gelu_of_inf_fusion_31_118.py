# Found by tests/fuzz (fusion-31-118, seed 31): gelu of pow(0, negative) = gelu(inf). The kernel computes
# nvFuser's x * 0.5 * (1 + erf(x / sqrt 2)) = inf; the reference evaluator used torch's gelu, which gives
# NaN there. The reference now uses nvFuser's formula.
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[1, -1, 1], contiguity=[None, True, None], dtype=DataType.Float, stride_order=None)
    T1 = fd.define_tensor(shape=[-1, 64, 1], contiguity=[True, True, None], dtype=DataType.Int32, stride_order=None)
    T2 = fd.define_tensor(shape=[1], contiguity=[None], dtype=DataType.Float, stride_order=None)
    T3 = fd.ops.pow(T1, T2)
    S4 = fd.define_scalar(dtype=DataType.Double)
    T5 = fd.ops.add(T2, S4)
    T6 = fd.ops.neg(T3)
    T7 = fd.ops.cat([T3, T6], dim=0)
    T8, T9 = fd.ops.topk(T7, 1, dim=0, largest=True)
    T10 = fd.ops.permute(T8, dims=[0, 1, 2])
    T11 = fd.ops.add(T10, T9)
    T12 = fd.ops.neg(T11)
    T13 = fd.ops.gelu(T3)
    fd.add_output(T13)
    fd.add_output(T3)
    fd.add_output(T5)
    fd.add_output(T7)
    fd.add_output(T9)
    fd.add_output(T8)
    fd.add_output(T10)
    fd.add_output(T11)
    fd.add_output(T12)


with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((1, 64, 1), dtype=torch.float32, device='cuda:0'),
    torch.testing.make_tensor((1, 64, 1), dtype=torch.int32, device='cuda:0'),
    torch.testing.make_tensor((1,), dtype=torch.float32, device='cuda:0'),
    0.75,
]
fd.execute(inputs)
