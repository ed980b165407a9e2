"""The Segments tab: the segment graph drawn in the terminal (layers of boxes coloured by
scheduler, edges labelled with tensors and bytes) and the segmenter's decision log: every merge
tried, why each refused one was refused by every scheduler, and what was forwarded."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.console import Group
from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.widgets import Static

from fusescope.messages import SegmentSelected
from fusescope.render.decision_log import collapse, counted, file_names
from fusescope.render.graph import draw, scheduler_color
from fusescope.widgets.copying import copy_text

if TYPE_CHECKING:
    from fusescope.md_model import MultiDeviceInfo
    from fusescope.model import CompileResult

PLACEHOLDER = "The fusion is compiled when this tab opens (key g)."


class SegmentsView(VerticalScroll, can_focus=True):
    BINDINGS = [
        Binding("down,j", "next_segment", "Next segment", show=False),
        Binding("up,k", "previous_segment", "Previous segment", show=False),
        Binding("c", "copy", "Copy text"),
    ]

    DEFAULT_CSS = """
    SegmentsView {
        height: 1fr;
        border: round $panel-lighten-2;
        border-title-color: $text-muted;
        padding: 0 1;
    }
    SegmentsView:focus {
        border: round $accent;
    }
    SegmentsView {
        overflow-x: auto;  /* a wide layer scrolls sideways rather than being cut */
    }
    SegmentsView > Static {
        width: auto;
    }
    SegmentsView > #segments-head {
        dock: top;  /* stays in view while the graph and the log scroll */
        width: 1fr;
        background: $surface;
    }
    """

    def __init__(self, *, id: str | None = None) -> None:  # noqa: A002 (Textual's name)
        super().__init__(id=id)
        self.border_title = "Segments"
        self.result: CompileResult | None = None
        self.selected: int | None = None
        self.text = ""  # what `c` copies: `fusescope show --segments`
        self._rows: dict[int, int] = {}  # segment id -> line of its box in the drawing
        self._head_lines = 0
        self.graph_text = ""  # the drawing as plain text (for tests and screen readers of the code)
        self.log_text = ""
        self.head_text = ""
        self._head = Static("", id="segments-head")
        self._graph = Static(Text(PLACEHOLDER, style="dim italic"), id="segment-graph")
        self._log = Static("", id="decision-log")

    def compose(self) -> ComposeResult:
        yield self._head
        yield self._graph
        yield self._log

    def clear(self) -> None:
        self.result = None
        self.selected = None
        self.text = ""
        self.border_title = "Segments"
        self._show_head(Text())
        self._graph.update(Text(PLACEHOLDER, style="dim italic"))
        self._log.update("")
        self.graph_text = self.log_text = ""

    def show_result(self, result: CompileResult) -> None:
        self.result = result
        self.text = result.summary()
        if result.error:
            self.border_title = "Segments · no compilation"
            self._show_head(Text())
            self._graph.update(Text(f"No compilation: {result.error}", style="bold red"))
            self._log.update("")
            self.graph_text = self.log_text = ""  # the previous compilation's are gone
            return
        n = len(result.segments)
        self.border_title = f"Segments · {n} · {result.options.describe()}"
        if self.selected not in {s.id for s in result.segments}:
            self.selected = result.segments[0].id if result.segments else None
        self._draw()
        log = self._decision_log(result)
        self.log_text = "\n".join(t.plain for t in log.renderables if isinstance(t, Text))
        self._log.update(log)

    def show_multidevice(self, info: MultiDeviceInfo) -> None:
        """A multi-device program: its regions and communications in run order, the steps
        every rank runs (each rank's regions compile to segments of their own)."""
        from fusescope.render.md_steps import draw_steps

        self.result = None
        self.selected = None
        self.text = self.log_text = info.segments_text()
        if info.error:
            self.border_title = "Segments · multi-device · MultiDeviceError"
            self._show_head(Text())
            self._graph.update(Text(f"{info.error}", style="bold red"))
            self.graph_text = ""
            self._log.update("")
            return
        comms = sum(s.kind == "communication" for s in info.steps)
        self.border_title = f"Segments · multi-device · {len(info.steps) - comms} regions, {comms} communications"
        self._show_head(Text(f"multi-device program on {info.world} ranks ({', '.join(info.meshes)}), run order",
                             style="bold"))
        drawing = draw_steps(info, max(40, (self.size.width or 100) - 4))
        self.graph_text = drawing.plain
        self._graph.update(drawing)
        self._log.update(Text("\n" + info.segments_text(), style="dim"))

    def _draw(self) -> None:
        assert self.result is not None
        width = max(40, (self.size.width or 100) - 4)
        drawing = draw(self.result.segments, self.result.edges, width=width, selected=self.selected)
        self._rows = drawing.rows
        self.graph_text = drawing.text.plain
        from fusescope.model import human_bytes

        head = Text(f"{len(self.result.segments)} segment(s); ", style="bold")
        head.append(f"{human_bytes(self.result.boundary_bytes)} cross segment boundaries", style="bold")
        head.append("  (↑/↓ select a segment)", style="dim")
        self._show_head(head)
        parts = [Text(self.result.note + "\n", style="italic")] if self.result.note else []
        self._head_lines = 2 * len(parts)  # the note's lines above the drawing
        self._graph.update(Group(*parts, drawing.text, self._legend()))

    def _show_head(self, head: Text) -> None:
        self.head_text = head.plain
        self._head.update(head)
        self._head.display = bool(head.plain)

    def _legend(self) -> Text:
        assert self.result is not None
        legend = Text("Schedulers: ")
        for name in sorted({s.scheduler for s in self.result.segments}):
            legend.append("■ ", style=scheduler_color(name))
            legend.append(name + "  ")
        return legend

    @staticmethod
    def _decision_log(result: CompileResult) -> Group:
        parts: list[Text] = [Text("\nDecision log (segmenter)", style="bold")]
        if not result.decisions:
            parts.append(Text("No segmenter decisions were recorded for this fusion.", style="dim italic"))
        for d, n in collapse(result.decisions):  # a decision repeated word for word: once, "(xN)"
            style = {True: "green", False: "yellow"}.get(d.accepted, "cyan") if d.kind != "segment" else "bold"
            line = Text(counted(d.text, n), style=style)
            names = file_names(d.text, result.origins)
            if names:
                line.append(f"  [file: {names}]", style="dim")
            parts.append(line)
            for r in d.refusals:
                parts.append(Text(f"    {r}", style="dim"))
        return Group(*parts)

    def on_resize(self, event: events.Resize) -> None:
        if self.result is not None and not self.result.error:
            self._draw()

    def select_segment(self, sid: int, post: bool = False) -> None:
        """Highlight segment `sid` (redrawn) and scroll its box into view."""
        if self.result is None or sid not in self._rows:
            return
        changed = sid != self.selected
        self.selected = sid
        if changed:
            self._draw()
        self.scroll_to(y=max(0, self._rows[sid] + self._head_lines - 1), animate=False)
        if post and changed:
            self.post_message(SegmentSelected(sid))

    def _step(self, delta: int) -> None:
        if self.result is None or not self.result.segments:
            return
        ids = [s.id for s in self.result.segments]
        k = ids.index(self.selected) if self.selected in ids else -delta
        self.select_segment(ids[max(0, min(len(ids) - 1, k + delta))], post=True)

    def action_next_segment(self) -> None:
        self._step(1)

    def action_previous_segment(self) -> None:
        self._step(-1)

    def action_copy(self) -> None:
        copy_text(self, self.text, "the segments")
