# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on the timing helpers of nvFuser's python benchmarks (clearL2Cache in
# NVIDIA/Fuser PR #982's python_benchmarks/core.py) as users copy them into repro scripts:
# helper functions that take no FusionDefinition (an L2 flush, a bandwidth figure) defined
# before the fusion and called around its run, and timing code before the run too. The
# helpers and the calls are skipped unread; the fusion (a bias + GELU(tanh) on half) is read.
import torch
from nvfuser import FusionDefinition, DataType


def clearL2Cache():
    n_elements = 40 * 1024 * 1024 // 4
    x = torch.empty(n_elements, dtype=torch.float32, device="cuda", requires_grad=False)
    y = torch.clone(x)


def gbps(tensors, seconds):
    return sum(t.numel() * t.element_size() for t in tensors) / seconds / 1e9


with FusionDefinition() as fd:
    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Half, is_cpu=False)
    T1 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Half, is_cpu=False)
    T2 = fd.ops.cast(T0, dtype=DataType.Float)
    T3 = fd.ops.cast(T1, dtype=DataType.Float)
    T4 = fd.ops.broadcast_in_dim(T3, shape=[8, 48], broadcast_dims=[1])
    T5 = fd.ops.add(T2, T4)
    S6 = fd.define_scalar(0.79788456, dtype=DataType.Double)
    S7 = fd.define_scalar(0.044715, dtype=DataType.Double)
    T8 = fd.ops.mul(T5, fd.ops.add(fd.define_scalar(1.0, dtype=DataType.Double), fd.ops.mul(S7, fd.ops.mul(T5, T5))))
    T9 = fd.ops.tanh(fd.ops.mul(S6, T8))
    T10 = fd.ops.mul(fd.ops.mul(fd.define_scalar(0.5, dtype=DataType.Double), T5),
                     fd.ops.add(fd.define_scalar(1.0, dtype=DataType.Double), T9))
    fd.add_output(fd.ops.cast(T10, dtype=DataType.Half))

inputs = [
    torch.randn(8, 48, dtype=torch.float16, device="cuda"),
    torch.randn(48, dtype=torch.float16, device="cuda"),
]

clearL2Cache()
start = torch.cuda.Event(enable_timing=True)
end = torch.cuda.Event(enable_timing=True)
start.record()
outputs = fd.execute(inputs)
end.record()
torch.cuda.synchronize()
clearL2Cache()
print(f"{gbps([*inputs, *outputs], start.elapsed_time(end) / 1e3):.1f} GB/s")
