"""Kernels that fail on the emulate back end: each failure is an error naming the segment and
kernel, and the process (this pytest run) goes on emulating afterwards.

A fusion's generated kernel is replaced through Options(kernel_sources=...) by the same text with
one bad statement added. What the emulator cannot catch in-process (exit(), SIGKILL, a stray
write into valid memory) ends the process: shown here in a child process, it is why fusescope
runs kernels in a worker process.
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
from engine.errors import CompileError, ExecutionError
from tests.emulation import needs_gxx

pytestmark = needs_gxx

STORE = "T1[blockIdx.x * 128 + threadIdx.x] = T3[0];"
KERNEL = r"segment 0 \(pointwise, kernel nvfuser_pointwise_f0_c0_r0_g0\)"

# What goes before the kernel's output store, and what the error then says. `volatile` keeps
# g++ from folding the fault away (a constant division by zero or an empty endless loop are
# undefined behaviour that -O2 may delete).
FAULTS = {
    "oob_write": ("T1.data[100000000 + threadIdx.x] = 1.0f;", r"SIGSEGV: invalid memory access"),
    "null_read": ("T3[0] = *(volatile float*)nullptr;", r"SIGSEGV: invalid memory access at address (0x0|\(nil\))"),
    "stack_overflow": ("volatile char big[1 << 20]; big[threadIdx.x] = 1; T3[0] += big[0];",
                       r"stack overflow \(each thread has 64 KiB; set FUSESCOPE_EMU_STACK_KIB\)"),
    "int_div_zero": ("volatile int zero = 0; T3[0] += 7 / zero;", r"SIGFPE \(integer division by zero"),
    "cuda_trap": ("if (threadIdx.x == 5) __trap();", r"thread \(5,0,0\): __trap\(\)"),
    "builtin_trap": ("if (threadIdx.x == 3) __builtin_trap();", r"thread \(3,0,0\): SIGILL: illegal instruction"),
    "abort": ("if (blockIdx.x == 0 && threadIdx.x == 2) abort();", r"thread \(2,0,0\): SIGABRT: abort\(\)"),
    "device_assert": ("assert(threadIdx.x < 64);", r"thread \(64,0,0\): assertion `threadIdx.x < 64` failed"),
    "deadlock": ("if (threadIdx.x == 0) __syncthreads();", r"deadlock in block \(0,0,0\) of 128 threads"),
    "endless_loop": ("volatile int spin = 1; while (spin) { }",
                     r"time limit: still running after 0.3 s of CPU time \(an endless loop\?\)"),
}


@pytest.fixture(scope="module")
def fusion() -> tuple[FusionDefinition, list[torch.Tensor], str]:
    with FusionDefinition() as fd:
        a = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float)
        fd.add_output(fd.ops.exp(a))
    xs = [torch.randn(300)]
    src = compile_fusion(fd, xs).segments[0].cuda_source
    assert src.count(STORE) == 1
    return fd, xs, src


def _with(fusion, statement: str):
    fd, xs, src = fusion
    return compile_fusion(fd, xs, Options(kernel_sources={0: src.replace(STORE, statement + "\n    " + STORE)}))


@pytest.mark.parametrize("name", sorted(FAULTS))
def test_a_failing_kernel_is_an_execution_error_naming_the_segment(fusion, name: str, monkeypatch) -> None:
    statement, message = FAULTS[name]
    monkeypatch.setenv("FUSESCOPE_EMU_TIMEOUT_S", "0.3")
    cf = _with(fusion, statement)
    with pytest.raises(ExecutionError, match=rf"{KERNEL}: emulated kernel nvfuser_pointwise_\w+ .*{message}"):
        cf.run(fusion[1], backend="emulate")
    # the emulator (same process, same thread) still runs kernels, this one included
    fd, xs, _ = fusion
    torch.testing.assert_close(compile_fusion(fd, xs).run(xs, backend="emulate")[0], torch.exp(xs[0]))


def test_the_time_limit_is_cpu_seconds_from_the_environment(fusion, monkeypatch) -> None:
    from engine.runtime.emulate import DEFAULT_TIME_LIMIT_S, time_limit_s

    monkeypatch.delenv("FUSESCOPE_EMU_TIMEOUT_S", raising=False)
    assert time_limit_s() == DEFAULT_TIME_LIMIT_S
    monkeypatch.setenv("FUSESCOPE_EMU_TIMEOUT_S", "0")
    assert time_limit_s() == 0.0  # no limit
    # a limit far above what a kernel takes never fires
    monkeypatch.setenv("FUSESCOPE_EMU_TIMEOUT_S", "30")
    fd, xs, _ = fusion
    torch.testing.assert_close(compile_fusion(fd, xs).run(xs, backend="emulate")[0], torch.exp(xs[0]))
    monkeypatch.setenv("FUSESCOPE_EMU_TIMEOUT_S", "soon")
    with pytest.raises(ExecutionError, match="FUSESCOPE_EMU_TIMEOUT_S='soon' is not a number"):
        compile_fusion(fd, xs).run(xs, backend="emulate")


def test_a_kernel_that_does_not_compile_is_a_compile_error_with_the_first_error(fusion) -> None:
    cf = _with(fusion, "float broken = undeclared_name + ;")
    with pytest.raises(CompileError) as info:
        cf.run(fusion[1], backend="emulate")
    msg = str(info.value)
    assert msg.startswith("segment 0 (pointwise, kernel nvfuser_pointwise_f0_c0_r0_g0): ")
    # the first error is quoted in the headline, then the log and the source line it blames
    first = msg.splitlines()[0]
    assert "first error: nvfuser_pointwise_f0_c0_r0_g0.cu:" in first and "undeclared_name" in first
    assert "> " in msg and "float broken = undeclared_name + ;" in msg


CHILD = textwrap.dedent("""
    import sys
    import torch
    from engine import DataType, FusionDefinition
    from engine.compile import compile_fusion
    from engine.config import Options

    with FusionDefinition() as fd:
        a = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float)
        fd.add_output(fd.ops.exp(a))
    xs = [torch.randn(300)]
    src = compile_fusion(fd, xs).segments[0].cuda_source
    store = "T1[blockIdx.x * 128 + threadIdx.x] = T3[0];"
    bad = src.replace(store, sys.argv[1] + store)
    print("launching", flush=True)
    compile_fusion(fd, xs, Options(kernel_sources={0: bad})).run(xs, backend="emulate")
    print("survived", flush=True)
""")


@pytest.mark.parametrize(("statement", "returncode"), [
    ("if (threadIdx.x == 1) exit(7);", 7),
    ("if (threadIdx.x == 1) raise(SIGKILL);", -9),
])
def test_what_the_emulator_cannot_catch_ends_only_a_child_process(statement: str, returncode: int) -> None:
    # exit() and SIGKILL end a process whatever it does: the reason to emulate in a worker.
    r = subprocess.run([sys.executable, "-c", CHILD, statement], capture_output=True, text=True, timeout=300)
    assert r.returncode == returncode, r.stderr[-2000:]
    assert "launching" in r.stdout and "survived" not in r.stdout


def test_nvrtc_errors_name_the_first_error_in_the_headline() -> None:
    from engine.runtime.nvrtc import format_compile_error

    source = "\n".join(f"line {k}" for k in range(1, 12))
    log = ('k.cu(3): warning: unused variable\nk.cu(5): error: identifier "undeclared_name" is undefined\n'
           'k.cu(9): error: expected an expression\n2 errors detected\n')
    msg = format_compile_error(source, log, "k.cu", "sm_90", "NVRTC_ERROR_COMPILATION")
    assert msg.splitlines()[0] == ('NVRTC failed to compile k.cu for sm_90 (NVRTC_ERROR_COMPILATION): first error: '
                                   'k.cu(5): error: identifier "undeclared_name" is undefined')
    assert "> 5 | line 5" in msg and ">  9 | line 9" in msg  # the blamed source lines
