"""`o`: ask for a fusion file to open (a path, or the name of a bundled sample)."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.suggester import SuggestFromList
from textual.widgets import Input, Label


class OpenFileScreen(ModalScreen[str | None]):
    """Dismisses with the text entered, or None when cancelled."""

    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    DEFAULT_CSS = """
    OpenFileScreen {
        align: center middle;
    }
    OpenFileScreen > Vertical {
        width: 80;
        height: auto;
        max-width: 100%;
        border: thick $accent;
        background: $surface;
        padding: 1 2;
    }
    OpenFileScreen Label {
        width: 1fr;  /* the prompt wraps on a narrow terminal instead of being cut */
        margin-bottom: 1;
    }
    """

    def __init__(self, sample_names: list[str]) -> None:
        super().__init__()
        self.sample_names = sample_names

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label("Open a fusion file (nvFuser python-frontend format) or a bundled sample name")
            yield Input(
                placeholder="path/to/fusion.py or " + (self.sample_names[0] if self.sample_names else "sample"),
                suggester=SuggestFromList(self.sample_names, case_sensitive=False),
                id="path",
            )

    def on_input_submitted(self, event: Input.Submitted) -> None:
        value = event.value.strip()
        self.dismiss(value or None)

    def action_cancel(self) -> None:
        self.dismiss(None)
