# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on HF DeepseekV3TopkRouter / MoEGate (noaux_tc routing: 256 experts in 8 groups,
# 4 groups kept, top-8, routed_scaling_factor 2.5) as a Thunder trace hands it to nvFuser
# (cf. NVIDIA/Fuser tests/python/multidevice/test_deepseek_v3.py): float router logits
# [T, E], sigmoid scores plus the e_score_correction_bias; group scores as the sum of the
# top-2 per group of a [T, G, E/G] view; topk of the groups, a group mask made by scatter of
# ones into zeros [T, G], unsqueezed, expanded and reshaped to [T, E]; the scores outside
# the kept groups set to 0 by where(logical_not(mask)); topk(8, sorted=False) indices, the
# unbiased scores gathered with take_along_axis, normalised (+1e-20) and scaled.
# real-sizes: 24=256 13=4096 3=32
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[13, 24], contiguity=[True, True], dtype=DataType.Float, is_cpu=False, stride_order=[1, 0])
    T1 = fd.define_tensor(shape=[24], contiguity=[True], dtype=DataType.Float, is_cpu=False, stride_order=[0])
    T2 = fd.ops.sigmoid(T0)
    T6 = fd.ops.broadcast_in_dim(T1, shape=[13, 24], broadcast_dims=[1])
    T7 = fd.ops.add(T2, T6)
    T12 = fd.ops.reshape(T7, new_shape=[13, 8, 3])
    S13 = fd.define_scalar(2, dtype=DataType.Int)
    T14, T15 = fd.ops.topk(T12, S13, dim=-1, largest=True, sorted=True)
    T16 = fd.ops.sum(T14, dims=[2], keepdim=False, dtype=DataType.Null)
    S17 = fd.define_scalar(4, dtype=DataType.Int)
    T18, T19 = fd.ops.topk(T16, S17, dim=-1, largest=True, sorted=False)
    S20 = fd.define_scalar(0.00000, dtype=DataType.Double)
    T24 = fd.ops.full(shape=[13, 8], fill_value=S20, dtype=DataType.Float)
    S25 = fd.define_scalar(1.00000, dtype=DataType.Double)
    T29 = fd.ops.full(shape=[13, 4], fill_value=S25, dtype=DataType.Float)
    T30 = fd.ops.scatter(T24, T19, T29, 1)
    T35 = fd.ops.broadcast_in_dim(T30, shape=[13, 8, 1], broadcast_dims=[0, 1])
    T40 = fd.ops.expand(T35, shape=[13, 8, 3])
    T44 = fd.ops.reshape(T40, new_shape=[13, 24])
    T45 = fd.ops.cast(T44, dtype=DataType.Bool)
    T46 = fd.ops.logical_not(T45)
    T47 = fd.ops.where(T46, S20, T7)
    S48 = fd.define_scalar(8, dtype=DataType.Int)
    T49, T50 = fd.ops.topk(T47, S48, dim=-1, largest=True, sorted=False)
    T51 = fd.ops.take_along_axis(T2, T50, 1)
    T52 = fd.ops.sum(T51, dims=[-1], keepdim=True, dtype=DataType.Null)
    S53 = fd.define_scalar(1.00000e-20, dtype=DataType.Double)
    T54 = fd.ops.add(T52, S53)
    T58 = fd.ops.broadcast_in_dim(T54, shape=[13, 8], broadcast_dims=[0, 1])
    T59 = fd.ops.div(T51, T58)
    S60 = fd.define_scalar(2.50000, dtype=DataType.Double)
    T61 = fd.ops.mul(T59, S60)
    fd.add_output(T50)
    fd.add_output(T61)


with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((13, 24), dtype=torch.float32, device='cuda:0'),
    torch.testing.make_tensor((24,), dtype=torch.float32, device='cuda:0', low=-0.1, high=0.1),
]
fd.execute(inputs)
