"""Per-call host work through torch's C++ entry points where torch has them.

A run plan's calls are dominated by a few torch operations done from Python: allocating the
outputs and comparing the inputs with the compiled signature. torch's Python argument parsing
costs more than the work itself there (on the H200 host, torch.empty_strided takes about 4.5 us
of Python, a size/stride/dtype comparison 0.3 us per attribute). torch.compile's generated code
uses two entry points of torch._C._dynamo.guards that skip it: `_empty_strided_cuda/_cpu`
(allocation on the current device) and `TensorGuards` (dtype, device, sizes, strides of many
tensors in one C++ call). Both are private, so each is taken only where this torch has it, and
every fast answer has the plain Python one behind it:

- `allocator(device)` returns a function (shape, stride, dtype) -> tensor;
- `SignatureGuard` answers True only when its C++ check passes; False means "ask the full check"
  (a requires_grad input or an input made in inference mode fails it and still runs).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch

_guards = getattr(getattr(torch._C, "_dynamo", None), "guards", None)
_EMPTY_CUDA = getattr(_guards, "_empty_strided_cuda", None)
_EMPTY_CPU = getattr(_guards, "_empty_strided_cpu", None)
_TENSOR_GUARDS = getattr(_guards, "TensorGuards", None)
_CUDA_DEVICE = getattr(torch._C, "_cuda_getDevice", None)

Allocator = Callable[[tuple[int, ...], tuple[int, ...], torch.dtype], torch.Tensor]


def allocator(device: torch.device) -> Allocator:
    """A function allocating uninitialised tensors (shape, stride, dtype) on `device`."""
    if device.type == "cpu" and _EMPTY_CPU is not None:
        return _EMPTY_CPU
    if device.type == "cuda" and _EMPTY_CUDA is not None and _CUDA_DEVICE is not None:
        index = device.index if device.index is not None else torch.cuda.current_device()
        empty, current = _EMPTY_CUDA, _CUDA_DEVICE

        def on_gpu(shape: tuple[int, ...], stride: tuple[int, ...], dtype: torch.dtype) -> torch.Tensor:
            # The C++ entry allocates on the current device: another one current goes the long way.
            if current() == index:
                return empty(shape, stride, dtype)
            return torch.empty_strided(shape, stride, dtype=dtype, device=device)

        return on_gpu

    def plain(shape: tuple[int, ...], stride: tuple[int, ...], dtype: torch.dtype) -> torch.Tensor:
        return torch.empty_strided(shape, stride, dtype=dtype, device=device)

    return plain


class SignatureGuard:
    """A quick yes to "do these inputs fit the signature they were first checked against".

    Built from inputs that passed the full check: their tensors' dtypes, devices, sizes and
    strides are compared in one C++ call, their data pointers against the alignments the
    kernels were compiled for, the other inputs' types by name. `None` from `build` where
    torch lacks the C++ check."""

    def __init__(self, guards: Any, tensors: list[int], aligns: list[tuple[int, int]],
                 others: list[tuple[int, str]], n: int) -> None:
        self._guards = guards
        self._tensors = tensors
        self._all_tensors = len(tensors) == n
        self._aligns = aligns
        self._others = others
        self._n = n

    @classmethod
    def build(cls, xs: Sequence[Any], aligns: Sequence[int | None]) -> SignatureGuard | None:
        """`aligns[k]`: the data alignment input k must keep (None for a non-tensor)."""
        if _TENSOR_GUARDS is None:
            return None
        tensors = [k for k, x in enumerate(xs) if isinstance(x, torch.Tensor)]
        ts = [xs[k] for k in tensors]
        try:
            guards = _TENSOR_GUARDS(*ts, dynamic_dims_sizes=[list(t.shape) for t in ts],
                                    dynamic_dims_strides=[list(t.stride()) for t in ts])
            if not guards.check(*ts):
                return None
        except Exception:  # noqa: BLE001 - a torch whose private check takes other arguments
            return None
        need = [(k, a) for k, a in enumerate(aligns) if a is not None and a > 1]
        others = [(k, type(x).__name__) for k, x in enumerate(xs) if not isinstance(x, torch.Tensor)]
        return cls(guards, tensors, need, others, len(xs))

    def __call__(self, xs: list[Any]) -> bool:
        if len(xs) != self._n:
            return False
        if self._all_tensors:
            if not self._guards.check(*xs):
                return False
        else:
            for k, name in self._others:
                if type(xs[k]).__name__ != name:
                    return False
            if not self._guards.check(*[xs[k] for k in self._tensors]):
                return False
        for k, a in self._aligns:
            if xs[k].data_ptr() % a:
                return False
        return True
