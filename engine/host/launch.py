"""A kernel segment's launch, settled once for its compiled sizes and replayed on every run.

A compiled fusion is specialised to its input signature, so everything a launch needs
besides the data (output shapes and strides, the kernel's packed argument layout, the launch
configuration) is the same on every call. The first call goes through the general path
(prepare_launch binds sizes, allocates, and the back end validates every argument); it
records where each kernel argument comes from, and later calls only allocate outputs with
torch.empty_strided, write data pointers and launch. Nothing here waits for the GPU.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch

from engine.allocation import alloc_strides, allocate, is_padded
from engine.dtypes import DataType, to_torch
from engine.errors import CompileError, ExecutionError
from engine.ir.tensorview import TensorView
from engine.reference import bind_env
from engine.runtime.abi import TensorArg
from engine.runtime.executor import make_launcher
from engine.runtime.fast_paths import Allocator, allocator
from engine.runtime.placement import run_device
from engine.runtime.profiler import tensor_bytes

if TYPE_CHECKING:
    from engine.compiled_segment import CompiledSegment

# Where a kernel argument or a segment output comes from.
ARG, OUT, WORK, VAL = 0, 1, 2, 3

_WORK_DTYPES = {"nvfuser_index_t": torch.int64, "int64_t": torch.int64, "double": torch.float64,
                "float": torch.float32, "int": torch.int32}


def work_dtype(ctype: str) -> torch.dtype:
    """The torch dtype of a kernel workspace declared with C type `ctype`: every element type
    the kernel may use for a grid reduction's partials (a max over bool keeps bool partials,
    which need bool memory, not float32)."""
    if ctype in _WORK_DTYPES:
        return _WORK_DTYPES[ctype]
    for d in DataType:
        if d not in (DataType.Null, DataType.Float4_e2m1fn) and d.cuda_name == ctype:
            return to_torch(d)
    raise KeyError(f"no torch dtype for the workspace C type {ctype!r}")


@dataclass(frozen=True)
class AllocSpec:
    """An output the launch allocates: its view's sizes and strides over fresh memory."""

    shape: tuple[int, ...]
    stride: tuple[int, ...]
    dtype: torch.dtype
    zero: bool = False  # a padded layout buffer: the padding must read as zeros

    def new(self, alloc: Allocator) -> torch.Tensor:
        t = alloc(self.shape, self.stride, self.dtype)
        return t.zero_() if self.zero else t


def alloc_spec(tv: TensorView, env: dict) -> AllocSpec:
    """What `allocation.allocate` makes for `tv`, read off a meta tensor (no memory)."""
    t = allocate(tv, env, torch.device("meta"))
    return AllocSpec(tuple(t.shape), tuple(t.stride()), t.dtype, is_padded(tv, env))


class SegmentLaunch:
    """Replays one kernel segment's launch; built by `first_launch`."""

    def __init__(self, seg: CompiledSegment, backend: str, device: torch.device, args: list[Any], prep: Any) -> None:
        self.seg = seg
        self.device = device
        self._alloc = allocator(device)
        inputs = {v.short_name if isinstance(v, TensorView) else v.inline(): k
                  for k, v in enumerate(seg.fusion.inputs)}
        lowered = seg.lowered
        self.allocs: list[AllocSpec] = []
        self.workspaces: list[tuple[int, torch.dtype, bool]] = []
        self.sources: list[tuple[int, int]] = []
        outs: dict[str, int] = {}
        for p in lowered.kernel.params:
            if p.name in inputs:
                self.sources.append((ARG, inputs[p.name]))
            elif isinstance(p, TensorArg) and p.name in lowered.tensors:
                outs[p.name] = len(self.allocs)
                self.sources.append((OUT, len(self.allocs)))
                self.allocs.append(alloc_spec(lowered.tensors[p.name], seg._env))
            else:
                ctype, n, zero = lowered.kernel.workspaces[p.name]
                self.sources.append((WORK, len(self.workspaces)))
                self.workspaces.append((n, work_dtype(ctype), zero))
        self.results = [_result(v, inputs, outs) for v in seg.fusion.outputs]
        # Tensor inputs' sizes and strides: the launcher's argument layout assumes them.
        self.layouts = {k: (x.shape, x.stride()) for k, x in enumerate(args) if isinstance(x, torch.Tensor)}
        kernel = seg.kernel(backend)
        self.launch = make_launcher(kernel, seg.launch, prep.alloc_strides, prep.args,
                                    sync=seg.sync_launches and backend == "cuda")
        # Workspaces per stream, kept across runs: a grid reduction's flags are zeroed once and
        # the kernel leaves them zero; stream order keeps two runs on one stream apart.
        self._kept: dict[Any, list[torch.Tensor]] = {}
        self._stream = _stream_key(device)
        # The first launch's workspaces, just queued on the current stream, serve the next
        # runs on it (a second call then allocates and zeroes nothing).
        if self.workspaces:
            self._kept[self._stream()] = [prep.args[i] for i, (kind, _) in enumerate(self.sources) if kind == WORK]

    def fits(self, args: list[Any]) -> bool:
        """True when `args` have the sizes and strides this launch was settled for."""
        for k, (shape, stride) in self.layouts.items():
            x = args[k]
            if not isinstance(x, torch.Tensor) or x.shape != shape or x.stride() != stride:
                return False
        return True

    def __call__(self, args: list[Any], into: dict[int, int] | None = None) -> list[Any]:
        """Launch on `args` (laid out as when settled; the caller knows they are) and return
        the segment's outputs. `into`: {output position: input position} of outputs to write
        into that input's buffer (engine.host.in_place), where its layout is the output's."""
        alloc = self._alloc
        outs = [a.new(alloc) for a in self.allocs] if not into else self._outputs_into(args, into)
        work = self._workspaces() if self.workspaces else []
        pick = (args, outs, work)
        values = [pick[kind][k] for kind, k in self.sources]
        try:
            self.launch(values)
        except (ExecutionError, CompileError) as e:
            self._kept.clear()  # a failed launch may leave the flags set
            raise type(e)(f"segment {self.seg.id} ({self.seg.scheduler}, kernel {self.seg.kernel_name}): {e}") from e
        return [pick[kind][k] if kind != VAL else k for kind, k in self.results]

    def _outputs_into(self, args: list[Any], into: dict[int, int]) -> list[torch.Tensor]:
        given: dict[int, torch.Tensor] = {}
        for out_pos, in_pos in into.items():
            kind, k = self.results[out_pos]
            x, spec = args[in_pos], self.allocs[k] if kind == OUT else None
            if spec is not None and not spec.zero and isinstance(x, torch.Tensor) and x.dtype == spec.dtype \
                    and tuple(x.shape) == spec.shape and x.stride() == spec.stride:
                given[k] = x
        return [given.get(k) if k in given else a.new(self._alloc) for k, a in enumerate(self.allocs)]

    def _workspaces(self) -> list[torch.Tensor]:
        key = self._stream()
        kept = self._kept.get(key)
        if kept is None:
            kept = [(torch.zeros if zero else torch.empty)(n, dtype=dt, device=self.device)
                    for n, dt, zero in self.workspaces]
            self._kept[key] = kept
        return kept


def _result(v: Any, inputs: dict[str, int], outs: dict[str, int]) -> tuple[int, Any]:
    if not isinstance(v, TensorView):
        return (VAL, v)
    if v.short_name in outs:
        return (OUT, outs[v.short_name])
    if v.short_name in inputs:
        return (ARG, inputs[v.short_name])
    raise ExecutionError(f"segment output {v.short_name} is neither allocated by its kernel nor an input")


def _stream_key(device: torch.device) -> Any:
    if device.type != "cuda":
        return lambda: None
    from engine.runtime.cuda import current_stream

    index = device.index if device.index is not None else torch.cuda.current_device()
    return lambda: current_stream(index)


def first_launch(seg: CompiledSegment, args: list[Any], backend: str) -> tuple[SegmentLaunch, list[Any]]:
    """Launch through the general path (every argument validated) and settle the replay."""
    prep = prepare_launch(seg, args, backend)
    outputs = launch_prepared(seg, prep, backend)
    device = run_device(backend, args)
    return SegmentLaunch(seg, backend, device, args, prep), outputs


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
        seg._env = bind_env(fusion, list(args))
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


def launch_segment(seg: CompiledSegment, args: list[Any], backend: str) -> list[Any]:
    """Launch a kernel segment: the replay settled at its first launch when `args` are laid
    out as then, else the general path (which settles a new replay)."""
    replay = seg._replays.get(backend)
    if replay is not None and replay.fits(args):
        return replay(args)
    replay, outputs = first_launch(seg, args, backend)
    seg._replays[backend] = replay
    return outputs


def launch_prepared(seg: CompiledSegment, prep: PreparedLaunch, backend: str) -> list[Any]:
    kwargs = {"sync": seg.sync_launches} if backend == "cuda" else {}
    try:
        seg.kernel(backend).launch(prep.args, seg.launch, alloc_strides=prep.alloc_strides, **kwargs)
    except ExecutionError as e:
        raise ExecutionError(f"segment {seg.id} ({seg.scheduler}, kernel {seg.kernel_name}): {e}") from e
    except CompileError as e:
        raise CompileError(f"segment {seg.id} ({seg.scheduler}, kernel {seg.kernel_name}): {e}") from e
    return [prep.outputs[v.short_name] if isinstance(v, TensorView) else v for v in seg.fusion.outputs]
