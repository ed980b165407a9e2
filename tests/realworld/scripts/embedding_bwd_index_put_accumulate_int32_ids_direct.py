# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on the embedding weight gradient of NVIDIA/Fuser benchmarks/python/test_embedding.py
# (HF Mistral-Nemo embed_tokens: vocab 131072, hidden 5120) in the nvfuser_direct spelling,
# with Int32 token ids (as tokenizers hand them over): the flat ids, the float output
# gradient [N, H], a zero [V, H] accumulator from fd.ops.full with positional arguments,
# index_put_accumulate, and the fp32 weight gradient returned.
# real-sizes: 128=131072 40=5120 24=8192
import torch
from nvfuser_direct import FusionDefinition, DataType


def nvfuser_fusion(fd : FusionDefinition) -> None :
    tv0 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Int32, is_cpu=False)
    tv1 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float, is_cpu=False)
    tv2 = fd.ops.full([128, 40], 0.0, DataType.Float)
    tv3 = fd.ops.index_put_accumulate(tv2, tv0, tv1)
    fd.add_output(tv3)


with FusionDefinition() as fd:
    nvfuser_fusion(fd)

inputs = [
    torch.randint(0, 128, (24,), dtype=torch.int32, device='cuda:0'),
    torch.randn((24, 40), dtype=torch.float32, device='cuda:0'),
]
fd.execute(inputs)
