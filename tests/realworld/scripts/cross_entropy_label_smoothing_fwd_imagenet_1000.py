# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on Thunder's decomposition of F.cross_entropy(logits, target, label_smoothing=0.1)
# (thunder/torch/__init__.py, _cross_entropy_loss_label_smoothing) for an ImageNet
# classifier head (ViT / ResNet training: batch 256, 1000 classes, float32 logits): the
# log_softmax, the target term by take_along_axis, the uniform term as the negated row sum
# of log-probabilities, both masked for ignore_index=-100 and averaged over the kept rows,
# combined as (1 - 0.1) * nll + 0.1 / C * smooth.
# real-sizes: 12=256 50=1000
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id4(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[12, 50], contiguity=[True, True], dtype=DataType.Float, is_cpu=False, stride_order=[1, 0])
    T1 = fd.define_tensor(shape=[12], contiguity=[True], dtype=DataType.Int, is_cpu=False, stride_order=[0])
    T2 = fd.ops.max(T0, dims=[1], keepdim=False, dtype=DataType.Null)
    T3 = fd.ops.broadcast_in_dim(T2, shape=[12, 1], broadcast_dims=[0])
    T4 = fd.ops.broadcast_in_dim(T3, shape=[12, 50], broadcast_dims=[0, 1])
    T5 = fd.ops.sub(T0, T4)
    T6 = fd.ops.exp(T5)
    T7 = fd.ops.sum(T6, dims=[1], keepdim=False, dtype=DataType.Null)
    T8 = fd.ops.broadcast_in_dim(T7, shape=[12, 1], broadcast_dims=[0])
    T9 = fd.ops.log(T8)
    T10 = fd.ops.broadcast_in_dim(T9, shape=[12, 50], broadcast_dims=[0, 1])
    T11 = fd.ops.sub(T5, T10)
    S12 = fd.define_scalar(-100, dtype=DataType.Int)
    T13 = fd.ops.ne(T1, S12)
    S14 = fd.define_scalar(0, dtype=DataType.Int)
    T15 = fd.ops.where(T13, T1, S14)
    T16 = fd.ops.broadcast_in_dim(T15, shape=[12, 1], broadcast_dims=[0])
    T17 = fd.ops.take_along_axis(T11, T16, dim=1)
    T18 = fd.ops.reshape(T17, new_shape=[12])
    T19 = fd.ops.neg(T18)
    S20 = fd.define_scalar(0.00000, dtype=DataType.Double)
    T21 = fd.ops.where(T13, T19, S20)
    T22 = fd.ops.sum(T21, dims=[0], keepdim=False, dtype=DataType.Null)
    T23 = fd.ops.cast(T13, dtype=DataType.Float)
    T24 = fd.ops.sum(T23, dims=[0], keepdim=False, dtype=DataType.Null)
    T25 = fd.ops.div(T22, T24)
    T26 = fd.ops.sum(T11, dims=[1], keepdim=False, dtype=DataType.Null)
    T27 = fd.ops.neg(T26)
    T28 = fd.ops.where(T13, T27, S20)
    T29 = fd.ops.sum(T28, dims=[0], keepdim=False, dtype=DataType.Null)
    T30 = fd.ops.div(T29, T24)
    S31 = fd.define_scalar(0.900000, dtype=DataType.Double)
    T32 = fd.ops.mul(S31, T25)
    S33 = fd.define_scalar(0.00200000, dtype=DataType.Double)
    T34 = fd.ops.mul(S33, T30)
    T35 = fd.ops.add(T32, T34)
    fd.add_output(T35)
    fd.add_output(T11)


with FusionDefinition() as fd:
    nvfuser_fusion_id4(fd)

inputs = [
    torch.randn((12, 50), dtype=torch.float32, device='cuda:0'),
    torch.randint(0, 50, (12,), dtype=torch.int64, device='cuda:0'),
]
fd.execute(inputs)
