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
    from fusescope.md_model import MultiDeviceInfo
    from fusescope.md_run import MultiRunResult
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

    BINDINGS = [
        Binding("c", "copy", "Copy text"),
        Binding("left_square_bracket", "rank(-1)", "Previous rank"),
        Binding("right_square_bracket", "rank(1)", "Next rank"),
    ]

    def __init__(self, *, id: str | None = None) -> None:  # noqa: A002 (Textual's name)
        super().__init__("Host IR", id=id)
        self.text = ""  # the host IR exactly as the engine printed it
        self.shown = PLACEHOLDER  # what the tab says, as plain text
        self.result: CompileResult | None = None
        self._program = Text(PLACEHOLDER, style="dim italic")
        self.timeline_text = NO_TIMELINE
        self._timeline = Text(textwrap.fill(NO_TIMELINE, NOTE_WIDTH), style="dim italic")
        self.multidevice: MultiDeviceInfo | None = None  # a multi-device fusion: a host IR per rank
        self.rank = 0
        self.md_run: MultiRunResult | None = None

    def on_mount(self) -> None:
        self._show_both()

    def _show_both(self) -> None:
        # Without a program the pane holds sentences only: they wrap.
        self.show(Text.assemble(self._program, "\n", self._timeline), prose=not self.text)

    def clear(self) -> None:
        self.multidevice = self.md_run = None
        self.rank = 0
        self.border_title = "Host IR"
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

    # ---- a multi-device fusion: the host IR of a chosen rank ---------------------------
    def show_multidevice(self, info: MultiDeviceInfo, rank: int = 0) -> None:
        self.multidevice = info
        self.rank = max(0, min(rank, info.world - 1))
        if info.error:
            self.text = ""
            self.shown = f"No host IR: {info.error}"
            self._program = Text(self.shown, style="bold red")
            self.timeline_text = ""
            self._timeline = Text("")
            self._show_both()
            return
        self.text = info.host_ir_of(self.rank)
        self.shown = self.text
        ranks = Text("Rank: ", style="bold")
        for r in range(info.world):
            ranks.append(f" {r} ", style="reverse bold" if r == self.rank else "dim")
        ranks.append(f"   ([ / ] change the rank; {info.world} ranks)\n", style="dim")
        self.border_title = f"Host IR · rank {self.rank} of {info.world}"
        self._program = Text.assemble(ranks, highlight(self.text))
        self._md_timeline()

    def show_md_run(self, run: MultiRunResult) -> None:
        """The per-rank timeline of a multi-device run, under the selected rank's host IR."""
        self.md_run = run
        if self.multidevice is not None:
            self.show_multidevice(self.multidevice, self.rank)

    def _md_timeline(self) -> None:
        run = self.md_run
        mine = next((r for r in run.results if r.rank == self.rank), None) if run is not None else None
        if mine is None or not mine.timeline:
            self.timeline_text = f"Timeline of rank {self.rank}: none yet (run it on the Run tab, key x)."
            self._timeline = Text("\n" + self.timeline_text, style="dim italic")
        else:
            lines = Text(f"\nTimeline of rank {self.rank} ({run.backend}, ms since its run started)\n", style="bold")
            end = max(s.end_ms for s in mine.timeline) or 1.0
            streams = any(s.stream != "main" for s in mine.timeline)  # a pipelined step's chunks
            for s in mine.timeline:
                a = round(s.start_ms / end * TIMELINE_BAR)
                b = max(a + 1, round(s.end_ms / end * TIMELINE_BAR))
                lane = f"{s.stream:<5}" if streams else ""
                lines.append(f"{s.step[:40]:<40} {s.kind:<13} {lane}{s.start_ms:9.3f} {s.end_ms:9.3f}  ")
                lines.append(" " * a + "█" * (b - a) + "\n", style="cyan" if s.kind == "compute" else "magenta")
            self.timeline_text = lines.plain
            self._timeline = lines
        self._show_both()

    def action_rank(self, step: int) -> None:
        info = self.multidevice
        if info is None or info.error:
            self.notify("One host IR only: a rank is chosen for a multi-device fusion", timeout=3)
            return
        self.show_multidevice(info, (self.rank + step) % info.world)

    def action_copy(self) -> None:
        copy_text(self, self.text, "the host IR")
