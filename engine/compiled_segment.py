"""A compiled segment: its scheduled fusion, kernel and launch, and how it runs: through the
reference evaluator's torch rules, or as a kernel whose arguments are bound (inputs, outputs,
intermediates and workspaces allocated) and launched on a back end.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch

from engine import reference
from engine.allocation import alloc_strides, allocate
from engine.compile_stages import bind_env
from engine.errors import CompileError, ExecutionError
from engine.ir.base import Val
from engine.ir.fusion import Fusion
from engine.ir.tensorview import TensorView
from engine.lower.smem import SharedMemoryUse
from engine.runtime import executor
from engine.runtime.abi import LaunchConfig, TensorArg
from engine.runtime.placement import run_device
from engine.runtime.profiler import tensor_bytes
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
        return _launch(self, args, backend)

    def _evaluate(self, args: list[Any], device: torch.device) -> list[Any]:
        """The segment's fusion through the reference evaluator's torch rules, on `device`."""
        if self.raw_inputs:
            raw = {self.fusion.inputs[k] for k in self.raw_inputs}
            return segment_graph._evaluate_segment(self.fusion, args, device, raw)
        return reference.evaluate(self.fusion, args, device)


@dataclass
class PreparedLaunch:
    """A kernel's arguments bound for one run: what launching and profiling need."""

    args: list[Any]
    alloc_strides: dict[str, list[int]]
    outputs: dict[str, torch.Tensor]
    bytes_read: int
    bytes_written: int


def prepare_launch(seg: CompiledSegment, args: list[Any], backend: str) -> PreparedLaunch:
    """Bind a kernel segment's inputs, allocate its outputs, intermediates and workspaces."""
    lowered = seg.lowered
    fusion = seg.fusion
    device = run_device(backend, args)
    if seg._env is None:
        seg._env = _bind(fusion, args)
    env = seg._env
    values: dict[str, Any] = {}
    for v, x in zip(fusion.inputs, args):
        values[v.short_name if isinstance(v, TensorView) else v.inline()] = x
    outs: dict[str, torch.Tensor] = {}
    for p in lowered.kernel.params:
        if p.name in values:
            continue
        if isinstance(p, TensorArg) and p.name in lowered.tensors:
            t = allocate(lowered.tensors[p.name], env, device)
            values[p.name] = t
            outs[p.name] = t
        elif isinstance(p, TensorArg):
            ctype, n, zero = lowered.kernel.workspaces[p.name]
            from engine.host.launch import work_dtype

            dt = work_dtype(ctype)
            values[p.name] = (torch.zeros if zero else torch.empty)(n, dtype=dt, device=device)
    strides = {}
    for name, tv in lowered.tensors.items():
        t = values[name]
        if isinstance(t, torch.Tensor):
            strides[name] = alloc_strides(tv, t, env)
    for p in lowered.kernel.params:
        if p.name not in values:
            raise ExecutionError(f"{seg.kernel_name}: no value for kernel argument {p.name}")
    read = sum(tensor_bytes(x) for x in args if isinstance(x, torch.Tensor))
    written = sum(tensor_bytes(outs[v.short_name]) for v in fusion.outputs if isinstance(v, TensorView))
    return PreparedLaunch([values[p.name] for p in lowered.kernel.params], strides, outs, read, written)


def _launch(seg: CompiledSegment, args: list[Any], backend: str) -> list[Any]:
    """Launch a kernel segment: the replay settled at its first launch when `args` are laid
    out as then, else the general path (which settles a new replay)."""
    from engine.host.launch import first_launch

    replay = seg._replays.get(backend)
    if replay is not None and replay.fits(args):
        return replay(args)
    replay, outputs = first_launch(seg, args, backend)
    seg._replays[backend] = replay
    return outputs


def _launch_prepared(seg: CompiledSegment, prep: PreparedLaunch, backend: str) -> list[Any]:
    kwargs = {"sync": seg.sync_launches} if backend == "cuda" else {}
    try:
        seg.kernel(backend).launch(prep.args, seg.launch, alloc_strides=prep.alloc_strides, **kwargs)
    except ExecutionError as e:
        raise ExecutionError(f"segment {seg.id} ({seg.scheduler}, kernel {seg.kernel_name}): {e}") from e
    except CompileError as e:
        raise CompileError(f"segment {seg.id} ({seg.scheduler}, kernel {seg.kernel_name}): {e}") from e
    return [prep.outputs[v.short_name] if isinstance(v, TensorView) else v for v in seg.fusion.outputs]


def _bind(fusion: Fusion, args: list[Any]) -> dict:
    return bind_env(fusion, args)
