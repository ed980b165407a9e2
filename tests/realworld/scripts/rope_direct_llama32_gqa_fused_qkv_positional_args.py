# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on hand-written nvfuser_direct fusions in NVIDIA/Fuser tests/python/direct
# (test_high_complexity.py test_nanogpt_split_mha_linears: positional slice / reshape /
# permute arguments) applied to a Llama-3.2-1B attention prologue (32 query heads, 8
# key/value heads, head_dim 64): a fused [B, S, (Hq + 2*Hkv)*D] projection sliced into q, k
# and v, reshaped and permuted to heads; rotate-half in float with cos/sin [S, D] cast and
# broadcast per head count; k and v repeated for grouped-query attention with
# fd.ops.broadcast(is_broadcast_dim) + fd.ops.expand and a reshape to [B, Hq, S, D].
# real-sizes: 16=64 13=2048 12=32 8=32 3=8
import torch
from nvfuser_direct import FusionDefinition, DataType


def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    tv0 = fd.define_tensor(shape=[1, 13, 288], contiguity=[None, True, True], dtype=DataType.BFloat16, is_cpu=False)
    tv1 = fd.define_tensor(shape=[13, 16], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False)
    tv2 = fd.define_tensor(shape=[13, 16], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False)
    tv3 = fd.ops.slice(tv0, [0, 0, 0], [1, 13, 192], [1, 1, 1])
    tv4 = fd.ops.slice(tv0, [0, 0, 192], [1, 13, 240], [1, 1, 1])
    tv5 = fd.ops.slice(tv0, [0, 0, 240], [1, 13, 288], [1, 1, 1])
    tv6 = fd.ops.reshape(tv3, [1, 13, 12, 16])
    tv7 = fd.ops.permute(tv6, [0, 2, 1, 3])
    tv8 = fd.ops.reshape(tv4, [1, 13, 3, 16])
    tv9 = fd.ops.permute(tv8, [0, 2, 1, 3])
    tv10 = fd.ops.reshape(tv5, [1, 13, 3, 16])
    tv11 = fd.ops.permute(tv10, [0, 2, 1, 3])
    tv12 = fd.ops.cast(tv1, DataType.Float)
    tv13 = fd.ops.cast(tv2, DataType.Float)
    tv14 = fd.ops.broadcast_in_dim(tv12, [1, 12, 13, 16], [2, 3])
    tv15 = fd.ops.broadcast_in_dim(tv13, [1, 12, 13, 16], [2, 3])
    tv16 = fd.ops.cast(tv7, DataType.Float)
    tv17 = fd.ops.slice(tv16, [0, 0, 0, 0], [1, 12, 13, 8], [1, 1, 1, 1])
    tv18 = fd.ops.slice(tv16, [0, 0, 0, 8], [1, 12, 13, 16], [1, 1, 1, 1])
    tv19 = fd.ops.neg(tv18)
    tv20 = fd.ops.cat([tv19, tv17], -1)
    tv21 = fd.ops.mul(tv16, tv14)
    tv22 = fd.ops.mul(tv20, tv15)
    tv23 = fd.ops.add(tv21, tv22)
    tv24 = fd.ops.cast(tv23, DataType.BFloat16)
    tv25 = fd.ops.broadcast_in_dim(tv12, [1, 3, 13, 16], [2, 3])
    tv26 = fd.ops.broadcast_in_dim(tv13, [1, 3, 13, 16], [2, 3])
    tv27 = fd.ops.cast(tv9, DataType.Float)
    tv28 = fd.ops.slice(tv27, [0, 0, 0, 0], [1, 3, 13, 8], [1, 1, 1, 1])
    tv29 = fd.ops.slice(tv27, [0, 0, 0, 8], [1, 3, 13, 16], [1, 1, 1, 1])
    tv30 = fd.ops.neg(tv29)
    tv31 = fd.ops.cat([tv30, tv28], -1)
    tv32 = fd.ops.mul(tv27, tv25)
    tv33 = fd.ops.mul(tv31, tv26)
    tv34 = fd.ops.add(tv32, tv33)
    tv35 = fd.ops.cast(tv34, DataType.BFloat16)
    tv36 = fd.ops.broadcast(tv35, is_broadcast_dim=[False, False, True, False, False])
    tv37 = fd.ops.expand(tv36, shape=[1, 3, 4, 13, 16])
    tv38 = fd.ops.reshape(tv37, [1, 12, 13, 16])
    tv39 = fd.ops.broadcast(tv11, is_broadcast_dim=[False, False, True, False, False])
    tv40 = fd.ops.expand(tv39, shape=[1, 3, 4, 13, 16])
    tv41 = fd.ops.reshape(tv40, [1, 12, 13, 16])
    fd.add_output(tv24)
    fd.add_output(tv38)
    fd.add_output(tv41)


with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((1, 13, 288), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((13, 16), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((13, 16), dtype=torch.bfloat16, device='cuda:0'),
]
fd.execute(inputs)
