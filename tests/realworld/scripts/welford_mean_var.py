# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on NVIDIA/Fuser tests/python/test_python_frontend.py (test_welford) and the
# 2023 batch-norm repros: fd.ops.welford(T, axes=[...]) returning (avg, var_sum, n), the
# biased variance var_sum / n, and mean/var broadcast back with broadcast_in_dim.
import torch
from nvfuser import FusionDefinition, DataType

with FusionDefinition() as fd:
    T0 = fd.define_tensor(shape=[-1, -1, -1], contiguity=[True, True, True], dtype=DataType.Float, is_cpu=False)
    avg, var_sum, n = fd.ops.welford(T0, axes=[0, 2])
    T4 = fd.ops.div(var_sum, n)
    S5 = fd.define_scalar(1e-05, dtype=DataType.Double)
    T6 = fd.ops.add(T4, S5)
    T7 = fd.ops.rsqrt(T6)
    T8 = fd.ops.broadcast_in_dim(avg, shape=[6, 8, 20], broadcast_dims=[1])
    T9 = fd.ops.broadcast_in_dim(T7, shape=[6, 8, 20], broadcast_dims=[1])
    T10 = fd.ops.sub(T0, T8)
    T11 = fd.ops.mul(T10, T9)
    fd.add_output(T11)
    fd.add_output(avg)
    fd.add_output(T4)

inputs = [torch.randn((6, 8, 20), dtype=torch.float32, device='cuda:0')]
fd.execute(inputs)
