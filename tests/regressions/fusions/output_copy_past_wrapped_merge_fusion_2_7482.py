# Found by tests/fuzz (fusion-2-7482): outputs before an expand, written in the loop of the
# expanded output, took their indices from the producer's logical ids, where a merge's inner
# index had wrapped modulo its extent (size-1 i5 merged with i6), so their stores had no bounds
# predicate and threads past the 6th wrote unset values over element (idx / 2) % 3; the loop
# nest's own bounds now guard them (engine/lower/predicates.py, promoted_loop_predicates).
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[1, -1, -1], contiguity=[None, True, True], dtype=DataType.Float, stride_order=None)
    S1 = fd.define_scalar(0.5, dtype=DataType.Double)
    T2 = fd.ops.add(T0, S1)
    T3 = fd.ops.neg(T2)
    T4 = fd.ops.broadcast_in_dim(T3, shape=[1, 1, 3, 2], broadcast_dims=[0, 1, 2])
    fd.add_output(T4)
    fd.add_output(T2)
    fd.add_output(T3)


with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((1, 1, 3), dtype=torch.float32, device='cuda:0'),
]
fd.execute(inputs)
