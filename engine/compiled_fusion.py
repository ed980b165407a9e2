"""A compiled fusion: its segments, trace and host program, run on a back end (as a run plan
replayed per call, or through the host IR evaluator), replayed as CUDA graphs, profiled
(profiling.py); and the input signature it is specialised to.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from engine.compiled_segment import CompiledSegment
from engine.config import Options
from engine.errors import CompileError, ExecutionError
from engine.frontend.input_spec import input_signature as _signature
from engine.frontend.input_spec import signature_mismatch
from engine.host.evaluator import HostIrEvaluator
from engine.host.plan import RunPlan
from engine.ir.fusion import Fusion
from engine.profiling import Profiling
from engine.runtime import executor
from engine.runtime.graphs import GraphReplay
from engine.runtime.placement import run_device
from engine.segment_walk import SegmentWalk
from engine.trace import Trace

BACKENDS = ("reference", "emulate", "cuda")


@dataclass
class CompiledFusion(Profiling):
    fusion: Fusion
    segments: list[CompiledSegment]
    trace: Trace
    options: Options
    signature: tuple
    segmented: Any = None
    last_run: Any = None  # the host evaluator of the last run (its timeline when asked for)
    host_ir: Any = None  # engine.host.HostIrContainer: the program `run` executes
    # backend -> engine.host.plan.RunPlan, or False where the program needs the evaluator
    _plans: dict[str, Any] = field(default_factory=dict, repr=False)
    _graphs: GraphReplay | None = field(default=None, repr=False)

    @property
    def graph(self) -> Any:
        if self.segmented is None or not hasattr(self.segmented, "to_networkx"):
            raise CompileError("this compilation has no segment graph (the segmenter did not run)")
        return self.segmented.to_networkx()

    def _inputs_for(self, inputs: Sequence[Any], backend: str) -> list[Any]:
        if backend not in BACKENDS:
            raise ExecutionError(f"unknown back end {backend!r}; choose one of {', '.join(BACKENDS)}")
        if backend == "cuda" and not torch.cuda.is_available():
            raise ExecutionError("the cuda back end needs a GPU; use backend='emulate' or 'reference'")
        if backend == "cuda":
            xs = [x.cuda() if isinstance(x, torch.Tensor) else x for x in inputs]
        elif backend == "emulate":
            xs = [x.cpu() if isinstance(x, torch.Tensor) else x for x in inputs]
        else:
            xs = list(inputs)
        if _signature(xs) != self.signature:
            raise ExecutionError(
                f"{signature_mismatch(self.fusion.inputs, _signature(xs), self.signature)}: not the inputs "
                "this fusion was compiled for; compile again with compile_fusion"
            )
        return xs

    def load_kernels(self, backend: str) -> None:
        """Compile (or load from the disk cache) every kernel segment's kernel for `backend`
        now, several at once on the emulator. A kernel that fails to compile is left to its
        segment, which raises the error when it runs (after the segments before it)."""
        if backend != "emulate":
            return
        todo = [s for s in self.segments if s.is_kernel and backend not in s._kernels]
        if len(todo) < 2:
            return
        jobs = [(s.cuda_source, s.kernel_name, s.lowered.kernel.params) for s in todo]
        for seg, kernel in zip(todo, executor.load_kernels(jobs, backend)):
            if not isinstance(kernel, Exception):
                seg._kernels[backend] = kernel

    def run(self, inputs: Sequence[Any], backend: str = "emulate", *, timeline: bool = False,
            device: Any = None) -> list[Any]:
        """The fusion's outputs: the host program (segments in order, stream loops) on `backend`.

        The outputs are on the device the run computes on (engine.runtime.placement): the GPU
        for cuda, the CPU for emulate; for the reference, `device` when given, else the
        inputs' device, else the CPU (a fusion without tensor inputs follows `device`).
        Kernels are queued without waiting (Options.sync_launches waits after each); with
        `timeline` the evaluator records events per op, kept in `self.last_run`. Otherwise a
        program without stream statements runs as a RunPlan: per call, an input check and
        the kernel launches replayed at the compiled sizes."""
        if not timeline and device is None:
            plan = self._plans.get(backend)
            if plan:  # a repeated call: straight to the plan its first call made
                self.last_run = None
                return plan.run(inputs)
        if device is not None and backend in BACKENDS:
            run_device(backend, (), device)  # a device the back end cannot run on is refused
        self.load_kernels(backend)
        if not timeline and backend != "reference" and backend in BACKENDS:
            plan = self._plans.get(backend)
            if plan is None:
                plan = self._plans[backend] = self._plan(backend)
            if plan:
                self.last_run = None
                return plan.run(inputs)
        evaluator = HostIrEvaluator(self.host_ir, backend, record_timeline=timeline, device=device)
        self.last_run = evaluator
        return evaluator.run(self._inputs_for(inputs, backend))

    def walk(self, inputs: Sequence[Any]) -> SegmentWalk:
        """The segments in order with their arguments, for a caller that runs each itself
        (engine.segment_walk): `inputs` as the segments take them (on their back end's device)."""
        return SegmentWalk(self.fusion, self.segments, inputs)

    def graphs(self) -> GraphReplay:
        """CUDA-graph replays of this fusion's runs on the GPU (engine.runtime.graphs): a call
        on input buffers seen before replays their graph; the outputs are the graph's own,
        written again by its next replay."""
        if self._graphs is None:
            self.load_kernels("cuda")
            plan = self._plans.get("cuda")
            if plan is None:
                plan = self._plans["cuda"] = self._plan("cuda")
            if plan:
                self._graphs = GraphReplay(plan.check, plan.try_plain)
            else:
                self._graphs = GraphReplay(lambda xs: _signature(xs) == self.signature,
                                           lambda xs: self.run(xs, backend="cuda"))
        return self._graphs

    def _plan(self, backend: str) -> Any:
        if backend == "cuda" and not torch.cuda.is_available():
            raise ExecutionError("the cuda back end needs a GPU; use backend='emulate' or 'reference'")
        return RunPlan.build(self, backend) or False
