# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on the benchmark scripts pasted into NVIDIA/Fuser performance issues: everything
# under `if __name__ == "__main__":` (the fusion, its inputs, a warm-up run, then a timed
# one between an L2 flush and torch.cuda.synchronize()), with `import time` and the flush
# helper at the top. The guard's body is read as the script; the helper, the imports and the
# timing are skipped unread. RMSNorm forward on bf16 rows with an fp32 weight.
import time

import torch
from nvfuser import FusionDefinition, DataType


def flush_l2():
    scratch = torch.empty(50 * 1024 * 1024 // 4, dtype=torch.float32, device="cuda")
    scratch.zero_()


if __name__ == "__main__":
    rows, hidden = 6, 96

    with FusionDefinition() as fd:
        T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False)
        T1 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float, is_cpu=False)
        T2 = fd.ops.cast(T0, dtype=DataType.Float)
        T3 = fd.ops.mul(T2, T2)
        T4 = fd.ops.sum(T3, dims=[1], keepdim=True, dtype=DataType.Null)
        S5 = fd.define_scalar(1.0 / hidden, dtype=DataType.Double)
        T6 = fd.ops.mul(T4, S5)
        S7 = fd.define_scalar(1e-6, dtype=DataType.Double)
        T8 = fd.ops.rsqrt(fd.ops.add(T6, S7))
        T9 = fd.ops.mul(T2, T8)
        T10 = fd.ops.broadcast_in_dim(T1, shape=[rows, hidden], broadcast_dims=[1])
        T11 = fd.ops.cast(fd.ops.mul(T9, T10), dtype=DataType.BFloat16)
        fd.add_output(T11)

    inputs = [
        torch.randn(rows, hidden, dtype=torch.bfloat16, device="cuda"),
        torch.rand(hidden, dtype=torch.float32, device="cuda") + 0.5,
    ]
    fd.execute(inputs)  # warm-up: compiles

    flush_l2()
    torch.cuda.synchronize()
    start = time.perf_counter()
    out = fd.execute(inputs)
    torch.cuda.synchronize()
    print(f"{(time.perf_counter() - start) * 1e6:.1f} us")
