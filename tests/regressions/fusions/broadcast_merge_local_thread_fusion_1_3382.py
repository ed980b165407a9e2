# Found by tests/fuzz (fusion-1-3382), mismatch: output: output 0: 36 of 48 differ beyond rtol=1e-05, e.g. flat 1: -0.0 != -0.5300707817077637
# Its one pointwise segment was refused at lowering (at elements another thread computed); compile_fusion then
# segmented those ops again, each apart. Since inline_most gives the iota a loop-only broadcast where its
# broadcast's loop has one (TensorView.broadcast_loop), it compiles to one kernel; the result must match the reference.
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, -1, -1], contiguity=[None, None, True], dtype=DataType.Float, stride_order=[2, 1, 0])
    S1 = fd.define_scalar(0.5, dtype=DataType.Double)
    T2 = fd.ops.gt(T0, S1)
    S3 = fd.define_scalar(0.5, dtype=DataType.Double)
    T4 = fd.ops.where(T2, T0, S3)
    T5 = fd.ops.sum(T4, dims=[0, 2], keepdim=False)
    T6 = fd.ops.iota(8, 0, 1, DataType.Int)
    T7 = fd.ops.broadcast_in_dim(T6, shape=[2, 3, 8], broadcast_dims=[2])
    T8 = fd.ops.mul(T0, T7)
    T9 = fd.ops.neg(T8)
    fd.add_output(T9)
    fd.add_output(T4)
    fd.add_output(T5)
    fd.add_output(T8)


with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.randn(8, dtype=torch.float32, device='cuda:0').as_strided((2, 3, 8), (0, 0, 1)),
]
fd.execute(inputs)
