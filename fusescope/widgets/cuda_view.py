"""The CUDA tab: per segment, the generated kernel with syntax highlighting, its launch
configuration, and the kernel IR with the lowering stages that produced it.

The source is rendered only for the segment and mode on screen (kernels with their runtime
headers run to thousands of lines); the headers, identical in every kernel, are hidden until
asked for."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.syntax import Syntax
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.widgets import OptionList
from textual.widgets.option_list import Option

from fusescope.messages import SegmentSelected
from fusescope.render.graph import scheduler_color
from fusescope.widgets.code_view import CodeView
from fusescope.widgets.copying import copy_text

if TYPE_CHECKING:
    from fusescope.model import CompileResult, SegmentInfo

PLACEHOLDER = "The fusion is compiled when this tab opens (key u)."
MODES = ("source", "kernel IR", "lowering stages")


class CudaView(Horizontal):
    BINDINGS = [
        Binding("v", "cycle_mode", "Source/IR/stages"),
        Binding("a", "toggle_runtime", "Runtime headers"),
        Binding("c", "copy", "Copy text"),
    ]

    DEFAULT_CSS = """
    CudaView {
        height: 1fr;
    }
    CudaView > OptionList {
        width: 30;
        height: 1fr;
        text-wrap: nowrap;  /* a narrow list cuts long scheduler names with an ellipsis */
        text-overflow: ellipsis;
        border: round $panel-lighten-2;
        border-title-color: $text-muted;
    }
    CudaView > OptionList:focus {
        border: round $accent;
    }
    CudaView > CodeView {
        width: 1fr;
    }
    """

    def __init__(self, *, id: str | None = None) -> None:  # noqa: A002 (Textual's name)
        super().__init__(id=id)
        self.result: CompileResult | None = None
        self.selected: int | None = None
        self.mode = MODES[0]
        self.show_runtime = False
        self.text = ""  # exactly the engine's text of what is shown (what `c` copies)
        self._list = OptionList(id="cuda-segments")
        self._list.border_title = "Segments"
        self.code = CodeView("CUDA", id="cuda-code")

    def compose(self) -> ComposeResult:
        yield self._list
        yield self.code

    def on_mount(self) -> None:
        if not self.code.lines.source:  # nothing shown yet
            self.code.show(Text(PLACEHOLDER, style="dim italic"), prose=True)

    def clear(self) -> None:
        self.result = None
        self.selected = None
        self.text = ""
        self._list.clear_options()
        self.code.border_title = "CUDA"
        self.code.show(Text(PLACEHOLDER, style="dim italic"), prose=True)

    def show_result(self, result: CompileResult) -> None:
        self.result = result
        self._list.clear_options()
        if result.error:
            self.text = ""
            self.code.border_title = "CUDA · no compilation"  # not the last segment shown
            self.code.show(Text(f"No compilation: {result.error}", style="bold red"), prose=True)
            return
        for s in result.segments:
            label = Text(f"g{s.id:<3}", style="bold")
            label.append(s.scheduler, style=scheduler_color(s.scheduler))
            if not s.is_kernel:
                label.append("  no kernel", style="dim")
            self._list.add_option(Option(label, id=str(s.id)))
        if self.selected not in {s.id for s in result.segments}:
            self.selected = result.segments[0].id if result.segments else None
        if self.selected is not None:
            self.select_segment(self.selected)

    @property
    def segment(self) -> SegmentInfo | None:
        if self.result is None or self.selected is None or self.result.error:
            return None
        return self.result.segment(self.selected)

    def select_segment(self, sid: int, post: bool = False) -> None:
        if self.result is None or self.result.error or sid not in {s.id for s in self.result.segments}:
            return
        self.selected = sid
        index = self._list.get_option_index(str(sid))
        if self._list.highlighted != index:
            self._list.highlighted = index
        self._render_segment()
        if post:
            self.post_message(SegmentSelected(sid))

    def on_option_list_option_highlighted(self, event: OptionList.OptionHighlighted) -> None:
        event.stop()
        # Only a move the user made is a selection: the cursor also moves when another view
        # selected a segment (or the list is refilled), and echoing those back would make the
        # views chase each other's stale selections.
        # An event about an option the cursor has left since is stale (see RunView).
        if not self._list.has_focus or event.option_index != self._list.highlighted:
            return
        if event.option.id is not None and int(event.option.id) != self.selected:
            self.select_segment(int(event.option.id), post=True)

    def _render_segment(self) -> None:
        s = self.segment
        if s is None:
            return
        self.code.border_title = f"CUDA · g{s.id} · {self.mode}"
        head = Text()
        head.append(f"g{s.id} ", style="bold")
        head.append(s.scheduler, style=f"bold {scheduler_color(s.scheduler)}")
        head.append(f"  {s.ops} ops  in: {', '.join(s.inputs) or '-'}  out: {', '.join(s.outputs) or '-'}\n")
        if not s.is_kernel:
            head.append("No kernel: this segment runs through the reference evaluator (ATen), "
                        "so there is no CUDA source, launch or kernel IR.\n", style="italic")
            self.text = ""
            self.code.show(head, prose=True)
            return
        assert s.grid is not None and s.block is not None
        threads = s.block[0] * s.block[1] * s.block[2]
        blocks = s.grid[0] * s.grid[1] * s.grid[2]
        head.append(f"{s.kernel_name}: grid {s.grid} x block {s.block} ({blocks} blocks of {threads} threads), "
                    f"{s.shared_mem_bytes} B dynamic shared memory\n", style="dim")
        head.append(f"{s.launch}\n", style="dim")
        if self.mode == "source":
            code = s.cuda_source if self.show_runtime else s.kernel_source
            self.text = code or ""
            if not self.show_runtime:
                head.append(f"({s.runtime_lines} lines of runtime headers hidden: key a shows them)\n",
                            style="dim italic")
            body = _numbered(Syntax(self.text, "cuda", theme="ansi_dark").highlight(self.text))
        elif self.mode == "kernel IR":
            self.text = s.kernel_ir or ""
            body = Syntax(self.text, "cuda", theme="ansi_dark").highlight(self.text)
        else:
            parts = []
            for name, stage in s.stages:
                parts.append(f"== {name} ==\n{stage.rstrip()}\n")
            self.text = "\n".join(parts)
            body = Text(self.text) if parts else Text("No lowering stages were recorded.", style="dim italic")
        self.code.show(Text.assemble(head, "\n", body))

    def action_cycle_mode(self) -> None:
        self.mode = MODES[(MODES.index(self.mode) + 1) % len(MODES)]
        self._render_segment()
        self.notify(f"CUDA tab shows the {self.mode}", timeout=2)

    def action_toggle_runtime(self) -> None:
        self.show_runtime = not self.show_runtime
        self.mode = "source"
        self._render_segment()

    def action_copy(self) -> None:
        copy_text(self, self.text, f"the {self.mode}")


def _numbered(code: Text) -> Text:
    """`code` with a dim line number ahead of each line."""
    lines = code.split("\n", allow_blank=True)
    if len(lines) > 1 and not lines[-1].plain:
        lines.pop()
    width = len(str(len(lines)))
    out = Text()
    for k, line in enumerate(lines, start=1):
        out.append(f"{k:>{width}} ", style="dim")
        out.append_text(line)
        out.append("\n")
    return out
