"""The fusescope TUI: the fusion IR, tensors and transforms, the schedule, the segment graph, CUDA, runs."""

from __future__ import annotations

from pathlib import Path

from textual import on, work
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.widgets import Footer, Header, TabbedContent, TabPane, Tabs

from fusescope import samples
from fusescope.commands import FusionCommands
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
    RunResult,
    Session,
    load_session,
    skipped_summary,
)
from fusescope.screens.help_screen import HelpScreen, KeyRow
from fusescope.screens.open_file_screen import OpenFileScreen
from fusescope.screens.save_screen import SaveScreen
from fusescope.widgets.cuda_view import CudaView
from fusescope.widgets.host_ir_view import HostIrView
from fusescope.widgets.listing_view import ListingView
from fusescope.widgets.options_view import OptionsApplied, OptionsView
from fusescope.widgets.run_view import RunView
from fusescope.widgets.schedule_view import ScheduleView
from fusescope.widgets.segments_view import SegmentsView
from fusescope.widgets.tensor_tree import TensorTree
from fusescope.widgets.transform_view import TransformView

# Tabs whose content comes from compiling the fusion (compiled in a worker when one opens).
COMPILE_TABS = frozenset({"tab-schedule", "tab-segments", "tab-cuda", "tab-host-ir"})


class FusescopeApp(App[None]):
    CSS_PATH = "app.tcss"
    TITLE = "fusescope"
    COMMANDS = App.COMMANDS | {FusionCommands}
    BINDINGS = [
        Binding("f1", "help", "Help"),
        Binding("o", "open_file", "Open"),
        Binding("r", "reload", "Reload"),
        Binding("i", "show_ir", "Fusion IR"),
        Binding("s", "show_schedule", "Schedule"),
        Binding("g", "show_segments", "Segments"),
        Binding("u", "show_cuda", "CUDA"),
        Binding("x", "show_run", "Run"),
        Binding("h", "show_host_ir", "Host IR"),
        Binding("t", "show_options", "Options"),
        Binding("b", "save_bundle", "Save bundle"),
        Binding("w", "export", "Export"),
        Binding("tab", "focus_next", "Next pane", show=False),
        Binding("q", "quit", "Quit"),
    ]

    def __init__(self, session: Session | None = None, options: CompileOptions | None = None) -> None:
        super().__init__()
        self.session = session
        # What the compiled views show (palette toggles forwarding); `fusescope FILE --size`
        # starts with the input sizes of a file without an inputs list.
        self.options = options or CompileOptions()
        self.selected_segment: int | None = None  # one selection for every view that shows segments
        self.run_timeout = DEFAULT_RUN_TIMEOUT_S  # a run longer than this stops the worker
        self._shown_compile: tuple[Session, CompileOptions] | None = None
        self._compare_from: CompileOptions | None = None  # options before a change, to compare with

    def compose(self) -> ComposeResult:
        yield Header()
        with Horizontal(id="body"):
            yield TensorTree(id="tensors")
            with Vertical(id="main"):
                with TabbedContent(id="views"):
                    with TabPane("Fusion IR", id="tab-ir"):
                        yield ListingView(id="listing")
                    with TabPane("Schedule", id="tab-schedule"):
                        yield ScheduleView(id="schedule")
                    with TabPane("Segments", id="tab-segments"):
                        yield SegmentsView(id="segments")
                    with TabPane("CUDA", id="tab-cuda"):
                        yield CudaView(id="cuda")
                    with TabPane("Run", id="tab-run"):
                        yield RunView(id="run")
                    with TabPane("Host IR", id="tab-host-ir"):
                        yield HostIrView(id="host-ir")
                    with TabPane("Options", id="tab-options"):
                        yield OptionsView(id="options")
                yield TransformView(id="transforms")
        yield Footer()

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
        # A user who pasted a whole repro learns which lines the fusion was not read from.
        skipped = skipped_summary(session.fd)
        if skipped is not None:
            self.notify(skipped, title="Checking code skipped", timeout=8)
        self.selected_segment = None
        self._shown_compile = None
        if self.query_one(TabbedContent).active in COMPILE_TABS:
            self._start_compile()

    def show_tensor(self, name: str) -> None:
        """Select tensor `name` everywhere: tree cursor, listing marks, transform pane."""
        if self.session is None or name not in self.session.tensors:
            self.notify(f"No tensor {name} in this fusion", severity="warning")
            return
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
        if event.pane.id in COMPILE_TABS or event.pane.id == "tab-options":
            self._start_compile()
        self._refresh_transforms()

    def _refresh_transforms(self) -> None:
        tensor = self.query_one(TransformView).tensor
        if self.session is not None and tensor is not None:
            self._show_transforms(tensor)

    # ---- compilation (Segments, CUDA, Host IR) --------------------------------------
    def _compiled_views(self) -> list[ScheduleView | SegmentsView | CudaView | HostIrView]:
        return [self.query_one(ScheduleView), self.query_one(SegmentsView), self.query_one(CudaView),
                self.query_one(HostIrView)]

    def _start_compile(self) -> None:
        if self.session is None or self._shown_compile == (self.session, self.options):
            return
        for view in self._compiled_views():
            view.loading = True
        self._compile(self.session, self.options, self._compare_from)

    @work(thread=True, exclusive=True, group="compile")
    def _compile(self, session: Session, options: CompileOptions, before: CompileOptions | None) -> None:
        # Session.compile turns engine failures into result.error; this catch is for bugs in
        # the adapter itself, so that the views never stay loading forever.
        from fusescope.model import compare_compiles, failed_compile

        try:
            result = session.compile(options)
            comparison = None
            if before is not None:  # the options changed: say what that did
                comparison = compare_compiles(session.compile(before), result, session.runs)
        except Exception as e:
            result = failed_compile(options, f"internal error: {type(e).__name__}: {e}")
            comparison = None
        self.post_message(CompileFinished(session, result, comparison))

    @on(CompileFinished)
    def _compile_finished(self, event: CompileFinished) -> None:
        if event.session is not self.session or event.result.options != self.options:
            return  # a fusion loaded or the options changed since; that compile will report
        self._shown_compile = (event.session, event.result.options)
        if event.comparison is not None:
            self._compare_from = None
            self.query_one(OptionsView).show_comparison(event.comparison)
            first = event.comparison.splitlines()[1] if "\n" in event.comparison else event.comparison
            self.notify(first, title="Recompiled with the new options", timeout=6)
        for view in self._compiled_views():
            view.loading = False
            view.show_result(event.result)
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

    def start_run(self, backend: str, profile: bool | None = None) -> None:
        """Run the whole fusion on `backend` in the worker process (from a key or the palette)."""
        if self.session is None:
            self.notify("Open a fusion first", severity="warning")
            return
        view = self.query_one(RunView)
        if view.running is not None:
            self.notify(f"A run on {view.running} is in progress", severity="warning")
            return
        self.query_one(TabbedContent).active = "tab-run"
        view.started(backend)
        self._run(self.session, backend, view.profile if profile is None else profile, self.options)

    @work(thread=True, group="run")
    def _run(self, session: Session, backend: str, profile: bool, options: CompileOptions) -> None:
        # Session.run reports worker crashes and timeouts in the result; this catch is for
        # bugs on our side of the pipe, so that the view never stays loading forever.
        try:
            result = session.run(backend, options, profile=profile, timeout=self.run_timeout)
        except Exception as e:
            result = RunResult(backend, "error", f"internal error: {type(e).__name__}: {e}", options, profile)
            session.runs.append(result)
        self.post_message(RunFinished(session, result))

    @on(RunFinished)
    def _run_finished(self, event: RunFinished) -> None:
        if event.session is not self.session:
            return  # a fusion loaded since; the Run view was cleared then
        result = event.result
        self.query_one(RunView).show_runs(event.session.runs)
        self.query_one(HostIrView).show_timeline(event.session.runs)
        if result.status == "ok":
            self.notify(f"Run on {result.backend}: {result.message}", timeout=4)
        elif result.status == "mismatch":
            self.notify(result.message, title=f"Run on {result.backend}: mismatch", severity="error", timeout=10)
        else:
            self.notify(result.message, title=f"Run on {result.backend} failed ({result.status})",
                        severity="error", timeout=10)

    # ---- loading ------------------------------------------------------------------
    def open_path(self, spec: str) -> None:
        """Load a file or sample name in a worker; the current fusion stays until it succeeds."""
        self.notify(f"Opening {spec}…", timeout=2)
        self._load(spec)

    @work(thread=True, exclusive=True, group="load")
    def _load(self, spec: str) -> None:
        path = samples.resolve(spec)
        try:
            session = load_session(path)
        except LoadError as e:
            self.post_message(SessionLoadFailed(str(path), str(e)))
        except Exception as e:  # an engine bug must not take the debugger down with it
            self.post_message(SessionLoadFailed(str(path), f"internal error: {type(e).__name__}: {e}"))
        else:
            self.post_message(SessionLoaded(session))

    @on(SessionLoaded)
    def _loaded(self, event: SessionLoaded) -> None:
        self._show_session(event.session)
        self.notify(f"Opened {event.session.title}")

    @on(SessionLoadFailed)
    def _load_failed(self, event: SessionLoadFailed) -> None:
        self.notify(event.error, title=f"Could not open {event.path}", severity="error", timeout=10)

    # ---- actions ------------------------------------------------------------------
    def action_open_file(self) -> None:
        names = [s.name for s in samples.list_samples()]

        def opened(spec: str | None) -> None:
            if spec:
                self.open_path(spec)

        self.push_screen(OpenFileScreen(names), opened)

    def action_show_ir(self) -> None:
        self.query_one(TabbedContent).active = "tab-ir"

    def action_show_schedule(self) -> None:
        self.query_one(TabbedContent).active = "tab-schedule"
        self.query_one("#schedule-segments").focus()

    def action_show_segments(self) -> None:
        self.query_one(TabbedContent).active = "tab-segments"
        self.query_one(SegmentsView).focus()

    def action_show_cuda(self) -> None:
        self.query_one(TabbedContent).active = "tab-cuda"
        self.query_one("#cuda-segments").focus()

    def action_show_run(self) -> None:
        self.query_one(TabbedContent).active = "tab-run"
        self.query_one("#run-table").focus()

    def action_show_host_ir(self) -> None:
        self.query_one(TabbedContent).active = "tab-host-ir"
        self.query_one(HostIrView).focus()

    def action_show_options(self) -> None:
        self.query_one(TabbedContent).active = "tab-options"
        self.query_one("#opt-forwarding").focus()

    def action_save_bundle(self) -> None:
        if self.session is None:
            self.notify("Open a fusion first", severity="warning")
            return
        default = f"{Path(self.session.title).stem}.bundle.json"
        self.push_screen(SaveScreen("Save the session (fusion, options, runs) as a bundle", default),
                         self.save_bundle)

    def save_bundle(self, path: str | None) -> None:
        from fusescope.bundle import BundleError, save

        if not path or self.session is None:
            return
        try:
            written = save(self.session, path)
        except BundleError as e:
            self.notify(str(e), title="Bundle not saved", severity="error", timeout=10)
            return
        self.notify(f"Saved {written} ({len(self.session.runs)} run(s))")

    def action_export(self) -> None:
        tab = self.query_one(TabbedContent).active.removeprefix("tab-")
        self.push_screen(SaveScreen(
            "Export: .svg saves a screenshot, .csv the Run table, any other name the current view's text",
            f"fusescope-{tab}.txt"), self.export)

    def export(self, path: str | None) -> None:
        from fusescope.exports import ViewExportError, export_view

        if not path:
            return
        try:
            self.notify(export_view(self, path))
        except ViewExportError as e:
            self.notify(str(e), title="Export failed", severity="error", timeout=10)

    def current_view_text(self) -> str:
        """The text of what the current tab shows (what an export to a text file writes)."""
        view = self.query_one(f"#{self.query_one(TabbedContent).active} > *")
        return str(getattr(view, "export_text", None) or getattr(view, "text", ""))

    def action_reload(self) -> None:
        if self.session is None or self.session.path is None:
            self.notify("Nothing to reload: this fusion was not read from a file", severity="warning")
            return
        self.open_path(str(self.session.path))

    def action_help(self) -> None:
        if isinstance(self.screen, HelpScreen):
            self.pop_screen()
            return
        self.push_screen(HelpScreen(self.key_rows()))

    def key_rows(self) -> list[KeyRow]:
        """Every key binding the main screen offers, from the bindings themselves."""
        rows: list[KeyRow] = []
        for binding in self.BINDINGS:
            assert isinstance(binding, Binding)
            rows.append(KeyRow(self.get_key_display(binding), binding.description, "anywhere"))
        rows.append(KeyRow(self.get_key_display(Binding("ctrl+p", "")), "Command palette", "anywhere"))
        rows += [
            KeyRow("↑ ↓", "Move between tensors (the transform pane follows)", "Tensors"),
            KeyRow("enter / space", "Fold or unfold a section", "Tensors"),
        ]
        rows.append(KeyRow("↑ ↓", "Move between inputs, outputs and expressions", "Fusion IR"))
        for binding in ListingView.BINDINGS:
            assert isinstance(binding, Binding)
            rows.append(KeyRow(self.get_key_display(binding), binding.description, "Fusion IR, Schedule, Transforms"))
        rows.append(KeyRow("↑ ↓", "Select a segment (every view follows); tab to scroll its schedule",
                           "Schedule"))
        rows.append(KeyRow("↑ ↓  j k", "Select the next / previous segment (every view follows)", "Segments"))
        rows.append(KeyRow("↑ ↓", "Select a segment (every view follows)", "CUDA, Run"))
        for view, where in ((CudaView, "CUDA"), (RunView, "Run")):
            for binding in view.BINDINGS:
                assert isinstance(binding, Binding)
                if binding.action != "copy":
                    rows.append(KeyRow(self.get_key_display(binding), binding.description, where))
        return rows


def default_session() -> Session:
    """The bundled default sample, for running the app module directly."""
    sample = samples.default_sample()
    if sample is None:
        raise LoadError(f"no bundled samples in {samples.samples_dir()}")
    return load_session(Path(sample.path))


if __name__ == "__main__":
    FusescopeApp(default_session()).run()
