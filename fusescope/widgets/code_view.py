"""A pane of code or IR text that scrolls both ways, wraps on a key, and searches within itself.

CodeView is the pane (a border, the lines, a search field shown on demand); CodeLines draws
the lines with Textual's line API, so a kernel with its runtime headers (thousands of lines)
costs only the lines on screen. Lines are never cut: without wrapping the pane scrolls
sideways (left/right, shift+wheel), with wrapping (W) they fold at the pane's width.
Search (/ or ctrl+f) marks every match case-insensitively as it is typed, the current one
brighter; enter goes back to the text, where n and N go to the next and previous match, and esc
ends the search.
"""

from __future__ import annotations

from dataclasses import dataclass

from rich.style import Style
from rich.text import Text
from textual import events, on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.geometry import Size
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.widgets import Input

MATCH = Style(color="black", bgcolor="yellow")
CURRENT = Style(color="black", bgcolor="#ff8700", bold=True)


@dataclass(frozen=True)
class Match:
    line: int  # index of the source line
    start: int  # character offsets in it
    end: int


class CodeLines(ScrollView, can_focus=True):
    """The lines themselves (line API): horizontal scroll, wrapping, match highlights."""

    DEFAULT_CSS = """
    CodeLines {
        height: 1fr;
        padding: 0 1;
        background: $surface;
    }
    """

    def __init__(self, *, id: str | None = None) -> None:  # noqa: A002 (Textual's name)
        super().__init__(id=id)
        self.source: list[Text] = []  # the text, one Text per line
        self.wrap = False  # the W toggle
        self.prose = False  # the text is a sentence (a placeholder, an error): it always wraps
        self.matches: list[Match] = []
        self.current: int | None = None  # index into matches
        self._display: list[Text] = []  # the lines as drawn (wrapped or not)
        self._first: list[int] = []  # source line -> its first display line
        self._strips: dict[int, Strip] = {}
        self._wrapped_at = 0

    # ---- content ----------------------------------------------------------------------
    def set_text(self, text: Text, prose: bool = False) -> None:
        self.prose = prose
        self.source = text.split("\n", allow_blank=True)
        if self.source and not self.source[-1].plain and len(self.source) > 1:
            self.source.pop()  # the final newline
        self.matches, self.current = [], None
        self._layout()
        self.scroll_to(0, 0, animate=False)

    def set_wrap(self, wrap: bool) -> None:
        self.wrap = wrap
        self._layout()
        if self.current is not None:
            self._reveal(self.matches[self.current])

    def _styled(self, index: int) -> Text:
        line = self.source[index]
        marks = [(k, m) for k, m in enumerate(self.matches) if m.line == index]
        if not marks:
            return line
        line = line.copy()
        for k, m in marks:
            line.stylize(CURRENT if k == self.current else MATCH, m.start, m.end)
        return line

    def _layout(self) -> None:
        """The display lines from the source lines: wrapped at the width, or not."""
        width = max(1, self.scrollable_content_region.width)
        self._display, self._first = [], []
        console = self.app.console
        for k in range(len(self.source)):
            self._first.append(len(self._display))
            line = self._styled(k)
            if (self.wrap or self.prose) and line.cell_len > width:
                self._display.extend(line.wrap(console, width, overflow="fold", no_wrap=False))
            else:
                self._display.append(line)
        wrapping = self.wrap or self.prose
        self._wrapped_at = width if wrapping else 0
        widest = max((t.cell_len for t in self._display), default=0)
        self.virtual_size = Size(width if wrapping else widest, len(self._display))
        self._strips.clear()
        self.refresh()

    def on_resize(self, event: events.Resize) -> None:
        if (self.wrap or self.prose) and self.scrollable_content_region.width != self._wrapped_at:
            self._layout()

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        index = scroll_y + y
        width = self.scrollable_content_region.width
        if index >= len(self._display):
            return Strip.blank(width, self.rich_style)
        strip = self._strips.get(index)
        if strip is None:
            line = self._display[index]
            strip = Strip(list(line.render(self.app.console, end="")), line.cell_len)
            self._strips[index] = strip
        return strip.crop_extend(scroll_x, scroll_x + width, self.rich_style).apply_style(self.rich_style)

    # ---- search -----------------------------------------------------------------------
    def search(self, query: str) -> None:
        """Mark every match of `query` (any case); the current one is the first at or after
        the top of the view."""
        self.matches = []
        if query:
            q = query.lower()
            for k, line in enumerate(self.source):
                plain = line.plain.lower()
                at = plain.find(q)
                while at >= 0:
                    self.matches.append(Match(k, at, at + len(q)))
                    at = plain.find(q, at + len(q))
        top = self._source_line(round(self.scroll_y))
        self.current = next((k for k, m in enumerate(self.matches) if m.line >= top), 0) if self.matches else None
        self._layout()
        if self.current is not None:
            self._reveal(self.matches[self.current])

    def step(self, delta: int) -> None:
        if not self.matches:
            return
        self.current = ((self.current or 0) + delta) % len(self.matches) if self.current is not None else 0
        self._layout()
        self._reveal(self.matches[self.current])

    def _source_line(self, display: int) -> int:
        for k in range(len(self._first) - 1, -1, -1):
            if self._first[k] <= display:
                return k
        return 0

    def _reveal(self, m: Match) -> None:
        """Scroll so that match `m` is on screen, a third of the way down."""
        height = self.scrollable_content_region.height
        width = self.scrollable_content_region.width
        y = self._first[m.line]
        x = 0
        if (self.wrap or self.prose) and width:
            y += m.start // width
        else:
            start = self.source[m.line][: m.start].cell_len
            end = start + (m.end - m.start)
            x = 0 if end <= width else max(0, start - width // 3)
        self.scroll_to(x, max(0, y - height // 3), animate=False)

    @property
    def text(self) -> str:
        return "\n".join(t.plain for t in self.source)


class SearchField(Input):
    """The search field. Enter hands the focus back to the lines at once, and keys that reach
    the field after that (sent together with enter: n, N) are passed on to the lines."""

    def __init__(self, lines: CodeLines, *, id: str | None = None) -> None:  # noqa: A002 (Textual's name)
        super().__init__(placeholder="search: type, enter, then n / N for the next and previous match; esc ends",
                         id=id, select_on_focus=False)
        self.lines = lines

    async def _on_key(self, event: events.Key) -> None:
        if event.key == "enter" and self.screen.focused is self:
            event.stop()
            event.prevent_default()
            self.screen.set_focus(self.lines)
            return
        if self.screen.focused is not self:
            event.stop()
            event.prevent_default()
            self.lines.post_message(events.Key(event.key, event.character))
            return
        await super()._on_key(event)


class CodeView(Vertical):
    """A bordered pane of code: CodeLines and its search field."""

    BINDINGS = [
        Binding("W", "toggle_wrap", "Wrap"),
        Binding("slash,ctrl+f", "search", "Search"),
        Binding("n", "next_match", "Next match", show=False),
        Binding("N", "previous_match", "Previous match", show=False),
        Binding("escape", "end_search", "End search", show=False),
    ]

    DEFAULT_CSS = """
    CodeView {
        height: 1fr;
        border: round $panel-lighten-2;
        border-title-color: $text-muted;
        border-subtitle-color: $text-muted;
    }
    CodeView:focus-within {
        border: round $accent;
    }
    CodeView > Input, CodeView > Input:focus {
        dock: bottom;
        border: none;
        height: 1;
        padding: 0 1;
    }
    """

    def __init__(self, title: str, *, id: str | None = None) -> None:  # noqa: A002 (Textual's name)
        super().__init__(id=id)
        self.border_title = title
        self.lines = CodeLines(id=f"{id}-lines" if id else None)
        self.field = SearchField(self.lines, id=f"{id}-search" if id else None)
        self.search_text = ""

    def compose(self) -> ComposeResult:
        yield self.lines
        yield self.field

    def on_mount(self) -> None:
        self.field.display = False  # until / or ctrl+f

    def show(self, text: Text | str, prose: bool = False) -> None:
        """Show `text` from its top; a search under way is run again on it. `prose` (a
        placeholder, a message) wraps at the pane's width whatever W says."""
        self.lines.set_text(text if isinstance(text, Text) else Text(text), prose)
        if self.search_text:
            self.lines.search(self.search_text)
        self._say_matches()

    @property
    def shown_text(self) -> str:
        """What the pane shows, as plain text."""
        return self.lines.text

    def focus(self, scroll_visible: bool = True) -> CodeView:
        self.lines.focus(scroll_visible)
        return self

    # ---- keys -------------------------------------------------------------------------
    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in ("next_match", "previous_match"):
            return bool(self.search_text)
        if action == "end_search":  # otherwise esc goes on to the app (cancel)
            return bool(self.search_text) or self.field.display
        return True

    def action_toggle_wrap(self) -> None:
        self.lines.set_wrap(not self.lines.wrap)
        self.notify(f"Long lines {'wrap' if self.lines.wrap else 'scroll sideways'}", timeout=2)

    def action_search(self) -> None:
        self.field.display = True
        self.field.value = self.search_text
        # At once, not after a refresh as focus() does: the keys typed right after / are the
        # search's, not the app's (b would save a bundle).
        self.screen.set_focus(self.field)

    def action_next_match(self) -> None:
        self.lines.step(1)
        self._say_matches()

    def action_previous_match(self) -> None:
        self.lines.step(-1)
        self._say_matches()

    def action_end_search(self) -> None:
        self.search_text = ""
        self.field.display = False
        self.lines.search("")
        self._say_matches()
        self.lines.focus()

    def on_key(self, event: events.Key) -> None:
        # Keys sent together with / (by tmux, a paste, a fast typist) all bubble up from the
        # lines before the app would run the / binding, and the app then drops them: the
        # search opens here instead, as the key passes, and the keys after it go to the field.
        # (The binding stays, for the footer and the help.)
        if self.screen.focused is self.field:  # (has_focus follows only once Focus is handled)
            if event.key == "enter":
                event.stop()
                event.prevent_default()
                self.screen.set_focus(self.lines)
            elif event.is_printable and event.character:
                event.stop()
                event.prevent_default()
                self.field.insert_text_at_cursor(event.character)
        elif event.key in ("slash", "ctrl+f"):
            event.stop()
            event.prevent_default()
            self.action_search()

    @on(Input.Changed)
    def _typed(self, event: Input.Changed) -> None:
        event.stop()
        self.search_text = event.value
        self.lines.search(self.search_text)
        self._say_matches()

    def _say_matches(self) -> None:
        lines = self.lines
        if not self.search_text:
            self.border_subtitle = "W wrap · / search" if lines.source else ""
        elif not lines.matches:
            self.border_subtitle = f"no match for {self.search_text!r}"
        else:
            assert lines.current is not None
            self.border_subtitle = f"{lines.current + 1} of {len(lines.matches)}: {self.search_text!r} · n/N"
