"""Cancelling in the TUI: esc stops a run (its worker process is killed) or a compile, q and
ctrl+c quit at once during either, and the Run tab and the task bar show where a run is."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest
from textual.widgets import TabbedContent

from fusescope.app import FusescopeApp
from fusescope.model import CompileOptions, CompileResult, Session, load_session, worker
from fusescope.widgets.run_view import RunView
from fusescope.widgets.segments_view import SegmentsView
from fusescope.widgets.task_bar import TaskBar
from tests.fusescope.fusions import EXP_FILE, faulty_kernels

pytestmark = pytest.mark.asyncio
SIZE = (80, 24)


@pytest.fixture(scope="module")
def hang_case(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """The exp fusion and a replacement kernel that spins for ever, built into the emulator's
    cache here so that the tests wait for the run, not for g++."""
    from engine import load_fusion
    from engine.compile import compile_fusion
    from engine.config import Options

    fusion = tmp_path_factory.mktemp("cancel") / "exp.py"
    fusion.write_text(EXP_FILE)
    source = load_session(fusion).compile().segment(0).cuda_source
    assert source is not None
    hang = faulty_kernels(source)["hang"]
    fd = load_fusion(str(fusion))
    compile_fusion(fd, fd.example_inputs(device="cpu", seed=0), Options(kernel_sources={0: hang})
                   ).segments[0].kernel("emulate")
    return fusion, hang


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    stat = Path(f"/proc/{pid}/stat")
    return stat.exists() and stat.read_text().split(") ", 1)[1].startswith("Z")


async def wait_for(pilot, condition, timeout: float = 120.0) -> None:  # noqa: ANN001
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out waiting"
        await pilot.pause(0.1)


def footer_shows(app: FusescopeApp, key: str) -> bool:
    b = app.active_bindings.get(key)
    return b is not None and b.binding.show and b.enabled


async def start_hung_run(app: FusescopeApp, pilot, hang: str, profile: bool = True) -> int:  # noqa: ANN001
    """x then e with the spinning kernel; returns the worker's pid once the kernel runs."""
    app.options = CompileOptions().with_(kernel_sources={0: hang})
    await pilot.press("x")
    assert not footer_shows(app, "escape")  # nothing to cancel yet
    if not profile:
        await pilot.press("p")
    await pilot.press("e")
    view = app.query_one(RunView)
    await wait_for(pilot, lambda: view.tracker is not None and view.tracker.latest.action == "running on emulate")
    pid = worker().pid
    assert pid is not None and not _gone(pid)
    return pid


async def test_esc_cancels_a_hung_run_and_the_next_run_works(hang_case: tuple[Path, str]) -> None:
    fusion, hang = hang_case
    app = FusescopeApp(load_session(fusion))
    async with app.run_test(size=SIZE) as pilot:
        pid = await start_hung_run(app, pilot, hang, profile=False)
        view = app.query_one(RunView)
        await pilot.pause(0.6)  # the step's clock moves between reports
        assert "segment 1 of 1 (g0 pointwise): running on emulate" in view.steps_text
        assert "0.0 s" not in view.steps_text.splitlines()[0]
        # It says what it does: with profiling off it does not say "profiling".
        assert view.status_text == "Running on emulate, profiling off in the worker process (esc cancels)"
        bar = app.query_one(TaskBar)
        assert bar.display and "Running on emulate, profiling off: segment 1 of 1 (g0 pointwise)" in bar.text
        assert footer_shows(app, "escape")
        # First in the footer, ahead of the Run tab's own keys: a narrow footer still shows it.
        assert next(iter(app.screen.active_bindings)) == "escape"
        t0 = time.monotonic()
        await pilot.press("escape")
        await wait_for(pilot, lambda: view.running is None, timeout=10)
        assert time.monotonic() - t0 < 5
        assert _gone(pid)
        assert view.status_text.startswith("Run on emulate cancelled after ")
        assert "at segment 1 of 1 (g0 pointwise): the worker process was stopped" in view.status_text
        assert app.session.runs == []  # a cancelled run is not one of the session's runs
        assert not bar.display and not footer_shows(app, "escape")
        app.options = CompileOptions()  # the generated kernel, in a fresh worker
        await pilot.press("e")
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert view.result is not None and view.result.status == "ok", view.result.message
        assert worker().pid != pid


@pytest.mark.parametrize("key", ["q", "ctrl+c"])
async def test_quitting_during_a_run_stops_the_worker_at_once(hang_case: tuple[Path, str], key: str) -> None:
    fusion, hang = hang_case
    app = FusescopeApp(load_session(fusion))
    async with app.run_test(size=SIZE) as pilot:
        pid = await start_hung_run(app, pilot, hang)
        runs = [w for w in app.workers if w.group == "run"]
        t0 = time.monotonic()
        await pilot.press(key)
        await pilot.pause()
        assert not app.is_running
    # The run's thread must end by itself (the interpreter waits for it before exiting): it
    # leaves Worker.call, and the worker process is gone.
    w = worker()
    deadline = time.monotonic() + 10
    while (w._lock.locked() or not _gone(pid)) and time.monotonic() < deadline:
        time.sleep(0.05)
    print(f"quit took {time.monotonic() - t0:.2f} s")
    assert not w._lock.locked() and _gone(pid) and time.monotonic() - t0 < 5
    assert runs and all(r.is_finished for r in runs)


class SlowCompile:
    """Session.compile held until released: a compile that takes as long as the test wants."""

    def __init__(self, session: Session) -> None:
        self.release = threading.Event()
        self.started = threading.Event()
        self._compile = session.compile

    def __call__(self, options: CompileOptions | None = None) -> CompileResult:
        self.started.set()
        self.release.wait(60)
        return self._compile(options)


async def test_esc_cancels_a_compile_and_the_tab_key_compiles_again(hang_case: tuple[Path, str]) -> None:
    fusion, _ = hang_case
    session = load_session(fusion)
    slow = SlowCompile(session)
    session.compile = slow  # type: ignore[method-assign]
    app = FusescopeApp(session)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("g")
        await wait_for(pilot, slow.started.is_set)
        await pilot.pause(0.3)
        segments = app.query_one(SegmentsView)
        bar = app.query_one(TaskBar)
        assert segments.loading and bar.display and bar.text.startswith("Compiling (forwarding on, 4 streams) · ")
        assert footer_shows(app, "escape")
        await pilot.press("escape")
        await pilot.pause()
        assert not segments.loading and segments.result is None and not bar.display
        assert any(n.message == "Compilation cancelled: press g to compile again" for n in app._notifications)
        slow.release.set()
        await pilot.pause(0.3)
        assert segments.result is None  # the cancelled compile's result is not shown
        await pilot.press("g")
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert app.query_one(TabbedContent).active == "tab-segments"
        assert segments.result is not None and segments.result.ok


async def test_quitting_during_a_compile_does_not_wait_for_it(hang_case: tuple[Path, str]) -> None:
    fusion, _ = hang_case
    session = load_session(fusion)
    slow = SlowCompile(session)
    session.compile = slow  # type: ignore[method-assign]
    app = FusescopeApp(session)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("u")
        await wait_for(pilot, slow.started.is_set)
        compiles = [w for w in app.workers if w.group == "compile"]
        await pilot.press("q")
        await pilot.pause()
    deadline = time.monotonic() + 5
    while not all(w.is_finished for w in compiles) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert compiles and all(w.is_finished for w in compiles)  # while the compile itself still waits
    assert not slow.release.is_set()
    slow.release.set()
