"""A scrollable, focusable pane of highlighted IR text that can copy itself."""

from __future__ import annotations

from rich.text import Text
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.widgets import Static

from fusescope.render.highlight import highlight


class TextPane(VerticalScroll, can_focus=True):
    """Base of the listing and transform panes: holds plain text, shows it coloured."""

    BINDINGS = [Binding("c", "copy", "Copy text")]

    DEFAULT_CSS = """
    TextPane {
        border: round $panel-lighten-2;
        border-title-color: $text-muted;
        padding: 0 1;
    }
    TextPane:focus {
        border: round $accent;
    }
    TextPane > Static {
        width: auto;
    }
    """

    def __init__(self, title: str, placeholder: str, *, id: str | None = None) -> None:  # noqa: A002
        super().__init__(id=id)
        self.border_title = title
        self.text = ""  # the plain text shown, as the engine printed it
        self._placeholder = placeholder
        self._body = Static(Text(placeholder, style="dim italic"))

    def compose(self):  # noqa: ANN201 (Textual's generator protocol)
        yield self._body

    def set_text(self, text: str, selected: str | None = None) -> None:
        self.text = text
        if text:
            self._body.update(highlight(text, selected=selected))
        else:
            self._body.update(Text(self._placeholder, style="dim italic"))

    def action_copy(self) -> None:
        if not self.text:
            self.notify("Nothing to copy yet", severity="warning")
            return
        self.app.copy_to_clipboard(self.text)
        self.notify(f"Copied {self.border_title} ({len(self.text.splitlines())} lines)")
