# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on Thunder's lowering of torch.nn.functional.embedding without renorm to nvFuser
# index_select (Lightning-AI/lightning-thunder PR #1796, benchmarked on HF embed_tokens):
# the [B, S] Int ids flattened with fd.ops.reshape, index_select(weight, ids, dim=0) on a
# Llama-2 table (vocab 32000, hidden 4096, bf16), the rows reshaped back to [B, S, H].
# real-sizes: 100=32000 64=4096 12=2048
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[2, 12], contiguity=[True, True], dtype=DataType.Int, is_cpu=False, stride_order=[1, 0])
    T1 = fd.define_tensor(shape=[100, 64], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[1, 0])
    T2 = fd.ops.reshape(T0, new_shape=[24])
    T3 = fd.ops.index_select(T1, T2, dim=0)
    T4 = fd.ops.reshape(T3, new_shape=[2, 12, 64])
    fd.add_output(T4)


with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.randint(0, 100, (2, 12), dtype=torch.int64, device='cuda:0'),
    torch.testing.make_tensor((100, 64), dtype=torch.bfloat16, device='cuda:0'),
]
fd.execute(inputs)
