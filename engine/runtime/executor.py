"""The one executor interface: load a generated kernel for a back end and launch it.

Back ends are imported lazily so that `import engine` needs neither cupy nor a
compiler: "cuda" (NVRTC + driver launch, engine.runtime.cuda) and "emulate"
(g++ + fibers, engine.runtime.emulate).
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import torch

from engine.runtime.abi import ArgSpec, LaunchConfig

BACKENDS = ("cuda", "emulate")


@runtime_checkable
class Kernel(Protocol):
    name: str

    def launch(self, args: list[torch.Tensor | float | int | bool], launch: LaunchConfig,
               alloc_strides: dict[str, list[int]] | None = None) -> None: ...


def cuda_available() -> bool:
    """True when kernels can run on a GPU here: torch sees one and cupy imports."""
    if not torch.cuda.is_available():
        return False
    try:
        import cupy  # noqa: F401
    except Exception:  # ImportError, or a cupy built for another CUDA failing to load
        return False
    return True


def load_kernel(source: str, name: str, specs: list[ArgSpec], backend: str) -> Kernel:
    """Compile `source` and return its kernel `name` for `backend` ("cuda" or "emulate")."""
    if backend == "cuda":
        from engine.runtime.cuda import CudaKernel

        return CudaKernel(source, name, specs)
    if backend == "emulate":
        from engine.runtime.emulate import EmulatedKernel

        return EmulatedKernel(source, name, specs)
    raise ValueError(f"unknown kernel back end {backend!r}; choose one of {', '.join(BACKENDS)}")
