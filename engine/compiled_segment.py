"""A compiled segment: its scheduled fusion, kernel and launch, and how it runs: through the
reference evaluator's torch rules, or as a kernel whose arguments are bound (inputs, outputs,
intermediates and workspaces allocated) and launched on a back end.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch

from engine import reference
from engine.errors import ExecutionError
from engine.host.launch import launch_segment
from engine.ir.base import Val
from engine.ir.fusion import Fusion
from engine.lower.smem import SharedMemoryUse
from engine.runtime import executor
from engine.runtime.abi import LaunchConfig
from engine.runtime.placement import run_device
from engine.segment import graph as segment_graph


@dataclass
class CompiledSegment:
    id: int
    scheduler: str
    inputs: list[str]
    outputs: list[str]
    fusion: Fusion  # the scheduled clone this segment runs
    input_vals: list[Val]  # segment inputs, in the original fusion
    output_vals: list[Val]
    params: Any = None
    scheduled_ir: str = ""
    kernel_ir: str | None = None
    cuda_source: str | None = None
    launch: LaunchConfig | None = None
    # What the launch's dynamic shared memory holds (engine.lower.smem), set with `launch`.
    shared_memory: SharedMemoryUse | None = None
    # The widths (elements) of the kernel's vector copies, smallest first, set with `launch`.
    vector_widths: tuple[int, ...] = ()
    kernel_name: str | None = None
    stages: dict[str, str] = field(default_factory=dict)
    lowered: Any = None
    # Inputs passed as the raw buffer their op wrote (the layout op's padded output), by position.
    raw_inputs: set[int] = field(default_factory=set)
    # Positions of the inputs that are the fusion's own (their sizes and strides are the
    # compiled-for ones at every run); the others come from earlier segments.
    user_inputs: set[int] = field(default_factory=set)
    sync_launches: bool = False
    _env: dict | None = None  # extents at the compiled sizes (they never change: specialised)
    _kernels: dict[str, Any] = field(default_factory=dict)
    _replays: dict[str, Any] = field(default_factory=dict)  # backend -> engine.host.launch.SegmentLaunch

    @property
    def is_kernel(self) -> bool:
        return self.cuda_source is not None

    def kernel(self, backend: str) -> Any:
        k = self._kernels.get(backend)
        if k is None:
            k = executor.load_kernel(self.cuda_source, self.kernel_name, self.lowered.kernel.params, backend)
            self._kernels[backend] = k
        return k

    def run(self, args: list[Any], backend: str, device: Any = None) -> list[Any]:
        """Outputs of this segment for its inputs, on the device a run on `backend` computes on
        (engine.runtime.placement: `device` is the one asked for, None to follow the inputs)."""
        if backend == "reference" or not self.is_kernel:
            try:
                return self._evaluate(args, run_device(backend, args, device))
            except ExecutionError as e:
                raise ExecutionError(f"segment {self.id} ({self.scheduler}): {e}") from e
        return launch_segment(self, args, backend)

    def _evaluate(self, args: list[Any], device: torch.device) -> list[Any]:
        """The segment's fusion through the reference evaluator's torch rules, on `device`."""
        if self.raw_inputs:
            raw = {self.fusion.inputs[k] for k in self.raw_inputs}
            return segment_graph._evaluate_segment(self.fusion, args, device, raw)
        return reference.evaluate(self.fusion, args, device)
