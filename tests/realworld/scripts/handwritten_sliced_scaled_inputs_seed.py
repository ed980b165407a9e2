# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on hand-written repros pasted into NVIDIA/Fuser issues (e.g. #5373's
# `input1 = torch.ones(2, 1, 8, device='cuda')` then `fd.execute([input1, input2])`) and
# the tests/python style of building inputs with torch: a seed, sizes and the device bound
# to names, a sliced view with a storage offset, a transposed view, values scaled and
# shifted, a dropout keep-mask from a comparison, and *_like with an in-place fill; the fusion is
# a residual add with a masked, scaled bias.
import torch
from nvfuser import FusionDefinition, DataType

torch.manual_seed(0)
device = torch.device("cuda", 0)
B, H = 6, 12

with FusionDefinition() as fd:
    x = fd.define_tensor(shape=[-1, -1], contiguity=[False, True], dtype=DataType.Float)
    w = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float, stride_order=[0, 1])
    mask = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Bool)
    r0 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float)
    r1 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float)
    scale = fd.define_scalar(dtype=DataType.Double)
    t0 = fd.ops.where(mask, fd.ops.mul(w, scale), 0.0)
    t1 = fd.ops.add(x, t0)
    t2 = fd.ops.add(r0, r1)
    t3 = fd.ops.add(t1, fd.ops.broadcast_in_dim(t2, shape=[B, H], broadcast_dims=[1]))
    fd.add_output(t3)

x = torch.randn(B + 2, H + 4, device=device)[1:-1, 2:-2]
w = torch.randn(H, B, device=device).t() * 10 + 1
keep = torch.rand(B, H, device=device) < 0.9
r0 = torch.randn(H, device=device)
r1 = torch.empty_like(r0).uniform_(-1, 1)

outputs = fd.execute([x, w, keep, r0, r1, 1.0 / 0.9])
print(outputs[0].shape)
