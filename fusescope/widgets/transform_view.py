"""The lower pane: the selected TensorView's domains and transforms (seed-001 form)."""

from __future__ import annotations

from rich.text import Text
from textual.binding import Binding

from fusescope.render.highlight import highlight
from fusescope.widgets.code_view import CodeView
from fusescope.widgets.copying import copy_text

PLACEHOLDER = "Select a TensorView (tree, listing, or ctrl+p → Show tensor) to see its transforms"


class TransformView(CodeView):
    BINDINGS = [Binding("c", "copy", "Copy text")]

    def __init__(self, *, id: str | None = None) -> None:  # noqa: A002 (Textual's name)
        super().__init__("Transforms", id=id)
        self.text = ""  # the block exactly as the engine printed it
        self.tensor: str | None = None
        self.scheduled = False  # True when the block is of the scheduled fusion's tensor

    def on_mount(self) -> None:
        if not self.lines.source:  # nothing shown yet
            self.show(Text(PLACEHOLDER, style="dim italic"), prose=True)

    def show_block(self, name: str | None, block: str, scheduled: bool = False) -> None:
        self.tensor = name
        self.text = block
        self.scheduled = scheduled
        which = " (scheduled)" if scheduled else ""
        self.border_title = f"Transforms · {name}{which}" if name else "Transforms"
        if block:
            self.show(highlight(block))
        else:
            self.show(Text(PLACEHOLDER, style="dim italic"), prose=True)

    def action_copy(self) -> None:
        copy_text(self, self.text, f"the transforms of {self.tensor}")
