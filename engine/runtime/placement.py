"""Where a run computes, and so where its outputs are: one rule for every back end.

- cuda: the GPU (the device asked for, else the one the tensor inputs are on, else the
  current CUDA device);
- emulate: the CPU, where the g++-compiled kernels run;
- reference: the device asked for, else the one the tensor inputs are on, else the CPU.

A fusion without tensor inputs (iota, full, uniform only) thus returns its outputs on the
device asked for: the GPU's for cuda, the caller's choice for the reference.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from engine.errors import ExecutionError

_BACKEND_DEVICE = {"cuda": "cuda", "emulate": "cpu"}


def run_device(backend: str, inputs: Sequence[Any] = (), requested: Any = None) -> torch.device:
    """The device a run of `inputs` on `backend` computes on; `requested` is the caller's
    device (a torch.device or its name), None to follow the inputs."""
    want = torch.device(requested) if requested is not None else None
    kind = _BACKEND_DEVICE.get(backend)
    if kind is not None and want is not None and want.type != kind:
        raise ExecutionError(f"the {backend} back end runs on the {'GPU' if kind == 'cuda' else 'CPU'}, "
                             f"not on device {str(want)!r}")
    if want is not None:
        return want
    on = next((x.device for x in inputs if isinstance(x, torch.Tensor)
               and (kind is None or x.device.type == kind)), None)
    if on is not None:
        return on
    return torch.device(kind or "cpu")
