# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on the 2022 frontend's examples in pytorch/pytorch
# (torch/csrc/jit/codegen/cuda/python_frontend/README.md) as users retyped them in issues:
# `fd = FusionDefinition()` and then the definition calls at the top level, with no with
# block (symbolic_sizes=/contiguous=, define_constant, view with original_shape=,
# broadcast_in_dim with output_shape=, add_output). They are read as the body of `with fd:`.
import torch
from nvfuser import FusionDefinition, DataType

fd = FusionDefinition()
t0 = fd.define_tensor(symbolic_sizes=[-1, -1], contiguous=[True, True], dtype=DataType.Float)
t1 = fd.define_tensor(symbolic_sizes=[-1], contiguous=[True], dtype=DataType.Float)
c0 = fd.define_constant(3.0)
t2 = fd.ops.mul(t0, c0)
t3 = fd.ops.view(t2, original_shape=[4, 6], new_shape=[2, 12])
t4 = fd.ops.broadcast_in_dim(t1, output_shape=[2, 12], broadcast_dims=[1])
t5 = fd.ops.add(t3, t4)
fd.add_output(t5)

input1 = torch.randn(4, 6, device='cuda')
input2 = torch.randn(12, device='cuda')
out = fd.execute([input1, input2])[0]
