"""The one adapter between the debugger and the engine: the only fusescope module that imports
`engine`. Widgets and the CLI see plain data (strings, dataclasses), never engine objects, so
the UI can't reach into the IR and the engine can change behind this file.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from engine import load_fusion
from engine.errors import EngineError, FusionDefinitionError
from engine.ir.printer import transforms_block
from fusescope.launch_text import LaunchInfo, launch_lines, plan_text, why_line
from fusescope.render.decision_log import annotate, collapse, counted, why_lines

if TYPE_CHECKING:
    from engine import FusionDefinition
    from fusescope.md_model import MultiDeviceInfo
    from fusescope.progress import Reporter, RunProgress

Role = Literal["input", "output", "intermediate"]
# A run that takes longer is stopped (the worker is killed): a hung kernel must not hang us.
DEFAULT_RUN_TIMEOUT_S = 300.0


class LoadError(Exception):
    """A fusion could not be loaded; the message is one line meant for the user."""


class ExportError(Exception):
    """A segment graph could not be exported; the message is one line meant for the user."""


@dataclass(frozen=True)
class TensorInfo:
    name: str  # "T3", the name the listing uses
    text: str  # the full TensorView string, e.g. T0_g_float[bS0{1}, iS1{4096}]
    dtype: str  # CUDA spelling, as in the listing: float, __bfloat, ...
    role: Role
    transforms: str  # the seed-001 transform block


@dataclass(frozen=True)
class ValueInfo:
    """A fusion input or output as the listing prints it (a tensor or a scalar)."""

    name: str
    text: str
    is_tensor: bool


@dataclass
class Session:
    """A loaded fusion and the text views derived from it."""

    fd: FusionDefinition
    path: Path | None
    title: str
    listing: str
    inputs: list[ValueInfo]
    outputs: list[ValueInfo]
    tensors: dict[str, TensorInfo] = field(default_factory=dict)
    # The file's text as it was read: what the worker process compiles and runs, so that a
    # file edited since is not mixed with the loaded one. None for a fusion built in Python.
    source: str | None = field(default=None, repr=False)
    # One compilation per set of options: (CompiledFusion or None, result).
    _compiled: dict[CompileOptions, tuple[object | None, CompileResult]] = field(default_factory=dict, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    # Every run of this session, oldest first (the Run view compares the last two; a bundle
    # keeps them). A bundle's recorded runs are here too.
    runs: list[RunResult] = field(default_factory=list)
    # The multi-device view, once made (a one-item list: None is a single-device fusion).
    _multidevice: list[MultiDeviceInfo | None] = field(default_factory=list, repr=False)

    @classmethod
    def from_definition(
        cls, fd: FusionDefinition, path: Path | None = None, title: str | None = None
    ) -> Session:
        fusion = fd.fusion
        ins = {id(v) for v in fusion.inputs}
        outs = {id(v) for v in fusion.outputs}
        tensors: dict[str, TensorInfo] = {}
        for tv in fusion.tensors():
            role: Role = "input" if id(tv) in ins else "output" if id(tv) in outs else "intermediate"
            tensors[tv.short_name] = TensorInfo(
                name=tv.short_name,
                text=str(tv),
                dtype=tv.dtype.cuda_name,
                role=role,
                transforms=transforms_block(tv),
            )
        return cls(
            fd=fd,
            path=path,
            title=title or (path.name if path is not None else "untitled fusion"),
            listing=str(fusion),
            inputs=[_value_info(v) for v in fusion.inputs],
            outputs=[_value_info(v) for v in fusion.outputs],
            tensors=tensors,
        )

    def multidevice(self) -> MultiDeviceInfo | None:
        """The fusion's shardings, program steps and per-rank host IR when its tensors carry
        device meshes (fusescope.md_model); None for a single-device fusion."""
        if not self._multidevice:
            from fusescope.md_model import multidevice_info

            self._multidevice.append(multidevice_info(self.fd))
        return self._multidevice[0]

    def transforms(self, name: str) -> str:
        """The transform block of tensor `name` (e.g. "T7"), with its sharding line for a
        multi-device fusion; KeyError names the tensor."""
        try:
            block = self.tensors[name].transforms
        except KeyError:
            known = ", ".join(self.tensors) or "none"
            raise KeyError(f"no tensor {name} in {self.title} (tensors: {known})") from None
        info = self.multidevice()
        return block if info is None else block.rstrip("\n") + "\n" + info.sharding_line(name) + "\n"

    # ---- compilation, exports and runs ------------------------------------------------
    def compiled(self, options: CompileOptions | None = None) -> CompileResult | None:
        """The compilation for `options` if it was made already, without compiling."""
        entry = self._compiled.get(options or CompileOptions())
        return entry[1] if entry is not None else None

    def compile(self, options: CompileOptions | None = None) -> CompileResult:
        """Segment, schedule, lower and generate CUDA at the file's example inputs (cached per
        options). Failures are the result's `error`, one line; nothing here raises for them."""
        options = options or CompileOptions()
        with self._lock:  # the TUI compiles in a thread; two views may ask at once
            if options not in self._compiled:
                self._compiled[options] = _compile(self.fd, options)
            return self._compiled[options][1]

    def export(self, fmt: str, path: str | Path | None = None, options: CompileOptions | None = None) -> str | bytes:
        """The segment graph as dot, json, mermaid, svg or png (written to `path` when given).
        Raises ExportError (one line) when there is no graph or the format cannot be made."""
        from engine.errors import EngineError
        from engine.segment.export import export

        result = self.compile(options)
        if result.error:
            raise ExportError(f"no segment graph: {result.error}")
        cf = self._compiled[options or CompileOptions()][0]
        sf = getattr(cf, "segmented", None)
        if sf is None:
            raise ExportError(result.note or "no segment graph for this fusion")
        try:
            return export(sf, fmt, path)
        except (EngineError, ValueError, OSError) as e:
            raise ExportError(_one_line(str(e))) from e

    def fusion_source(self) -> str:
        """The fusion-file text the worker process reads (the file as loaded, else written)."""
        if self.source is None:
            from engine import dumps_fusion

            self.source = dumps_fusion(self.fd)
        return self.source

    def run(self, backend: str = "emulate", options: CompileOptions | None = None, *,
            profile: bool = False, timeout: float = DEFAULT_RUN_TIMEOUT_S,
            on_progress: Callable[[RunProgress], None] | None = None,
            cancel: threading.Event | None = None) -> RunResult:
        """Compile and run the fusion on `backend` in the worker process, validated against
        the reference evaluator. A crash or hang there is the result's status, never ours.
        `on_progress` gets the worker's reports (fusescope.progress) as it goes; setting
        `cancel` stops the worker, and the result's status is "cancelled" (not kept in runs)."""
        from fusescope.progress import STARTING

        options = options or CompileOptions()
        job = RunJob(self.fusion_source(), self.title, options, backend, profile)
        w = worker()
        if on_progress is not None and not w.alive:
            on_progress(STARTING)
        outcome = w.call(job, timeout, on_progress=on_progress, cancel=cancel)
        if outcome.status == "ok":
            assert isinstance(outcome.value, RunResult)
            result = outcome.value
        else:
            result = RunResult(backend=backend, status=outcome.status,
                               message=_name_segment(outcome.message, outcome.details),
                               options=options, profiled=profile)
        if result.status != "cancelled":  # a cancelled run measured nothing worth keeping
            self.runs.append(result)
        return result


# The worker child prints this before each segment runs, into its log: when the worker dies
# or hangs, the last such line in the log names the segment that was running.
RUNNING_MARK = "fusescope: running segment "


def _name_segment(message: str, log: str) -> str:
    """`message` about a dead or hung worker, led by the segment that was running."""
    marks = [ln for ln in log.splitlines() if ln.startswith(RUNNING_MARK)]
    if not marks:
        return message
    mark = marks[-1]
    # The worker quotes its last output, which is this very line: once is enough.
    message = message.replace(f" (its last output: {mark[:200]})", "")
    return f"segment {mark[len(RUNNING_MARK):].strip()}: {message}"


def _value_info(v: object) -> ValueInfo:
    from engine.ir.tensorview import TensorView

    if isinstance(v, TensorView):
        return ValueInfo(v.short_name, str(v), True)
    return ValueInfo(str(v), str(v), False)


def load_session(path: str | Path) -> Session:
    """Read a fusion file (nvFuser's python-frontend format) without running it.

    Every failure the user can cause (missing file, unreadable file, a FusionFileError or
    FusionDefinitionError from the engine) becomes a LoadError with one line of text.
    """
    p = Path(path)
    if not p.exists():
        raise LoadError(f"no such file: {p}")
    if p.is_dir():
        raise LoadError(f"{p} is a folder, not a fusion file")
    if p.suffix.lower() == ".json":  # a session bundle: its fusion and recorded runs
        from fusescope.bundle import BundleError, load

        try:
            session = load(p)
        except BundleError as e:
            raise LoadError(str(e)) from None
        session.path = p
        return session
    try:
        fd = load_fusion(str(p))
    except (EngineError, OSError, UnicodeDecodeError) as e:
        raise LoadError(_one_line(f"{type(e).__name__}: {e}")) from e
    session = Session.from_definition(fd, path=p)
    try:
        session.source = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        pass  # read a moment ago by the engine; if it vanished, fusion_source() writes the fd
    return session


def skipped_summary(fd: FusionDefinition) -> str | None:
    """One line on what the loader skipped, unread: what the fusion does not need (imports,
    helpers, other tests) and, after the script ran its fusion, the repro's own checks; None
    when it skipped nothing."""
    skipped = fd.skipped_statements
    if not skipped:
        return None
    spans: list[list[int]] = []  # adjacent statements merged: "lines 49-56"
    for s in skipped:
        if spans and s.first_line <= spans[-1][1] + 1:
            spans[-1][1] = max(spans[-1][1], s.last_line)
        else:
            spans.append([s.first_line, s.last_line])
    lines = ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in spans)
    if all("checking code after the run" in s.reason for s in skipped):
        what = "after the run skipped, not evaluated (the script's own checks)"
    else:
        what = "skipped, not evaluated (not needed by the fusion, or the script's own checks after the run)"
    return f"{len(skipped)} statement{'s' if len(skipped) > 1 else ''} {what}: line{'s' if len(skipped) > 1 else ''} {lines}"


def session_from_source(source: str, title: str) -> Session:
    """A session from fusion-file text (a bundle's): parsed by the engine, never executed."""
    from engine import loads_fusion

    try:
        fd = loads_fusion(source, title)
    except EngineError as e:
        raise LoadError(_one_line(f"{type(e).__name__}: {e}")) from e
    session = Session.from_definition(fd, title=title)
    session.source = source
    return session


def input_specs(session: Session) -> list[dict[str, object]]:
    """Shape, dtype and strides of each example input (sizes only: meta tensors)."""
    try:
        xs = session.fd.example_inputs(device="meta")
    except Exception:  # no inputs list, or specs the engine cannot build: nothing to record
        return []
    return [{"shape": list(x.shape), "dtype": str(x.dtype).removeprefix("torch."), "strides": list(x.stride())}
            if hasattr(x, "shape") else {"scalar": repr(x)} for x in xs]


def _one_line(text: str) -> str:
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    return " | ".join(lines)


# ---- scheduling decisions ------------------------------------------------------------------
# Trace kinds that are a scheduler's decisions about one segment (verdicts, heuristics, the
# choice); the segmenter's own decisions are SEGMENTER_KINDS below.
DECISION_KINDS = ("can_schedule", "heuristic", "schedule")


@dataclass(frozen=True)
class VerdictInfo:
    scheduler: str  # nvFuser's name, e.g. "pointwise"
    accepted: bool
    reason: str  # empty when accepted
    text: str  # nvFuser's line: "Scheduler _pointwise_ ***rejected*** because : ..."


@dataclass(frozen=True)
class EventInfo:
    kind: str  # "can_schedule", "heuristic", "schedule", "merge", ...
    subject: str  # "g2" for a segment's events
    message: str
    text: str  # "[kind] subject: message", as the engine prints an event


# ---- compilation ----------------------------------------------------------------------------
# compile_fusion segments, schedules, lowers and renders CUDA for the file's example inputs.
# The result is flattened into plain data here so that views and the CLI never hold engine
# objects; the CompiledFusion itself stays inside the session (exports need it).

# Trace kinds that are the segmenter's decisions (the rest are per-segment scheduling detail,
# shown by the Schedule view and `show --why`).
SEGMENTER_KINDS = ("segment", "fold", "forward", "merge", "narrow")


DEVICE_MODELS = ("H100", "H200", "A100")  # engine.runtime.device.MODELS, for the Options view


@dataclass(frozen=True)
class CompileOptions:
    """The compile options the debugger lets a user change (a plain mirror of engine Options,
    hashable so that the session keeps one compilation per set of options)."""

    forwarding: bool = True
    force_scheduler: str | None = None
    num_streams: int = 4
    device_model: str | None = None  # None: the real GPU when present, else the H200 model
    # Sorted (key, value) pairs: "vectorization_factor", "lparams.bdimx", "g1.unroll_factor"...
    heuristic_overrides: tuple[tuple[str, int | float | bool], ...] = ()
    # Sorted (segment id, CUDA source) pairs that replace generated kernels.
    kernel_sources: tuple[tuple[int, str], ...] = ()
    # Sorted (name, sizes) pairs: the sizes of a fusion without an inputs list, at which it is
    # compiled and run ("T0" -> (4096, 8192), a symbolic size "i0" or a scalar input "i4" ->
    # (64,), "*" -> (1024,) for every other symbolic size); see engine.frontend.example_inputs.
    input_sizes: tuple[tuple[str, tuple[int | float, ...]], ...] = ()

    def with_(self, **changes: Any) -> CompileOptions:
        """A copy with `changes`; dict values for the three tables are sorted into pairs."""
        for name in ("heuristic_overrides", "kernel_sources", "input_sizes"):
            if isinstance(changes.get(name), dict):
                changes[name] = tuple(sorted(changes[name].items()))
        if "input_sizes" in changes:
            changes["input_sizes"] = tuple((k, tuple(v)) for k, v in changes["input_sizes"])
        return replace(self, **changes)

    def sizes(self) -> dict[str, list[int | float]] | None:
        """input_sizes as FusionDefinition.example_inputs takes them; None when there are none."""
        return {k: list(v) for k, v in self.input_sizes} or None

    def describe(self) -> str:
        parts = [f"forwarding {'on' if self.forwarding else 'off'}"]
        if self.force_scheduler:
            parts.append(f"scheduler forced to {self.force_scheduler}")
        parts.append(f"{self.num_streams} streams")
        if self.device_model:
            parts.append(f"device model {self.device_model}")
        parts += [f"{k}={v}" for k, v in self.heuristic_overrides]
        parts += [f"g{sid} kernel replaced" for sid, _ in self.kernel_sources]
        if self.input_sizes:
            parts.append("sizes " + " ".join(f"{k}={','.join(map(str, v))}" for k, v in self.input_sizes))
        return ", ".join(parts)

    def to_dict(self) -> dict[str, object]:
        return {"forwarding": self.forwarding, "force_scheduler": self.force_scheduler,
                "num_streams": self.num_streams, "device_model": self.device_model,
                "heuristic_overrides": dict(self.heuristic_overrides),
                "kernel_sources": {str(k): v for k, v in self.kernel_sources},
                "input_sizes": {k: list(v) for k, v in self.input_sizes}}

    @classmethod
    def from_dict(cls, d: object) -> CompileOptions:
        """The inverse of to_dict; ValueError names the field that is wrong."""
        if not isinstance(d, dict):
            raise ValueError(f"options must be an object, got {type(d).__name__}")
        unknown = sorted(set(d) - set(cls().to_dict()))
        if unknown:
            raise ValueError(f"options: unknown field {unknown[0]!r}")
        fwd = d.get("forwarding", True)
        force = d.get("force_scheduler")
        streams = d.get("num_streams", 4)
        device = d.get("device_model")
        overrides = d.get("heuristic_overrides", {})
        sources = d.get("kernel_sources", {})
        sizes = d.get("input_sizes", {})
        if not isinstance(fwd, bool):
            raise ValueError("options.forwarding must be true or false")
        if force is not None and not isinstance(force, str):
            raise ValueError("options.force_scheduler must be a string or null")
        if not isinstance(streams, int) or isinstance(streams, bool) or not 1 <= streams <= 64:
            raise ValueError("options.num_streams must be an integer from 1 to 64")
        if device is not None and device not in DEVICE_MODELS:
            raise ValueError(f"options.device_model must be one of {', '.join(DEVICE_MODELS)} or null")
        if not isinstance(overrides, dict) or not all(
                isinstance(k, str) and isinstance(v, int | float | bool) for k, v in overrides.items()):
            raise ValueError("options.heuristic_overrides must map names to numbers or booleans")
        if not isinstance(sources, dict) or not all(
                isinstance(k, str) and k.isdigit() and isinstance(v, str) for k, v in sources.items()):
            raise ValueError("options.kernel_sources must map segment ids to CUDA source text")
        if not isinstance(sizes, dict) or not all(
                isinstance(k, str) and isinstance(v, list) and v and all(
                    isinstance(x, int | float) and not isinstance(x, bool) for x in v) for k, v in sizes.items()):
            raise ValueError("options.input_sizes must map input names to lists of numbers")
        return cls(fwd, force, streams, device, tuple(sorted(overrides.items())),
                   tuple(sorted((int(k), v) for k, v in sources.items())),
                   tuple(sorted((k, tuple(v)) for k, v in sizes.items())))


def scheduler_names() -> list[str]:
    """The engine's schedulers in priority order (what force_scheduler accepts)."""
    from engine.schedule.registry import PRIORITY

    return [str(p) for p in PRIORITY]


def compare_compiles(before: CompileResult, after: CompileResult, runs: Sequence[RunResult] = ()) -> str:
    """What changed from `before` to `after`: options, segment count, each segment's scheduler
    and parameters, and the last run's total time under each (from `runs`)."""
    out = [f"options: {before.options.describe()}  ->  {after.options.describe()}"]
    if before.error or after.error:
        out.append(f"before: {before.error or 'compiled'}; after: {after.error or 'compiled'}")
        return "\n".join(out) + "\n"
    out.append(f"segments: {len(before.segments)} -> {len(after.segments)}; boundary bytes: "
               f"{human_bytes(before.boundary_bytes)} -> {human_bytes(after.boundary_bytes)}")
    old = {s.id: s for s in before.segments}
    for s in after.segments:
        b = old.pop(s.id, None)
        if b is None:
            out.append(f"  g{s.id}: new ({s.scheduler}, {s.ops} ops)")
        elif (b.scheduler, b.ops) != (s.scheduler, s.ops):
            out.append(f"  g{s.id}: {b.scheduler}, {b.ops} ops -> {s.scheduler}, {s.ops} ops")
        elif b.params != s.params or b.cuda_source != s.cuda_source:
            changed = [f"{x} -> {y}" for x, y in zip(b.params.splitlines(), s.params.splitlines()) if x != y]
            replaced = s.id in dict(after.options.kernel_sources)
            what = "; ".join(ln.strip() for ln in changed) or (
                "kernel source replaced by the user" if replaced else "the generated kernel differs")
            out.append(f"  g{s.id} ({s.scheduler}): {what}")
    out += [f"  g{sid}: gone ({b.scheduler}, {b.ops} ops)" for sid, b in old.items()]
    for label, options in (("before", before.options), ("after", after.options)):
        last = next((r for r in reversed(runs) if r.options == options and r.total_ms is not None), None)
        out.append(f"last run {label}: " + (f"{fmt_ms(last.total_ms)} on {last.backend}" if last
                                             else "none yet (x then e runs it)"))
    return "\n".join(out) + "\n"


class OptionError(ValueError):
    """An option the user typed is malformed; the message is one line naming it."""


def parse_heuristic(text: str) -> tuple[str, int | float | bool]:
    """"KEY=VALUE" (e.g. "g1.vectorization_factor=2") -> (key, int, float or bool value)."""
    key, sep, raw = (part.strip() for part in text.partition("="))
    if not sep or not key or not raw:
        raise OptionError(f"heuristic override {text!r}: write KEY=VALUE, e.g. vectorization_factor=2")
    if raw.lower() in ("true", "false"):
        return key, raw.lower() == "true"
    for kind in (int, float):
        try:
            return key, kind(raw)
        except ValueError:
            pass
    raise OptionError(f"heuristic override {key!r}: {raw!r} is not a number or true/false")


def parse_size(text: str) -> tuple[str, tuple[int | float, ...]]:
    """`--size` text -> (name, numbers): "T0=4096,8192" (an input's shape, or its symbolic
    sizes), "i0=64" (a symbolic size or a scalar input's value), "1024" (every other symbolic
    size, the name "*")."""
    key, sep, raw = (part.strip() for part in text.partition("="))
    if not sep:
        key, raw = "*", key
    values: list[int | float] = []
    for part in raw.split(","):
        try:
            values.append(int(part))
        except ValueError:
            try:
                values.append(float(part))
            except ValueError:
                raise OptionError(f"--size {text!r}: write N, or NAME=N[,N...] (e.g. T0=4096,8192)") from None
    if not key or not values or key == "*" and (len(values) != 1 or not isinstance(values[0], int)):
        raise OptionError(f"--size {text!r}: write N, or NAME=N[,N...] (e.g. T0=4096,8192)")
    return key, tuple(values)


def read_kernel_source(text: str) -> tuple[int, str]:
    """"N=PATH.cu" -> (segment N, the file's CUDA text)."""
    sid, sep, path = (part.strip() for part in text.partition("="))
    if not sep or not sid.lstrip("g").isdigit() or not path:
        raise OptionError(f"kernel source {text!r}: write N=PATH.cu (N a segment id)")
    try:
        return int(sid.lstrip("g")), Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise OptionError(f"kernel source for segment {sid}: cannot read {path}: "
                          f"{getattr(e, 'strerror', None) or e}") from None


@dataclass(frozen=True)
class SegmentInfo:
    id: int
    scheduler: str
    ops: int  # exprs in the group, forwarded copies included
    forwarded: int  # of those, exprs replicated from inputs or factories
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    params: str  # nvFuser's heuristic parameter block; "" when the scheduler takes none
    scheduled_ir: str
    kernel_name: str | None  # None: no kernel (expr_eval runs through the reference evaluator)
    cuda_source: str | None
    kernel_ir: str | None
    launch: str | None  # nvFuser's "Launch Parameters: ..." line
    grid: tuple[int, int, int] | None
    block: tuple[int, int, int] | None
    shared_mem_bytes: int | None
    stages: tuple[tuple[str, str], ...]  # lowering stage name -> text, in pipeline order
    # How the scheduler was chosen: every scheduler's verdict (empty when the segmenter's
    # choice stood, e.g. expr_eval), the heuristic derivation, the segment's decision events.
    verdicts: tuple[VerdictInfo, ...] = ()
    derivation: tuple[str, ...] = ()
    events: tuple[EventInfo, ...] = ()
    tensors: tuple[tuple[str, str], ...] = ()  # tensor name -> its scheduled transform block
    # The compiled kernel's launch and its shared memory part by part; None without a kernel.
    launch_info: LaunchInfo | None = None

    @property
    def params_text(self) -> str:
        """The heuristic parameter block, its launch line labelled as the heuristic's plan."""
        return plan_text(self.params.strip("\n"))

    def launch_report(self) -> list[str]:
        """The Launch section: every figure from the compiled kernel (empty without one)."""
        if self.launch_info is None:
            return []
        notes = dict(self.stages).get("circular_buffer", "")
        return ["Launch (the compiled kernel's, as the CUDA tab launches it):",
                *launch_lines(self.launch_info, notes)]

    @property
    def name(self) -> str:
        return f"g{self.id}"

    @property
    def is_kernel(self) -> bool:
        return self.cuda_source is not None

    @property
    def kernel_source(self) -> str:
        """The generated kernel without the runtime headers inlined ahead of it (which are
        the same for every kernel and make up most of the text)."""
        if self.cuda_source is None:
            return ""
        i = self.cuda_source.rfind('extern "C" __global__')
        return self.cuda_source[i:] if i >= 0 else self.cuda_source

    @property
    def runtime_lines(self) -> int:
        """Lines of runtime headers ahead of the kernel."""
        if self.cuda_source is None:
            return 0
        return self.cuda_source.count("\n") - self.kernel_source.count("\n")

    def schedule_report(self) -> str:
        """The Schedule view's text for this segment (what `show --schedule` prints)."""
        out = [f"Segment g{self.id}: {self.ops} ops, in: {', '.join(self.inputs) or '-'}, "
               f"out: {', '.join(self.outputs) or '-'}", ""]
        if self.verdicts:
            out += ["Scheduler verdicts (priority order):", *(v.text for v in self.verdicts), ""]
        else:
            out += [f"No scheduler was asked: the segmenter's choice ({self.scheduler}) stands.", ""]
        out.append(f"Accepted by: {self.scheduler}")
        out.append(self.params_text if self.params.strip()
                   else f"The {self.scheduler} scheduler takes no heuristic parameters.")
        if self.derivation:
            out += ["", "Derivation:", *(f"  {d}" for d in self.derivation)]
        if self.launch_info is not None:
            out += ["", *self.launch_report()]
        out += ["", "Scheduled IR:", self.scheduled_ir.rstrip("\n"), ""]
        return "\n".join(out)

    def to_dict(self) -> dict[str, object]:
        return {
            "id": self.id, "scheduler": self.scheduler, "ops": self.ops, "forwarded": self.forwarded,
            "inputs": list(self.inputs), "outputs": list(self.outputs), "params": self.params,
            "kernel_name": self.kernel_name, "launch": self.launch,
            "grid": list(self.grid) if self.grid else None, "block": list(self.block) if self.block else None,
            "shared_mem_bytes": self.shared_mem_bytes,
            "shared_memory": [{"bytes": n, "what": what} for n, what in self.launch_info.shared_parts]
            if self.launch_info is not None else None,
        }


@dataclass(frozen=True)
class EdgeInfo:
    """Tensors that segment `producer` writes to global memory and `consumer` reads."""

    producer: int
    consumer: int
    tensors: tuple[str, ...]
    bytes: int


@dataclass(frozen=True)
class DecisionInfo:
    """One segmenter decision: a merge attempt, a forwarded chain, a segment formed."""

    kind: str  # "merge", "fold", "forward", "narrow", "segment"
    subject: str
    message: str
    accepted: bool | None  # merges: whether it merged; None for other kinds
    refusals: tuple[str, ...]  # a refused merge: "scheduler: reason" for every scheduler
    # A merge's groups (subject "g{33}+g{34}": the segmenter's working groups, numbered by
    # their expressions) named by the final segment(s) their expressions ended in: ("g3", "g5").
    finals: tuple[str, ...] = ()

    @property
    def text(self) -> str:
        if self.finals:
            return f"[{self.kind}] {'+'.join(self.finals)} (groups {self.subject}): {_one_line(self.message)}"
        return f"[{self.kind}] {self.subject}: {_one_line(self.message)}"


@dataclass(frozen=True)
class CompileResult:
    """A compilation of the session's fusion at its example inputs; `error` says why there is
    none (one line). Segments are in run order."""

    options: CompileOptions
    segments: list[SegmentInfo]
    edges: list[EdgeInfo]
    decisions: list[DecisionInfo]
    segmented_text: str  # nvFuser's Segmented_Fusion dump; "" without a segmenter run
    host_ir: str | None  # None while the engine has no host-IR program
    compile_time_s: float
    error: str | None = None
    note: str = ""  # e.g. why there is no segment graph (a user-scheduled fusion)
    # Tensor name -> (its name in the fusion file, the line it is assigned on): a loaded file's.
    origins: dict[str, tuple[str, int]] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.error is None

    @property
    def boundary_bytes(self) -> int:
        return sum(e.bytes for e in self.edges)

    def segment(self, sid: int) -> SegmentInfo:
        for s in self.segments:
            if s.id == sid:
                return s
        known = ", ".join(str(s.id) for s in self.segments) or "none"
        raise KeyError(f"no segment {sid} (segments: {known})")

    def summary(self) -> str:
        """`show --segments`: segments, edges with bytes, and the segmenter's decisions."""
        if self.error:
            return f"No compilation: {self.error}\n"
        out = [f"{len(self.segments)} segment(s) ({self.options.describe()}); "
               f"{human_bytes(self.boundary_bytes)} cross segment boundaries", ""]
        if self.note:
            out += [self.note, ""]
        out.append("Segments (run order):")
        for s in self.segments:
            fwd = f" ({s.forwarded} forwarded)" if s.forwarded else ""
            kernel = s.kernel_name or "no kernel"
            out.append(f"  g{s.id:<3} {s.scheduler:<22} {s.ops:>3} ops{fwd}  in: {', '.join(s.inputs) or '-'}"
                       f"  out: {', '.join(s.outputs) or '-'}  [{kernel}]")
        if self.edges:
            out += ["", "Edges (through global memory):"]
            out += [f"  g{e.producer} -> g{e.consumer}  {', '.join(e.tensors)}  {human_bytes(e.bytes)}"
                    for e in self.edges]
        if self.decisions:
            out += ["", "Segmenter decisions (a repeated one once, with its count):"]
            for d, n in collapse(self.decisions):
                out.append(f"  {annotate(counted(d.text, n), self.origins)}")
                out += [f"      {r}" for r in d.refusals]
        if self.segmented_text:
            out += ["", self.segmented_text.rstrip("\n")]
        return "\n".join(out) + "\n"

    def schedule_report(self) -> str:
        """`show --schedule`: every segment's scheduler, parameters, verdicts, scheduled IR."""
        if self.error:
            return f"No compilation: {self.error}\n"
        head = f"{len(self.segments)} segment(s) ({self.options.describe()})\n\n"
        return head + "\n".join(s.schedule_report() for s in self.segments)

    def why(self) -> str:
        """`show --why`: the segmenter's decisions, then each segment's verdicts, heuristic
        events and the compiled kernel's launch ("[launch]"), one event per line (a multi-line message is joined with " | "); a line repeated
        word for word comes once with its count, tensors are linked to the file's names."""
        lines = [d.text for d in self.decisions]
        for s in self.segments:
            lines += [_one_line(e.text) for e in s.events if e.kind == "can_schedule"]
            lines += [f"[heuristic] g{s.id}: {_one_line(d)}" for d in s.derivation]
            lines += [why_line(s.id, s.launch_info)] if s.launch_info is not None else []
            lines += [_one_line(e.text) for e in s.events if e.kind not in ("can_schedule", "heuristic")]
        return "\n".join(why_lines(lines, self.origins)) + "\n" if lines else ""

    def to_dict(self) -> dict[str, object]:
        return {
            "options": self.options.to_dict(),
            "error": self.error,
            "note": self.note or None,
            "compile_time_s": round(self.compile_time_s, 4),
            "segments": [s.to_dict() for s in self.segments],
            "edges": [{"producer": e.producer, "consumer": e.consumer, "tensors": list(e.tensors),
                       "bytes": e.bytes} for e in self.edges],
            "boundary_bytes": self.boundary_bytes,
            "decisions": [{"kind": d.kind, "subject": d.subject, "message": d.message,
                           "accepted": d.accepted, "refusals": list(d.refusals)} for d in self.decisions],
            "segmented_fusion": self.segmented_text or None,
            "host_ir": self.host_ir,
        }


def human_bytes(n: int | None) -> str:
    if n is None:
        return "-"
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} B"


def _engine_options(options: CompileOptions) -> object:
    from engine.config import Options

    return Options(forwarding=options.forwarding, force_scheduler=options.force_scheduler,
                   num_streams=options.num_streams, device_model=options.device_model,
                   heuristic_overrides=dict(options.heuristic_overrides),
                   kernel_sources=dict(options.kernel_sources),
                   # A replaced kernel may fault: waiting after each launch names the segment.
                   sync_launches=bool(options.kernel_sources))


def _compile(fd: FusionDefinition, options: CompileOptions) -> tuple[object | None, CompileResult]:
    """(CompiledFusion or None, its flattened result); every failure becomes `error`."""
    import time

    from engine.compile import compile_fusion

    start = time.perf_counter()
    try:
        xs = fd.example_inputs(device="cpu", seed=0, sizes=options.sizes())
    except FusionDefinitionError as e:
        return None, failed_compile(options, f"no example inputs: {_one_line(str(e))}")
    except Exception as e:  # building tensors from the file's specs can fail in many ways
        return None, failed_compile(
            options, f"could not build the example inputs: {type(e).__name__}: {_one_line(str(e))}")
    try:
        cf = compile_fusion(fd, xs, _engine_options(options))
    except Exception as e:  # EngineError or a bug in a stage: either way one line for the user
        return None, failed_compile(options, f"{type(e).__name__}: {_one_line(str(e))}",
                                     time.perf_counter() - start)
    result = _flatten(cf, options, time.perf_counter() - start)
    return cf, replace(result, origins=_origins(fd))


def _origins(fd: FusionDefinition) -> dict[str, tuple[str, int]]:
    """Tensor name -> its name and line in the file it was read from (the reader records them)."""
    names: dict[Any, tuple[str, int]] = getattr(fd, "source_names", {})
    return {v.short_name: where for v, where in names.items() if v.short_name.startswith("T")}


def failed_compile(options: CompileOptions, error: str, seconds: float = 0.0) -> CompileResult:
    return CompileResult(options, [], [], [], "", None, seconds, error=error)


def _flatten(cf: object, options: CompileOptions, seconds: float) -> CompileResult:
    from engine.compile import CompiledFusion

    assert isinstance(cf, CompiledFusion)
    sf = cf.segmented
    groups = {g.id: g for g in sf.groups} if sf is not None else {}
    segments = []
    by_subject: dict[str, list[Any]] = {}
    for e in cf.trace:
        if e.kind in DECISION_KINDS:
            by_subject.setdefault(e.subject, []).append(e)
    for seg in cf.segments:
        g = groups.get(seg.id)
        launch = seg.launch
        events = by_subject.get(f"g{seg.id}", [])
        segments.append(SegmentInfo(
            id=seg.id,
            scheduler=str(seg.scheduler),
            ops=len(g.exprs) if g is not None else len(seg.fusion.exprs()),
            forwarded=len(g.forwarded_exprs) if g is not None else 0,
            inputs=tuple(seg.inputs),
            outputs=tuple(seg.outputs),
            params=str(seg.params) if seg.params is not None else "",
            scheduled_ir=seg.scheduled_ir,
            kernel_name=seg.kernel_name,
            cuda_source=seg.cuda_source,
            kernel_ir=seg.kernel_ir,
            launch=str(launch) if launch is not None else None,
            grid=tuple(launch.grid) if launch is not None else None,
            block=tuple(launch.block) if launch is not None else None,
            shared_mem_bytes=launch.shared_mem_bytes if launch is not None else None,
            stages=tuple(seg.stages.items()),
            verdicts=_last_verdicts(events),
            derivation=tuple(getattr(seg.params, "derivation", ()) or ()),
            events=tuple(EventInfo(e.kind, e.subject, e.message, str(e)) for e in events),
            tensors=tuple((tv.short_name, transforms_block(tv)) for tv in seg.fusion.tensors()),
            launch_info=_launch_info(seg),
        ))
    edges: list[EdgeInfo] = []
    if sf is not None:
        # The networkx view joins parallel edges (several tensors between two segments).
        graph = sf.to_networkx()
        edges = [EdgeInfo(a, b, tuple(d["tensors"]), int(d["bytes"])) for a, b, d in graph.edges(data=True)]
    owners: dict[str, set[int]] = {}  # expression name -> the final segments holding it
    for g in sf.groups if sf is not None else ():
        for x in g.exprs:
            owners.setdefault(x.name, set()).add(g.id)
    decisions = [_decision(e, owners) for e in cf.trace if e.kind in SEGMENTER_KINDS]
    # The host-IR program is being added to the engine; show it once CompiledFusion has it.
    host_ir = getattr(cf, "host_ir", None)
    note = "" if sf is not None else (
        "No segment graph: the segmenter did not run (a user-scheduled fusion runs as written, one segment).")
    return CompileResult(
        options=options, segments=segments, edges=edges, decisions=decisions,
        segmented_text=str(sf) if sf is not None else "",
        host_ir=str(host_ir) if host_ir is not None else None,
        compile_time_s=seconds, note=note,
    )


def _launch_info(seg: Any) -> LaunchInfo | None:
    """`seg` (an engine CompiledSegment) as LaunchInfo; None when it has no kernel."""
    launch = seg.launch
    if launch is None or seg.cuda_source is None:
        return None
    use = seg.shared_memory
    parts = tuple(use.parts()) if use is not None else ()
    lp = getattr(seg.params, "lparams", None)
    plan = (lp.bdimx, lp.bdimy, lp.bdimz, lp.gdimx, lp.gdimy, lp.gdimz, lp.smem) if lp is not None else None
    return LaunchInfo(tuple(launch.grid), tuple(launch.block), launch.shared_mem_bytes, launch.cooperative,
                      parts, bool(use is not None and use.cp_async), plan, tuple(seg.vector_widths),
                      _planned_vectors(seg.params))


def _planned_vectors(params: Any) -> tuple[int, ...]:
    """The vector widths a scheduler's parameters ask for (above 1), by its parameter names."""
    if params is None:
        return ()
    factors = [getattr(params, "vectorization_factor", 1), getattr(params, "vectorize_factor1", 1),
               getattr(params, "vectorize_factor2", 1)]
    if getattr(params, "vectorize_inner_reduction", False):
        factors.append(params.unroll_factor_inner_reduction)
    if getattr(params, "vectorize_iter_dom", False):
        factors.append(params.unroll_factor_iter_dom)
    return tuple(sorted({v for v in factors if isinstance(v, int) and v > 1}))


def _last_verdicts(events: list[Any]) -> tuple[VerdictInfo, ...]:
    """The verdicts of the last can_schedule round about a segment (the segmenter may have
    asked the same schedulers about the same group earlier; the scheduling step decides)."""
    checks = [e for e in events if e.kind == "can_schedule"]
    first = checks[0].data["scheduler"] if checks else None
    starts = [i for i, e in enumerate(checks) if e.data["scheduler"] == first]
    last = checks[starts[-1]:] if starts else []
    return tuple(VerdictInfo(str(e.data["scheduler"]), bool(e.data["accepted"]), str(e.data.get("reason", "")),
                             e.message) for e in last)


def _decision(e: object, owners: dict[str, set[int]]) -> DecisionInfo:
    from engine.trace import Event

    assert isinstance(e, Event)
    accepted = e.data.get("accepted") if e.kind == "merge" else None
    refusals: tuple[str, ...] = ()
    if accepted is False:
        refusals = tuple(
            f"{v['scheduler']}: {v.get('reason') or 'rejected'}"
            for v in e.data.get("verdicts", []) if not v.get("accepted")
        )
    finals = tuple("/".join(f"g{i}" for i in sorted({i for x in group for i in owners.get(x, ())})) or "?"
                   for group in e.data.get("groups", []))
    return DecisionInfo(e.kind, e.subject, e.message, accepted if isinstance(accepted, bool) else None, refusals,
                        finals)


# ---- execution --------------------------------------------------------------------------------
# Runs happen in the worker process (fusescope/worker.py): the emulator loads generated native
# code and a GPU kernel may fault, and neither may take the debugger down. The job carries the
# fusion's text (not engine objects) and the child compiles it itself, caching per options.

BACKENDS = ("emulate", "reference", "cuda")
RunStatus = Literal["ok", "mismatch", "error", "crashed", "timeout", "cancelled"]


@dataclass(frozen=True)
class RunJob:
    source: str  # fusion-file text
    filename: str  # for error messages
    options: CompileOptions
    backend: str
    profile: bool


@dataclass(frozen=True)
class SegmentRun:
    """One segment's figures in a run. Errors are measured at the segment's outputs against
    the reference evaluator fed the reference's own values, so an error upstream shows in
    every segment downstream of it: the first segment with an error is the culprit."""

    segment: int
    scheduler: str
    kernel: str | None
    time_ms: float | None
    bytes: int | None  # read + written by the segment (each distinct element once)
    gbps: float | None  # only from a GPU profile: an emulator's speed says nothing of the GPU
    peak_fraction: float | None
    max_error: float | None
    registers: int | None
    occupancy: float | None
    note: str = ""
    local_bytes: int | None = None  # per thread: spills and local arrays (GPU profile only)
    # Element operations the segment's fusion asks for (engine.analysis.flops); None when unknown.
    flops: int | None = None

    @property
    def gflops(self) -> float | None:
        """Achieved GFLOP/s: only from a GPU profile's time, as gbps."""
        if self.gbps is None or self.flops is None or not self.time_ms:
            return None
        return self.flops / (self.time_ms * 1e-3) / 1e9

    def to_dict(self) -> dict[str, object]:
        return dict(self.__dict__)


@dataclass(frozen=True)
class OutputCheck:
    name: str
    max_error: float
    tolerance: float  # atol: rtol x max(1, the largest |reference|)
    ok: bool
    note: str = ""
    # The relative tolerance (1e-5 for float and double, 1e-2 for narrower floats), 0.0 when the
    # values must match exactly; None in bundles recorded before it was kept.
    rtol: float | None = None

    @property
    def tolerance_text(self) -> str:
        """What the tolerance is, for the line under a run: "tolerance 4.4e+00 = rtol 1e-02 x ...".
        Each element may differ by the tolerance plus rtol x its reference value."""
        if self.rtol is None:
            return f"tolerance {self.tolerance:.1e}"
        if self.rtol == 0.0:
            return "must match exactly"
        return f"tolerance {self.tolerance:.1e} = rtol {self.rtol:.0e} x max(1, max |reference|)"

    def to_dict(self) -> dict[str, object]:
        return dict(self.__dict__)


@dataclass(frozen=True)
class TimelineRow:
    """One op of the host program's stream timeline (a cuda run records it)."""

    op: str  # "LaunchKernel g2", "Set -> T3", ...
    stream: str  # "caller", "pool 0", ...
    start_ms: float  # since the program started
    end_ms: float
    iteration: int | None = None  # StreamIdx inside a stream loop

    def to_dict(self) -> dict[str, object]:
        return dict(self.__dict__)


@dataclass(frozen=True)
class RunResult:
    backend: str
    status: RunStatus
    message: str  # one line: what happened
    options: CompileOptions
    profiled: bool
    segments: tuple[SegmentRun, ...] = ()
    outputs: tuple[OutputCheck, ...] = ()
    timing: str = ""  # what time_ms measures
    device: str = ""
    wall_s: float = 0.0
    boundary_bytes: int | None = None  # bytes written by one segment and read by another
    timeline: tuple[TimelineRow, ...] = ()  # the host program's ops (cuda runs only)
    # The ceilings of the device the kernels were made for (the heuristics' device model, or the
    # GPU): what a roofline plot puts the segments against. "" / None in older bundles.
    ceiling_device: str = ""
    peak_gbps: float | None = None
    peak_gflops: float | None = None

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    @property
    def total_ms(self) -> float | None:
        times = [s.time_ms for s in self.segments if s.time_ms is not None]
        return sum(times) if times else None

    @property
    def total_bytes(self) -> int | None:
        sizes = [s.bytes for s in self.segments if s.bytes is not None]
        return sum(sizes) if sizes else None

    def report(self) -> str:
        """`fusescope run`'s text: a line per segment, a line per output, the verdict."""
        out = [f"backend {self.backend} ({self.device or 'no device'}); {self.options.describe()}"]
        if self.segments:
            out.append(f"time: {self.timing}")
            out.append(f"{'seg':<4} {'scheduler':<22} {'time':>10} {'bytes':>10} {'GB/s':>8} {'%peak':>6} "
                       f"{'max err':>9} {'regs':>5} {'local':>6} {'occ':>5}")
            for s in self.segments:
                out.append(
                    f"g{s.segment:<3} {s.scheduler:<22} {fmt_ms(s.time_ms):>10} {human_bytes(s.bytes):>10} "
                    f"{_fmt(s.gbps, '{:.1f}'):>8} {_fmt(s.peak_fraction, '{:.1%}'):>6} "
                    f"{_fmt(s.max_error, '{:.2e}'):>9} {_fmt(s.registers, '{}'):>5} "
                    f"{_fmt(s.local_bytes, '{}'):>6} "
                    f"{_fmt(s.occupancy, '{:.0%}'):>5}" + (f"  {s.note}" if s.note else ""))
            out.append(f"total {fmt_ms(self.total_ms)}, {human_bytes(self.total_bytes)} moved, "
                       f"{human_bytes(self.boundary_bytes)} cross segment boundaries")
        for o in self.outputs:
            verdict = "ok" if o.ok else "MISMATCH"
            out.append(f"output {o.name}: max error {o.max_error:.3e} ({o.tolerance_text}) {verdict}"
                       + (f"  {o.note}" if o.note else ""))
        out.append(f"{self.status}: {self.message}")
        return "\n".join(out) + "\n"

    def to_dict(self) -> dict[str, object]:
        return {
            "backend": self.backend, "status": self.status, "message": self.message,
            "options": self.options.to_dict(), "profiled": self.profiled, "timing": self.timing,
            "device": self.device, "wall_s": round(self.wall_s, 4),
            "boundary_bytes": self.boundary_bytes,
            "segments": [s.to_dict() for s in self.segments],
            "outputs": [o.to_dict() for o in self.outputs],
            "timeline": [t.to_dict() for t in self.timeline],
            "ceiling_device": self.ceiling_device, "peak_gbps": self.peak_gbps, "peak_gflops": self.peak_gflops,
        }


def _field(d: dict[str, Any], key: str, kinds: tuple[type, ...], where: str, optional: bool = False) -> Any:
    """d[key], checked to be one of `kinds` (bool is not a number here); ValueError names it."""
    if key not in d:
        if optional:
            return None
        raise ValueError(f"{where}.{key} is missing")
    v = d[key]
    if v is None and optional:
        return None
    if isinstance(v, bool) and bool not in kinds:
        raise ValueError(f"{where}.{key} must be {' or '.join(k.__name__ for k in kinds)}, got a boolean")
    if not isinstance(v, kinds):
        raise ValueError(f"{where}.{key} must be {' or '.join(k.__name__ for k in kinds)}, got {type(v).__name__}")
    return v


def _record(d: object, cls: type, where: str) -> Any:
    """A frozen dataclass from its to_dict form: every field typed as declared."""
    import dataclasses

    if not isinstance(d, dict):
        raise ValueError(f"{where} must be an object, got {type(d).__name__}")
    kinds = {"str": (str,), "int": (int,), "float": (float, int), "bool": (bool,)}
    values = {}
    for f in dataclasses.fields(cls):
        ann = str(f.type)
        base = ann.split(" | ")[0]
        optional = "None" in ann or f.default is not dataclasses.MISSING
        values[f.name] = _field(d, f.name, kinds.get(base, (str,)), where, optional)
        if values[f.name] is None and f.default is not dataclasses.MISSING:
            values[f.name] = f.default
    return cls(**values)


def run_from_dict(d: object, where: str = "run") -> RunResult:
    """The inverse of RunResult.to_dict; ValueError (one line) names the field at fault."""
    if not isinstance(d, dict):
        raise ValueError(f"{where} must be an object, got {type(d).__name__}")
    status = _field(d, "status", (str,), where)
    if status not in ("ok", "mismatch", "error", "crashed", "timeout"):
        raise ValueError(f"{where}.status {status!r} is not a run status")
    lists = {k: _field(d, k, (list,), where, optional=True) or [] for k in ("segments", "outputs", "timeline")}
    return RunResult(
        backend=_field(d, "backend", (str,), where), status=status, message=_field(d, "message", (str,), where),
        options=CompileOptions.from_dict(_field(d, "options", (dict,), where)),
        profiled=_field(d, "profiled", (bool,), where), timing=_field(d, "timing", (str,), where),
        device=_field(d, "device", (str,), where), wall_s=float(_field(d, "wall_s", (float, int), where)),
        boundary_bytes=_field(d, "boundary_bytes", (int,), where, optional=True),
        segments=tuple(_record(x, SegmentRun, f"{where}.segments[{k}]") for k, x in enumerate(lists["segments"])),
        outputs=tuple(_record(x, OutputCheck, f"{where}.outputs[{k}]") for k, x in enumerate(lists["outputs"])),
        timeline=tuple(_record(x, TimelineRow, f"{where}.timeline[{k}]") for k, x in enumerate(lists["timeline"])),
        ceiling_device=_field(d, "ceiling_device", (str,), where, optional=True) or "",
        peak_gbps=_optional_float(d, "peak_gbps", where),
        peak_gflops=_optional_float(d, "peak_gflops", where),
    )


def _optional_float(d: dict[str, Any], key: str, where: str) -> float | None:
    v = _field(d, key, (float, int), where, optional=True)
    return None if v is None else float(v)


def fmt_ms(ms: float | None) -> str:
    if ms is None:
        return "-"
    return f"{ms * 1e3:.1f} us" if ms < 1 else f"{ms:.3f} ms"


def _fmt(v: float | int | None, spec: str) -> str:
    return "-" if v is None else spec.format(v)


_WORKER: object | None = None
_WORKER_LOCK = threading.Lock()


def worker() -> Any:
    """The session-wide worker process (started on first use, restarted after a crash)."""
    global _WORKER
    from fusescope.worker import Worker

    with _WORKER_LOCK:
        if _WORKER is None:
            _WORKER = Worker(execute_job)
        return _WORKER


def shutdown_worker() -> None:
    global _WORKER
    with _WORKER_LOCK:
        if _WORKER is not None:
            _WORKER.stop()  # type: ignore[attr-defined]
            _WORKER = None


# In the worker process: compilations of the fusions it has been sent, by (text, options).
_CHILD_CACHE: dict[tuple[str, CompileOptions], tuple[Any, Any, list[Any]]] = {}


def execute_job(job: RunJob) -> RunResult:
    """The worker's job (runs in the child): compile, run, validate, optionally profile."""
    import time

    from engine import loads_fusion
    from engine.errors import EngineError

    start = time.perf_counter()

    def failed(message: str) -> RunResult:
        return RunResult(job.backend, "error", message, job.options, job.profile,
                         wall_s=time.perf_counter() - start)

    if job.backend not in BACKENDS:
        return failed(f"unknown back end {job.backend!r}; choose one of {', '.join(BACKENDS)}")
    from fusescope.progress import Reporter
    from fusescope.worker import report

    progress = Reporter(report)
    key = (job.source, job.options)
    progress.step("compiling the fusion at its example inputs" if key not in _CHILD_CACHE
                  else "the fusion is compiled already (the worker keeps it)")
    if key not in _CHILD_CACHE:
        try:
            fd = loads_fusion(job.source, job.filename)
        except EngineError as e:
            return failed(_one_line(f"{type(e).__name__}: {e}"))
        cf, result = _compile(fd, job.options)
        if cf is None:
            return failed(f"compilation failed: {result.error}")
        _CHILD_CACHE[key] = (fd, cf, fd.example_inputs(device="cpu", seed=0, sizes=job.options.sizes()))
    fd, cf, xs = _CHILD_CACHE[key]
    try:
        return _run_compiled(fd, cf, xs, job, start, progress)
    except EngineError as e:
        return failed(_one_line(f"{type(e).__name__}: {e}"))


def _run_compiled(fd: Any, cf: Any, xs: list[Any], job: RunJob, start: float, progress: Reporter) -> RunResult:
    import time

    import torch

    from engine.compile_stages import bind_env, fusion_flops
    from engine.errors import ExecutionError
    from engine.reference import evaluate
    from engine.runtime.device import current
    from engine.runtime.placement import run_device
    from engine.runtime.profiler import tensor_bytes

    backend = job.backend
    if backend == "cuda" and not torch.cuda.is_available():
        raise ExecutionError("the cuda back end needs a GPU (torch sees none here); use emulate or reference")
    # The back end's device (the worker's inputs are CPU tensors); the reference runs on the CPU.
    device = run_device(backend)
    cpu = torch.device("cpu")
    xs_dev = [x.to(device) if isinstance(x, torch.Tensor) else x for x in xs]

    # The segments run in order on the back end, each fed what the back end produced before
    # (as CompiledFusion.run does); the reference runs alongside, segment by segment, so that
    # each segment's outputs can be compared. Done here rather than through cf.run because
    # cf.run hands back only the fusion's outputs.
    env = bind_env(cf.fusion, xs)
    got: dict[int, Any] = {id(v): x for v, x in zip(cf.fusion.inputs, xs_dev)}
    want: dict[int, Any] = {id(v): x for v, x in zip(cf.fusion.inputs, xs)}

    def lookup(values: dict[int, Any], v: Any, where: str) -> Any:
        if id(v) in values:
            return values[id(v)]
        try:
            return v.evaluate(env)  # a scalar segment input: an extent or a constant
        except (AttributeError, KeyError):
            raise ExecutionError(f"{getattr(v, 'short_name', v)} is needed by {where} but nothing produced it") from None

    profiling = job.profile and backend in ("emulate", "cuda")
    progress.plan(len(cf.segments), after=1 + profiling + (backend == "cuda"))
    if backend != "reference":
        cf.load_kernels(backend)  # all kernels at once (in parallel on the emulator), cached on disk
    seg_rows: dict[int, dict[str, Any]] = {}
    for index, seg in enumerate(cf.segments, start=1):
        where = f"segment {seg.id}"
        progress.segment(index, seg.id, str(seg.scheduler))
        print(f"{RUNNING_MARK}{seg.id} ({seg.kernel_name or seg.scheduler}) on {backend}", flush=True)
        args = [lookup(got, v, where) for v in seg.input_vals]
        ref_args = [lookup(want, v, where) for v in seg.input_vals]
        progress.action("running the reference evaluator")
        t0 = time.perf_counter()
        try:
            ref_outs = seg.run(ref_args, "reference", cpu)
        except ExecutionError as e:
            if str(e).startswith(f"segment {seg.id} "):
                raise  # the engine named the segment and the op already
            raise ExecutionError(f"segment {seg.id}: the reference failed: {e}") from e
        except Exception as e:
            raise ExecutionError(f"segment {seg.id}: the reference failed: {type(e).__name__}: {e}") from e
        if backend == "reference":
            outs = ref_outs
        else:
            if seg.is_kernel:
                progress.action(f"building the kernel ({'g++' if backend == 'emulate' else 'nvrtc'})")
                seg.kernel(backend)  # compile/load outside the timed launch (cached on disk)
            progress.action(f"running on {backend}")
            t0 = time.perf_counter()
            try:
                outs = seg.run(args, backend, device)
                if backend == "cuda":
                    torch.cuda.synchronize()
            except ExecutionError as e:
                if str(e).startswith(f"segment {seg.id} "):
                    raise  # the engine named the segment already (sync_launches)
                raise ExecutionError(f"segment {seg.id} ({seg.kernel_name or seg.scheduler}): {e}") from e
        ms = (time.perf_counter() - t0) * 1e3
        errs = [_compare(o, r)[0] for o, r in zip(outs, ref_outs) if isinstance(r, torch.Tensor)]
        nbytes = sum(tensor_bytes(t) for t in [*args, *outs] if isinstance(t, torch.Tensor))
        seg_rows[seg.id] = {"time_ms": ms, "bytes": nbytes, "max_error": max(errs) if errs else None,
                            "flops": _flops(fusion_flops, seg, ref_args)}
        for v, o, r in zip(seg.output_vals, outs, ref_outs):
            got[id(v)] = o
            want[id(v)] = r
        progress.segment_done()
    finals = [lookup(got, v, "the fusion's outputs") for v in cf.fusion.outputs]
    progress.step("checking the outputs against the reference evaluator")

    # The fusion's outputs are checked against the reference evaluator on the whole,
    # unsegmented fusion: that also catches a wrong cut between segments.
    refs = evaluate(fd.fusion, xs)
    checks = []
    for v, o, r in zip(fd.fusion.outputs, finals, refs):
        if not isinstance(r, torch.Tensor):
            continue
        err, tol, ok, note, rtol = _check(o, r)
        checks.append(OutputCheck(getattr(v, "short_name", str(v)), err, tol, ok, note, rtol))

    profiles: dict[str, Any] = {}
    timing = {"emulate": "host wall time of each emulated launch (says nothing about a GPU)",
              "reference": "host wall time of the reference evaluator (torch on the CPU)",
              "cuda": "host wall time of each launch until synchronized (no --profile)"}[backend]
    dev_name = {"emulate": "CPU emulator (g++)", "reference": "torch CPU reference"}.get(backend, "")
    if profiling:
        progress.step(f"profiling the {sum(s.is_kernel for s in cf.segments)} kernel(s) on {backend}")
        profiles = {p.name: p for p in cf.profile(xs_dev, backend)}
        timing = ("CUDA events, median of 20 launches after warm-up" if backend == "cuda"
                  else "emulator wall time of one launch (says nothing about a GPU)")
    timeline: tuple[TimelineRow, ...] = ()
    if backend == "cuda":
        dev_name = torch.cuda.get_device_name(device)
        progress.step("recording the host program's stream timeline")
        # The host program once more, recording its stream timeline (for the Host IR tab).
        cf.run(xs_dev, backend="cuda", timeline=True)
        timeline = tuple(TimelineRow(e.op, e.stream, e.start, e.end, e.iteration) for e in cf.last_run.timeline)
    sf = getattr(cf, "segmented", None)
    boundary = sum(int(d["bytes"]) for _, _, d in sf.to_networkx().edges(data=True)) if sf is not None else None

    rows = []
    for seg in cf.segments:
        r = seg_rows[seg.id]
        p = profiles.get(seg.kernel_name or "")
        note = "" if seg.is_kernel else "no kernel (reference evaluator)"
        rows.append(SegmentRun(
            segment=seg.id, scheduler=str(seg.scheduler), kernel=seg.kernel_name,
            time_ms=p.time_ms if p is not None else r["time_ms"],
            bytes=(p.bytes_total if p is not None and p.bytes_total is not None else r["bytes"]),
            gbps=p.gbps if p is not None else None,
            peak_fraction=p.peak_fraction if p is not None else None,
            max_error=r["max_error"],
            registers=p.registers if p is not None else None,
            occupancy=p.occupancy if p is not None else None,
            note=note,
            local_bytes=p.local_bytes if p is not None else None,
            flops=r["flops"],
        ))
    bad = [c for c in checks if not c.ok]
    if bad:
        status: RunStatus = "mismatch"
        message = "; ".join(f"{c.name} differs from the reference by {c.max_error:.3e} ({c.tolerance_text})"
                            for c in bad)
    else:
        status = "ok"
        message = f"{len(checks)} output(s) match the reference"
    ceilings = current(job.options.device_model)
    return RunResult(backend, status, message, job.options, bool(profiles), tuple(rows), tuple(checks),
                     timing, dev_name, time.perf_counter() - start, boundary, timeline,
                     ceilings.name, ceilings.memory_bandwidth_gbps, ceilings.peak_fp32_gflops or None)


def _flops(count: Callable[[Any, list[Any]], int], seg: Any, args: list[Any]) -> int | None:
    """The segment's element operations at its inputs' sizes; None where its inputs cannot be
    bound (a raw buffer input) or an extent has no value."""
    if seg.raw_inputs:
        return None
    try:
        return count(seg.fusion, args)
    except (KeyError, TypeError, ValueError, EngineError):
        return None


def _compare(out: Any, ref: Any) -> tuple[float, str]:
    """(max absolute error, note). NaN where the reference has NaN counts as equal; values
    that cannot be subtracted (fp4, shapes that differ) are compared bit for bit."""
    import torch

    out = out.detach().cpu()
    ref = ref.detach().cpu()
    if out.shape != ref.shape:
        return float("inf"), f"shape {tuple(out.shape)} vs reference {tuple(ref.shape)}"
    try:
        a, b = out.double(), ref.double()
    except (RuntimeError, TypeError):
        a8 = out.contiguous().view(torch.uint8)
        b8 = ref.contiguous().view(torch.uint8)
        diff = int((a8 != b8).sum())
        return float(diff), f"compared bit for bit: {diff} byte(s) differ" if diff else "bit-exact"
    same = (a == b) | (torch.isnan(a) & torch.isnan(b))
    if bool(same.all()):
        return 0.0, ""
    d = (a - b).abs()
    d = torch.where(same, torch.zeros_like(d), d)
    d = torch.nan_to_num(d, nan=float("inf"))
    return float(d.max()), ""


def _check(out: Any, ref: Any) -> tuple[float, float, bool, str, float]:
    """(max error, tolerance, ok, note, rtol): floats within the engine's test tolerance (rtol
    1e-5 for float/double, 1e-2 for narrower floats; the tolerance is rtol scaled by the
    reference's magnitude), the rest exact (rtol 0)."""
    import torch

    err, note = _compare(out, ref)
    if not ref.dtype.is_floating_point or ref.element_size() < 2 or note:
        return err, 0.0, err == 0.0, note, 0.0
    tol = 1e-5 if ref.dtype in (torch.float32, torch.float64) else 1e-2
    finite = ref.detach().cpu().double()
    finite = finite[torch.isfinite(finite)]
    scale = max(1.0, float(finite.abs().max())) if finite.numel() else 1.0
    bound = tol * scale
    # The engine's tests allow rtol * |ref| + atol per element; the largest that can be is
    # 2 * tol * scale, and a per-element check is what decides.
    ok = bool(torch.isclose(out.detach().cpu().double(), ref.detach().cpu().double(), rtol=tol, atol=bound,
                            equal_nan=True).all())
    return err, bound, ok, "", tol
