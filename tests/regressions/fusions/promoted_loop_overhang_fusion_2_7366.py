# Found by tests/fuzz (fusion-2-7366, seed 2): the output T10 = squeeze(T2[1, 7]) runs in the loop of
# T11[8, 7, 2] (112 iterations on 128 threads) and takes its index from T2's inlined cache; that index
# wraps into range for threads 112..127, where the cache (predicated on the promoted loop) was never
# loaded, so they stored unset values over T10 (7 of 7 wrong). A tensor no consumer is inlined into
# is now predicated on the bounds of the promoted loop it runs in.
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1], contiguity=[None], dtype=DataType.Int32, stride_order=None)
    T1 = fd.define_tensor(shape=[8, -1], contiguity=[True, None], dtype=DataType.Float, stride_order=[1, 0])
    T2 = fd.define_tensor(shape=[1, -1], contiguity=[None, True], dtype=DataType.Float, stride_order=None)
    S3 = fd.define_scalar(0.5, dtype=DataType.Double)
    T4 = fd.ops.gt(T2, S3)
    T5 = fd.ops.where(T4, T2, T1)
    T6 = fd.ops.neg(T5)
    T7 = fd.ops.iota(7, 0, 1, DataType.Int)
    T8 = fd.ops.broadcast_in_dim(T7, shape=[8, 7], broadcast_dims=[1])
    T9 = fd.ops.mul(T6, T8)
    T10 = fd.ops.squeeze(T2, [0])
    T11 = fd.ops.broadcast_in_dim(T9, shape=[8, 7, 2], broadcast_dims=[0, 1])
    fd.add_output(T11)
    fd.add_output(T9)
    fd.add_output(T10)


with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((1,), dtype=torch.int32, device='cuda:0').as_strided((7,), (0,)),
    torch.randn(8, dtype=torch.float32, device='cuda:0').as_strided((8, 7), (1, 0)),
    torch.testing.make_tensor((1, 7), dtype=torch.float32, device='cuda:0'),
]
fd.execute(inputs)
