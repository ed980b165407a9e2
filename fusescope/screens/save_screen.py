"""`b` and `w`: ask for a file to write (a bundle, a listing, a CSV table, an SVG screenshot)."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Label


class SaveScreen(ModalScreen[str | None]):
    """Dismisses with the path entered, or None when cancelled."""

    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    DEFAULT_CSS = """
    SaveScreen {
        align: center middle;
    }
    SaveScreen > Vertical {
        width: 90;
        height: auto;
        max-width: 100%;
        border: thick $accent;
        background: $surface;
        padding: 1 2;
    }
    SaveScreen Label {
        width: 1fr;  /* the prompt wraps on a narrow terminal instead of being cut */
        margin-bottom: 1;
    }
    """

    def __init__(self, prompt: str, default: str) -> None:
        super().__init__()
        self.prompt = prompt
        self.default = default

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(self.prompt)
            yield Input(self.default, id="save-path")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.dismiss(event.value.strip() or None)

    def action_cancel(self) -> None:
        self.dismiss(None)
