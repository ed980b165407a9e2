"""Kernels that fail on the cuda back end (needs a GPU: run with `pytest -m gpu`).

A memory fault poisons the process's CUDA context for good (every later CUDA call fails), so a
faulting kernel runs in a child process: the child must report an ExecutionError naming the
kernel, and this process, whose context is untouched, must go on using the GPU.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest
import torch

from engine import DataType, FusionDefinition
from engine.compile import compile_fusion
from engine.config import Options
from engine.errors import CompileError

pytestmark = pytest.mark.gpu

KERNEL = "nvfuser_pointwise_f0_c0_r0_g0"


def with_statement(src: str, statement: str) -> str:
    """`src` with `statement` first in the kernel's body (whatever the generated body is)."""
    body = src.index("{", src.index('extern "C" __global__')) + 1
    return src[:body] + "\n  " + statement + src[body:]


CHILD = textwrap.dedent("""
    import sys
    import torch
    from engine import DataType, FusionDefinition
    from engine.compile import compile_fusion
    from engine.config import Options
    from engine.errors import ExecutionError

    with FusionDefinition() as fd:
        a = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float)
        fd.add_output(fd.ops.exp(a))
    xs = [torch.randn(1000, device="cuda")]
    src = compile_fusion(fd, xs).segments[0].cuda_source
    body = src.index("{", src.index('extern "C" __global__')) + 1
    # 2**36 floats past the output: far outside anything the allocator has mapped
    bad = src[:body] + sys.argv[1] + src[body:]
    cf = compile_fusion(fd, xs, Options(kernel_sources={0: bad}, sync_launches=True))
    try:
        cf.run(xs, backend="cuda")
        torch.cuda.synchronize()
    except ExecutionError as e:
        print("ExecutionError:", e, flush=True)
        sys.exit(3)
    print("no error", flush=True)
""")


def _fusion() -> tuple[FusionDefinition, list[torch.Tensor]]:
    with FusionDefinition() as fd:
        a = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float)
        fd.add_output(fd.ops.exp(a))
    return fd, [torch.randn(1000, device="cuda")]


def test_an_out_of_bounds_write_is_reported_by_the_child_and_the_parent_survives() -> None:
    oob = "T1.data[(1LL << 36) + threadIdx.x] = 1.0f;"
    r = subprocess.run([sys.executable, "-c", CHILD, oob], capture_output=True, text=True, timeout=600)
    out = r.stdout + r.stderr
    assert r.returncode == 3, out[-3000:]
    line = next(ln for ln in r.stdout.splitlines() if ln.startswith("ExecutionError:"))
    assert KERNEL in line, line
    assert "illegal" in line.lower() or "fault" in line.lower() or "error" in line.lower(), line
    # this process's CUDA context was never touched by the fault
    fd, xs = _fusion()
    torch.testing.assert_close(compile_fusion(fd, xs).run(xs, backend="cuda")[0], torch.exp(xs[0]))


def test_a_kernel_nvrtc_cannot_compile_is_a_compile_error_naming_the_segment() -> None:
    fd, xs = _fusion()
    src = compile_fusion(fd, xs).segments[0].cuda_source
    bad = with_statement(src, "float broken = undeclared_name + ;")
    cf = compile_fusion(fd, xs, Options(kernel_sources={0: bad}))
    with pytest.raises(CompileError) as info:
        cf.run(xs, backend="cuda")
    msg = str(info.value)
    assert KERNEL in msg.splitlines()[0]
    assert "first error:" in msg.splitlines()[0] and "undeclared_name" in msg.splitlines()[0], msg[:2000]
    assert "float broken = undeclared_name + ;" in msg  # the source line NVRTC blames
