"""Writing what the TUI shows to files: a view's text, the Run table as CSV, an SVG screenshot.
The file name's suffix picks which."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from fusescope.app import FusescopeApp


class ViewExportError(Exception):
    """The message is one line for the user."""


def export_view(app: FusescopeApp, path: str) -> str:
    """Write `path` from the app's current state; returns a line saying what was written."""
    from fusescope.widgets.run_view import RunView

    p = Path(path).expanduser()
    try:
        if p.suffix.lower() == ".svg":
            app.save_screenshot(filename=p.name, path=str(p.parent))
            return f"Saved a screenshot to {p}"
        if p.suffix.lower() == ".csv":
            rows = app.query_one(RunView).rows()
            if len(rows) < 2:
                raise ViewExportError("the Run table is empty: run the fusion first (x, then e)")
            with p.open("w", newline="", encoding="utf-8") as f:
                csv.writer(f).writerows(rows)
            return f"Saved the Run table ({len(rows) - 1} rows) to {p}"
        text = app.current_view_text()
        if not text:
            raise ViewExportError("this view shows nothing to export yet")
        p.write_text(text if text.endswith("\n") else text + "\n", encoding="utf-8")
        return f"Saved {len(text.splitlines())} lines to {p}"
    except OSError as e:
        raise ViewExportError(f"cannot write {p}: {e.strerror or e}") from None
