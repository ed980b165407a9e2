# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on softmax-backward repros in NVIDIA/Fuser and csarofeen/pytorch issues whose
# authors check the result in numpy: after fd.execute they import numpy, recompute
# dx = y * (dy - sum(dy * y, -1)) on the host, compare with np.testing.assert_allclose and
# torch.allclose, and print what they found. The loader skips that code unread.
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id5(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Half, is_cpu=False)
    T1 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Half, is_cpu=False)
    T2 = fd.ops.cast(T0, dtype=DataType.Float)
    T3 = fd.ops.cast(T1, dtype=DataType.Float)
    T4 = fd.ops.mul(T2, T3)
    T5 = fd.ops.sum(T4, dims=[1], keepdim=True, dtype=DataType.Null)
    T6 = fd.ops.sub(T2, T5)
    T7 = fd.ops.mul(T3, T6)
    T8 = fd.ops.cast(T7, dtype=DataType.Half)
    fd.add_output(T8)


with FusionDefinition() as fd:
    nvfuser_fusion_id5(fd)

dy = torch.randn((16, 200), dtype=torch.float16, device='cuda:0')
y = torch.rand((16, 200), dtype=torch.float16, device='cuda:0')
nvf_out, = fd.execute([dy, y])

import numpy as np

g, p = (t.float().cpu().numpy() for t in (dy, y))
expected = p * (g - (g * p).sum(axis=-1, keepdims=True))
np.testing.assert_allclose(nvf_out.float().cpu().numpy(), expected, rtol=1e-2, atol=1e-3)
assert torch.allclose(nvf_out.float(), torch.from_numpy(expected).to(nvf_out.device), rtol=1e-2, atol=1e-3)
print(f"{nvf_out.dtype=} {tuple(nvf_out.shape)=}")
print("max abs diff vs numpy:", np.abs(nvf_out.float().cpu().numpy() - expected).max())
