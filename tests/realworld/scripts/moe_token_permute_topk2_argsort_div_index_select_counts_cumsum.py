# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on the dispatch step of a dropless top-2 MoE layer (Megatron's permute /
# Llama4MoE.run_routed_experts in NVIDIA/Fuser tests/python/test_moe.py, generalised to k=2)
# as Thunder hands it to nvFuser: the int64 expert ids [T, 2] flattened, a stable argsort
# giving the slot order, the source token of every slot as order // k (integer div by an
# Int scalar), the tokens gathered with index_select into [T*k, H]; tokens_per_expert as a
# column sum of eq(ids, iota(E)) and the grouped-GEMM offsets as its cumsum cast to int32.
# real-sizes: 24=4096 13=4096
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[13, 24], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[1, 0])
    T1 = fd.define_tensor(shape=[13, 2], contiguity=[True, True], dtype=DataType.Int, is_cpu=False, stride_order=[1, 0])
    T4 = fd.ops.reshape(T1, new_shape=[26])
    T5 = fd.ops.argsort(T4, dim=0, descending=False, stable=True)
    S6 = fd.define_scalar(2, dtype=DataType.Int)
    T7 = fd.ops.div(T5, S6)
    T8 = fd.ops.index_select(T0, T7, dim=0)
    S9 = fd.define_scalar(8, dtype=DataType.Int)
    S10 = fd.define_scalar(0, dtype=DataType.Int)
    S11 = fd.define_scalar(1, dtype=DataType.Int)
    T12 = fd.ops.iota(S9, S10, S11, dtype=DataType.Int)
    T16 = fd.ops.broadcast_in_dim(T4, shape=[26, 8], broadcast_dims=[0])
    T20 = fd.ops.broadcast_in_dim(T12, shape=[26, 8], broadcast_dims=[1])
    T21 = fd.ops.eq(T16, T20)
    T22 = fd.ops.cast(T21, dtype=DataType.Int)
    T23 = fd.ops.sum(T22, dims=[0], keepdim=False, dtype=DataType.Null)
    T24 = fd.ops.cumsum(T23, dim=0)
    T25 = fd.ops.cast(T24, dtype=DataType.Int32)
    fd.add_output(T8)
    fd.add_output(T5)
    fd.add_output(T23)
    fd.add_output(T25)


with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((13, 24), dtype=torch.bfloat16, device='cuda:0'),
    torch.randint(0, 8, (13, 2), dtype=torch.int64, device='cuda:0'),
]
fd.execute(inputs)
