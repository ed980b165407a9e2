"""A fusion's kernels are compiled for the emulator all at once, several g++ at a time."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
import torch

from engine.errors import CompileError
from engine.reference import evaluate
from engine.runtime import executor
from engine.runtime.emulate import EmulatedKernel
from tests.emulation import needs_gxx
from tests.engine.runtime.emu_kernels import compiled, kernel_job


@pytest.fixture(autouse=True)
def _fresh_cache(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setenv("FUSESCOPE_CACHE", str(tmp_path))


def test_compile_jobs_from_the_environment(monkeypatch) -> None:
    monkeypatch.setenv(executor.JOBS_ENV, "3")
    assert executor.compile_jobs() == 3
    monkeypatch.setenv(executor.JOBS_ENV, "0")
    assert executor.compile_jobs() == 1
    monkeypatch.setenv(executor.JOBS_ENV, "many")
    with pytest.raises(ValueError, match="FUSESCOPE_EMU_JOBS"):
        executor.compile_jobs()
    monkeypatch.delenv(executor.JOBS_ENV)
    assert executor.compile_jobs() >= 1


@needs_gxx
def test_load_kernels_keeps_order_and_returns_errors_in_place(monkeypatch) -> None:
    monkeypatch.setenv(executor.JOBS_ENV, "2")
    good = kernel_job("exp")
    other = kernel_job("sin")
    bad = (good[0].replace('extern "C" __global__', 'not_cuda;\nextern "C" __global__'), good[1], good[2])
    first, error, second = executor.load_kernels([good, bad, other], "emulate")
    assert isinstance(first, EmulatedKernel) and first.source == good[0]
    assert isinstance(error, CompileError) and "not_cuda" in str(error)
    assert isinstance(second, EmulatedKernel) and second.source == other[0]


@needs_gxx
def test_a_fusion_compiles_its_kernels_in_parallel_before_running(monkeypatch) -> None:
    monkeypatch.setenv(executor.JOBS_ENV, "2")
    threads: set[str] = set()
    load = executor.load_kernel

    def spy(*args):  # type: ignore[no-untyped-def]
        threads.add(threading.current_thread().name)
        return load(*args)

    monkeypatch.setattr(executor, "load_kernel", spy)
    cf, xs = compiled("exp", segments=3)
    kernels = [s for s in cf.segments if s.is_kernel]
    assert len(kernels) == 3
    out = cf.run(xs, backend="emulate")[0]
    assert all("emulate" in s._kernels for s in kernels)
    assert threads and all(name.startswith("fs-emu-compile") for name in threads)
    torch.testing.assert_close(out, evaluate(cf.fusion, xs)[0], rtol=1e-5, atol=1e-6)


@needs_gxx
def test_a_kernel_that_fails_to_compile_fails_its_own_segment(monkeypatch) -> None:
    cf, xs = compiled("exp", segments=2)
    seg = [s for s in cf.segments if s.is_kernel][1]
    seg.cuda_source = seg.cuda_source.replace('extern "C" __global__', 'not_cuda;\nextern "C" __global__')
    cf.load_kernels("emulate")
    assert "emulate" in cf.segments[0]._kernels and "emulate" not in seg._kernels
    with pytest.raises(CompileError, match=f"segment {seg.id} .*not_cuda"):
        cf.run(xs, backend="emulate")
