# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on the Thunder nvFuser executor's embedding path (fd.ops.embedding_fwd, NVIDIA/Fuser
# PR #3649 / Lightning-AI/lightning-thunder PR #1674, used when padding_idx is given) for
# HF Gemma's input embeddings: embedding_fwd(ids, weight, padding_idx=0, None, None, None,
# None) with Gemma's pad id, then the scaling by normalizer = sqrt(hidden) as a bf16 value
# (HF casts the normalizer to the hidden dtype before the multiply). Gemma-7B sizes (hidden
# 3072, vocab 256000).
# real-sizes: 250=256000 48=3072 10=4096
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id3(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Int, is_cpu=False, stride_order=[1, 0])
    T1 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[1, 0])
    S2 = fd.define_scalar(0, dtype=DataType.Int)
    T3 = fd.ops.embedding_fwd(T0, T1, S2, None, None, None, None)
    S4 = fd.define_scalar(55.5000, dtype=DataType.Double)
    T5 = fd.ops.cast(T3, dtype=DataType.Float)
    T6 = fd.ops.mul(T5, S4)
    T7 = fd.ops.cast(T6, dtype=DataType.BFloat16)
    fd.add_output(T7)


with FusionDefinition() as fd:
    nvfuser_fusion_id3(fd)

inputs = [
    torch.randint(0, 250, (2, 10), dtype=torch.int64, device='cuda:0'),
    torch.testing.make_tensor((250, 48), dtype=torch.bfloat16, device='cuda:0'),
]
fd.execute(inputs)
