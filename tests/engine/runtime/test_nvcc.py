"""nvcc --ptx compile checks: the emulator's test kernels (conftest.py) are valid CUDA as they are."""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

import pytest

from engine.errors import CompileError
from engine.runtime.nvcc import nvcc_available, ptx_check

pytestmark = pytest.mark.skipif(not nvcc_available(), reason="nvcc is not installed")


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_emulator_test_kernels_are_valid_cuda(cuda_kernels: dict[str, str], arch: str) -> None:
    def check(name: str) -> str | None:
        try:
            ptx = ptx_check(cuda_kernels[name], arch)
        except CompileError as e:
            return f"{name}: {e}"
        if f".target {arch}" not in ptx or f".entry {name}(" not in ptx:
            return f"{name}: PTX lacks .target {arch} or .entry {name}"
        return None

    names = [n for n in cuda_kernels if n != "syntax_error"]
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:  # nvcc runs are independent
        failures = [f for f in pool.map(check, names) if f]
    assert not failures, "\n\n".join(failures)


def test_syntax_error_names_the_line(cuda_kernels: dict[str, str]) -> None:
    src = cuda_kernels["syntax_error"]
    line = next(i for i, ln in enumerate(src.splitlines(), start=1) if "T0.data[i] = 1.0f;" in ln)
    with pytest.raises(CompileError) as e:
        ptx_check(src, "sm_90")
    assert ("kernel.cu", line) in e.value.locations
    assert f">{line:5d} |   T0.data[i] = 1.0f;" in str(e.value)
    assert "expected a" in e.value.log


def test_result_is_cached(cuda_kernels: dict[str, str]) -> None:
    src = cuda_kernels["reverse"]
    assert ptx_check(src, "sm_90") == ptx_check(src, "sm_90")


def test_bad_arch_is_refused() -> None:
    with pytest.raises(ValueError):
        ptx_check("", "sm90; rm -rf /")
