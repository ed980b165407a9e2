"""The Host IR tab: the host program that launches the kernels (stream loops and all) and,
after a run on the GPU, its stream timeline: which op ran on which stream, when."""

from __future__ import annotations

import textwrap
from typing import TYPE_CHECKING

from rich.text import Text
from textual.binding import Binding

from fusescope.render.highlight import highlight
from fusescope.widgets.code_view import CodeView
from fusescope.widgets.copying import copy_text

if TYPE_CHECKING:
    from fusescope.model import CompileResult, RunResult

PLACEHOLDER = "The fusion is compiled when this tab opens (key h)."
NOT_YET = ("Host IR is not available yet: this engine's compilation has no host-IR program. "
           "It is being added to the engine; this tab shows it as soon as compile_fusion produces it.")


NO_TIMELINE = ("Stream timeline: none yet. It needs a run on the GPU (the cuda back end: key d on the "
               "Run tab, or a bundle recorded on a GPU).")
TIMELINE_BAR = 40
NOTE_WIDTH = 50  # the no-timeline note's lines


class HostIrView(CodeView):
    """The host program and the stream timeline under it, in one pane."""

    BINDINGS = [Binding("c", "copy", "Copy text")]

    def __init__(self, *, id: str | None = None) -> None:  # noqa: A002 (Textual's name)
        super().__init__("Host IR", id=id)
        self.text = ""  # the host IR exactly as the engine printed it
        self.shown = PLACEHOLDER  # what the tab says, as plain text
        self.result: CompileResult | None = None
        self._program = Text(PLACEHOLDER, style="dim italic")
        self.timeline_text = NO_TIMELINE
        self._timeline = Text(textwrap.fill(NO_TIMELINE, NOTE_WIDTH), style="dim italic")

    def on_mount(self) -> None:
        self._show_both()

    def _show_both(self) -> None:
        # Without a program the pane holds sentences only: they wrap.
        self.show(Text.assemble(self._program, "\n", self._timeline), prose=not self.text)

    def clear(self) -> None:
        self.result = None
        self.text = ""
        self.shown = PLACEHOLDER
        self._program = Text(PLACEHOLDER, style="dim italic")
        self._show_both()

    def show_result(self, result: CompileResult) -> None:
        self.result = result
        if result.error:
            self.text = ""
            self.shown = f"No compilation: {result.error}"
            self._program = Text(self.shown, style="bold red")
        elif result.host_ir is None:
            self.text = ""
            self.shown = NOT_YET
            self._program = Text(NOT_YET, style="italic")
        else:
            self.text = self.shown = result.host_ir
            self._program = highlight(result.host_ir)
        self._show_both()

    @property
    def export_text(self) -> str:
        return self.text + self.timeline_text

    def show_timeline(self, runs: list[RunResult]) -> None:
        """The timeline of the last run that recorded one (cuda runs do)."""
        run = next((r for r in reversed(runs) if r.timeline), None)
        if run is None:
            last = runs[-1].backend if runs else None
            self.timeline_text = NO_TIMELINE + (f" The last run was on {last}." if last else "")
            # A sentence under code that scrolls sideways: folded here so it reads on a narrow pane.
            self._timeline = Text("\n" + textwrap.fill(self.timeline_text, NOTE_WIDTH), style="dim italic")
            self._show_both()
            return
        end = max(e.end_ms for e in run.timeline) or 1.0
        lines = Text(f"\nStream timeline ({run.device or run.backend}, {len(run.timeline)} ops, {end:.3f} ms)\n",
                     style="bold")
        lines.append(f"{'op':<30} {'stream':<8} {'iter':>4} {'start ms':>9} {'end ms':>9}  time\n", style="dim")
        for e in run.timeline:
            a = round(e.start_ms / end * TIMELINE_BAR)
            b = max(a + 1, round(e.end_ms / end * TIMELINE_BAR))
            it = "-" if e.iteration is None else str(e.iteration)
            lines.append(f"{e.op[:30]:<30} {e.stream:<8} {it:>4} {e.start_ms:9.3f} {e.end_ms:9.3f}  ")
            lines.append(" " * a + "█" * (b - a) + "\n", style="cyan" if e.stream == "caller" else "magenta")
        self.timeline_text = lines.plain
        self._timeline = lines
        self._show_both()

    def action_copy(self) -> None:
        copy_text(self, self.text, "the host IR")
