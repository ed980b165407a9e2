"""The Schedule tab: for the selected segment, the scheduler that accepted it, its heuristic
parameters and how they were derived (the trace's heuristic events), the compiled kernel's
launch (grid, block, shared memory part by part: fusescope.launch_text), every other
scheduler's verdict and reason, and the segment's scheduled IR. The segment list on the left is one more
place to select a segment: every view follows."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.widgets import OptionList
from textual.widgets.option_list import Option

from fusescope.messages import SegmentSelected
from fusescope.render.graph import scheduler_color
from fusescope.render.highlight import highlight
from fusescope.widgets.code_view import CodeView
from fusescope.widgets.copying import copy_text

if TYPE_CHECKING:
    from fusescope.model import CompileResult, SegmentInfo

PLACEHOLDER = "The fusion is compiled when this tab opens (key s)."


class ScheduleView(Horizontal):
    BINDINGS = [Binding("c", "copy", "Copy text")]

    DEFAULT_CSS = """
    ScheduleView {
        height: 1fr;
    }
    ScheduleView > OptionList {
        width: 30;
        height: 1fr;
        text-wrap: nowrap;  /* a narrow list cuts long scheduler names with an ellipsis */
        text-overflow: ellipsis;
        border: round $panel-lighten-2;
        border-title-color: $text-muted;
    }
    ScheduleView > OptionList:focus {
        border: round $accent;
    }
    ScheduleView > CodeView {
        width: 1fr;
    }
    """

    def __init__(self, *, id: str | None = None) -> None:  # noqa: A002 (Textual's name)
        super().__init__(id=id)
        self.result: CompileResult | None = None
        self.selected: int | None = None
        self.text = ""  # what `c` copies: the segment's part of `fusescope show --schedule`
        self._list = OptionList(id="schedule-segments")
        self._list.border_title = "Segments"
        self.code = CodeView("Schedule", id="schedule-code")

    def compose(self) -> ComposeResult:
        yield self._list
        yield self.code

    def on_mount(self) -> None:
        if not self.code.lines.source:  # nothing shown yet
            self.code.show(Text(PLACEHOLDER, style="dim italic"), prose=True)

    def clear(self) -> None:
        self.result = None
        self.selected = None
        self.text = ""
        self._list.clear_options()
        self.code.border_title = "Schedule"
        self.code.show(Text(PLACEHOLDER, style="dim italic"), prose=True)

    def show_result(self, result: CompileResult) -> None:
        self.result = result
        self._list.clear_options()
        if result.error:
            self.text = ""
            self.code.border_title = "Schedule · no compilation"
            self.code.show(Text(f"No compilation: {result.error}", style="bold red"), prose=True)
            return
        for s in result.segments:
            label = Text(f"g{s.id:<3}", style="bold")
            label.append(s.scheduler, style=scheduler_color(s.scheduler))
            self._list.add_option(Option(label, id=str(s.id)))
        if self.selected not in {s.id for s in result.segments}:
            self.selected = result.segments[0].id if result.segments else None
        if self.selected is not None:
            self.select_segment(self.selected)

    @property
    def segment(self) -> SegmentInfo | None:
        if self.result is None or self.selected is None or self.result.error:
            return None
        return self.result.segment(self.selected)

    def select_segment(self, sid: int, post: bool = False) -> None:
        if self.result is None or self.result.error or sid not in {s.id for s in self.result.segments}:
            return
        self.selected = sid
        index = self._list.get_option_index(str(sid))
        if self._list.highlighted != index:
            self._list.highlighted = index
        self._render_segment()
        if post:
            self.post_message(SegmentSelected(sid))

    def on_option_list_option_highlighted(self, event: OptionList.OptionHighlighted) -> None:
        event.stop()
        # Only a move the user made is a selection (see CudaView: refills move the cursor too).
        # An event about an option the cursor has left since is stale (see RunView).
        if not self._list.has_focus or event.option_index != self._list.highlighted:
            return
        if event.option.id is not None and int(event.option.id) != self.selected:
            self.select_segment(int(event.option.id), post=True)

    def _render_segment(self) -> None:
        s = self.segment
        if s is None:
            return
        self.text = s.schedule_report()
        self.code.border_title = f"Schedule · g{s.id} · {s.scheduler}"
        self.code.show(Text("\n").join(_parts(s)))

    def action_copy(self) -> None:
        copy_text(self, self.text, "the schedule")


def _parts(s: SegmentInfo) -> list[Text]:
    head = Text(f"g{s.id} ", style="bold")
    head.append(s.scheduler, style=f"bold {scheduler_color(s.scheduler)}")
    head.append(f"  {s.ops} ops  in: {', '.join(s.inputs) or '-'}  out: {', '.join(s.outputs) or '-'}")
    parts = [head, Text(f"\nAccepted by: {s.scheduler}", style="bold green")]
    parts.append(Text(s.params_text) if s.params.strip()
                 else Text(f"The {s.scheduler} scheduler takes no heuristic parameters.", style="italic"))
    if s.derivation:
        parts.append(Text("\nHow the heuristic derived them", style="bold"))
        parts += [Text(f"  {d}") for d in s.derivation]
    launch = s.launch_report()
    if launch:
        parts.append(Text("\n" + launch[0], style="bold"))
        parts += [Text(line) for line in launch[1:]]
    if s.verdicts:
        parts.append(Text("\nEvery scheduler's verdict (priority order)", style="bold"))
        for v in s.verdicts:
            line = Text("  ✓ " if v.accepted else "  ✗ ", style="green" if v.accepted else "red")
            line.append(f"{v.scheduler:<24}", style="bold" if v.accepted else "")
            line.append("accepted" if v.accepted else (v.reason or "rejected"),
                        style="green" if v.accepted else "dim")
            parts.append(line)
    else:
        parts.append(Text(f"\nNo scheduler was asked: the segmenter's choice ({s.scheduler}) stands.",
                          style="italic"))
    others = [e for e in s.events if e.kind != "can_schedule"]
    if others:
        parts.append(Text("\nTrace events", style="bold"))
        parts += [Text(f"  {e.text}", style="dim") for e in others]
    parts.append(Text("\nScheduled IR", style="bold"))
    parts.append(highlight(s.scheduled_ir.rstrip("\n")))
    return parts
