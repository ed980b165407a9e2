"""F1: every key the app answers to, and what this version does not do."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

if TYPE_CHECKING:
    from textual.app import App

# Said plainly so nobody hunts for views that do not exist yet.
NOT_YET = (
    "Random-number ops draw nvFuser's Philox stream; without rng_seed/rng_offset every run "
    "draws the same numbers. "
    "Attention (sdpfa_fwd/bwd) runs through torch as an expr_eval segment (with dropout it "
    "compiles and shows, but running it is refused: flash attention's RNG cannot be "
    "reproduced); so "
    "do scans (cumsum, cumprod, cummax, cummin), topk, argsort, scatter, index_put_accumulate "
    "and grouped_mm (no kernel is generated for them; nvFuser generates some). "
    "Not in this version: the scaled grouped_mm (refused when a file is opened, naming the op "
    "and line); complex dtypes (refused at "
    "compile); TMA loads and warp specialization in the generated kernels (shared-memory "
    "caches are circular-buffered with cp.async instead; the Schedule tab's Launch section "
    "shows each kernel's shared memory part by part). Kernels are compiled "
    "for the file's example input sizes (without an inputs list, inputs made from the "
    "definition: symbolic sizes in the Options tab's Input sizes); the emulate back end checks "
    "values, its times say nothing about a GPU."
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
        width: 100;
        max-width: 100%;
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


def key_rows(app: App[None]) -> list[KeyRow]:
    """Every key the main screen answers to, from the bindings themselves where they exist."""
    from fusescope.widgets.code_view import CodeView
    from fusescope.widgets.cuda_view import CudaView
    from fusescope.widgets.host_ir_view import HostIrView
    from fusescope.widgets.listing_view import ListingView
    from fusescope.widgets.md_run_view import MultiRunView
    from fusescope.widgets.options_view import OptionsView
    from fusescope.widgets.run_view import RunView
    from fusescope.widgets.segments_view import SegmentsView

    def rows_of(bindings: list[object], where: str, skip: tuple[str, ...] = ()) -> list[KeyRow]:
        out = []
        for binding in bindings:
            assert isinstance(binding, Binding)
            if binding.action not in skip:
                keys = " ".join(app.get_key_display(Binding(k.strip(), binding.action)) for k in binding.key.split(","))
                out.append(KeyRow(keys, binding.description, where))
        return out

    rows = rows_of(app.BINDINGS, "anywhere")
    rows.append(KeyRow(app.get_key_display(Binding("ctrl+p", "")), "Command palette", "anywhere"))
    rows += [
        KeyRow("↑ ↓", "Move between tensors (the transform pane follows)", "Tensors"),
        KeyRow("enter / space", "Fold or unfold a section", "Tensors"),
        KeyRow("↑ ↓", "Move between inputs, outputs and expressions", "Fusion IR"),
    ]
    rows += rows_of(ListingView.BINDINGS, "every view (the focused pane's text)")
    rows += [KeyRow("↑ ↓", "Select a segment (every view follows); tab to its schedule or kernel", "Schedule, CUDA")]
    rows += rows_of(SegmentsView.BINDINGS, "Segments (every view follows)", skip=("copy",))
    rows += [
        KeyRow("↑ ↓", "Select a segment (every view follows)", "Run"),
        KeyRow("← → ↑ ↓ pgup pgdn", "Scroll the text; long lines scroll sideways (shift+wheel too)",
               "Schedule, CUDA, Host IR, Transforms"),
    ]
    rows += rows_of(CodeView.BINDINGS, "Schedule, CUDA, Host IR, Transforms")
    rows += rows_of(CudaView.BINDINGS, "CUDA", skip=("copy",))
    rows += rows_of(RunView.BINDINGS, "Run", skip=("copy",))
    rows += rows_of(OptionsView.BINDINGS, "Options (enter in a field too)", skip=("copy",))
    # A multi-device fusion's keys: a rank's host IR, and runs on N ranks.
    rows += rows_of(HostIrView.BINDINGS, "Host IR (multi-device)", skip=("copy",))
    rows += rows_of(MultiRunView.BINDINGS, "Run (multi-device)", skip=("copy",))
    return rows
