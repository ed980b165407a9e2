"""The fusescope TUI: the fusion IR, tensors and transforms, the schedule, the segment graph, CUDA, runs."""

from __future__ import annotations

from pathlib import Path

from textual import on
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import Screen
from textual.widgets import Footer, Header, TabbedContent, TabPane, Tabs

from fusescope import samples
from fusescope.commands import FusionCommands
from fusescope.files import FileActions
from fusescope.layout import TRANSFORM_TABS, tab_label
from fusescope.layout_actions import LayoutActions
from fusescope.md_app import MultiDeviceWork
from fusescope.messages import (
    CompileFinished,
    RunFinished,
    RunRequested,
    SegmentSelected,
    SessionLoaded,
    SessionLoadFailed,
    TensorSelected,
)
from fusescope.model import (
    DEFAULT_RUN_TIMEOUT_S,
    CompileOptions,
    LoadError,
    Session,
    load_session,
    skipped_summary,
)
from fusescope.screens.help_screen import HelpScreen, key_rows
from fusescope.screens.main_screen import MainScreen
from fusescope.widgets.cuda_view import CudaView
from fusescope.widgets.host_ir_view import HostIrView
from fusescope.widgets.listing_view import ListingView
from fusescope.widgets.md_run_view import MultiRunView
from fusescope.widgets.options_view import OptionsApplied, OptionsView
from fusescope.widgets.run_view import RunView
from fusescope.widgets.schedule_view import ScheduleView
from fusescope.widgets.segments_view import SegmentsView
from fusescope.widgets.task_bar import TaskBar
from fusescope.widgets.tensor_tree import TensorTree
from fusescope.widgets.transform_view import TransformView

# Tabs whose content comes from compiling the fusion (compiled in a worker when one opens).
COMPILE_TABS = frozenset({"tab-schedule", "tab-segments", "tab-cuda", "tab-host-ir"})


class FusescopeApp(FileActions, LayoutActions, MultiDeviceWork):
    CSS_PATH = "app.tcss"
    TITLE = "fusescope"
    COMMANDS = App.COMMANDS | {FusionCommands}
    BINDINGS = [
        Binding("f1", "help", "Help"),
        Binding("o", "open_file", "Open"),
        Binding("r", "reload", "Reload"),
        # The tabs' labels show their keys, so the footer need not.
        Binding("i", "show_ir", "Fusion IR", show=False),
        Binding("s", "show_schedule", "Schedule", show=False),
        Binding("g", "show_segments", "Segments", show=False),
        Binding("u", "show_cuda", "CUDA", show=False),
        Binding("x", "show_run", "Run", show=False),
        Binding("h", "show_host_ir", "Host IR", show=False),
        Binding("t", "show_options", "Options", show=False),
        Binding("ctrl+t", "toggle_tensors", "Tensors pane"),
        Binding("less_than_sign", "side_width(-1)", "Narrower tensors pane", show=False),
        Binding("greater_than_sign", "side_width(1)", "Wider tensors pane", show=False),
        Binding("b", "save_bundle", "Save bundle"),
        Binding("w", "export", "Export"),
        Binding("escape", "cancel", "Cancel"),  # in the footer only while a compile or run goes on
        Binding("tab", "focus_next", "Next pane", show=False),
        Binding("q", "quit", "Quit"),
        Binding("ctrl+c", "quit", "Quit", show=False),
    ]

    def __init__(self, session: Session | None = None, options: CompileOptions | None = None) -> None:
        super().__init__()
        self.session = session
        # What the compiled views show (palette toggles forwarding); `fusescope FILE --size`
        # starts with the input sizes of a file without an inputs list.
        self.options = options or CompileOptions()
        self.selected_segment: int | None = None  # one selection for every view that shows segments
        self.run_timeout = DEFAULT_RUN_TIMEOUT_S  # a run longer than this stops the worker
        self._focus_after_compile: tuple[str, str] | None = None  # (tab, selector) a key opened

    def compose(self) -> ComposeResult:
        yield Header()
        with Horizontal(id="body"):
            yield TensorTree(id="tensors")
            with Vertical(id="main"):
                with TabbedContent(id="views"):
                    with TabPane(tab_label("tab-ir", False), id="tab-ir"):
                        yield ListingView(id="listing")
                    with TabPane(tab_label("tab-schedule", False), id="tab-schedule"):
                        yield ScheduleView(id="schedule")
                    with TabPane(tab_label("tab-segments", False), id="tab-segments"):
                        yield SegmentsView(id="segments")
                    with TabPane(tab_label("tab-cuda", False), id="tab-cuda"):
                        yield CudaView(id="cuda")
                    with TabPane(tab_label("tab-run", False), id="tab-run"):
                        yield RunView(id="run")
                        yield MultiRunView(id="md-run")  # in RunView's place for a multi-device fusion
                    with TabPane(tab_label("tab-host-ir", False), id="tab-host-ir"):
                        yield HostIrView(id="host-ir")
                    with TabPane(tab_label("tab-options", False), id="tab-options"):
                        yield OptionsView(id="options")
                yield TransformView(id="transforms")
        yield TaskBar(id="task-bar")
        yield Footer()

    def get_default_screen(self) -> Screen[None]:
        return MainScreen(id="_default")

    def on_mount(self) -> None:
        # The tab strip is switched with i / s and the mouse; keeping it out of the focus
        # chain lets tab go straight from the tensors to the listing.
        self.query_one("#views Tabs", Tabs).can_focus = False
        self.query_one(OptionsView).show_options(self.options)
        if self.session is not None:
            self._show_session(self.session)
        self.query_one(TensorTree).focus()

    @property
    def schedule_tab_active(self) -> bool:
        return self.query_one(TabbedContent).active == "tab-schedule"

    # ---- showing ------------------------------------------------------------------
    def _show_session(self, session: Session) -> None:
        previous, self.session = self.session, session
        self._cancel_run()  # its results would be about the fusion shown before
        options_view = self.query_one(OptionsView)
        if previous is not None and previous.path != session.path and self.options.kernel_sources:
            # Replaced kernels are by segment id of the fusion they were written for.
            n = len(self.options.kernel_sources)
            self.options = self.options.with_(kernel_sources=())
            options_view.drop_kernels()
            self.notify(f"{n} replacement kernel{'s' if n > 1 else ''} dropped: written for {previous.title}",
                        title="Options", timeout=6)
        if previous is not None and previous.path != session.path and self.options.input_sizes:
            # Input sizes name the inputs of the fusion they were given for.
            self.options = self.options.with_(input_sizes=())
            options_view.drop_sizes()
            self.notify(f"input sizes dropped: given for {previous.title}", title="Options", timeout=6)
        self._compare_from = None
        options_view.clear_comparison()  # it compared compilations of the fusion open before
        self.sub_title = str(session.path) if session.path else session.title
        self.query_one(TensorTree).show_session(session)
        self.query_one(ListingView).show_listing(session.listing)
        self.query_one(TransformView).show_block(None, "")
        for view in self._compiled_views():
            view.clear()
            view.loading = False
        self.query_one(RunView).clear()
        if session.runs:  # a bundle's recorded runs
            self.query_one(RunView).show_runs(session.runs)
        self.query_one(HostIrView).show_timeline(session.runs)
        self._show_multidevice(session)  # a fusion with device meshes: its program, not a compile
        # A user who pasted a whole repro learns which lines the fusion was not read from.
        skipped = skipped_summary(session.fd)
        if skipped is not None:
            self.notify(skipped, title="Checking code skipped", timeout=8)
        self.selected_segment = None
        self._shown_compile = None
        if self.query_one(TabbedContent).active in COMPILE_TABS:
            self._start_compile()

    def show_tensor(self, name: str, reveal: bool = False) -> None:
        """Select tensor `name` everywhere: tree cursor, listing marks, transform pane. With
        `reveal` (the palette's "Show tensor"), a tab without the transform pane gives way to
        the Fusion IR tab."""
        if self.session is None or name not in self.session.tensors:
            self.notify(f"No tensor {name} in this fusion", severity="warning")
            return
        if reveal and self.query_one(TabbedContent).active not in TRANSFORM_TABS:
            self.query_one(TabbedContent).active = "tab-ir"
        self._show_transforms(name)
        listing = self.query_one(ListingView)
        if listing.selected != name or listing.current_tensor != name:
            listing.mark(name)
        tree = self.query_one(TensorTree)
        node = tree.cursor_node
        if node is None or node.data != name:
            tree.select_tensor(name)

    def _show_transforms(self, name: str) -> None:
        """The tensor's transform block; on the Schedule tab, the block as the selected segment
        scheduled it (when the segment holds that tensor)."""
        assert self.session is not None
        view = self.query_one(TransformView)
        segment = self.query_one(ScheduleView).segment
        scheduled = dict(segment.tensors) if segment is not None else {}
        if self.schedule_tab_active and name in scheduled:
            view.show_block(name, scheduled[name], scheduled=True)
        else:
            view.show_block(name, self.session.transforms(name))

    @on(TensorSelected)
    def _tensor_selected(self, event: TensorSelected) -> None:
        # The widget's own check (see TensorTree) cannot see a selection made after it
        # posted: one whose widget has moved on since would take the selection back.
        if event.source is not None and event.source.current_tensor != event.name:
            return
        self.show_tensor(event.name)

    # ---- tabs -----------------------------------------------------------------------
    @on(TabbedContent.TabActivated)
    def _tab_activated(self, event: TabbedContent.TabActivated) -> None:
        self.query_one("#main").set_class(event.pane.id not in TRANSFORM_TABS, "-no-transforms")
        if event.pane.id in COMPILE_TABS or event.pane.id == "tab-options":
            self._start_compile()
        self._refresh_transforms()

    def _refresh_transforms(self) -> None:
        tensor = self.query_one(TransformView).tensor
        if self.session is not None and tensor is not None:
            self._show_transforms(tensor)

    # ---- compilation (Segments, CUDA, Host IR) --------------------------------------
    @on(CompileFinished)
    def _compile_finished(self, event: CompileFinished) -> None:
        if event.session is not self.session or event.result.options != self.options:
            return  # a fusion loaded or the options changed since; that compile will report
        self._compile_ended()
        self._shown_compile = (event.session, event.result.options)
        if event.comparison is not None:
            self._compare_from = None
            self.query_one(OptionsView).show_comparison(event.comparison)
            first = event.comparison.splitlines()[1] if "\n" in event.comparison else event.comparison
            self.notify(first, title="Recompiled with the new options", timeout=6)
        for view in self._compiled_views():
            view.loading = False
            view.show_result(event.result)
        if self._focus_after_compile is not None:
            tab, focus = self._focus_after_compile
            self._focus_after_compile = None
            if self.query_one(TabbedContent).active == tab:
                self.query_one(focus).focus()
        if event.result.error:
            self.notify(event.result.error, title="Compilation failed", severity="error", timeout=10)
            if event.result.error.startswith("no example inputs") and "--size" in event.result.error:
                self.notify("Give them in the Options tab (t), field Input sizes: what --size takes, space-"
                            "separated (T0=4096,8192 i0=64 1024)", title="Sizes needed", timeout=15)
            return
        ids = [s.id for s in event.result.segments]
        if ids:
            self.select_segment(self.selected_segment if self.selected_segment in ids else ids[0])

    def select_segment(self, sid: int) -> None:
        """Select segment `sid` in every view that shows segments."""
        self.selected_segment = sid
        self.query_one(ScheduleView).select_segment(sid)
        self.query_one(SegmentsView).select_segment(sid)
        self.query_one(CudaView).select_segment(sid)
        self.query_one(RunView).select_segment(sid)
        self._refresh_transforms()

    @on(SegmentSelected)
    def _segment_selected(self, event: SegmentSelected) -> None:
        self.select_segment(event.segment)

    def toggle_forwarding(self) -> None:
        """Recompile with the segmenter's forwarding switched (the views follow)."""
        self.apply_options(self.options.with_(forwarding=not self.options.forwarding))

    def apply_options(self, options: CompileOptions) -> None:
        """Recompile with `options` in a worker; the Options tab then shows what changed."""
        if options == self.options:
            self.notify("The options are unchanged", timeout=3)
            return
        self._compare_from = self.options
        self.options = options
        self.query_one(OptionsView).show_options(options)
        self.notify(f"Compiling with {options.describe()}", timeout=3)
        self._shown_compile = None
        if self.query_one(TabbedContent).active not in COMPILE_TABS | {"tab-options"}:
            self.query_one(TabbedContent).active = "tab-segments"
        else:
            self._start_compile()

    @on(OptionsApplied)
    def _options_applied(self, event: OptionsApplied) -> None:
        self.apply_options(event.options)

    # ---- runs ---------------------------------------------------------------------
    @on(RunRequested)
    def _run_requested(self, event: RunRequested) -> None:
        self.start_run(event.backend, event.profile)

    @on(RunFinished)
    def _run_finished(self, event: RunFinished) -> None:
        result = event.result
        view = self.query_one(RunView)
        if event.session is not self.session:
            self._run_ended()
            return  # a fusion loaded since; the Run view was cleared then
        if result.status == "cancelled":
            view.cancelled(result)  # before _run_ended: it says where the run was
        else:
            view.show_runs(event.session.runs)
            self.query_one(HostIrView).show_timeline(event.session.runs)
        self._run_ended()
        if result.status == "ok":
            self.notify(f"Run on {result.backend}: {result.message}", timeout=4)
        elif result.status == "mismatch":
            self.notify(result.message, title=f"Run on {result.backend}: mismatch", severity="error", timeout=10)
        elif result.status == "cancelled":
            self.notify(result.message, title=f"Run on {result.backend} cancelled", timeout=4)
        else:
            self.notify(result.message, title=f"Run on {result.backend} failed ({result.status})",
                        severity="error", timeout=10)

    # ---- loading ------------------------------------------------------------------
    @on(SessionLoaded)
    def _loaded(self, event: SessionLoaded) -> None:
        self._show_session(event.session)
        self.notify(f"Opened {event.session.title}")

    @on(SessionLoadFailed)
    def _load_failed(self, event: SessionLoadFailed) -> None:
        self.notify(event.error, title=f"Could not open {event.path}", severity="error", timeout=10)

    # ---- actions ------------------------------------------------------------------
    def action_show_ir(self) -> None:
        self.query_one(TabbedContent).active = "tab-ir"

    def _show_compiled_tab(self, tab: str, focus: str) -> None:
        self.query_one(TabbedContent).active = tab
        self.query_one(focus).focus()
        # A view that is loading refuses the focus: it is given again when the compile ends.
        self._focus_after_compile = (tab, focus)
        # The tab may be open already (after a cancelled compile). Started after the focus
        # moves, so that the first key goes where it should when nothing needs compiling.
        self.call_later(self._start_compile)

    def action_show_schedule(self) -> None:
        self._show_compiled_tab("tab-schedule", "#schedule-segments")

    def action_show_segments(self) -> None:
        self._show_compiled_tab("tab-segments", "#segments")

    def action_show_cuda(self) -> None:
        self._show_compiled_tab("tab-cuda", "#cuda-segments")

    def action_show_run(self) -> None:
        self.query_one(TabbedContent).active = "tab-run"
        self.query_one("#md-run" if self.is_multidevice else "#run-table").focus()

    def action_show_host_ir(self) -> None:
        self._show_compiled_tab("tab-host-ir", "#host-ir")

    def action_show_options(self) -> None:
        self.query_one(TabbedContent).active = "tab-options"
        self.query_one("#opt-forwarding").focus()

    def action_help(self) -> None:
        if isinstance(self.screen, HelpScreen):
            self.pop_screen()
            return
        self.push_screen(HelpScreen(key_rows(self)))


def default_session() -> Session:
    """The bundled default sample, for running the app module directly."""
    sample = samples.default_sample()
    if sample is None:
        raise LoadError(f"no bundled samples in {samples.samples_dir()}")
    return load_session(Path(sample.path))


if __name__ == "__main__":
    FusescopeApp(default_session()).run()
