# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on the "this fusion is slow" reports in NVIDIA/Fuser issues and the timing
# harness of benchmarks/python (RMSNorm forward, bf16 in and out, fp32 weight): a warm-up
# loop of fd.execute, then a timed loop between torch.cuda.synchronize() calls with
# time.perf_counter(), the bandwidth worked out from the tensors' sizes and printed, and
# one run timed again with CUDA events. All of it after the warm-up is checking code the
# loader skips unread (the `import time` included: nothing is imported).
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id11(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[1, 0])
    T1 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float, is_cpu=False, stride_order=[0])
    T2 = fd.ops.cast(T0, dtype=DataType.Float)
    T3 = fd.ops.mul(T2, T2)
    T4 = fd.ops.sum(T3, dims=[1], keepdim=False, dtype=DataType.Null)
    T5 = fd.ops.broadcast_in_dim(T4, shape=[32, 1], broadcast_dims=[0])
    S6 = fd.define_scalar(512.000, dtype=DataType.Double)
    T7 = fd.ops.div(T5, S6)
    S8 = fd.define_scalar(1.00000e-06, dtype=DataType.Double)
    T9 = fd.ops.add(T7, S8)
    T10 = fd.ops.rsqrt(T9)
    T11 = fd.ops.broadcast_in_dim(T10, shape=[32, 512], broadcast_dims=[0, 1])
    T12 = fd.ops.mul(T2, T11)
    T13 = fd.ops.broadcast_in_dim(T1, shape=[32, 512], broadcast_dims=[1])
    T14 = fd.ops.mul(T12, T13)
    T15 = fd.ops.cast(T14, dtype=DataType.BFloat16)
    fd.add_output(T15)
    fd.add_output(T10)


with FusionDefinition() as fd:
    nvfuser_fusion_id11(fd)

inputs = [
    torch.randn((32, 512), dtype=torch.bfloat16, device='cuda:0'),
    torch.randn((512,), dtype=torch.float32, device='cuda:0'),
]

# warm-up (compiles the kernel)
for _ in range(3):
    fd.execute(inputs)

import time

torch.cuda.synchronize()
start = time.perf_counter()
iters = 100
for _ in range(iters):
    outputs = fd.execute(inputs)
torch.cuda.synchronize()
elapsed = (time.perf_counter() - start) / iters
nbytes = sum(t.numel() * t.element_size() for t in [*inputs, *outputs])
print(f"nvFuser: {elapsed * 1e6:.2f} us/iter, {nbytes / elapsed / 1e9:.1f} GB/s")

start_event = torch.cuda.Event(enable_timing=True)
end_event = torch.cuda.Event(enable_timing=True)
start_event.record()
fd.execute(inputs)
end_event.record()
torch.cuda.synchronize()
print("one run:", start_event.elapsed_time(end_event), "ms")
