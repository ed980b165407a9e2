"""Every key the main screen and its views answer to is in the F1 help (from the bindings) and in
the README."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.binding import Binding

from fusescope.app import FusescopeApp
from fusescope.screens.help_screen import HelpScreen, key_rows
from fusescope.widgets.code_view import CodeView
from fusescope.widgets.cuda_view import CudaView
from fusescope.widgets.host_ir_view import HostIrView
from fusescope.widgets.listing_view import ListingView
from fusescope.widgets.md_run_view import MultiRunView
from fusescope.widgets.options_view import OptionsView
from fusescope.widgets.run_view import RunView
from fusescope.widgets.schedule_view import ScheduleView
from fusescope.widgets.segments_view import SegmentsView
from fusescope.widgets.transform_view import TransformView

README = Path(__file__).resolve().parents[2] / "README.md"
VIEWS = [FusescopeApp, CodeView, CudaView, HostIrView, ListingView, MultiRunView, RunView, SegmentsView,
         OptionsView, ScheduleView, TransformView]
# How the README writes a key Textual names otherwise; the arrows and tab are left out.
README_FORM = {"left_square_bracket": "[", "right_square_bracket": "]", "plus": "+", "equals_sign": "=",
               "minus": "-", "slash": "/", "less_than_sign": "<", "greater_than_sign": ">", "escape": "esc",
               "f1": "F1"}
UNWRITTEN = {"up", "down", "tab"}


def bindings() -> list[tuple[str, str, Binding]]:
    """(view, key, binding) for every key of every view."""
    out = []
    for view in VIEWS:
        for b in view.BINDINGS:
            assert isinstance(b, Binding)
            out += [(view.__name__, key.strip(), b) for key in b.key.split(",")]
    return out


@pytest.mark.asyncio
async def test_the_help_has_every_key_with_its_description() -> None:
    app = FusescopeApp()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("f1")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        rows = key_rows(app)
        missing = []
        for view, key, b in bindings():
            shown = app.get_key_display(Binding(key, b.action))
            if not any(shown in r.key.split() and r.description == b.description for r in rows):
                missing.append(f"{view}: {shown} {b.description}")
        assert not missing, missing
        # The copy key is said once, for every view that has it.
        copy = [r for r in rows if r.description == "Copy text"]
        assert len(copy) == 1 and "every" in copy[0].where


def test_the_readme_names_every_key() -> None:
    text = README.read_text(encoding="utf-8")
    missing = sorted({f"{view}: {key}" for view, key, _ in bindings() if key not in UNWRITTEN
                      and f"`{README_FORM.get(key, key)}`" not in text})
    assert not missing, missing
