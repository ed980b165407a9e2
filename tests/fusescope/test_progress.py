"""Run progress: the worker's reports (Reporter), what the caller keeps of them (RunTracker),
and a real emulated run reporting each segment as it goes."""

from __future__ import annotations

import threading

import pytest

from fusescope import samples
from fusescope.model import Session, load_session
from fusescope.progress import STARTING, Reporter, RunProgress, RunTracker


class Clock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


def test_reporter_numbers_steps_and_times_segments() -> None:
    clock = Clock()
    sent: list[RunProgress] = []
    rep = Reporter(sent.append, clock)
    rep.step("compiling the fusion")
    rep.plan(segments=2, after=1)
    rep.segment(1, 0, "resize")
    rep.action("building the kernel (g++)")
    clock.t += 2.5
    rep.segment_done()
    rep.segment(2, 3, "expr_eval")
    rep.action("running the reference evaluator")
    rep.segment_done()
    rep.step("checking the outputs")
    assert [(p.step, p.steps, p.action, p.segment) for p in sent] == [
        (1, 0, "compiling the fusion", None),
        (2, 4, "building the kernel (g++)", 0),
        (2, 4, "done", 0),
        (3, 4, "running the reference evaluator", 3),
        (3, 4, "done", 3),
        (4, 4, "checking the outputs", None),
    ]
    assert sent[2].took_s == 2.5 and sent[2].elapsed_s == 2.5 and sent[4].took_s == 0.0
    assert sent[1].where() == "segment 1 of 2 (g0 resize)"


def test_tracker_counts_steps_done_and_the_time_of_the_step_under_way() -> None:
    clock = Clock()
    tracker = RunTracker("emulate", profile=False, clock=clock)
    assert tracker.fraction is None and tracker.latest is STARTING
    assert tracker.title() == "Running on emulate, profiling off"
    tracker.update(RunProgress(1, 0, "compiling the fusion"))
    assert tracker.fraction is None  # the number of steps is not known yet
    tracker.update(RunProgress(2, 4, "building the kernel (g++)", 1.0, 0, 1, 2, "resize"))
    clock.t += 3.0
    assert tracker.fraction == 0.25
    assert tracker.line() == "segment 1 of 2 (g0 resize): building the kernel (g++) · 3.0 s (run 3.0 s)"
    tracker.update(RunProgress(2, 4, "done", 4.0, 0, 1, 2, "resize", took_s=3.0))
    assert tracker.fraction == 0.5 and [d.segment for d in tracker.finished] == [0]
    tracker.update(RunProgress(4, 4, "checking the outputs", 5.0))
    clock.t += 65
    assert tracker.line() == "step 4 of 4: checking the outputs · 1 min 05 s (run 1 min 08 s)"
    assert RunTracker("reference", profile=True).title() == "Running on reference, profiling off"


@pytest.fixture(scope="module")
def cross_entropy() -> Session:
    path = samples.resolve("cross_entropy")
    assert path.exists(), "bundled sample cross_entropy is missing"
    return load_session(path)


def test_an_emulated_run_reports_every_segment_in_order(cross_entropy: Session) -> None:
    seen: list[RunProgress] = []
    result = cross_entropy.run("emulate", profile=True, on_progress=seen.append)
    assert result.status == "ok", result.message
    reports = [p for p in seen if p is not STARTING]
    assert reports[0].step == 1 and reports[0].action.startswith(("compiling the fusion", "the fusion is compiled"))
    compiled = cross_entropy.compile()
    n = len(compiled.segments)
    steps = 1 + n + 2  # the fusion, the segments, the check, profiling
    assert all(p.steps == steps for p in reports[1:])
    done = [p for p in reports if p.done]
    assert [(p.segment, p.index, p.scheduler) for p in done] == [
        (s.id, k, s.scheduler) for k, s in enumerate(compiled.segments, start=1)]
    for s in compiled.segments:  # each segment: the reference, its kernel's build, its run
        actions = [p.action for p in reports if p.segment == s.id]
        want = ["running the reference evaluator"]
        want += ["building the kernel (g++)", "running on emulate"] if s.is_kernel else ["running on emulate"]
        assert actions == want + ["done"]
    assert [p.action for p in reports[-2:]] == [
        "checking the outputs against the reference evaluator",
        f"profiling the {sum(s.is_kernel for s in compiled.segments)} kernel(s) on emulate"]
    assert [p.step for p in reports] == sorted(p.step for p in reports)


def test_a_cancelled_run_is_reported_and_not_kept(cross_entropy: Session) -> None:
    cancel = threading.Event()
    before = list(cross_entropy.runs)

    def on_progress(p: RunProgress) -> None:
        if p.segment is not None:
            cancel.set()

    result = cross_entropy.run("emulate", on_progress=on_progress, cancel=cancel)
    assert result.status == "cancelled" and "worker process was stopped" in result.message
    assert cross_entropy.runs == before
    again = cross_entropy.run("reference")  # a new worker takes the next run
    assert again.status == "ok" and cross_entropy.runs[-1] is again
