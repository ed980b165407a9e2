"""The fusescope TUI: a fusion's IR listing, its tensors, and each tensor's transforms."""

from __future__ import annotations

from pathlib import Path

from textual import on, work
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.widgets import Footer, Header

from fusescope import samples
from fusescope.commands import FusionCommands
from fusescope.messages import SessionLoaded, SessionLoadFailed, TensorSelected
from fusescope.model import LoadError, Session, load_session
from fusescope.screens.help_screen import HelpScreen, KeyRow
from fusescope.screens.open_file_screen import OpenFileScreen
from fusescope.widgets.listing_view import ListingView
from fusescope.widgets.tensor_tree import TensorTree
from fusescope.widgets.transform_view import TransformView


class FusescopeApp(App[None]):
    CSS_PATH = "app.tcss"
    TITLE = "fusescope"
    COMMANDS = App.COMMANDS | {FusionCommands}
    BINDINGS = [
        Binding("f1", "help", "Help"),
        Binding("o", "open_file", "Open"),
        Binding("r", "reload", "Reload"),
        Binding("tab", "focus_next", "Next pane", show=False),
        Binding("q", "quit", "Quit"),
    ]

    def __init__(self, session: Session | None = None) -> None:
        super().__init__()
        self.session = session

    def compose(self) -> ComposeResult:
        yield Header()
        with Horizontal(id="body"):
            yield TensorTree(id="tensors")
            with Vertical(id="main"):
                yield ListingView(id="listing")
                yield TransformView(id="transforms")
        yield Footer()

    def on_mount(self) -> None:
        if self.session is not None:
            self._show_session(self.session)
        self.query_one(TensorTree).focus()

    # ---- showing ------------------------------------------------------------------
    def _show_session(self, session: Session) -> None:
        self.session = session
        self.sub_title = str(session.path) if session.path else session.title
        self.query_one(TensorTree).show_session(session)
        self.query_one(ListingView).show_listing(session.listing)
        self.query_one(TransformView).show_block(None, "")

    def show_tensor(self, name: str) -> None:
        """Select tensor `name` everywhere: tree cursor, listing marks, transform pane."""
        if self.session is None or name not in self.session.tensors:
            self.notify(f"No tensor {name} in this fusion", severity="warning")
            return
        self.query_one(TransformView).show_block(name, self.session.transforms(name))
        listing = self.query_one(ListingView)
        if listing.selected != name or listing.current_tensor != name:
            listing.mark(name)
        tree = self.query_one(TensorTree)
        node = tree.cursor_node
        if node is None or node.data != name:
            tree.select_tensor(name)

    @on(TensorSelected)
    def _tensor_selected(self, event: TensorSelected) -> None:
        self.show_tensor(event.name)

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
            rows.append(KeyRow(self.get_key_display(binding), binding.description, "Fusion IR, Transforms"))
        return rows


def default_session() -> Session:
    """The bundled default sample, for running the app module directly."""
    sample = samples.default_sample()
    if sample is None:
        raise LoadError(f"no bundled samples in {samples.samples_dir()}")
    return load_session(Path(sample.path))


if __name__ == "__main__":
    FusescopeApp(default_session()).run()
