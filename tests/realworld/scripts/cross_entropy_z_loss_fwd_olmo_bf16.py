# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on the cross entropy with z-loss of OLMo / PaLM (loss = CE + 1e-4 * lse^2,
# over OLMo's padded 50304-token vocabulary, 4096 tokens per micro-batch) as a Thunder trace
# of the fp32-upcast bf16 logits: logsumexp = max + log(sum(exp(x - max))), the target logit
# gathered with take_along_axis on the upcast logits, both losses masked for ignore_index
# and summed; the two 0-dim sums, the kept-token count and the per-row lse are returned.
# real-sizes: 20=4096 96=50304
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id6(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[1, 0])
    T1 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Int, is_cpu=False, stride_order=[0])
    T2 = fd.ops.cast(T0, dtype=DataType.Float)
    T3 = fd.ops.max(T2, dims=[1], keepdim=False, dtype=DataType.Null)
    V4 = fd.define_vector([T0.size(0), 1], dtype=DataType.Int)
    T5 = fd.ops.broadcast_in_dim(T3, shape=V4, broadcast_dims=[0])
    V6 = fd.define_vector([T0.size(0), T0.size(1)], dtype=DataType.Int)
    T7 = fd.ops.broadcast_in_dim(T5, shape=V6, broadcast_dims=[0, 1])
    T8 = fd.ops.sub(T2, T7)
    T9 = fd.ops.exp(T8)
    T10 = fd.ops.sum(T9, dims=[1], keepdim=False, dtype=DataType.Null)
    T11 = fd.ops.log(T10)
    T12 = fd.ops.add(T11, T3)
    S13 = fd.define_scalar(-100, dtype=DataType.Int)
    T14 = fd.ops.ne(T1, S13)
    S15 = fd.define_scalar(0, dtype=DataType.Int)
    T16 = fd.ops.where(T14, T1, S15)
    T17 = fd.ops.broadcast_in_dim(T16, shape=V4, broadcast_dims=[0])
    T18 = fd.ops.take_along_axis(T2, T17, dim=1)
    T19 = fd.ops.squeeze(T18, dims=[1])
    T20 = fd.ops.sub(T12, T19)
    S21 = fd.define_scalar(0.00000, dtype=DataType.Double)
    T22 = fd.ops.where(T14, T20, S21)
    T23 = fd.ops.sum(T22, dims=[0], keepdim=False, dtype=DataType.Null)
    T24 = fd.ops.mul(T12, T12)
    S25 = fd.define_scalar(0.000100000, dtype=DataType.Double)
    T26 = fd.ops.mul(T24, S25)
    T27 = fd.ops.where(T14, T26, S21)
    T28 = fd.ops.sum(T27, dims=[0], keepdim=False, dtype=DataType.Null)
    T29 = fd.ops.cast(T14, dtype=DataType.Float)
    T30 = fd.ops.sum(T29, dims=[0], keepdim=False, dtype=DataType.Null)
    fd.add_output(T23)
    fd.add_output(T28)
    fd.add_output(T30)
    fd.add_output(T12)


with FusionDefinition() as fd:
    nvfuser_fusion_id6(fd)

inputs = [
    torch.testing.make_tensor((20, 96), dtype=torch.bfloat16, device='cuda:0', low=-8, high=8),
    torch.randint(0, 96, (20,), dtype=torch.int64, device='cuda:0'),
]
fd.execute(inputs)
