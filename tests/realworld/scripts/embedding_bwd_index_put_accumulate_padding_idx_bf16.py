# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on NVIDIA/Fuser PRs #4063/#4066 (IndexPutAccumulateOp, added for embedding
# backward) and benchmarks/python/test_embedding.py's HF embed_tokens with a pad token:
# the bf16 output gradient [B, S, H] upcast and flattened to [N, H], rows whose id is the
# padding_idx zeroed with where, accumulated into a float zero [V, H] table (fd.ops.full)
# at the ids, and the weight gradient cast back to bf16. Phi-3 mini sizes (vocab 32064,
# hidden 3072).
# real-sizes: 48=32064 40=3072 10=2048
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id2(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[2, 10], contiguity=[True, True], dtype=DataType.Int, is_cpu=False, stride_order=[1, 0])
    T1 = fd.define_tensor(shape=[2, 10, 40], contiguity=[True, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[2, 1, 0])
    T2 = fd.ops.cast(T1, dtype=DataType.Float)
    T3 = fd.ops.reshape(T0, new_shape=[20])
    T4 = fd.ops.reshape(T2, new_shape=[20, 40])
    S5 = fd.define_scalar(32, dtype=DataType.Int)
    T6 = fd.ops.eq(T3, S5)
    T7 = fd.ops.broadcast_in_dim(T6, shape=[20, 40], broadcast_dims=[0])
    S8 = fd.define_scalar(0.00000, dtype=DataType.Double)
    T9 = fd.ops.where(T7, S8, T4)
    T10 = fd.ops.full(shape=[48, 40], fill_value=S8, dtype=DataType.Float)
    T11 = fd.ops.index_put_accumulate(T10, T3, T9)
    T12 = fd.ops.cast(T11, dtype=DataType.BFloat16)
    fd.add_output(T12)


with FusionDefinition() as fd:
    nvfuser_fusion_id2(fd)

inputs = [
    torch.randint(0, 48, (2, 10), dtype=torch.int64, device='cuda:0'),
    torch.testing.make_tensor((2, 10, 40), dtype=torch.bfloat16, device='cuda:0'),
]
fd.execute(inputs)
