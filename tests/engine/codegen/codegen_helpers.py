"""Helpers for the runtime-header and ops-table tests: build small kernels over the runtime
prelude, compile several at once for the emulator, compare results bit for bit."""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

import pytest
import torch

from engine.runtime.abi import ArgSpec
from engine.runtime.prelude import runtime_prelude

emulate = pytest.importorskip("engine.runtime.emulate")

if not emulate.gxx_available():  # pragma: no cover - CI always has g++
    pytest.skip("the emulator needs g++", allow_module_level=True)


def kernel_source(body: str) -> str:
    """A complete kernel text: the runtime prelude, then `body`."""
    return runtime_prelude() + "\n" + body


def compile_all(kernels: Sequence[tuple[str, str, list[ArgSpec]]]) -> list:
    """EmulatedKernels for (body, name, specs) triples, compiled in parallel (g++ runs in
    subprocesses, so threads overlap the compiles)."""
    with ThreadPoolExecutor(max_workers=max(1, len(kernels))) as pool:
        futures = [pool.submit(emulate.EmulatedKernel, kernel_source(b), n, s) for b, n, s in kernels]
        return [f.result() for f in futures]


def grid_stride_loop(n: str, body: str) -> str:
    """A grid-stride loop over i in [0, n): few emulated threads do many elements."""
    return (
        f"  for (nvfuser_index_t i = blockIdx.x * blockDim.x + threadIdx.x; i < {n};\n"
        f"       i += (nvfuser_index_t)blockDim.x * gridDim.x) {{\n{body}\n  }}\n"
    )


def bits(t: torch.Tensor) -> torch.Tensor:
    """The raw bits of a tensor as a signed integer tensor of the same element size."""
    if t.dtype == torch.bool:
        return t.to(torch.int8)
    view = {1: torch.int8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[t.element_size()]
    return t.view(view)


def mismatches(actual: torch.Tensor, expected: torch.Tensor, *, zero_sign: bool = True) -> torch.Tensor:
    """Mask of elements that differ: bit for bit, except that any NaN equals any NaN (NaN
    payloads are no contract, torch's own paths differ) and, when zero_sign is False,
    +0 equals -0."""
    assert actual.shape == expected.shape and actual.dtype == expected.dtype
    if actual.dtype.is_floating_point:
        a, e = actual.double(), expected.double()
        both_nan = torch.isnan(a) & torch.isnan(e)
        same = bits(actual) == bits(expected)
        if not zero_sign:
            same |= (a == 0) & (e == 0)
        return ~(same | both_nan)
    return actual != expected


def describe(mask: torch.Tensor, inputs: Sequence[torch.Tensor], actual: torch.Tensor,
             expected: torch.Tensor, limit: int = 6) -> str:
    idx = mask.nonzero().flatten()[:limit].tolist()
    rows = []
    for i in idx:
        ins = ", ".join(repr(x[i].item()) for x in inputs)
        rows.append(f"  ({ins}) -> {actual[i].item()!r}, expected {expected[i].item()!r}")
    return f"{int(mask.sum())} mismatches, e.g.\n" + "\n".join(rows)
