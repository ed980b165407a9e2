"""The pipeline, as one flat list of named stages: segment, schedule, lower, render, run.

`compile_fusion(fd, inputs)` returns a CompiledFusion specialised to the input sizes:
each segment carries its scheduler, heuristic parameters, scheduled IR, kernel IR,
CUDA source and launch configuration; `run` executes the segments in order on the
chosen back end (reference, emulate or cuda).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from engine.config import Options
from engine.dtypes import to_torch
from engine.errors import CompileError, ExecutionError
from engine.ir.base import Val
from engine.ir.fusion import Fusion
from engine.ir.scalar import Scalar
from engine.ir.tensorview import TensorView
from engine.runtime.abi import LaunchConfig, TensorArg
from engine.trace import Trace

BACKENDS = ("reference", "emulate", "cuda")


def is_user_scheduled(fusion: Fusion) -> bool:
    """True when a user's schedule (fd.sched) already shaped the loops: keep it as written."""
    for tv in fusion.tensors():
        if not isinstance(tv, TensorView):
            continue
        dom = tv.domain
        if tv.compute_at_pos or any(i.is_parallelized for i in dom.loop):
            return True
        if [id(i) for i in dom.loop] != [id(i) for i in dom.logical]:
            return True
    return False


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
    kernel_name: str | None = None
    stages: dict[str, str] = field(default_factory=dict)
    lowered: Any = None
    _kernels: dict[str, Any] = field(default_factory=dict)

    @property
    def is_kernel(self) -> bool:
        return self.cuda_source is not None

    def kernel(self, backend: str) -> Any:
        k = self._kernels.get(backend)
        if k is None:
            from engine.runtime.executor import load_kernel

            k = load_kernel(self.cuda_source, self.kernel_name, self.lowered.kernel.params, backend)
            self._kernels[backend] = k
        return k

    def run(self, args: list[Any], backend: str) -> list[Any]:
        """Outputs of this segment for its inputs (torch tensors on the back end's device)."""
        from engine.reference import evaluate

        if backend == "reference" or not self.is_kernel:
            return evaluate(self.fusion, args)
        return _launch(self, args, backend)


def _logical_sizes(tv: TensorView, env: dict) -> list[int]:
    out = []
    for i in tv.domain.logical:
        if i.is_reduction:
            continue
        e = i.expanded_extent if i.expanded_extent is not None else i.extent
        out.append(int(e.evaluate(env)))
    return out


def _alloc_perm(tv: TensorView) -> list[int] | None:
    logical = [i for i in tv.domain.logical if not i.is_reduction]
    alloc = [i for i in tv.domain.maybe_allocation if not i.is_reduction]
    try:
        return [logical.index(i) for i in alloc]
    except ValueError:
        return None


def allocate(tv: TensorView, env: dict, device: torch.device) -> torch.Tensor:
    """An engine-allocated tensor: memory in allocation order, viewed in logical order."""
    sizes = _logical_sizes(tv, env)
    perm = _alloc_perm(tv)
    if perm is None:
        raise ExecutionError(f"{tv.short_name}: an allocation domain transformed beyond a permutation "
                             "is not supported by the kernel back ends yet")
    logical = [i for i in tv.domain.logical if not i.is_reduction]
    base_sizes = [1 if logical[p].is_broadcast else sizes[p] for p in perm]
    base = torch.empty(base_sizes, dtype=to_torch(tv.dtype), device=device)
    inv = [perm.index(k) for k in range(len(perm))]
    return base.permute(inv).expand(sizes) if sizes else base


def alloc_strides(tv: TensorView, t: torch.Tensor) -> list[int]:
    perm = _alloc_perm(tv)
    if perm is None:
        raise ExecutionError(f"{tv.short_name}: allocation domain is not a permutation of its logical domain")
    return [t.stride(p) for p in perm]


def _launch(seg: CompiledSegment, args: list[Any], backend: str) -> list[Any]:
    lowered = seg.lowered
    fusion = seg.fusion
    device = torch.device("cuda") if backend == "cuda" else torch.device("cpu")
    env = _bind(fusion, args)
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
            dt = {"nvfuser_index_t": torch.int64, "int64_t": torch.int64, "double": torch.float64,
                  "float": torch.float32, "int": torch.int32}.get(ctype, torch.float32)
            values[p.name] = (torch.zeros if zero else torch.empty)(n, dtype=dt, device=device)
    strides = {}
    for name, tv in lowered.tensors.items():
        t = values[name]
        if isinstance(t, torch.Tensor):
            strides[name] = alloc_strides(tv, t)
    for p in lowered.kernel.params:
        if p.name not in values:
            raise ExecutionError(f"{seg.kernel_name}: no value for kernel argument {p.name}")
    arg_list = [values[p.name] for p in lowered.kernel.params]
    seg.kernel(backend).launch(arg_list, seg.launch, alloc_strides=strides)
    return [outs[v.short_name] if isinstance(v, TensorView) else v for v in fusion.outputs]


def _bind(fusion: Fusion, args: list[Any]) -> dict:
    from engine.reference import Context, bind_input

    ctx = Context(torch.device("cpu"))
    for k, (v, x) in enumerate(zip(fusion.inputs, args)):
        bind_input(k, v, x, ctx)
    return ctx.env


@dataclass
class CompiledFusion:
    fusion: Fusion
    segments: list[CompiledSegment]
    trace: Trace
    options: Options
    signature: tuple
    segmented: Any = None

    @property
    def graph(self) -> Any:
        if self.segmented is None or not hasattr(self.segmented, "to_networkx"):
            raise CompileError("this compilation has no segment graph (the segmenter did not run)")
        return self.segmented.to_networkx()

    def run(self, inputs: Sequence[Any], backend: str = "emulate") -> list[Any]:
        if backend not in BACKENDS:
            raise ExecutionError(f"unknown back end {backend!r}; choose one of {', '.join(BACKENDS)}")
        device = torch.device("cuda") if backend == "cuda" else None
        if backend == "cuda" and not torch.cuda.is_available():
            raise ExecutionError("the cuda back end needs a GPU; use backend='emulate' or 'reference'")
        xs = [x.to(device) if device is not None and isinstance(x, torch.Tensor) else x for x in inputs]
        if backend == "emulate":
            xs = [x.cpu() if isinstance(x, torch.Tensor) else x for x in xs]
        if _signature(xs) != self.signature:
            raise ExecutionError(
                "inputs differ in shape, dtype or strides from those this fusion was compiled for "
                f"({_signature(xs)} vs {self.signature}); compile again with compile_fusion"
            )
        values: dict[int, Any] = {id(v): x for v, x in zip(self.fusion.inputs, xs)}
        for seg in self.segments:
            args = [_lookup(values, v, seg) for v in seg.input_vals]
            outs = seg.run(args, backend)
            for v, t in zip(seg.output_vals, outs):
                values[id(v)] = t
        return [_lookup(values, v, None) for v in self.fusion.outputs]


def _lookup(values: dict[int, Any], v: Val, seg: CompiledSegment | None) -> Any:
    if id(v) in values:
        return values[id(v)]
    if isinstance(v, Scalar) and v.value is not None:
        return v.value
    where = f"segment {seg.id}" if seg is not None else "the fusion's outputs"
    raise ExecutionError(f"{getattr(v, 'short_name', v)} is needed by {where} but no segment produced it")


def _signature(xs: Sequence[Any]) -> tuple:
    sig = []
    for x in xs:
        if isinstance(x, torch.Tensor):
            sig.append((tuple(x.shape), tuple(x.stride()), str(x.dtype)))
        else:
            sig.append(type(x).__name__)
    return tuple(sig)


def compile_fusion(fd: Any, inputs: Sequence[Any], options: Options | None = None) -> CompiledFusion:
    """Segment, schedule, lower and render `fd` (a FusionDefinition or Fusion) for `inputs`."""
    from engine.compile_stages import build_segments

    fusion: Fusion = fd.fusion if hasattr(fd, "fusion") else fd
    options = options or Options()
    trace = Trace()
    trace.stage("fusion_ir_original", str(fusion))
    segments, segmented = build_segments(fusion, list(inputs), options, trace)
    return CompiledFusion(fusion, segments, trace, options, _signature(list(inputs)), segmented)
