"""Every view on every bundled sample, the footer's keys, SVG snapshots of the main views,
and the TUI in a real terminal (tmux)."""

from __future__ import annotations

import html
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import pytest
from textual.binding import Binding
from textual.pilot import Pilot
from textual.widgets import Footer, TabbedContent

from fusescope import samples
from fusescope.app import FusescopeApp
from fusescope.md_run import MultiRunResult
from fusescope.model import CompileOptions, RunResult, load_session
from fusescope.widgets.host_ir_view import HostIrView
from fusescope.widgets.md_run_view import MultiRunView
from fusescope.widgets.run_view import RunView

SNAPSHOTS = Path(__file__).parent / "snapshots"
UPDATE = os.environ.get("FUSESCOPE_UPDATE_SNAPSHOTS") == "1"
VIEW_KEYS = {"i": "tab-ir", "s": "tab-schedule", "g": "tab-segments", "u": "tab-cuda", "x": "tab-run",
             "h": "tab-host-ir", "t": "tab-options"}


@pytest.mark.asyncio
@pytest.mark.parametrize("name", [s.name for s in samples.list_samples()])
async def test_every_view_renders_every_sample(name: str) -> None:
    app = FusescopeApp(load_session(samples.resolve(name)))
    async with app.run_test(size=(140, 40)) as pilot:
        for key, tab in VIEW_KEYS.items():
            await pilot.press(key)
            await app.workers.wait_for_complete()
            await pilot.pause()
            assert app.query_one(TabbedContent).active == tab
        if app.session.multidevice() is not None:
            # A multi-device sample has no single compilation: the views show its program
            # (tests/fusescope/test_multidevice_tui.py checks them in detail).
            assert app.session.compiled(app.options) is None
            assert [n.message for n in app._notifications if n.severity == "error"] == []
            for key, start in (("i", "Inputs:"), ("g", "multi-device program on 2 ranks"),
                               ("h", "%HostIrContainer {"), ("x", "A multi-device fusion")):
                await pilot.press(key)
                await pilot.pause()
                assert app.current_view_text().startswith(start), f"{name}: view {key}"
            return
        compiled = app.session.compiled(app.options)
        assert compiled is not None and compiled.ok, compiled and compiled.error
        errors = [n.message for n in app._notifications if n.severity == "error"]
        assert errors == [], errors
        # Each view shows the engine's text (the CUDA view only for a segment with a kernel).
        keys = ("i", "s", "g", "u", "h") if compiled.segments[0].is_kernel else ("i", "s", "g", "h")
        for key in keys:
            await pilot.press(key)
            await pilot.pause()
            assert app.current_view_text().strip(), f"{name}: view {key} is empty"


def test_every_footer_key_has_an_action() -> None:
    app = FusescopeApp()
    for b in app.BINDINGS:
        assert isinstance(b, Binding)
        name = b.action.split("(")[0]
        assert callable(getattr(app, f"action_{name}", None)), f"key {b.key} ({b.description}) does nothing"


def _content(svg: str) -> list[str]:
    """The screenshot's text, row by row, without scrollbar thumbs (vertical and sideways) and with the checkout's
    path left out: colours and the thumb's position follow focus and scroll timing (they
    differed between runs on a loaded machine), the views' text must not."""
    rows = re.findall(r"<text[^>]*>(.*?)</text>", svg, flags=re.S)
    text = (html.unescape(re.sub(r"<[^>]+>", "", r)).strip("▁▂▃▄▅▆▇█▉▊▋▌▍▎▏ \n") for r in rows)
    # The title shows the sample's absolute path, which depends on where the checkout lives
    # (the tests below show it relative; this is for a snapshot taken otherwise).
    text = (re.sub(r"\S*/sample_fusions/", "sample_fusions/", t) for t in text)
    return [t for t in text if t]


def _normalized(svg: str) -> str:
    # Textual names the CSS classes of a screenshot after a hash of its content and title.
    return re.sub(r"terminal-\d+", "terminal", svg)


SNAPSHOT_SIZES = [(80, 24), (200, 50)]
# The heuristics' device is pinned: on a machine with a GPU they would use that GPU's figures.
SNAPSHOT_OPTIONS = CompileOptions(device_model="H100")


def _steady_run(run: RunResult) -> RunResult:
    """`run` with figures that do not depend on the machine: segment k took k + 1 ms, every
    error is 0 (the reference's rounding follows the CPU's vector width), the whole run 1 s."""
    segments = tuple(replace(s, time_ms=s.segment + 1.0, max_error=None if s.max_error is None else 0.0)
                     for s in run.segments)
    return replace(run, segments=segments, outputs=tuple(replace(o, max_error=0.0) for o in run.outputs),
                   wall_s=1.0)


def _steady_md_run(result: MultiRunResult) -> MultiRunResult:
    """A multi-device run with fixed figures: step k of each rank from 2k to 2k + 1.5 ms."""
    ranks = tuple(replace(r, wall_ms=10.0 + r.rank, outputs=tuple(replace(o, max_error=0.0) for o in r.outputs),
                          timeline=tuple(replace(s, start_ms=2.0 * k, end_ms=2.0 * k + 1.5)
                                         for k, s in enumerate(r.timeline)))
                  for r in result.results)
    return replace(result, results=ranks, wall_s=2.0)


async def _until_idle(app: FusescopeApp, pilot: Pilot[None]) -> None:
    for _ in range(900):  # 90 s at most: a run starts a worker process that imports torch
        await pilot.pause(0.1)
        if not app.busy:
            return
    raise AssertionError("the run did not finish")


async def _shot(app: FusescopeApp, pilot: Pilot[None]) -> str:
    app.clear_notifications()  # a run's toast would cover the view
    await pilot.pause(0.3)
    return _normalized(app.export_screenshot(title="fusescope"))


def _check(shots: dict[str, str]) -> None:
    """Compare each shot with its stored snapshot (recording them with FUSESCOPE_UPDATE_SNAPSHOTS=1);
    every view that differs is named, with the new picture beside the stored one."""
    differ = []
    for name, shot in shots.items():
        stored = SNAPSHOTS / f"{name}.svg"
        if UPDATE:
            stored.write_text(shot)
            continue
        if not stored.exists():
            differ.append(f"{stored.name} (none stored)")
        elif shot != stored.read_text() and _content(shot) != _content(stored.read_text()):
            differ.append(stored.name)
        else:
            continue
        stored.with_suffix(".actual.svg").write_text(shot)
    assert not differ, (f"views differ from their snapshots: {', '.join(differ)} (the new ones are in *.actual.svg "
                        "beside them); if the change is intended, rerun with FUSESCOPE_UPDATE_SNAPSHOTS=1")


@pytest.mark.asyncio
@pytest.mark.parametrize("size", SNAPSHOT_SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
async def test_snapshots_of_the_main_views(size: tuple[int, int]) -> None:
    # The CUDA view is left out: its runtime headers change with every engine runtime edit.
    app = FusescopeApp(load_session(samples.resolve("softmax")), SNAPSHOT_OPTIONS)
    tag = f"{size[0]}x{size[1]}"
    async with app.run_test(size=size) as pilot:
        # The footer redraws a frame or more after a focus change, later on a loaded machine;
        # its keys are tested apart, so the snapshots leave it out.
        app.query_one(Footer).display = False
        app.sub_title = "sample_fusions/softmax.py"  # not the checkout's absolute path
        shots = {}
        for key, view in (("i", "ir"), ("s", "schedule"), ("g", "segments")):
            await pilot.press(key)
            await app.workers.wait_for_complete()
            await pilot.pause()
            shots[f"softmax_{view}_{tag}"] = await _shot(app, pilot)
        await pilot.press("x", "f")  # a run on the reference evaluator
        await _until_idle(app, pilot)
        assert app.session is not None and [r.status for r in app.session.runs] == ["ok"]
        app.session.runs[-1] = _steady_run(app.session.runs[-1])
        app.query_one(RunView).show_runs(app.session.runs)
        app.query_one(HostIrView).show_timeline(app.session.runs)
        shots[f"softmax_run_{tag}"] = await _shot(app, pilot)
        await pilot.press("h")
        await app.workers.wait_for_complete()
        await pilot.pause()
        shots[f"softmax_host_ir_{tag}"] = await _shot(app, pilot)
    _check(shots)


@pytest.mark.asyncio
@pytest.mark.parametrize("size", SNAPSHOT_SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
async def test_snapshots_of_a_multidevice_fusion(size: tuple[int, int]) -> None:
    app = FusescopeApp(load_session(samples.resolve("multidevice_sp_mlp")), SNAPSHOT_OPTIONS)
    tag = f"{size[0]}x{size[1]}"
    async with app.run_test(size=size) as pilot:
        app.query_one(Footer).display = False
        app.sub_title = "sample_fusions/multidevice_sp_mlp.py"
        await pilot.press("g")
        await pilot.pause()
        shots = {f"md_sp_mlp_segments_{tag}": await _shot(app, pilot)}
        await pilot.press("x", "f")  # on 2 ranks, on the reference evaluator
        await _until_idle(app, pilot)
        view = app.query_one(MultiRunView)
        assert view.result is not None and view.result.status == "ok", view.result and view.result.message
        view.show_result(_steady_md_run(view.result))
        shots[f"md_sp_mlp_run_{tag}"] = await _shot(app, pilot)
    _check(shots)


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed (CI images without it skip)")
def test_in_a_real_terminal_with_tmux() -> None:
    session = f"fusescope-test-{os.getpid()}"
    tmux = ["tmux", "-L", session]  # a server of its own: the user's tmux is left alone

    def screen() -> str:
        return subprocess.run([*tmux, "capture-pane", "-p", "-t", session], capture_output=True, text=True).stdout

    def wait_for(text: str, timeout: float = 60) -> str:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            shown = screen()
            if text in shown:
                return shown
            time.sleep(0.3)
        raise AssertionError(f"{text!r} never appeared; the screen:\n{screen()}")

    cmd = f"{sys.executable} -m fusescope softmax"
    subprocess.run([*tmux, "new-session", "-d", "-s", session, "-x", "130", "-y", "40", cmd], check=True,
                   cwd=Path(__file__).resolve().parents[2])
    try:
        wait_for("%kernel_math")
        subprocess.run([*tmux, "send-keys", "-t", session, "g"], check=True)
        wait_for("Segments · 1 ·")
        subprocess.run([*tmux, "send-keys", "-t", session, "u"], check=True)
        wait_for("Source/IR/stages")
        subprocess.run([*tmux, "send-keys", "-t", session, "q"], check=True)
        end = time.monotonic() + 20
        while time.monotonic() < end and subprocess.run([*tmux, "has-session", "-t", session],
                                                         capture_output=True).returncode == 0:
            time.sleep(0.3)
        assert subprocess.run([*tmux, "has-session", "-t", session], capture_output=True).returncode != 0
    finally:
        subprocess.run([*tmux, "kill-server"], capture_output=True)
