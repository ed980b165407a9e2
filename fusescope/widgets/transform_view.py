"""The lower pane: the selected TensorView's domains and transforms (seed-001 form)."""

from __future__ import annotations

from fusescope.widgets.text_pane import TextPane

PLACEHOLDER = "Select a TensorView in the tree (or ctrl+p → Show tensor) to see its transforms"


class TransformView(TextPane):
    def __init__(self, *, id: str | None = None) -> None:  # noqa: A002
        super().__init__("Transforms", PLACEHOLDER, id=id)
        self.tensor: str | None = None

    def show_block(self, name: str | None, block: str) -> None:
        self.tensor = name
        self.border_title = f"Transforms · {name}" if name else "Transforms"
        self.set_text(block)
