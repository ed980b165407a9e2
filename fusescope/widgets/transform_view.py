"""The lower pane: the selected TensorView's domains and transforms (seed-001 form)."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.widgets import Static

from fusescope.render.highlight import highlight
from fusescope.widgets.copying import copy_text

PLACEHOLDER = "Select a TensorView (tree, listing, or ctrl+p → Show tensor) to see its transforms"


class TransformView(VerticalScroll, can_focus=True):
    BINDINGS = [Binding("c", "copy", "Copy text")]

    DEFAULT_CSS = """
    TransformView {
        height: 1fr;
        border: round $panel-lighten-2;
        border-title-color: $text-muted;
        padding: 0 1;
    }
    TransformView:focus {
        border: round $accent;
    }
    TransformView > Static {
        width: auto;
    }
    """

    def __init__(self, *, id: str | None = None) -> None:  # noqa: A002 (Textual's name)
        super().__init__(id=id)
        self.border_title = "Transforms"
        self.text = ""  # the block exactly as the engine printed it
        self.tensor: str | None = None
        self.scheduled = False  # True when the block is of the scheduled fusion's tensor
        self._body = Static(Text(PLACEHOLDER, style="dim italic"))

    def compose(self) -> ComposeResult:
        yield self._body

    def show_block(self, name: str | None, block: str, scheduled: bool = False) -> None:
        self.tensor = name
        self.text = block
        self.scheduled = scheduled
        which = " (scheduled)" if scheduled else ""
        self.border_title = f"Transforms · {name}{which}" if name else "Transforms"
        self._body.update(highlight(block) if block else Text(PLACEHOLDER, style="dim italic"))

    def action_copy(self) -> None:
        copy_text(self, self.text, f"the transforms of {self.tensor}")
