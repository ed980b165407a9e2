"""Runs a host program (nvFuser's HostIrEvaluator).

On CUDA tensors the stream statements are real: a pool of torch CUDA streams indexed by
`StreamIdx % numberOfStreams`, `Synchronize` as an event the current stream waits on (the
host never blocks), the caller's stream restored at the end. On the CPU the same program
runs in order; streams only label the timeline. HirAliasSelect binds a view, so the op that
follows writes straight into its slice of the allocated buffer. Fusion-level exprs run
through the reference evaluator's torch rules; a kernel segment through `segment.run`.

Every op executed is recorded in the timeline (which stream, start, end): CUDA events on
the GPU (read once the work is done), host wall time on the CPU.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch

from engine.allocation import allocate
from engine.errors import ExecutionError
from engine.host import hir
from engine.ir import exprs as ex
from engine.ir.base import Expr, Val
from engine.ir.scalar import Scalar
from engine.reference import HANDLERS, Context, bind_input, finish_output
from engine.runtime.placement import run_device

# Pool streams per device, reused across runs as c10's stream pool is.
_POOL: dict[tuple[int, int], Any] = {}


@dataclass(frozen=True)
class TimelineEvent:
    op: str  # what ran: "Set -> T3", "LaunchKernel g2", ...
    stream: str  # "caller" or "pool 0", "pool 1", ...
    start: float  # milliseconds since the program started
    end: float
    iteration: int | None = None  # StreamIdx, inside a stream loop


class _Pending:
    """A GPU op's start and end events, turned into times once the work is done."""

    def __init__(self, op: str, stream: str, iteration: int | None, start: Any, end: Any) -> None:
        self.op, self.stream, self.iteration, self.start, self.end = op, stream, iteration, start, end


class HostIrEvaluator:
    def __init__(self, container: hir.HostIrContainer, backend: str = "reference", *,
                 record_timeline: bool = True, device: Any = None) -> None:
        self.container = container
        self.backend = backend
        self.device = device  # asked for by the caller (engine.runtime.placement), None: the inputs'

        self.record_timeline = record_timeline
        self._events: list[Any] = []
        self._origin: Any = None

    # ---- public ----------------------------------------------------------------------
    def run(self, inputs: Sequence[Any]) -> list[Any]:
        c = self.container
        if len(inputs) != len(c.inputs):
            raise ExecutionError(f"the host program takes {len(c.inputs)} inputs, got {len(inputs)}")
        device = run_device(self.backend, inputs, self.device)
        self.on_gpu = device.type == "cuda"
        self.ctx = Context(device)
        self.values: dict[int, Any] = {}
        for k, (v, x) in enumerate(zip(c.inputs, inputs)):
            self.values[id(v)] = bind_input(k, v, x, self.ctx)
        self.ctx.env[c.number_of_streams] = c.num_streams
        self._bound: dict[int, Any] = {}  # GetCurrentStream's Stream -> the stream it captured
        self._events = []
        self._iteration: int | None = None
        if self.on_gpu:
            caller = torch.cuda.current_stream(device)
            self._current = caller
            self._caller = caller
            if self.record_timeline:
                self._origin = torch.cuda.Event(enable_timing=True)
                self._origin.record(caller)
        else:
            self._current = "caller"
            self._origin = time.perf_counter()
        try:
            self._run_block(c.top_level)
        finally:
            if self.on_gpu:
                torch.cuda.set_stream(self._caller)
        return [self._value(v) for v in c.outputs]

    @property
    def timeline(self) -> list[TimelineEvent]:
        """The ops of the last run, in issue order (waits for the GPU work to finish)."""
        out = []
        if self._events and isinstance(self._events[0], _Pending):
            self._origin.synchronize()
        for e in self._events:
            if isinstance(e, _Pending):
                e.end.synchronize()
                out.append(TimelineEvent(e.op, e.stream, self._origin.elapsed_time(e.start),
                                         self._origin.elapsed_time(e.end), e.iteration))
            else:
                out.append(e)
        return out

    # ---- statements ------------------------------------------------------------------
    def _run_block(self, stmts: list[Any]) -> None:
        for s in stmts:
            self._run(s)

    def _run(self, s: Any) -> None:
        if isinstance(s, Expr):
            self._timed(self._label_expr(s), lambda: self._run_expr(s))
        elif isinstance(s, hir.HirAliasSelect):
            base = self._value(s.inp)
            self.values[id(s.out)] = base.select(s.dim, int(self._scalar(s.index)))
        elif isinstance(s, hir.ForLoop):
            n = int(self._scalar(s.axis.extent))
            for i in range(n):
                self.ctx.env[s.index] = i
                self._iteration = i
                self._run_block(s.body)
            self.ctx.env.pop(s.index, None)
            self._iteration = None
        elif isinstance(s, hir.Allocate):
            t = allocate(s.tv, self.ctx.env, self.ctx.device)
            self.values[id(s.tv)] = t.zero_() if s.zero_init else t
        elif isinstance(s, hir.Deallocate):
            # Dropping the last reference returns the memory to torch's caching allocator; the
            # caller's stream already waited for every pool stream that used it.
            self.values.pop(id(s.tv), None)
        elif isinstance(s, hir.GetCurrentStream):
            self._bound[id(s.stream)] = self._current
        elif isinstance(s, hir.SetCurrentStream):
            stream = self._stream(s.stream)
            if self.on_gpu:
                torch.cuda.set_stream(stream)
            self._current = stream
        elif isinstance(s, hir.Synchronize):
            if self.on_gpu:
                event = torch.cuda.Event()
                event.record(self._stream(s.stream))
                self._current.wait_event(event)
        elif isinstance(s, hir.LaunchKernel):
            self._timed(f"LaunchKernel g{s.segment.id}", lambda: self._run_segment(s.segment, s.inputs, s.outputs))
        elif isinstance(s, hir.PostOnStream):
            seg = s.unit.segment
            self._timed(f"HostUnit g{seg.id}", lambda: self._run_segment(seg, s.inputs, s.outputs))
        else:
            raise ExecutionError(f"the host evaluator cannot run {type(s).__name__}")

    def _run_expr(self, e: Expr) -> None:
        args = [self._value(v) for v in e.inputs]
        outs_pre = [self.values.get(id(v)) for v in e.outputs]
        if isinstance(e, ex.LoadStoreOp) and isinstance(outs_pre[0], torch.Tensor) and not e.is_permute:
            outs_pre[0].copy_(args[0])  # a set into a preallocated slice: one copy
            return
        handler = HANDLERS.get(type(e))
        if handler is None:
            raise ExecutionError(f"the host evaluator has no torch rule for {type(e).__name__}")
        try:
            results = handler(e, args, self.ctx)
        except ExecutionError as err:  # name the segment the op stands for
            where = self.container.where(e)
            if not where:
                raise
            raise ExecutionError(f"{where}{err}") from err
        except Exception as err:  # name the op at fault, keep the cause
            names = ", ".join(getattr(v, "short_name", "?") for v in e.outputs)
            raise ExecutionError(f"{self.container.where(e)}host op {type(e).__name__} producing {names} "
                                 f"failed: {err}") from err
        for v, pre, t in zip(e.outputs, outs_pre, results):
            if isinstance(pre, torch.Tensor):
                # The output is an allocated buffer or a slice of one: write into it.
                pre.copy_(t)
            else:
                # A host op hands a whole tensor to the next in global memory, in its
                # allocation layout (as the reference evaluator returns outputs).
                self.values[id(v)] = finish_output(v, t)

    def _run_segment(self, seg: Any, inputs: list[Val], outputs: list[Val]) -> None:
        args = [self._value(v) for v in inputs]
        for v, t in zip(outputs, seg.run(args, self.backend, self.ctx.device)):
            self.values[id(v)] = t

    # ---- helpers -----------------------------------------------------------------------
    def _value(self, v: Val) -> Any:
        if id(v) in self.values:
            return self.values[id(v)]
        if isinstance(v, Scalar):
            return self._scalar(v)
        raise ExecutionError(f"{getattr(v, 'short_name', v)} is read before the host program produced it")

    def _scalar(self, s: Scalar) -> Any:
        try:
            return s.evaluate(self.ctx.env)
        except KeyError as e:
            raise ExecutionError(f"scalar {s.inline()} has no value: {e}") from None

    def _stream(self, stream: hir.Stream) -> Any:
        if stream.index is None:
            if id(stream) not in self._bound:
                raise ExecutionError(f"{stream} is used before GetCurrentStream bound it")
            return self._bound[id(stream)]
        k = int(self._scalar(stream.index))
        if not self.on_gpu:
            return f"pool {k}"
        key = (self.ctx.device.index or 0, k)
        if key not in _POOL:
            _POOL[key] = torch.cuda.Stream(device=self.ctx.device)
        return _POOL[key]

    def _stream_label(self) -> str:
        if not self.on_gpu:
            return self._current
        if self._current == self._caller:
            return "caller"
        for (_dev, k), s in _POOL.items():
            if s == self._current:
                return f"pool {k}"
        return str(self._current)

    def _label_expr(self, e: Expr) -> str:
        outs = ", ".join(getattr(v, "short_name", "?") for v in e.outputs)
        kind = e.kind if isinstance(e, ex.LoadStoreOp) else None
        return f"{kind or e.op_name} -> {outs}"

    def _timed(self, op: str, fn: Any) -> None:
        if not self.record_timeline:
            fn()
            return
        label = self._stream_label()
        if self.on_gpu:
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record(self._current)
            fn()
            end.record(self._current)
            self._events.append(_Pending(op, label, self._iteration, start, end))
        else:
            t0 = time.perf_counter()
            fn()
            t1 = time.perf_counter()
            self._events.append(TimelineEvent(op, label, (t0 - self._origin) * 1e3, (t1 - self._origin) * 1e3,
                                              self._iteration))


def run_host_ir(container: hir.HostIrContainer, inputs: Sequence[Any],
                backend: str = "reference") -> tuple[list[Any], list[TimelineEvent]]:
    """The program's outputs for `inputs`, and the timeline of the run."""
    ev = HostIrEvaluator(container, backend)
    outs = ev.run(inputs)
    return outs, ev.timeline
