# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on what nvfuser_direct's repro printer (python/python_direct/python_translate.cpp)
# writes for a reshape whose new sizes are all symbolic fusion inputs: `tvN_shape =
# fd.define_vector(size=n)` (n Int scalar inputs) then fd.ops.reshape(..., new_shape=tvN_shape),
# with tensors named tvN and reductions spelled dims=, keep_dim=, dtype=DataType.Null.
import torch
from nvfuser_direct import FusionDefinition, DataType


def nvfuser_fusion(fd : FusionDefinition) -> None :
    tv0 = fd.define_tensor(shape=[-1, -1, -1], contiguity=[True, True, True], dtype=DataType.Float, is_cpu=False)
    tv3_shape = fd.define_vector(size=2)
    tv3 = fd.ops.reshape(tv0, new_shape=tv3_shape)
    tv4 = fd.ops.max(tv3, dims=[1], keep_dim=True, dtype=DataType.Null)
    tv6 = fd.ops.sub(tv3, tv4)
    tv7 = fd.ops.exp(tv6)
    tv8 = fd.ops.sum(tv7, dims=[1], keep_dim=True, dtype=DataType.Float)
    tv9 = fd.ops.div(tv7, tv8)
    fd.add_output(tv9)


with FusionDefinition() as fd:
    nvfuser_fusion(fd)

inputs = [
    torch.testing.make_tensor((4, 6, 10), dtype=torch.float32, device='cuda:0'),
    24,
    10,
]
fd.execute(inputs)
