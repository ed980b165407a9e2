# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on nvFuser python-frontend tests of the Tensor and Scalar operator bindings
# (NVFUSER_PYTHON_BINDING_UNARY_OP_SPECIAL: __abs__ and __neg__ beside the binary ones):
# an L1 loss and its gradient written with Python operators, abs() and unary minus.
import torch
from nvfuser import FusionDefinition, DataType

with FusionDefinition() as fd:
    t0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Half)
    t1 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Half)
    s0 = fd.define_scalar(None, dtype=DataType.Double)
    d = fd.ops.cast(t0, DataType.Float) - fd.ops.cast(t1, DataType.Float)
    loss = fd.ops.sum(abs(d), dims=[1]) * s0
    grad = -fd.ops.sign(d) * abs(s0)
    fd.add_output(loss)
    fd.add_output(fd.ops.cast(grad, DataType.Half))

inputs = [
    torch.randn(16, 40, dtype=torch.float16, device='cuda:0'),
    torch.randn(16, 40, dtype=torch.float16, device='cuda:0'),
    -0.025,
]
fd.execute(inputs)
