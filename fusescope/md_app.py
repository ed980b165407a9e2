"""The TUI's side of multi-device fusions (tensors with device meshes): such a fusion has no
single compilation, so instead of compiling, the views are given its program
(fusescope.md_model): the listing with a sharding row per tensor, the Segments tab with its
regions and communications, the Host IR tab with a rank selector, and a Run tab that runs it
on N ranks (fusescope.md_run) and shows a row and a timeline per rank. A fusion whose
shardings are invalid shows its MultiDeviceError in each of them; the session goes on.
"""

from __future__ import annotations

import threading

from textual import on, work
from textual.widgets import TabbedContent

from fusescope.background import BackgroundWork
from fusescope.messages import MultiRunFinished, MultiRunRequested
from fusescope.model import Session, failed_compile
from fusescope.widgets.cuda_view import CudaView
from fusescope.widgets.host_ir_view import HostIrView
from fusescope.widgets.listing_view import ListingView
from fusescope.widgets.md_run_view import MultiRunView
from fusescope.widgets.run_view import RunView
from fusescope.widgets.schedule_view import ScheduleView
from fusescope.widgets.segments_view import SegmentsView

NOT_COMPILED = ("a multi-device fusion has no single compilation: its regions are compiled on each rank when "
                "it runs. Segments (g) shows its regions and communications, Host IR (h) each rank's host "
                "program, Run (x) runs it on N ranks.")


class MultiDeviceWork(BackgroundWork):
    """What FusescopeApp does differently for a multi-device fusion."""

    def __init__(self) -> None:
        super().__init__()
        self._md_cancel: threading.Event | None = None  # the multi-device run under way

    @property
    def is_multidevice(self) -> bool:
        return self.session is not None and self.session.multidevice() is not None

    def _show_multidevice(self, session: Session) -> None:
        """Fill the views for `session` when it is multi-device; else the Run tab's usual view."""
        info = session.multidevice()
        run_view, md_view = self.query_one(RunView), self.query_one(MultiRunView)
        run_view.display = info is None
        md_view.display = info is not None
        if info is None:
            return
        self.query_one(ListingView).show_listing(session.listing.rstrip("\n") + "\n\n" + info.sharding_table())
        self.query_one(SegmentsView).show_multidevice(info)
        self.query_one(HostIrView).show_multidevice(info)
        note = failed_compile(self.options, NOT_COMPILED)
        for view in (self.query_one(ScheduleView), self.query_one(CudaView)):
            view.show_result(note)
        md_view.setup(info)
        self._shown_compile = (session, self.options)  # nothing to compile: the views are filled
        if info.error:
            self.notify(info.error, title="The shardings cannot be laid out", severity="error",
                        timeout=10)

    # ---- compiles: none for a multi-device fusion -----------------------------------------
    def _start_compile(self) -> None:
        if self.is_multidevice:
            return
        super()._start_compile()

    # ---- runs on N ranks -------------------------------------------------------------------
    @on(MultiRunRequested)
    def _md_run_requested(self, event: MultiRunRequested) -> None:
        self.start_md_run(event.backend, event.ranks)

    def start_md_run(self, backend: str, ranks: int | None = None) -> None:
        session = self.session
        info = session.multidevice() if session is not None else None
        if session is None or info is None:
            self.notify("Not a multi-device fusion: no tensor has a device mesh", severity="warning")
            return
        if self._md_cancel is not None:
            self.notify("A multi-device run is in progress (esc cancels it)", severity="warning")
            return
        self.query_one(TabbedContent).active = "tab-run"
        view = self.query_one(MultiRunView)
        ranks = ranks or view.ranks
        self._md_cancel = threading.Event()
        view.started(backend, ranks)
        self.refresh_bindings()
        self._md_run(session, backend, ranks, self._md_cancel)

    @work(thread=True, group="md-run")
    def _md_run(self, session: Session, backend: str, ranks: int, cancel: threading.Event) -> None:
        from fusescope.md_run import MultiRunResult, run_ranks

        try:
            result = run_ranks(session.fusion_source(), session.title, ranks, backend, timeout=self.run_timeout,
                               cancel=cancel)
        except Exception as e:  # a bug on our side of the processes: the view must not stay busy
            result = MultiRunResult(backend, ranks, "error", f"internal error: {type(e).__name__}: {e}")
        self.post_message(MultiRunFinished(session, result))

    @on(MultiRunFinished)
    def _md_run_finished(self, event: MultiRunFinished) -> None:
        self._md_cancel = None
        self.refresh_bindings()
        if event.session is not self.session:
            return  # another fusion is on show
        result = event.result
        self.query_one(MultiRunView).show_result(result)
        self.query_one(HostIrView).show_md_run(result)
        title = f"Run on {result.ranks} ranks ({result.backend})"
        if result.status == "ok":
            self.notify(result.message, title=title, timeout=4)
        else:
            self.notify(result.message, title=f"{title}: {result.status}",
                        severity="warning" if result.status == "cancelled" else "error", timeout=10)

    # ---- cancelling -------------------------------------------------------------------------
    @property
    def busy(self) -> bool:
        return super().busy or self._md_cancel is not None

    def _cancel_run(self) -> None:
        super()._cancel_run()
        if self._md_cancel is not None:
            self._md_cancel.set()  # run_ranks kills every rank within its poll interval
