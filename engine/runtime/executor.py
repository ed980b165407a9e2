"""The one executor interface: load a generated kernel for a back end and launch it.

Back ends are imported lazily so that `import engine` needs neither cupy nor a
compiler: "cuda" (NVRTC + driver launch, engine.runtime.cuda) and "emulate"
(g++ + fibers, engine.runtime.emulate).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Protocol, runtime_checkable

import torch

from engine.runtime.abi import ArgSpec, LaunchConfig, TensorArg

BACKENDS = ("cuda", "emulate")
# How many kernels the emulator compiles at once: $FUSESCOPE_EMU_JOBS, else the CPUs this
# process may use.
JOBS_ENV = "FUSESCOPE_EMU_JOBS"


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


def compile_jobs() -> int:
    """How many g++ processes load_kernels runs at once (at least 1)."""
    text = os.environ.get(JOBS_ENV, "").strip()
    if text:
        try:
            return max(1, int(text))
        except ValueError:
            raise ValueError(f"{JOBS_ENV}={text!r} is not a number of jobs") from None
    return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1)


def load_kernels(kernels: Sequence[tuple[str, str, list[ArgSpec]]], backend: str) -> list[Kernel | Exception]:
    """load_kernel for each (source, name, specs), in order: on the emulator several compile at
    once (compile_jobs(); g++ runs outside the GIL), elsewhere one after another. A kernel that
    fails to load is returned as its exception, so that one failure does not lose the others."""

    def one(job: tuple[str, str, list[ArgSpec]]) -> Kernel | Exception:
        try:
            return load_kernel(*job, backend)
        except Exception as e:  # returned, for the caller to raise where that kernel is used
            return e

    workers = min(len(kernels), compile_jobs()) if backend == "emulate" else 1
    if workers <= 1:
        return [one(job) for job in kernels]
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="fs-emu-compile") as pool:
        return list(pool.map(one, kernels))


Launcher = Callable[[list[object]], None]


def make_launcher(kernel: Kernel, launch: LaunchConfig, alloc_strides: dict[str, list[int]],
                  example: list[object], *, sync: bool = False) -> Launcher:
    """A function launching `kernel` on argument lists laid out as `example` (same sizes and
    strides each call): the CUDA back end's prepared launcher, or `kernel.launch` with the
    strides fixed for back ends without one."""
    prepare = getattr(kernel, "launcher", None)
    if prepare is None:
        return lambda values: kernel.launch(values, launch, alloc_strides=alloc_strides)
    specs = getattr(kernel, "specs", [])
    layouts = [_layout(spec, x, alloc_strides) if isinstance(spec, TensorArg) else None
               for spec, x in zip(specs, example)]
    return prepare(launch, layouts, sync=sync)


def _layout(spec: TensorArg, x: object, alloc_strides: dict[str, list[int]]) -> tuple[list[int], list[int]]:
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{spec.name}: expected a tensor, got {type(x).__name__}")
    strides = alloc_strides.get(spec.name)
    return list(x.shape), list(strides) if strides is not None else list(x.stride())
