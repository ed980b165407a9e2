"""Fusions for the debugger's tests, built in Python (the ground truth for listings) and the
same fusions as nvFuser-format files (what the CLI and the app read)."""

from __future__ import annotations

from engine import DataType, FusionDefinition

# Seed 001's fusion (DESIGN.md, issue 2): an input with a permuted allocation domain, squeeze,
# sum, broadcast, add, squeeze, sum; outputs T4 and T6.
SEED001_FILE = '''\
"""Seed 001: inner-outer persistent fusion whose input has an allocation domain."""
def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[1, 4096, 4096], contiguity=[True, None, True], dtype=DataType.Float, is_cpu=False, stride_order=[1, 2, 0])
    T1 = fd.ops.squeeze(T0, dims=[0])
    T2 = fd.ops.sum(T1, dims=[1], keepdim=False, dtype=DataType.Null)
    T3 = fd.ops.broadcast(T2, is_broadcast_dim=[True, False, True])
    T4 = fd.ops.add(T0, T3)
    T5 = fd.ops.squeeze(T4, dims=[0])
    T6 = fd.ops.sum(T5, dims=[0], keepdim=False, dtype=DataType.Null)
    fd.add_output(T4)
    fd.add_output(T6)

with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)
'''


def build_seed001(split_t4: bool = False) -> FusionDefinition:
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(
            shape=[1, 4096, 4096], contiguity=[True, None, True], dtype=DataType.Float, stride_order=[1, 2, 0]
        )
        t1 = fd.ops.squeeze(t0, dims=[0])
        t2 = fd.ops.sum(t1, dims=[1])
        t3 = fd.ops.broadcast(t2, [True, False, True])
        t4 = fd.ops.add(t0, t3)
        t5 = fd.ops.squeeze(t4, dims=[0])
        t6 = fd.ops.sum(t5, dims=[0])
        fd.add_output(t4)
        fd.add_output(t6)
    if split_t4:
        # A scheduled tensor, so that a transform block has a Split line to show.
        t4.split(1, 2)
    return fd




# A file without an inputs list whose sizes are symbolic: its example inputs need sizes
# (`--size`), else it cannot be compiled.
SYMBOLIC_FILE = '''\
from nvfuser import FusionDefinition, DataType

with FusionDefinition() as fd:
    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float, is_cpu=False)
    T1 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float, is_cpu=False)
    T2 = fd.ops.sum(T0, dims=[1], keepdim=False, dtype=DataType.Null)
    T3 = fd.ops.add(T2, T1)
    fd.add_output(T3)
'''


# A one-kernel fusion (exp of 1000 floats) whose kernel the crash-isolation tests replace.
EXP_FILE = '''\
import torch
def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float, is_cpu=False)
    T1 = fd.ops.exp(T0)
    fd.add_output(T1)

with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.randn((1000,), dtype=torch.float32, device='cuda:0'),
]
'''
EXP_KERNEL_HEAD = "nvfuser_pointwise_f0_c0_r0_g0(Tensor<float, 1, 1> T0, Tensor<float, 1, 1> T1) {\n"
EXP_STORE = "T1[blockIdx.x * 128 + threadIdx.x] = T3[0];"


def faulty_kernels(source: str) -> dict[str, str]:
    """The generated kernel of EXP_FILE altered three ways: an out-of-bounds write, an endless
    loop, and a kill of the whole process (what no signal handler in the emulator can catch)."""
    assert EXP_KERNEL_HEAD in source and EXP_STORE in source, "the generated exp kernel changed shape"
    return {
        "fault": source.replace(EXP_STORE, EXP_STORE.replace("]", " + 100000000]", 1)),
        "hang": source.replace(EXP_KERNEL_HEAD, EXP_KERNEL_HEAD + "  volatile int spin = 1;\n  while (spin) {}\n"),
        "crash": source.replace(EXP_KERNEL_HEAD, EXP_KERNEL_HEAD + "  raise(SIGKILL);\n"),
    }
