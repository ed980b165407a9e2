"""The pipeline, as one flat list of named stages: segment, schedule, lower, render, run.

`compile_fusion(fd, inputs)` returns a CompiledFusion specialised to the input sizes:
each segment carries its scheduler, heuristic parameters, scheduled IR, kernel IR,
CUDA source and launch configuration; `run` executes the segments in order on the
chosen back end (reference, emulate or cuda).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import torch

from engine import fusion_cache, gc_pause, reference
from engine.compile_stages import SegmentLoweringError, bind_env, build_segments
from engine.concretize import concretize, index_before_cast, remove_empty
from engine.config import Options
from engine.dtypes import DataType, to_torch
from engine.errors import CompileError, ExecutionError, NoSchedulerError
from engine.frontend.input_spec import signature_mismatch
from engine.ir.base import Val
from engine.ir.fusion import Fusion
from engine.ir.iterdomain import transforms_kept
from engine.ir.scalar import Scalar
from engine.ir.tensorview import TensorView
from engine.lower.smem import SharedMemoryUse
from engine.preseg import expanded_outputs_apart, matmul_without_reduction
from engine.runtime import executor
from engine.runtime.abi import LaunchConfig, TensorArg
from engine.runtime.graphs import GraphReplay
from engine.runtime.placement import run_device
from engine.runtime.profiler import profile_emulated, profile_kernel, tensor_bytes
from engine.segment import graph as segment_graph
from engine.segment.refusals import Refusals
from engine.segment.sizes import Sizes
from engine.shape_rules import check_sizes
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
    """An engine-allocated tensor: memory in allocation order, viewed in logical order.

    An allocation domain transformed beyond a permutation (a swizzle) gets contiguous
    logical storage of the same size, which the kernel fills in allocation order, as the
    reference evaluator returns such tensors. fp4 packs two values per byte along the
    contiguous innermost axis.
    """
    sizes = _logical_sizes(tv, env)
    dtype = to_torch(tv.dtype)
    perm = _alloc_perm(tv)
    packed = tv.dtype == DataType.Float4_e2m1fn
    if perm is None:
        if is_padded(tv, env):
            # A padded allocation (the layout op's): the buffer itself, padding zeroed, as the
            # reference returns it.
            return torch.zeros(_alloc_extents(tv, env), dtype=dtype, device=device)
        if packed:
            sizes = sizes[:-1] + [sizes[-1] // 2]
        return torch.empty(sizes, dtype=dtype, device=device)
    logical = [i for i in tv.domain.logical if not i.is_reduction]
    base_sizes = [1 if logical[p].is_broadcast else sizes[p] for p in perm]
    if packed and base_sizes:
        base_sizes[-1] //= 2
        sizes = list(sizes)
        sizes[perm[-1]] //= 2
    base = torch.empty(base_sizes, dtype=dtype, device=device)
    inv = [perm.index(k) for k in range(len(perm))]
    return base.permute(inv).expand(sizes) if sizes else base


def is_padded(tv: TensorView, env: dict) -> bool:
    """True when `tv`'s allocation (transformed beyond a permutation) holds more elements
    than its logical sizes: the layout op's padded buffer, which `allocate` zero-fills."""
    if _alloc_perm(tv) is not None:
        return False
    return math.prod(_alloc_extents(tv, env)) != math.prod(_logical_sizes(tv, env))


def _alloc_extents(tv: TensorView, env: dict) -> list[int]:
    alloc = [i for i in tv.domain.maybe_allocation if not i.is_reduction]
    return [int((i.expanded_extent or i.extent).evaluate(env)) for i in alloc]


def alloc_strides(tv: TensorView, t: torch.Tensor, env: dict | None = None) -> list[int]:
    """Strides (elements) of `tv`'s allocation ids for the tensor `t` that holds it."""
    perm = _alloc_perm(tv)
    if perm is not None:
        return [t.stride(p) for p in perm]
    if env is None or not t.is_contiguous():
        raise ExecutionError(f"{tv.short_name}: a transformed allocation domain needs an engine-allocated tensor")
    extents = _alloc_extents(tv, env)
    strides = [1] * len(extents)
    for k in range(len(extents) - 2, -1, -1):
        strides[k] = strides[k + 1] * extents[k + 1]
    return strides


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


@dataclass
class CompiledFusion:
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

    def profile(self, inputs: Sequence[Any], backend: str = "cuda", *, warmup: int = 3,
                repeat: int = 20) -> list[Any]:
        """A KernelProfile per kernel segment (time, bytes, GB/s, % of peak, resources);
        on the emulator, counts and wall time only."""
        xs = self._inputs_for(inputs, backend)
        self.load_kernels(backend)
        out: list[Any] = []

        def measure(seg: CompiledSegment, args: list[Any]) -> None:
            if not seg.is_kernel:
                return
            prep = prepare_launch(seg, args, backend)
            kernel = seg.kernel(backend)
            if backend == "cuda":
                out.append(profile_kernel(kernel, prep.args, seg.launch, warmup=warmup, repeat=repeat,
                                          bytes_read=prep.bytes_read, bytes_written=prep.bytes_written,
                                          alloc_strides=prep.alloc_strides))
            else:
                out.append(profile_emulated(kernel, prep.args, seg.launch, alloc_strides=prep.alloc_strides))

        _execute(self, xs, backend, measure)
        return out

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
        from engine.host.evaluator import HostIrEvaluator
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
                self._graphs = GraphReplay(plan.check, plan.try_run)
            else:
                self._graphs = GraphReplay(lambda xs: _signature(xs) == self.signature,
                                           lambda xs: self.run(xs, backend="cuda"))
        return self._graphs

    def _plan(self, backend: str) -> Any:
        from engine.host.plan import RunPlan

        if backend == "cuda" and not torch.cuda.is_available():
            raise ExecutionError("the cuda back end needs a GPU; use backend='emulate' or 'reference'")
        return RunPlan.build(self, backend) or False


def _execute(cf: CompiledFusion, xs: list[Any], backend: str, before=None) -> list[Any]:
    """Run the segments in order; `before(seg, args)` sees each segment's inputs first."""
    values: dict[int, Any] = {id(v): x for v, x in zip(cf.fusion.inputs, xs)}
    env = bind_env(cf.fusion, xs)
    for seg in cf.segments:
        args = [_lookup(values, v, seg, env) for v in seg.input_vals]
        if before is not None:
            before(seg, args)
        for v, t in zip(seg.output_vals, seg.run(args, backend)):
            values[id(v)] = t
    return [_lookup(values, v, None, env) for v in cf.fusion.outputs]


def _lookup(values: dict[int, Any], v: Val, seg: CompiledSegment | None, env: dict) -> Any:
    if id(v) in values:
        return values[id(v)]
    if isinstance(v, Scalar):
        try:
            return v.evaluate(env)
        except KeyError:
            pass
    where = f"segment {seg.id}" if seg is not None else "the fusion's outputs"
    raise ExecutionError(f"{getattr(v, 'short_name', v)} is needed by {where} but no segment produced it")


def _signature(xs: Sequence[Any]) -> tuple:
    sig = []
    for x in xs:
        if isinstance(x, torch.Tensor):
            # Kernels may use vector accesses that the compiled-for pointer alignment allowed.
            ptr = x.data_ptr()
            align = 16
            while align > 1 and ptr % align:
                align //= 2
            sig.append((tuple(x.shape), tuple(x.stride()), str(x.dtype), align))
        else:
            sig.append(type(x).__name__)
    return tuple(sig)


def _bound(fusion: Fusion, inputs: Sequence[Any]) -> Any:
    """A scalar of `fusion` evaluated at the sizes and scalar values of `inputs`."""
    env = bind_env(fusion, list(inputs))
    return lambda s: s.evaluate(env)


# Each refusal costs a segmentation: after this many, failing groups are split into single ops.
_SCHEDULER_REFUSALS = 4


# Compiles a fusion whose tensors carry device meshes for this rank's shards (installed by
# engine.multidevice, which `import engine` imports): this rank's program, its regions compiled.
MULTIDEVICE_COMPILE: Any = None


def compile_fusion(fd: Any, inputs: Sequence[Any], options: Options | None = None) -> CompiledFusion:
    """Segment, schedule, lower and render `fd` (a FusionDefinition or Fusion) for `inputs`.
    A definition compiled before for inputs of the same signature, with the same options,
    is not compiled again (engine.fusion_cache)."""
    original: Fusion = fd.fusion if hasattr(fd, "fusion") else fd
    options = options or Options()
    meshed = next((v for v in original.vals() if isinstance(v, TensorView) and v.device_mesh is not None), None)
    if meshed is not None:
        if MULTIDEVICE_COMPILE is None:
            raise CompileError(f"{meshed.short_name} has a device mesh: import engine.multidevice to compile it")
        return MULTIDEVICE_COMPILE(fd, inputs, options)
    reference.check_input_layouts(original, inputs)
    # The definition's listing is both part of the cache key and the first stage's text
    # (a clone keeps names, so it prints the same): printed once.
    listing = str(original)
    cache_key = fusion_cache.key(fd, inputs, options, listing if original is getattr(fd, "fusion", None) else None)
    cached = fusion_cache.get(cache_key)
    if cached is not None:
        return cached
    # The ops' size rules, from the sizes alone: a fusion that cannot run at these sizes is
    # refused before it is segmented, as the reference would refuse it.
    sizes = Sizes(original, inputs)
    check_sizes(original, sizes.sizes, sizes.value)
    refusals = Refusals()
    notes: list[tuple[str, str]] = []
    with gc_pause.held(), transforms_kept():
        while True:
            # The segmenter rewrites the fusion it segments (privatized casts, global
            # boundaries); the user's definition stays as written. Clones keep names.
            fusion, _ = original.clone()
            trace = Trace()
            trace.stage("fusion_ir_original", listing)
            value_of = _bound(fusion, inputs)
            concretize(fusion, value_of, trace)
            remove_empty(fusion, value_of, trace)
            index_before_cast(fusion, trace)
            matmul_without_reduction(fusion, trace)
            expanded_outputs_apart(fusion, trace)
            for note, rule in notes:
                trace.event("segment", "fusion", note, rule=rule)
            try:
                segments, segmented = build_segments(fusion, list(inputs), options, trace, refusals)
                break
            except SegmentLoweringError as e:
                # The schedulers' checks passed but the kernel could not be lowered. First that
                # scheduler is refused for the group (another may take it, or the segmenter
                # groups the ops otherwise); then the ops run as segments of their own rather
                # than not at all.
                if not e.exprs:
                    raise
                if e.scheduler and refusals.refuse(e.exprs, e.scheduler, str(e), _SCHEDULER_REFUSALS,
                                                   e.containing):
                    which = (f"every group holding its {len(e.containing)} reductions" if e.containing
                             else f"these {len(e.exprs)} ops")
                    notes.append((f"{e}; {e.scheduler} is refused for {which} and the fusion is "
                                  "segmented again", "refuse_scheduler"))
                    continue
                if not refusals.isolate(e.exprs, f"kept apart: a segment holding it failed to lower ({e})"):
                    raise
                notes.append((f"{e}; its {len(e.exprs)} ops are segmented again, each apart", "isolate"))
            except NoSchedulerError as e:
                # Forwarding replicates an input's cheap ops into its readers' segments; a
                # segment can become unschedulable by it (a pad whose input is no longer a
                # segment input). Without forwarding those ops run as segments of their own.
                # A group left unschedulable otherwise (its scheduler refused after its kernel
                # failed to lower) is split: its ops are segmented again, each apart.
                first = str(e).splitlines()[0].rstrip(":")
                if options.forwarding:
                    options = replace(options, forwarding=False)
                    notes.append((f"{first} with input forwarding: segmented again without it", "no_forwarding"))
                    continue
                if len(e.exprs) < 2 or not refusals.isolate(e.exprs, f"kept apart: {first}"):
                    raise
                notes.append((f"{first}: its {len(e.exprs)} ops are segmented again, each apart", "isolate"))
        cf = CompiledFusion(fusion, segments, trace, options, _signature(list(inputs)), segmented)
        from engine.host.lower import lower_to_host

        cf.host_ir = lower_to_host(cf, trace)
    fusion_cache.put(cache_key, cf)
    return cf
