"""The Run tab's charts (`v` cycles table -> time -> roofline -> history): drawn from the
session's recorded runs by fusescope.render.chart_text, at the pane's width."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from rich.text import Text
from textual.containers import VerticalScroll
from textual.widgets import Static

from fusescope.render import chart_text, charts

if TYPE_CHECKING:
    from textual.events import Resize

    from fusescope.model import RunResult


class RunCharts(VerticalScroll):
    DEFAULT_CSS = """
    RunCharts {
        height: 1fr;
        border: round $panel-lighten-2;
        border-title-color: $text-muted;
        padding: 0 1;
        display: none;
    }
    RunCharts:focus {
        border: round $accent;
    }
    RunCharts > Static {
        width: auto;
    }
    """

    def __init__(self, *, id: str | None = None) -> None:  # noqa: A002 (Textual's name)
        super().__init__(id=id)
        self.chart = charts.CHARTS[0]
        self.runs: list[RunResult] = []
        self.text = ""  # what the chart shows, plain
        self._body = Static("")

    def compose(self):  # type: ignore[no-untyped-def]
        yield self._body

    # The data each chart draws, from the last run (history: every run); tests read these.
    @property
    def bars(self) -> list[charts.Bar]:
        return charts.time_bars(self.runs[-1]) if self.runs else []

    @property
    def roofline(self) -> charts.Roofline | None:
        return charts.roofline(self.runs[-1]) if self.runs else None

    @property
    def history(self) -> list[charts.HistoryPoint]:
        return charts.history(self.runs)

    def show(self, runs: Sequence[RunResult], chart: str | None = None) -> None:
        self.runs = list(runs)
        if chart is not None:
            self.chart = chart
        self.redraw()

    def redraw(self) -> None:
        width = max(40, self.size.width - 4) if self.size.width else 100
        titles = {"time": "time and bandwidth per segment", "roofline": "roofline", "history": "run history"}
        self.border_title = f"Chart: {titles[self.chart]} (v: next chart, back to the table)"
        if not self.runs:
            body = Text("No run yet: e, f or d runs the fusion.", style="dim italic")
        elif self.chart == "time":
            body = chart_text.time_chart(self.bars, width)
        elif self.chart == "roofline":
            body = chart_text.roofline_chart(self.roofline, width)
        else:
            body = chart_text.history_chart(self.history, width)
        self.text = body.plain
        self._body.update(body)

    def on_resize(self, event: Resize) -> None:
        if self.runs:
            self.redraw()
