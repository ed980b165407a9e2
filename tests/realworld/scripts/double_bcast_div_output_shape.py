# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on csarofeen/pytorch issue #2549 (March 2023, when broadcast dims lost their
# contiguity): `from nvfuser import ...` after the move out of PyTorch but still
# symbolic_sizes= with contiguous= lists that give the size-1 dim a flag, Double
# tensors, broadcast_in_dim(output_shape=) of an [N, 1] tensor, div; inputs made by
# torch.ones and torch.randn named in fd.execute([a, b]).
from nvfuser import FusionDefinition, DataType
import torch

def nvfuser_fusion_id2(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(symbolic_sizes=[-1, 1], contiguous=[True, True], dtype=DataType.Double, is_cpu=False)
    T1 = fd.define_tensor(symbolic_sizes=[-1, -1], contiguous=[True, True], dtype=DataType.Double, is_cpu=False)
    T2 = fd.ops.broadcast_in_dim(T0, output_shape=[4, 4], broadcast_dims=[0, 1])
    T3 = fd.ops.div(T1, T2)
    fd.add_output(T3)

a = torch.ones(4, 1, dtype=torch.double, device='cuda')
b = torch.randn(4, 4, dtype=torch.double, device='cuda')

with FusionDefinition() as fd:
    nvfuser_fusion_id2(fd)

fd.execute([a, b])
