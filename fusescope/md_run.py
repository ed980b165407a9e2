"""Running a multi-device fusion on N ranks, as `torchrun --nproc-per-node N` would: N worker
processes (fusescope.md_rank), each with the torchrun environment, gloo between them on the
CPU back ends and NCCL (one GPU per rank) on cuda.

Nothing here waits forever: a rank that fails makes the others' wait short (they are likely
stuck in a collective with it), the whole run has a timeout, and a cancel event stops it;
every rank still running then is killed (its whole process group: the emulator's g++ too)
and reported by rank with why.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

RankStatus = Literal["ok", "mismatch", "error", "crashed", "timeout", "stopped", "cancelled"]
# After one rank fails, how long the others get to finish before they are stopped.
GRACE_S = 5.0
POLL_S = 0.05
TIMELINE_BAR = 30  # the bar's cells in the CLI's report
TIMELINE_BAR_MIN, TIMELINE_BAR_WIDE = 10, 60  # a pane's bar: no narrower, no wider


@dataclass(frozen=True)
class RankOutput:
    name: str
    shape: tuple[int, ...]
    max_error: float
    tolerance: float
    ok: bool
    note: str = ""


@dataclass(frozen=True)
class RankStep:
    step: str  # "region 0", "Communication 1", "Communication 0 chunk 1", "region 1 chunk 1"
    kind: str  # compute or the communication's type
    start_ms: float
    end_ms: float
    stream: str = "main"  # main (compute) or comm (a stream chunk's collective beside it)


@dataclass(frozen=True)
class RankResult:
    rank: int
    status: RankStatus
    message: str
    outputs: tuple[RankOutput, ...] = ()
    timeline: tuple[RankStep, ...] = ()
    wall_ms: float | None = None
    device: str = ""
    log: str = ""  # the process's last output (a traceback, when it failed)


@dataclass(frozen=True)
class MultiRunResult:
    backend: str
    ranks: int
    status: Literal["ok", "mismatch", "error", "cancelled"]
    message: str
    results: tuple[RankResult, ...] = field(default_factory=tuple)
    wall_s: float = 0.0

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    def table(self) -> str:
        """A row per rank: its outputs' shapes, max error against its reference shard, verdict, time."""
        rows = [("rank", "outputs", "max error", "verdict", "time")]
        for r in self.results:
            shapes = ", ".join(f"{o.name} {list(o.shape)}" for o in r.outputs) or "-"
            err = max((o.max_error for o in r.outputs), default=None)
            verdict = {"ok": "pass", "mismatch": "FAIL"}.get(r.status, r.status.upper())
            t = "-" if r.wall_ms is None else f"{r.wall_ms:.3f} ms"
            rows.append((str(r.rank), shapes, "-" if err is None else f"{err:.2e}", verdict, t))
        widths = [max(len(row[k]) for row in rows) for k in range(5)]
        lines = ["  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() for row in rows]
        for r in self.results:
            if r.status not in ("ok", "mismatch"):
                lines.append(f"rank {r.rank} {r.status}: {r.message}")
        return "\n".join(lines) + "\n"

    def timeline_text(self, width: int | None = None) -> str:
        """Each rank's steps with start and end (ms since that rank's run began) and a bar;
        where a run overlapped communication with compute (stream chunks), a column says
        which stream each step ran on, and overlapping bars show what was hidden. `width`
        (cells) fits the lines to a pane: the bar takes the room left on the row, and where a
        row cannot hold a bar of TIMELINE_BAR_MIN, each step's name gets a line of its own
        above its kind, times and bar."""
        end = max((s.end_ms for r in self.results for s in r.timeline), default=0.0) or 1.0
        out = ["Timeline (ms since each rank's run started):"]
        steps = [s for r in self.results for s in r.timeline]
        if not steps:
            return out[0] + " none recorded (no rank finished its run)\n"
        name_w = max(len(s.step) for s in steps)
        kind_w = max(len(s.kind) for s in steps)
        streams = any(s.stream != "main" for s in steps)
        stream_w = max(len(s.stream) for s in steps) + 2 if streams else 0
        figures = kind_w + 2 + 9 + 1 + 9 + 2  # kind, start, end and the gaps before the bar
        bar, split = TIMELINE_BAR, False
        if width is not None:
            room = width - (2 + name_w + 2 + stream_w + figures)
            split = room < TIMELINE_BAR_MIN
            bar = max(TIMELINE_BAR_MIN, width - 4 - figures) if split else min(TIMELINE_BAR_WIDE, room)
        for r in self.results:
            out.append(f"rank {r.rank}" + ("" if r.timeline else f": none ({r.status})"))
            for s in r.timeline:
                a = min(bar - 1, round(s.start_ms / end * bar))
                b = max(a + 1, round(s.end_ms / end * bar))
                times = f"{s.start_ms:9.3f} {s.end_ms:9.3f}  " + " " * a + "#" * (b - a)
                if split:  # the stream goes on the name's line
                    out += [f"  {s.step}" + (f" ({s.stream})" if streams else ""), f"    {s.kind:<{kind_w}}  {times}"]
                else:
                    lane = f"{s.stream:<{stream_w - 2}}  " if streams else ""
                    out.append(f"  {s.step:<{name_w}}  {s.kind:<{kind_w}}  {lane}{times}")
        return "\n".join(out) + "\n"

    def report(self) -> str:
        head = f"multi-device run on {self.ranks} ranks, backend {self.backend}, {self.wall_s:.1f} s\n"
        head += "time: host wall time of each rank's run" + (
            " (the emulator's includes building its kernels on first use)\n" if self.backend == "emulate" else "\n")
        return head + self.table() + "\n" + self.timeline_text() + f"{self.status}: {self.message}\n"

    def to_dict(self) -> dict[str, object]:
        import dataclasses

        return dataclasses.asdict(self)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _rank_env(rank: int, ranks: int, port: int) -> dict[str, str]:
    env = dict(os.environ)
    root = str(Path(__file__).resolve().parent.parent)  # the fusescope package's folder, first
    env["PYTHONPATH"] = os.pathsep.join([root, *filter(None, [env.get("PYTHONPATH")])])
    env.update(RANK=str(rank), WORLD_SIZE=str(ranks), LOCAL_RANK=str(rank), LOCAL_WORLD_SIZE=str(ranks),
               MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    return env


def _read(path: Path, rank: int, log: str) -> RankResult | None:
    if not path.exists():
        return None
    d = json.loads(path.read_text(encoding="utf-8"))
    outs = tuple(RankOutput(o["name"], tuple(o["shape"]), float(o["max_error"]), float(o["tolerance"]),
                            bool(o["ok"]), o.get("note", "")) for o in d.get("outputs", []))
    steps = tuple(RankStep(s["step"], s["kind"], float(s["start_ms"]), float(s["end_ms"]), str(s.get("stream", "main")))
                  for s in d.get("timeline", []))
    return RankResult(rank, d["status"], d["message"], outs, steps, d.get("wall_ms"), d.get("device", ""),
                      log if d["status"] == "error" else "")


def _tail(path: Path, lines: int = 20) -> str:
    try:
        return "\n".join(path.read_text(encoding="utf-8", errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


def _kill(p: subprocess.Popen[bytes]) -> None:
    """Stop a rank and whatever it started (it leads its own process group)."""
    if p.poll() is None:
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            p.kill()
    p.wait()


def run_ranks(source: str, title: str, ranks: int, backend: str = "reference", timeout: float = 300.0,
              cancel: threading.Event | None = None, grace: float = GRACE_S) -> MultiRunResult:
    """Run the fusion-file text `source` on `ranks` processes; never raises for what a rank does."""
    start = time.perf_counter()
    results: dict[int, RankResult] = {}
    with tempfile.TemporaryDirectory(prefix="fusescope-ranks-") as tmp:
        folder = Path(tmp)
        fusion = folder / "fusion.py"
        fusion.write_text(source, encoding="utf-8")
        port = free_port()
        procs: list[subprocess.Popen[bytes]] = []
        logs = [folder / f"rank{k}.log" for k in range(ranks)]
        outs = [folder / f"rank{k}.json" for k in range(ranks)]
        try:
            for k in range(ranks):
                with open(logs[k], "wb") as log:
                    procs.append(subprocess.Popen(
                        [sys.executable, "-m", "fusescope.md_rank", str(outs[k]), str(fusion), title, backend],
                        env=_rank_env(k, ranks, port), stdout=log, stderr=subprocess.STDOUT,
                        stdin=subprocess.DEVNULL, start_new_session=True))
            deadline = start + timeout
            why = f"no result after {timeout:g} s (timeout): stopped"
            late: RankStatus = "timeout"
            while any(p.poll() is None for p in procs):
                if cancel is not None and cancel.is_set():
                    why, late = "cancelled", "cancelled"
                    break
                for k, p in enumerate(procs):
                    if k in results or p.poll() is None:
                        continue
                    r = _read(outs[k], k, _tail(logs[k]))
                    results[k] = r or RankResult(k, "crashed", f"the process exited with status {p.returncode} "
                                                 "without a result", log=_tail(logs[k]))
                    if results[k].status not in ("ok", "mismatch") and time.perf_counter() + grace < deadline:
                        deadline = time.perf_counter() + grace
                        why, late = (f"stopped: still running {grace:.0f} s after rank {k} failed "
                                     "(waiting for it in a collective)"), "stopped"
                if time.perf_counter() > deadline:
                    break
                time.sleep(POLL_S)
        finally:
            for p in procs:
                _kill(p)
        for k, p in enumerate(procs):
            if k in results:
                continue
            r = _read(outs[k], k, _tail(logs[k]))
            if r is None:
                code = p.returncode
                r = (RankResult(k, late, why, log=_tail(logs[k])) if code is not None and code < 0
                     else RankResult(k, "crashed", f"the process exited with status {code} without a result",
                                     log=_tail(logs[k])))
            results[k] = r
    ordered = tuple(results[k] for k in sorted(results))
    return _summarize(backend, ranks, ordered, time.perf_counter() - start)


def _summarize(backend: str, ranks: int, results: tuple[RankResult, ...], wall: float) -> MultiRunResult:
    bad = [r for r in results if r.status not in ("ok", "mismatch")]
    if any(r.status == "cancelled" for r in results):
        return MultiRunResult(backend, ranks, "cancelled", "the run was cancelled", results, wall)
    if bad:
        first = min(bad, key=lambda r: r.status in ("stopped", "timeout"))  # the cause before its victims
        msg = "; ".join(f"rank {r.rank} {r.status}" for r in bad)
        return MultiRunResult(backend, ranks, "error", f"{msg} (rank {first.rank}: {first.message})", results, wall)
    wrong = [r for r in results if r.status == "mismatch"]
    if wrong:
        return MultiRunResult(backend, ranks, "mismatch",
                              "; ".join(f"rank {r.rank}: {r.message}" for r in wrong), results, wall)
    return MultiRunResult(backend, ranks, "ok", f"all {ranks} ranks match their shards of the reference",
                          results, wall)
