"""The main pane: the fusion's Inputs / Outputs / %kernel_math listing."""

from __future__ import annotations

from fusescope.widgets.text_pane import TextPane


class ListingView(TextPane):
    def __init__(self, *, id: str | None = None) -> None:  # noqa: A002
        super().__init__("Fusion IR", "No fusion loaded", id=id)
        self.selected: str | None = None

    def show_listing(self, listing: str) -> None:
        self.selected = None
        self.set_text(listing)

    def mark(self, name: str | None) -> None:
        """Reverse-video every occurrence of tensor `name`, so a selection shows in context."""
        self.selected = name
        self.set_text(self.text, selected=name)
