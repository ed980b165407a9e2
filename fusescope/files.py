"""The app's files in and out: opening a fusion file, sample or bundle (read in a thread, the
fusion on show stays until the new one loads), reloading, saving a session bundle, and
exporting what a view shows. The app shows a loaded session (SessionLoaded)."""

from __future__ import annotations

from pathlib import Path

from textual import work
from textual.app import App
from textual.widgets import TabbedContent

from fusescope import samples
from fusescope.messages import SessionLoaded, SessionLoadFailed
from fusescope.model import LoadError, Session, load_session
from fusescope.screens.open_file_screen import OpenFileScreen
from fusescope.screens.save_screen import SaveScreen


class FileActions(App[None]):
    """The open, reload, save-bundle and export keys of FusescopeApp."""

    session: Session | None

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
            hint = samples.did_you_mean(spec) if not path.exists() else ""
            self.post_message(SessionLoadFailed(str(path), f"{e}{hint}"))
        except Exception as e:  # an engine bug must not take the debugger down with it
            self.post_message(SessionLoadFailed(str(path), f"internal error: {type(e).__name__}: {e}"))
        else:
            self.post_message(SessionLoaded(session))

    def action_open_file(self) -> None:
        names = [s.name for s in samples.list_samples()]

        def opened(spec: str | None) -> None:
            if spec:
                self.open_path(spec)

        self.push_screen(OpenFileScreen(names), opened)

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
        # The first view of the tab on show (the Run tab has one for multi-device fusions too).
        view = next(w for w in self.query(f"#{self.query_one(TabbedContent).active} > *") if w.display)
        return str(getattr(view, "export_text", None) or getattr(view, "text", ""))

    def action_reload(self) -> None:
        if self.session is None or self.session.path is None:
            self.notify("Nothing to reload: this fusion was not read from a file", severity="warning")
            return
        self.open_path(str(self.session.path))
