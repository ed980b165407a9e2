"""A run as plain data: each segment's figures, each output's check against the reference, the
host program's stream timeline, the verdict; its text report, and its JSON form (to_dict,
run_from_dict) as a session bundle keeps it."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Literal

from fusescope.compile_options import CompileOptions
from fusescope.text_format import fmt_ms, human_bytes

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


def _fmt(v: float | int | None, spec: str) -> str:
    return "-" if v is None else spec.format(v)
