"""F1: every key the app answers to, and what the debugger does not do yet."""

from __future__ import annotations

from dataclasses import dataclass

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

# Said plainly so nobody hunts for views that do not exist yet.
NOT_YET = (
    "Not yet in this version: an Options view (force a scheduler per segment, override a "
    "heuristic value, device model) and the comparison of a run with the previous one, session "
    "bundles, and the host-IR stream timeline; the Host IR tab says when the engine has no "
    "host program yet. The palette recompiles with forwarding off or on. The Schedule tab "
    "schedules the whole fusion as one group at the file's example inputs; the Segments, CUDA "
    "and Run tabs show the real compilation, segment by segment."
)


@dataclass(frozen=True)
class KeyRow:
    key: str
    description: str
    where: str


class HelpScreen(ModalScreen[None]):
    BINDINGS = [
        Binding("escape", "dismiss", "Close"),
        Binding("f1", "dismiss", "Close", show=False),
        Binding("q", "dismiss", "Close", show=False),
    ]

    DEFAULT_CSS = """
    HelpScreen {
        align: center middle;
    }
    HelpScreen > VerticalScroll {
        width: 84;
        max-height: 90%;
        height: auto;
        border: thick $accent;
        background: $surface;
        padding: 1 2;
    }
    """

    def __init__(self, rows: list[KeyRow]) -> None:
        super().__init__()
        self.rows = rows

    def compose(self) -> ComposeResult:
        table = Table(title="fusescope keys", expand=True, show_edge=False)
        table.add_column("Key", style="bold cyan", no_wrap=True)
        table.add_column("Does")
        table.add_column("Where", style="dim")
        for row in self.rows:
            table.add_row(row.key, row.description, row.where)
        with VerticalScroll():
            yield Static(table, id="keys")
            yield Static(Text("\n" + NOT_YET, style="italic"), id="not-yet")
            yield Static(Text("\nesc closes this help", style="dim"))
