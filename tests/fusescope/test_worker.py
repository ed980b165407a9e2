"""The worker process's progress reports and cancellation (fusescope/worker.py)."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fusescope.worker import Worker, report
from tests.fusescope.worker_jobs import dispatch


@pytest.fixture
def worker() -> Iterator[Worker]:
    w = Worker(dispatch)
    yield w
    w.stop()


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    # A zombie (exited, not yet reaped by its parent) counts as gone.
    stat = Path(f"/proc/{pid}/stat")
    return stat.exists() and stat.read_text().split(") ", 1)[1].startswith("Z")


def test_reports_reach_the_caller_in_order_before_the_answer(worker: Worker) -> None:
    seen: list[Any] = []
    out = worker.call("progress", timeout=60, on_progress=seen.append)
    assert out.status == "ok" and out.value[0] == "done"
    pid = out.value[1]
    assert seen == [("step", 0, pid), ("step", 1, pid), ("step", 2, pid)]
    # Without a callback the reports are read and dropped; the next answer is the job's own.
    assert worker.call("progress", timeout=60).value == ("done", pid)
    assert worker.call("echo", timeout=60).value[:2] == ("echo", "echo")


def test_report_outside_the_worker_does_nothing() -> None:
    report("nobody listens")  # a job called in-process must not fail on its reports


def test_cancel_stops_the_worker_and_the_processes_it_started_at_once(worker: Worker, tmp_path: Path) -> None:
    cancel = threading.Event()
    seen: list[Any] = []

    def on_progress(p: Any) -> None:
        seen.append(p)
        if p[0] == "started":
            cancel.set()  # as the TUI's escape key does, from another thread or from here

    marker = tmp_path / "child.pid"
    t0 = time.monotonic()
    out = worker.call(f"child {marker}", timeout=120, on_progress=on_progress, cancel=cancel)
    took = time.monotonic() - t0
    assert out.status == "cancelled" and "worker process was stopped" in out.message
    worker_pid, child_pid = seen[0][1], seen[1][1]
    assert took < 10  # the sleep runs 600 s: only a kill ends it this soon
    deadline = time.monotonic() + 5
    while not (_gone(worker_pid) and _gone(child_pid)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _gone(worker_pid), "the worker still runs"
    assert _gone(child_pid), "the worker's child (a compiler, say) still runs"
    assert not worker.alive
    again = worker.call("echo", timeout=60)  # a fresh worker takes the next job
    assert again.status == "ok" and again.value[2] != worker_pid and worker.started == 2


def test_cancel_set_from_another_thread_ends_a_hung_job(worker: Worker) -> None:
    cancel = threading.Event()
    threading.Timer(1.0, cancel.set).start()
    t0 = time.monotonic()
    out = worker.call("hang", timeout=120, cancel=cancel)
    assert out.status == "cancelled" and time.monotonic() - t0 < 6


def test_an_exception_in_the_caller_stops_the_job(worker: Worker) -> None:
    # ctrl+c in `fusescope run` raises KeyboardInterrupt in the waiting caller: the worker,
    # busy with a job nobody will read, is stopped before the exception goes on.
    def interrupt(p: Any) -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        worker.call("progress", timeout=60, on_progress=interrupt)
    assert not worker.alive
    assert worker.call("echo", timeout=60).status == "ok"
