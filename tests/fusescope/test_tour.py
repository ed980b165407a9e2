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
from pathlib import Path

import pytest
from textual.binding import Binding
from textual.widgets import Footer, TabbedContent

from fusescope import samples
from fusescope.app import FusescopeApp
from fusescope.model import load_session

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
    """The screenshot's text, row by row, without scrollbar thumbs and with the checkout's
    path left out: colours and the thumb's position follow focus and scroll timing (they
    differed between runs on a loaded machine), the views' text must not."""
    rows = re.findall(r"<text[^>]*>(.*?)</text>", svg, flags=re.S)
    text = (html.unescape(re.sub(r"<[^>]+>", "", r)).strip("▁▂▃▄▅▆▇█ \n") for r in rows)
    # The title shows the sample's absolute path, which depends on where the checkout lives.
    text = (re.sub(r"\S*/sample_fusions/", "sample_fusions/", t) for t in text)
    return [t for t in text if t]


def _normalized(svg: str) -> str:
    # Textual names the CSS classes of a screenshot after a hash of its content and title.
    return re.sub(r"terminal-\d+", "terminal", svg)


@pytest.mark.asyncio
# The CUDA view is left out: its runtime headers change with every engine runtime edit.
@pytest.mark.parametrize("key, view", [("i", "ir"), ("s", "schedule"), ("g", "segments")])
async def test_snapshot_of_the_main_views(key: str, view: str) -> None:
    app = FusescopeApp(load_session(samples.resolve("softmax")))
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.press(key)
        await app.workers.wait_for_complete()
        await pilot.pause()
        # The footer redraws a frame or more after a focus change, later on a loaded machine;
        # its keys are tested apart, so the snapshot leaves it out.
        app.query_one(Footer).display = False
        await pilot.pause(0.3)
        shot = _normalized(app.export_screenshot(title="fusescope"))
    stored = SNAPSHOTS / f"softmax_{view}.svg"
    if UPDATE or not stored.exists():
        if not UPDATE:
            pytest.fail(f"no snapshot {stored.name}: rerun with FUSESCOPE_UPDATE_SNAPSHOTS=1 to record it")
        stored.write_text(shot)
    if shot != stored.read_text() and _content(shot) != _content(stored.read_text()):
        got = stored.with_suffix(".actual.svg")
        got.write_text(shot)
        pytest.fail(f"{view} view differs from {stored.name} (now in {got.name}); if the change is "
                    "intended, rerun with FUSESCOPE_UPDATE_SNAPSHOTS=1")


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
