"""The main pane: the fusion's Inputs / Outputs / %kernel_math listing, one cursor stop per
input, output and expression. Moving the cursor selects the tensor the entry is about."""

from __future__ import annotations

from textual.binding import Binding
from textual.widgets import OptionList
from textual.widgets.option_list import Option

from fusescope.messages import TensorSelected
from fusescope.render.highlight import highlight
from fusescope.render.listing import Entry, split_listing
from fusescope.widgets.copying import copy_text


class ListingView(OptionList):
    BINDINGS = [Binding("c", "copy", "Copy text")]

    DEFAULT_CSS = """
    ListingView {
        height: 1fr;
        max-height: 100%;
        border: round $panel-lighten-2;
        border-title-color: $text-muted;
        background: $surface;
    }
    ListingView:focus {
        border: round $accent;
    }
    /* Headings and braces are not cursor stops, but they are part of the text: not greyed. */
    ListingView > .option-list--option-disabled {
        color: $foreground;
    }
    """

    def __init__(self, *, id: str | None = None) -> None:  # noqa: A002 (Textual's name)
        super().__init__(id=id)
        self.border_title = "Fusion IR"
        self.text = ""  # the listing exactly as the engine printed it
        self.entries: list[Entry] = []
        self.selected: str | None = None

    def show_listing(self, listing: str) -> None:
        self.text = listing
        self.entries = split_listing(listing)
        self.selected = None
        self.set_options(self._option(e) for e in self.entries)
        self.highlighted = None

    def _option(self, entry: Entry, selected: str | None = None) -> Option:
        return Option(highlight(entry.text, selected=selected), disabled=entry.tensor is None)

    @property
    def current_tensor(self) -> str | None:
        i = self.highlighted
        return self.entries[i].tensor if i is not None and i < len(self.entries) else None

    def mark(self, name: str | None) -> None:
        """Mark every occurrence of tensor `name` and put the cursor on the entry that
        defines it (its expression, or its line under Inputs)."""
        old, self.selected = self.selected, name
        for i, entry in enumerate(self.entries):
            if any(n is not None and f"{n}_" in entry.text for n in (old, name)):
                self.replace_option_prompt_at_index(i, highlight(entry.text, selected=name))
        if name is not None and self.current_tensor != name:
            where = [i for i, e in enumerate(self.entries) if e.tensor == name]
            if where:
                self.highlighted = where[-1]

    def on_option_list_option_highlighted(self, event: OptionList.OptionHighlighted) -> None:
        event.stop()
        if event.option_index != self.highlighted:  # stale: the cursor moved on (see TensorTree)
            return
        tensor = self.entries[event.option_index].tensor
        if tensor is not None:
            self.post_message(TensorSelected(tensor, self))

    def action_copy(self) -> None:
        copy_text(self, self.text, "the listing")
