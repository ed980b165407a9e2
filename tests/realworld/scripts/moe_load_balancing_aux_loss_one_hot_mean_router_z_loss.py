# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on HF's load_balancing_loss_func (Mixtral / Qwen-MoE / Switch auxiliary loss) and
# the router z-loss (ST-MoE), as a Thunder trace of the training loss hands them to nvFuser:
# softmax of the float router logits [T, E], topk(2) expert ids turned into a one-hot
# [T, k, E] (eq with an iota, int64 then float), tokens_per_expert = mean over tokens,
# router_prob_per_expert = mean of the probabilities, their product summed to a 0-dim loss
# times the expert count; the z-loss as mean(logsumexp(logits)^2) with the max trick; both
# 0-dim float outputs.
# real-sizes: 26=8192
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[26, 8], contiguity=[True, True], dtype=DataType.Float, is_cpu=False, stride_order=[1, 0])
    T1 = fd.ops.max(T0, dims=[1], keepdim=False, dtype=DataType.Null)
    T5 = fd.ops.broadcast_in_dim(T1, shape=[26, 1], broadcast_dims=[0])
    T9 = fd.ops.broadcast_in_dim(T5, shape=[26, 8], broadcast_dims=[0, 1])
    T10 = fd.ops.sub(T0, T9)
    T11 = fd.ops.exp(T10)
    T12 = fd.ops.sum(T11, dims=[1], keepdim=False, dtype=DataType.Null)
    T16 = fd.ops.broadcast_in_dim(T12, shape=[26, 1], broadcast_dims=[0])
    T20 = fd.ops.broadcast_in_dim(T16, shape=[26, 8], broadcast_dims=[0, 1])
    T21 = fd.ops.div(T11, T20)
    S22 = fd.define_scalar(2, dtype=DataType.Int)
    T23, T24 = fd.ops.topk(T21, S22, dim=-1, largest=True, sorted=True)
    S25 = fd.define_scalar(8, dtype=DataType.Int)
    S26 = fd.define_scalar(0, dtype=DataType.Int)
    S27 = fd.define_scalar(1, dtype=DataType.Int)
    T28 = fd.ops.iota(S25, S26, S27, dtype=DataType.Int)
    T33 = fd.ops.broadcast_in_dim(T24, shape=[26, 2, 8], broadcast_dims=[0, 1])
    T38 = fd.ops.broadcast_in_dim(T28, shape=[26, 2, 8], broadcast_dims=[2])
    T39 = fd.ops.eq(T33, T38)
    T40 = fd.ops.cast(T39, dtype=DataType.Int)
    T41 = fd.ops.cast(T40, dtype=DataType.Float)
    T42 = fd.ops.sum(T41, dims=[0], keepdim=False, dtype=DataType.Null)
    S43 = fd.define_scalar(26, dtype=DataType.Int)
    T44 = fd.ops.div(T42, S43)
    T45 = fd.ops.sum(T21, dims=[0], keepdim=False, dtype=DataType.Null)
    T46 = fd.ops.div(T45, S43)
    T50 = fd.ops.broadcast_in_dim(T46, shape=[1, 8], broadcast_dims=[1])
    T54 = fd.ops.broadcast_in_dim(T50, shape=[2, 8], broadcast_dims=[0, 1])
    T55 = fd.ops.mul(T44, T54)
    T56 = fd.ops.sum(T55, dims=[0, 1], keepdim=False, dtype=DataType.Null)
    S57 = fd.define_scalar(8, dtype=DataType.Int)
    T58 = fd.ops.mul(T56, S57)
    T59 = fd.ops.max(T0, dims=[1], keepdim=False, dtype=DataType.Null)
    T63 = fd.ops.broadcast_in_dim(T59, shape=[26, 1], broadcast_dims=[0])
    T67 = fd.ops.broadcast_in_dim(T63, shape=[26, 8], broadcast_dims=[0, 1])
    T68 = fd.ops.sub(T0, T67)
    T69 = fd.ops.exp(T68)
    T70 = fd.ops.sum(T69, dims=[1], keepdim=False, dtype=DataType.Null)
    T71 = fd.ops.log(T70)
    T72 = fd.ops.add(T71, T59)
    T73 = fd.ops.mul(T72, T72)
    T74 = fd.ops.sum(T73, dims=[0], keepdim=False, dtype=DataType.Null)
    T75 = fd.ops.div(T74, S43)
    fd.add_output(T58)
    fd.add_output(T75)


with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((26, 8), dtype=torch.float32, device='cuda:0'),
]
fd.execute(inputs)
