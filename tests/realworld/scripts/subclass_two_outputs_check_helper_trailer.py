# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on NVIDIA/Fuser tests/python/test_python_frontend.py and the scripts issue
# authors build from them: a FusionDefinition subclass with a scalar input (relu of a scaled
# tensor, its row sums and row means), then their own helper defined after the run to
# compare every output with eager torch, a loop over zip(outputs, references), CUDA memory
# statistics printed, and the outputs freed. The loader skips all of it unread (the helper
# is never defined, let alone called).
import torch
from nvfuser import FusionDefinition, DataType


class ScaledReluStats(FusionDefinition):
    def definition(self):
        self.t0 = self.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float, is_cpu=False)
        self.s0 = self.define_scalar(dtype=DataType.Double)
        self.t1 = self.ops.mul(self.t0, self.s0)
        self.t2 = self.ops.relu(self.t1)
        self.t3 = self.ops.sum(self.t2, dims=[1], keepdim=False, dtype=DataType.Float)
        self.t4 = self.ops.mean(self.t2, dims=[1], keepdim=False)
        self.add_output(self.t2)
        self.add_output(self.t3)
        self.add_output(self.t4)


fd = ScaledReluStats()
inputs = [
    torch.randn((40, 96), dtype=torch.float32, device='cuda:0'),
    0.75,
]
outputs = fd.execute(inputs)


def check(actual, expected, name, **tol):
    torch.testing.assert_close(actual, expected, **tol, msg=lambda m: f"{name}: {m}")
    print(f"{name}: ok (max abs err {(actual - expected).abs().max().item():.2e})")


x, scale = inputs
relu = torch.relu(x * scale)
references = [relu, relu.sum(dim=1), relu.mean(dim=1)]
for i, (o, r) in enumerate(zip(outputs, references)):
    check(o, r, f"output {i}", rtol=1e-5, atol=1e-5)
assert all(o.is_contiguous() for o in outputs), [o.stride() for o in outputs]
print(f"peak memory: {torch.cuda.max_memory_allocated() / 2**20:.1f} MiB")
del outputs, relu, references
torch.cuda.empty_cache()
