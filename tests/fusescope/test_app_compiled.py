"""The compiled views driven headless through Pilot on bundled samples: Segments (graph and
decision log), CUDA, Host IR and Run (emulate back end), linked by one segment selection."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from textual.command import CommandPalette
from textual.widgets import TabbedContent

from fusescope import samples
from fusescope.app import FusescopeApp
from fusescope.model import Session, load_session
from fusescope.widgets.cuda_view import CudaView
from fusescope.widgets.host_ir_view import NOT_YET, HostIrView
from fusescope.widgets.run_view import RunView
from fusescope.widgets.segments_view import SegmentsView

pytestmark = pytest.mark.asyncio
SIZE = (140, 40)
SAMPLES = ["softmax", "cross_entropy", "seed003_rope_bwd_small"]
_SESSIONS: dict[str, Session] = {}


def session_of(name: str) -> Session:
    """One session per sample for the whole module: its compilation is cached in it."""
    if name not in _SESSIONS:
        path = samples.resolve(name)
        # The samples ship with the project: a missing one is a failure, not a skip.
        assert path.exists(), f"bundled sample {name} is missing"
        _SESSIONS[name] = load_session(path)
    return _SESSIONS[name]


@pytest.fixture(scope="module", autouse=True)
def _forget_sessions() -> Iterator[None]:
    yield
    _SESSIONS.clear()


async def settle(app: FusescopeApp, pilot: object) -> None:
    await app.workers.wait_for_complete()
    await pilot.pause()  # type: ignore[attr-defined]


@pytest.mark.parametrize("name", SAMPLES)
async def test_every_compiled_view_with_one_selection_and_an_emulated_run(name: str) -> None:
    session = session_of(name)
    compiled = session.compile()
    assert compiled.ok, compiled.error
    ids = [s.id for s in compiled.segments]
    app = FusescopeApp(session)
    async with app.run_test(size=SIZE) as pilot:
        # Segments: the graph draws a box per segment, the decision log follows.
        await pilot.press("g")
        await settle(app, pilot)
        segments = app.query_one(SegmentsView)
        assert app.query_one(TabbedContent).active == "tab-segments" and app.focused is segments
        assert segments.result is compiled and not segments.loading
        graph = segments.graph_text
        for s in compiled.segments:
            assert f" g{s.id} {s.scheduler}" in graph
        for e in compiled.edges:
            assert f"g{e.consumer} {', '.join(e.tensors)} " in graph  # edges carry tensor and bytes
        log = segments.log_text
        assert "Decision log (segmenter)" in log
        assert all(d.text in log for d in compiled.decisions[:5])
        assert app.selected_segment == ids[0] and segments.selected == ids[0]

        # Selecting a segment here selects it in the CUDA and Run views too.
        target = ids[min(1, len(ids) - 1)]
        if target != ids[0]:
            await pilot.press("down")
            await pilot.pause()
        assert app.selected_segment == target and segments.selected == target
        cuda = app.query_one(CudaView)
        assert cuda.selected == target

        # CUDA: the selected segment's kernel (headers hidden), then its kernel IR and stages.
        await pilot.press("u")
        await pilot.pause()
        seg = compiled.segment(target)
        assert app.query_one(TabbedContent).active == "tab-cuda"
        if seg.is_kernel:
            assert cuda.text == seg.kernel_source and f"{seg.kernel_name}(" in cuda.text
            await pilot.press("v")
            await pilot.pause()
            assert cuda.mode == "kernel IR" and cuda.text == seg.kernel_ir
            await pilot.press("v")
            await pilot.pause()
            assert cuda.mode == "lowering stages" and "== loop_nests ==" in cuda.text
            await pilot.press("a")  # the complete source, runtime headers included
            await pilot.pause()
            assert cuda.mode == "source" and cuda.text == seg.cuda_source
        # Moving the CUDA list's cursor selects in the other views.
        await pilot.press("up")
        await pilot.pause()
        assert app.selected_segment == ids[0] and segments.selected == ids[0]

        # Host IR: the engine's program when it has one, else the view says it is not there yet.
        await pilot.press("h")
        await pilot.pause()
        host = app.query_one(HostIrView)
        if compiled.host_ir is None:
            assert host.text == "" and host.shown == NOT_YET
        else:
            assert host.text == compiled.host_ir

        # Run on the emulator in the worker process: the table fills in, a row per segment.
        await pilot.press("x")
        await pilot.pause()
        run = app.query_one(RunView)
        await pilot.press("e")
        await pilot.pause()
        assert run.running == "emulate" or run.result is not None
        await settle(app, pilot)
        assert run.result is not None and run.result.status == "ok", run.result and run.result.message
        table = run.query_one("#run-table")
        assert table.row_count == len(ids)
        for row, s in enumerate(compiled.segments):
            cells = [str(c) for c in table.get_row_at(row)]
            assert cells[0] == f"g{s.id}" and cells[1] == s.scheduler
            assert cells[2] != "-" and cells[5] != "-" and cells[8] != "-"  # time, bytes, max error
            assert cells[3] == "-"  # no previous run to compare with
        assert "cross segment boundaries" in run.status_text and "History (1 run(s)" in str(
            run.query_one("#run-history").render())
        assert table.cursor_row == ids.index(app.selected_segment)
        # The table's cursor is a selection too.
        if len(ids) > 1:
            await pilot.press("down")
            await pilot.pause()
            assert app.selected_segment == ids[1] and cuda.selected == ids[1] and segments.selected == ids[1]


async def test_palette_runs_on_the_reference_and_selects_a_segment() -> None:
    session = session_of("cross_entropy")
    app = FusescopeApp(session)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("g")
        await settle(app, pilot)
        await pilot.press("ctrl+p")
        await pilot.pause()
        assert isinstance(app.screen, CommandPalette)
        await pilot.press(*"Select segment: g1")
        await pilot.pause(0.5)
        await pilot.press("enter")
        await pilot.pause()
        assert app.selected_segment == 1 and app.query_one(SegmentsView).selected == 1
        await pilot.press("ctrl+p")
        await pilot.press(*"Run on the reference")
        await pilot.pause(0.5)
        await pilot.press("enter")
        await settle(app, pilot)
        run = app.query_one(RunView)
        assert app.query_one(TabbedContent).active == "tab-run"
        assert run.result is not None and run.result.backend == "reference" and run.result.ok


async def test_a_failed_run_is_reported_and_the_app_goes_on() -> None:
    import torch

    if torch.cuda.is_available():
        pytest.skip("a GPU is present: the cuda back end would run")
    app = FusescopeApp(session_of("softmax"))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("x")
        await pilot.pause()
        await pilot.press("d")  # cuda, on a machine without a GPU
        await settle(app, pilot)
        run = app.query_one(RunView)
        assert run.result is not None and run.result.status == "error" and run.running is None
        errors = [n.message for n in app._notifications if n.severity == "error"]
        assert any("needs a GPU" in m for m in errors)
        await pilot.press("e")  # the next run works
        await settle(app, pilot)
        assert run.result.status == "ok" and run.query_one("#run-table").row_count == 1


async def test_a_run_finishing_with_a_later_segment_selected_keeps_that_selection() -> None:
    # Refilling the Run table moves its cursor to row 0 and then to the selected segment's
    # row; with the table focused both moves came back as the user's selections, out of
    # order, and the views swapped between the two segments for as long as the app ran.
    session = session_of("cross_entropy")
    ids = [s.id for s in session.compile().segments]
    app = FusescopeApp(session)
    selections: list[int] = []
    select = app.select_segment

    def counting(sid: int) -> None:
        selections.append(sid)
        select(sid)

    app.select_segment = counting  # type: ignore[method-assign]
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("g")
        await settle(app, pilot)
        await pilot.press("down")  # the second segment
        await pilot.press("x", "e")
        await settle(app, pilot)
        run = app.query_one(RunView)
        assert run.result is not None and run.result.ok
        table = run.query_one("#run-table")
        assert app.focused is table
        selections.clear()
        for _ in range(5):
            await pilot.pause(0.05)
        assert selections == [] and app.selected_segment == ids[1]
        assert table.cursor_row == 1 and app.query_one(CudaView).selected == ids[1]
        await pilot.press("up")  # the user's own move still selects
        await pilot.pause()
        assert app.selected_segment == ids[0] and app.query_one(SegmentsView).selected == ids[0]


async def test_the_run_keys_answer_while_a_run_is_in_progress() -> None:
    # The table's loading cover took the focus away: e, f, d and p went nowhere until the
    # run ended, so a second e said nothing instead of "a run is in progress".
    import threading

    session = session_of("softmax")
    release = threading.Event()
    real_run = session.run

    def held_run(*args: object, **kwargs: object) -> object:
        release.wait(30)
        return real_run(*args, **kwargs)  # type: ignore[arg-type]

    session.run = held_run  # type: ignore[method-assign]
    app = FusescopeApp(session)
    try:
        async with app.run_test(size=SIZE) as pilot:
            await pilot.press("x", "e")
            await pilot.pause()
            run = app.query_one(RunView)
            assert run.running == "emulate"
            await pilot.press("e")
            await pilot.pause()
            warnings = [n.message for n in app._notifications if n.severity == "warning"]
            assert any("in progress" in m for m in warnings), warnings
            release.set()
            await settle(app, pilot)
            assert run.result is not None and run.result.ok and run.running is None
            assert app.focused is run.query_one("#run-table")
    finally:
        release.set()
        del session.run
