"""A compilation as plain data: segments (scheduler, parameters, verdicts, scheduled IR, CUDA,
launch), the edges between them, the segmenter's decisions, the host-IR text; and the text
reports made from it (`show --segments`, `--schedule`, `--why`, the comparison of two
compilations). fusescope/compiler.py fills it in from the engine's CompiledFusion."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from fusescope.launch_text import LaunchInfo, launch_lines, plan_text, why_line
from fusescope.render.decision_log import annotate, collapse, counted, why_lines
from fusescope.text_format import fmt_ms, human_bytes, one_line

if TYPE_CHECKING:
    from fusescope.compile_options import CompileOptions
    from fusescope.run_result import RunResult


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
            return f"[{self.kind}] {'+'.join(self.finals)} (groups {self.subject}): {one_line(self.message)}"
        return f"[{self.kind}] {self.subject}: {one_line(self.message)}"


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
            lines += [one_line(e.text) for e in s.events if e.kind == "can_schedule"]
            lines += [f"[heuristic] g{s.id}: {one_line(d)}" for d in s.derivation]
            lines += [why_line(s.id, s.launch_info)] if s.launch_info is not None else []
            lines += [one_line(e.text) for e in s.events if e.kind not in ("can_schedule", "heuristic")]
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


def failed_compile(options: CompileOptions, error: str, seconds: float = 0.0) -> CompileResult:
    return CompileResult(options, [], [], [], "", None, seconds, error=error)


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
