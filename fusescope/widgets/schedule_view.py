"""The Schedule tab: every scheduler's verdict, the accepting scheduler, its parameters and how
they were derived, and the scheduled IR, for the whole fusion (there is no segmenter yet)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.console import Group
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.widgets import Static

from fusescope.render.highlight import highlight
from fusescope.widgets.copying import copy_text

if TYPE_CHECKING:
    from fusescope.model import ScheduleResult

PLACEHOLDER = "The schedule is computed when this tab opens (key s)."


class ScheduleView(VerticalScroll, can_focus=True):
    BINDINGS = [Binding("c", "copy", "Copy text")]

    DEFAULT_CSS = """
    ScheduleView {
        height: 1fr;
        border: round $panel-lighten-2;
        border-title-color: $text-muted;
        padding: 0 1;
    }
    ScheduleView:focus {
        border: round $accent;
    }
    ScheduleView > Static {
        width: auto;
    }
    """

    def __init__(self, *, id: str | None = None) -> None:  # noqa: A002 (Textual's name)
        super().__init__(id=id)
        self.border_title = "Schedule"
        self.result: ScheduleResult | None = None
        self.text = ""  # what `c` copies: the same report `fusescope show --schedule` prints
        self._body = Static(Text(PLACEHOLDER, style="dim italic"))

    def compose(self) -> ComposeResult:
        yield self._body

    def clear(self) -> None:
        """Forget the previous fusion's schedule (a new fusion was loaded)."""
        self.result = None
        self.text = ""
        self.border_title = "Schedule"
        self._body.update(Text(PLACEHOLDER, style="dim italic"))

    def show_result(self, result: ScheduleResult) -> None:
        from fusescope.model import WHOLE_FUSION_NOTE

        self.result = result
        self.text = result.report()
        self.border_title = f"Schedule · {result.scheduler}" if result.scheduler else "Schedule · none"
        parts: list[Text] = [Text(WHOLE_FUSION_NOTE, style="italic")]
        if result.verdicts:
            parts.append(Text("\nScheduler verdicts (priority order)", style="bold"))
            for v in result.verdicts:
                # nvFuser's own line, coloured by the outcome so the accepting one stands out.
                parts.append(Text(v.text, style="bold green" if v.accepted else "dim"))
        if result.scheduler is not None:
            parts.append(Text(f"\nAccepted by: {result.scheduler}", style="bold green"))
            parts.append(Text(result.params_text().rstrip("\n")))
            if result.derivation:
                parts.append(Text("\nDerivation", style="bold"))
                parts += [Text(f"  {d}") for d in result.derivation]
            parts.append(Text("\nScheduled IR", style="bold"))
            parts.append(highlight(result.scheduled_ir.rstrip("\n")))
        if result.error:
            parts.append(Text(f"\nNo schedule: {result.error}", style="bold red"))
        self._body.update(Group(*parts))

    def action_copy(self) -> None:
        copy_text(self, self.text, "the schedule")
