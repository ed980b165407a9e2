"""The app's work in the background: compiles (in a thread) and runs (in the worker process),
each with the event that cancels it, the task bar that shows it, and esc, q and ctrl+c, which
cancel what is under way. The app itself shows the results (CompileFinished, RunFinished).

A compile cannot be interrupted inside the engine: it runs in a daemon thread, and the Textual
worker that waits for it returns as soon as it is cancelled, so neither esc nor quitting waits
for it. A run's worker process is killed (worker.Worker.call with a cancel event).
"""

from __future__ import annotations

import threading

from textual import on, work
from textual.app import App
from textual.widgets import TabbedContent

from fusescope.messages import CompileFinished, RunFinished, RunProgressed
from fusescope.model import CompileOptions, RunResult, Session
from fusescope.progress import RunTracker
from fusescope.widgets.cuda_view import CudaView
from fusescope.widgets.host_ir_view import HostIrView
from fusescope.widgets.run_view import RunView
from fusescope.widgets.schedule_view import ScheduleView
from fusescope.widgets.segments_view import SegmentsView
from fusescope.widgets.task_bar import TaskBar

# The key that opens each compiled tab (after a cancelled compile it compiles again).
COMPILE_TAB_KEYS = {"tab-schedule": "s", "tab-segments": "g", "tab-cuda": "u", "tab-host-ir": "h"}


class BackgroundWork(App[None]):
    """The compile and run machinery of FusescopeApp."""

    def __init__(self) -> None:
        super().__init__()
        self.session: Session | None = None
        self.options = CompileOptions()  # what the compiled views show
        self._shown_compile: tuple[Session, CompileOptions] | None = None
        self._compare_from: CompileOptions | None = None  # options before a change, to compare with
        self.run_timeout = 0.0  # set by the app
        # Work under way, each with the event that cancels it.
        self._compile_task: tuple[Session, CompileOptions, threading.Event] | None = None
        self._run_task: tuple[RunTracker, threading.Event] | None = None

    # ---- compiles -------------------------------------------------------------------
    def _compiled_views(self) -> list[ScheduleView | SegmentsView | CudaView | HostIrView]:
        return [self.query_one(ScheduleView), self.query_one(SegmentsView), self.query_one(CudaView),
                self.query_one(HostIrView)]

    def _start_compile(self) -> None:
        if self.session is None or self._shown_compile == (self.session, self.options):
            return
        if self._compile_task is not None:
            session, options, cancel = self._compile_task
            if (session, options) == (self.session, self.options):
                return  # under way already
            cancel.set()  # for a fusion or options no longer shown
        for view in self._compiled_views():
            view.loading = True
        cancel = threading.Event()
        self._compile_task = (self.session, self.options, cancel)
        self.query_one(TaskBar).compiling(self.options.describe())
        self.refresh_bindings()
        self._compile(self.session, self.options, self._compare_from, cancel)

    @work(thread=True, exclusive=True, group="compile")
    def _compile(self, session: Session, options: CompileOptions, before: CompileOptions | None,
                 cancel: threading.Event) -> None:
        # The compile runs in a daemon thread of its own, and this worker waits for it while
        # watching `cancel`: a cancelled compile (or one under way when the app quits) is
        # left to finish unseen, and nothing waits for it.
        from fusescope.model import compare_compiles, failed_compile
        from fusescope.worker import POLL_S

        done: list[CompileFinished] = []

        def compile_now() -> None:
            # Session.compile turns engine failures into result.error; this catch is for bugs
            # in the adapter itself, so that the views never stay loading forever.
            try:
                result = session.compile(options)
                comparison = None
                if before is not None:  # the options changed: say what that did
                    comparison = compare_compiles(session.compile(before), result, session.runs)
            except Exception as e:
                result = failed_compile(options, f"internal error: {type(e).__name__}: {e}")
                comparison = None
            done.append(CompileFinished(session, result, comparison))

        thread = threading.Thread(target=compile_now, name="fusescope-compile", daemon=True)
        thread.start()
        while thread.is_alive():
            if cancel.is_set():
                return
            thread.join(POLL_S)
        if not cancel.is_set():
            self.post_message(done[0])

    def _compile_ended(self) -> None:
        self._compile_task = None
        self.query_one(TaskBar).compiling(None)
        self.refresh_bindings()

    # ---- runs -----------------------------------------------------------------------
    def start_run(self, backend: str, profile: bool | None = None) -> None:
        """Run the whole fusion on `backend` in the worker process (from a key or the palette)."""
        if self.session is None:
            self.notify("Open a fusion first", severity="warning")
            return
        view = self.query_one(RunView)
        if self._run_task is not None:
            self.notify(f"A run on {self._run_task[0].backend} is in progress (esc cancels it)", severity="warning")
            return
        self.query_one(TabbedContent).active = "tab-run"
        tracker = RunTracker(backend, view.profile if profile is None else profile)
        cancel = threading.Event()
        self._run_task = (tracker, cancel)
        view.started(tracker)
        self.query_one(TaskBar).running(tracker)
        self.refresh_bindings()
        self._run(self.session, backend, tracker.profile, self.options, cancel)

    @work(thread=True, group="run")
    def _run(self, session: Session, backend: str, profile: bool, options: CompileOptions,
             cancel: threading.Event) -> None:
        # Session.run reports worker crashes and timeouts in the result; this catch is for
        # bugs on our side of the pipe, so that the view never stays loading forever.
        try:
            result = session.run(backend, options, profile=profile, timeout=self.run_timeout, cancel=cancel,
                                 on_progress=lambda p: self.post_message(RunProgressed(session, p)))
        except Exception as e:
            result = RunResult(backend, "error", f"internal error: {type(e).__name__}: {e}", options, profile)
            session.runs.append(result)
        self.post_message(RunFinished(session, result))

    @on(RunProgressed)
    def _run_progressed(self, event: RunProgressed) -> None:
        if self._run_task is None or event.session is not self.session:
            return
        self._run_task[0].update(event.progress)
        self.query_one(RunView).show_progress()
        self.query_one(TaskBar).refresh_line()

    def _run_ended(self) -> None:
        self._run_task = None
        self.query_one(TaskBar).running(None)
        self.refresh_bindings()

    # ---- cancelling -----------------------------------------------------------------
    @property
    def busy(self) -> bool:
        """A compile or a run is under way."""
        return self._compile_task is not None or self._run_task is not None

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "cancel":
            return self.busy  # the footer offers esc only while there is something to cancel
        return True

    def action_cancel(self) -> None:
        """Cancel the compile and the run under way (the run's worker process is stopped)."""
        if self._compile_task is not None:
            self._compile_task[2].set()
            self._compile_ended()
            for view in self._compiled_views():
                view.loading = False
                view.clear()
            key = COMPILE_TAB_KEYS.get(self.query_one(TabbedContent).active)
            again = f": press {key} to compile again" if key else ""
            self.notify(f"Compilation cancelled{again}", timeout=4)
        self._cancel_run()

    def _cancel_run(self) -> None:
        # The run's thread sees the event within worker.POLL_S, stops the worker process and
        # posts a "cancelled" RunFinished, which resets the Run view.
        if self._run_task is not None:
            self._run_task[1].set()

    async def action_quit(self) -> None:
        """Quit at once: a run's worker process is stopped, a compile is left unwaited."""
        if self._compile_task is not None:
            self._compile_task[2].set()
        self._cancel_run()
        self.exit()
