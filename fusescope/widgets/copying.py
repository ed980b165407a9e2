"""The `c` key of the text panes: put exactly the engine's text on the clipboard."""

from __future__ import annotations

from textual.widget import Widget


def copy_text(widget: Widget, text: str, what: str) -> None:
    if not text:
        widget.notify("Nothing to copy yet", severity="warning")
        return
    # Textual sends it through the terminal (OSC 52), so it works over ssh too.
    widget.app.copy_to_clipboard(text)
    widget.notify(f"Copied {what} ({len(text.splitlines())} lines)")
