"""The Options tab: the compile options a user can change (forwarding, a forced scheduler,
heuristic overrides, the device model, numberOfStreams, a replacement kernel per segment, and
the input sizes of a fusion whose file has no inputs list).
Applying them recompiles in a worker; the tab then shows what changed against the options
before (segments, parameters, the last run's time under each)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.message import Message
from textual.widgets import Button, Input, Label, Select, Static, Switch

from fusescope.widgets.copying import copy_text

if TYPE_CHECKING:
    from fusescope.model import CompileOptions

PLACEHOLDER = "Change an option and press Apply (or enter in a field): the fusion is recompiled and compared."


class OptionsApplied(Message):
    """The user asked for these options (the app recompiles with them)."""

    def __init__(self, options: CompileOptions) -> None:
        super().__init__()
        self.options = options


class OptionsView(VerticalScroll, can_focus=False):
    BINDINGS = [Binding("ctrl+a", "apply", "Apply options"), Binding("c", "copy", "Copy text", show=False)]

    DEFAULT_CSS = """
    OptionsView {
        height: 1fr;
        border: round $panel-lighten-2;
        border-title-color: $text-muted;
        padding: 0 1;
    }
    OptionsView > Horizontal {
        height: auto;
    }
    OptionsView Label {
        width: 26;
        padding: 1 1 0 0;
    }
    OptionsView Input, OptionsView Select {
        width: 1fr;
    }
    OptionsView > #options-diff {
        height: auto;
    }
    """

    def __init__(self, *, id: str | None = None) -> None:  # noqa: A002 (Textual's name)
        super().__init__(id=id)
        self.border_title = "Options"
        self.text = ""  # the last comparison, as plain text
        self._diff = Static(Text(PLACEHOLDER, style="dim italic"), id="options-diff")

    def compose(self) -> ComposeResult:
        from fusescope.model import DEVICE_MODELS, scheduler_names

        with Horizontal():
            yield Label("Input forwarding")
            yield Switch(value=True, id="opt-forwarding")
        with Horizontal():
            yield Label("Force a scheduler")
            yield Select([(n, n) for n in scheduler_names()], prompt="each segment's first accepting",
                         id="opt-scheduler")
        with Horizontal():
            yield Label("Device model")
            yield Select([(n, n) for n in DEVICE_MODELS], prompt="the GPU present, else H200", id="opt-device")
        with Horizontal():
            yield Label("numberOfStreams")
            yield Input("4", id="opt-streams", type="integer")
        with Horizontal():
            yield Label("Heuristic overrides")
            yield Input(placeholder="KEY=VALUE, ... e.g. g0.vectorization_factor=2, lparams.bdimx=128",
                        id="opt-heuristics")
        with Horizontal():
            yield Label("Replacement kernels")
            yield Input(placeholder="N=PATH.cu, ... (from `fusescope show FILE --cuda --segment N --with-runtime`)",
                        id="opt-kernels")
        with Horizontal():
            yield Label("Input sizes")
            yield Input(placeholder="no inputs list: T0=4096,8192 i0=64 1024 ... (as --size, space-separated)",
                        id="opt-sizes")
        with Horizontal():
            yield Button("Apply", id="opt-apply", variant="primary")
            yield Button("Reset to defaults", id="opt-reset")
        yield self._diff

    def show_options(self, options: CompileOptions) -> None:
        """Put `options` into the fields (kernel files are not known again: shown by segment)."""
        self.query_one("#opt-forwarding", Switch).value = options.forwarding
        for field, value in (("#opt-scheduler", options.force_scheduler), ("#opt-device", options.device_model)):
            select = self.query_one(field, Select)
            if value is None:
                select.clear()
            else:
                select.value = value
        self.query_one("#opt-streams", Input).value = str(options.num_streams)
        self.query_one("#opt-heuristics", Input).value = ", ".join(f"{k}={v}" for k, v in options.heuristic_overrides)
        self.query_one("#opt-sizes", Input).value = " ".join(
            ",".join(map(str, v)) if k == "*" else f"{k}={','.join(map(str, v))}" for k, v in options.input_sizes)

    def read_options(self, current: CompileOptions) -> CompileOptions:
        """The fields as options; OptionError (one line) names a malformed field. Kernel
        sources keep `current`'s when the field is empty (the files were read already)."""
        from fusescope.model import OptionError, parse_heuristic, parse_size, read_kernel_source

        streams = self.query_one("#opt-streams", Input).value.strip()
        if not streams.isdigit() or not 1 <= int(streams) <= 64:
            raise OptionError(f"numberOfStreams {streams!r}: give a whole number from 1 to 64")
        scheduler = self.query_one("#opt-scheduler", Select).value
        device = self.query_one("#opt-device", Select).value
        heuristics = [t for t in self.query_one("#opt-heuristics", Input).value.split(",") if t.strip()]
        kernels = [t for t in self.query_one("#opt-kernels", Input).value.split(",") if t.strip()]
        sources = dict(read_kernel_source(t) for t in kernels) if kernels else dict(current.kernel_sources)
        sizes = dict(parse_size(t) for t in self.query_one("#opt-sizes", Input).value.split())
        return current.with_(
            forwarding=self.query_one("#opt-forwarding", Switch).value,
            force_scheduler=scheduler if isinstance(scheduler, str) else None,
            device_model=device if isinstance(device, str) else None,
            num_streams=int(streams),
            heuristic_overrides=dict(parse_heuristic(t) for t in heuristics),
            kernel_sources=sources,
            input_sizes=sizes,
        )

    def clear_comparison(self) -> None:
        """Forget the last comparison (it was about the fusion open before)."""
        self.text = ""
        self._diff.update(Text(PLACEHOLDER, style="dim italic"))

    def drop_kernels(self) -> None:
        """Empty the replacement-kernels field (its files were for the fusion open before)."""
        self.query_one("#opt-kernels", Input).value = ""

    def drop_sizes(self) -> None:
        """Empty the input-sizes field (its names were the fusion's open before)."""
        self.query_one("#opt-sizes", Input).value = ""

    def show_comparison(self, text: str) -> None:
        self.text = text
        body = Text("What changed\n", style="bold")
        for line in text.splitlines():
            body.append(line + "\n", style="yellow" if line.startswith("  g") else "")
        self._diff.update(body)

    def action_apply(self) -> None:
        from fusescope.model import OptionError

        current = getattr(self.app, "options", None)
        if current is None:
            return
        try:
            options = self.read_options(current)
        except OptionError as e:
            self.notify(str(e), title="Options not applied", severity="error", timeout=8)
            return
        self.post_message(OptionsApplied(options))

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        if event.button.id == "opt-reset":
            from fusescope.model import CompileOptions

            self.show_options(CompileOptions())
            self.query_one("#opt-kernels", Input).value = ""
            self.post_message(OptionsApplied(CompileOptions()))
        else:
            self.action_apply()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.action_apply()

    def action_copy(self) -> None:
        copy_text(self, self.text, "the comparison")
