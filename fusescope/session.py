"""A loaded fusion: reading a fusion file or a bundle's text (never running it), the text views
made from it (listing, inputs and outputs, each tensor's transforms), and its compilations,
segment-graph exports and runs, each through the module that does it."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from engine import dumps_fusion, load_fusion, loads_fusion
from engine.errors import EngineError
from engine.ir.printer import transforms_block
from engine.ir.tensorview import TensorView
from engine.segment.export import export as export_graph
from fusescope.compile_options import CompileOptions
from fusescope.compiler import compile_definition
from fusescope.md_model import MultiDeviceInfo, multidevice_info
from fusescope.progress import STARTING
from fusescope.run_job import name_segment, worker
from fusescope.run_result import RunJob, RunResult
from fusescope.text_format import one_line

if TYPE_CHECKING:
    from engine import FusionDefinition
    from fusescope.compile_result import CompileResult
    from fusescope.progress import RunProgress

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
                self._compiled[options] = compile_definition(self.fd, options)
            return self._compiled[options][1]

    def export(self, fmt: str, path: str | Path | None = None, options: CompileOptions | None = None) -> str | bytes:
        """The segment graph as dot, json, mermaid, svg or png (written to `path` when given).
        Raises ExportError (one line) when there is no graph or the format cannot be made."""
        result = self.compile(options)
        if result.error:
            raise ExportError(f"no segment graph: {result.error}")
        cf = self._compiled[options or CompileOptions()][0]
        sf = getattr(cf, "segmented", None)
        if sf is None:
            raise ExportError(result.note or "no segment graph for this fusion")
        try:
            return export_graph(sf, fmt, path)
        except (EngineError, ValueError, OSError) as e:
            raise ExportError(one_line(str(e))) from e

    def fusion_source(self) -> str:
        """The fusion-file text the worker process reads (the file as loaded, else written)."""
        if self.source is None:
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
                               message=name_segment(outcome.message, outcome.details),
                               options=options, profiled=profile)
        if result.status != "cancelled":  # a cancelled run measured nothing worth keeping
            self.runs.append(result)
        return result


def _value_info(v: object) -> ValueInfo:
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
        # Imported here: fusescope.bundle builds its sessions through fusescope.model.
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
        raise LoadError(one_line(f"{type(e).__name__}: {e}")) from e
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
    try:
        fd = loads_fusion(source, title)
    except EngineError as e:
        raise LoadError(one_line(f"{type(e).__name__}: {e}")) from e
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
