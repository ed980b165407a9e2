# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on the per-token log-probabilities of RLHF trainers (TRL's selective_log_softmax:
# log_softmax over the vocabulary, then the chosen token's entry by gather), written in the
# nvfuser_direct spelling for Qwen2's padded 152064-entry vocabulary: bf16 logits
# [B, S, V] upcast, max and sum with keepdim=True, log, the token ids unsqueezed with
# fd.ops.broadcast and picked with take_along_axis, squeezed to float [B, S].
# real-sizes: 10=2048 96=152064
import torch
from nvfuser_direct import FusionDefinition, DataType


def nvfuser_fusion(fd : FusionDefinition) -> None :
    tv0 = fd.define_tensor(shape=[-1, -1, -1], contiguity=[True, True, True], dtype=DataType.BFloat16, is_cpu=False)
    tv1 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Int, is_cpu=False)
    tv2 = fd.ops.cast(tv0, DataType.Float)
    tv3 = fd.ops.max(tv2, [2], True)
    tv4 = fd.ops.sub(tv2, tv3)
    tv5 = fd.ops.exp(tv4)
    tv6 = fd.ops.sum(tv5, [2], True)
    tv7 = fd.ops.log(tv6)
    tv8 = fd.ops.sub(tv4, tv7)
    tv9 = fd.ops.broadcast(tv1, [False, False, True])
    tv10 = fd.ops.take_along_axis(tv8, tv9, 2)
    tv11 = fd.ops.squeeze(tv10, [2])
    fd.add_output(tv11)


with FusionDefinition() as fd:
    nvfuser_fusion(fd)

inputs = [
    torch.randn((2, 10, 96), dtype=torch.bfloat16, device='cuda:0'),
    torch.randint(0, 96, (2, 10), dtype=torch.int64, device='cuda:0'),
]
fd.execute(inputs)
