# Found by tests/fuzz (fusion-1-874, long campaign seed 1): a half input T1[3 (stride 0), 1, 8] is
# lerped and added (T3), and T3 is read by a negation and, last, by a lerp against [3, 64, 8]. The
# lowering promoted broadcast loop ids of each expression's inputs in turn, so T3 (read by the last
# expression) was promoted from the negation before the negation's own ids were: T3's merged
# broadcast kept extent 3 instead of 192, and every producer inlined with it was predicated to the
# first 24 of 1536 iterations (1512 of 1536 wrong). Promotion now visits consumers before producers.
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, -1, -1], contiguity=[True, True, True], dtype=DataType.Float, stride_order=[0, 1, 2])
    T1 = fd.define_tensor(shape=[-1, 1, -1], contiguity=[None, None, True], dtype=DataType.Half, stride_order=[2, 1, 0])
    S2 = fd.define_scalar(0.5, dtype=DataType.Double)
    T3 = fd.ops.lerp(T1, T1, 0.25)
    T4 = fd.ops.add(T3, T1)
    T5 = fd.ops.sum(T4, dims=[1, 2], keepdim=False)
    T6 = fd.ops.neg(T4)
    T7 = fd.ops.add(T0, T6)
    T8 = fd.ops.neg(T7)
    T9 = fd.ops.lerp(T8, T4, 0.25)
    fd.add_output(T9)
    fd.add_output(T3)
    fd.add_output(T6)
    fd.add_output(T7)
    fd.add_output(T8)


with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.randn(1536, dtype=torch.float32, device='cuda:0').as_strided((3, 64, 8), (1, 3, 192)),
    torch.randn(8, dtype=torch.float16, device='cuda:0').as_strided((3, 1, 8), (0, 8, 1)),
]
fd.execute(inputs)
