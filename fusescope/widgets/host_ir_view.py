"""The Host IR tab: the host program that launches the kernels (stream loops and all), once
the engine's compilation produces one; until then it says so."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.widgets import Static

from fusescope.render.highlight import highlight
from fusescope.widgets.copying import copy_text

if TYPE_CHECKING:
    from fusescope.model import CompileResult

PLACEHOLDER = "The fusion is compiled when this tab opens (key h)."
NOT_YET = ("Host IR is not available yet: this engine's compilation has no host-IR program. "
           "It is being added to the engine; this tab shows it as soon as compile_fusion produces it.")


class HostIrView(VerticalScroll, can_focus=True):
    BINDINGS = [Binding("c", "copy", "Copy text")]

    DEFAULT_CSS = """
    HostIrView {
        height: 1fr;
        border: round $panel-lighten-2;
        border-title-color: $text-muted;
        padding: 0 1;
    }
    HostIrView:focus {
        border: round $accent;
    }
    HostIrView > Static {
        width: auto;
    }
    """

    def __init__(self, *, id: str | None = None) -> None:  # noqa: A002 (Textual's name)
        super().__init__(id=id)
        self.border_title = "Host IR"
        self.text = ""  # the host IR exactly as the engine printed it
        self.shown = PLACEHOLDER  # what the tab says, as plain text
        self.result: CompileResult | None = None
        self._body = Static(Text(PLACEHOLDER, style="dim italic"))

    def compose(self) -> ComposeResult:
        yield self._body

    def clear(self) -> None:
        self.result = None
        self.text = ""
        self.shown = PLACEHOLDER
        self._body.update(Text(PLACEHOLDER, style="dim italic"))

    def show_result(self, result: CompileResult) -> None:
        self.result = result
        if result.error:
            self.text = ""
            self.shown = f"No compilation: {result.error}"
            self._body.update(Text(self.shown, style="bold red"))
        elif result.host_ir is None:
            self.text = ""
            self.shown = NOT_YET
            self._body.update(Text(NOT_YET, style="italic"))
        else:
            self.text = self.shown = result.host_ir
            self._body.update(highlight(result.host_ir))

    def action_copy(self) -> None:
        copy_text(self, self.text, "the host IR")
