"""The left pane: the fusion's inputs, outputs and every TensorView, as a tree."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.text import Text
from textual.widgets import Tree

from fusescope.messages import TensorSelected
from fusescope.render.highlight import highlight

if TYPE_CHECKING:
    from textual.widgets.tree import TreeNode

    from fusescope.model import Session, ValueInfo


class TensorTree(Tree[str]):
    """Node data is a tensor name ("T3") or None for section headings and scalars."""

    DEFAULT_CSS = """
    TensorTree {
        border: round $panel-lighten-2;
        border-title-color: $text-muted;
    }
    TensorTree:focus {
        border: round $accent;
    }
    """

    def __init__(self, *, id: str | None = None) -> None:  # noqa: A002 (Textual's name)
        super().__init__("fusion", id=id)
        self.border_title = "Tensors"
        self.show_root = True

    def show_session(self, session: Session) -> None:
        """Rebuild the tree for a newly loaded session."""
        self.clear()
        self.root.set_label(Text(session.title, style="bold"))
        self._section("Inputs", session.inputs)
        self._section("Outputs", session.outputs)
        every = self.root.add(f"All tensors ({len(session.tensors)})", expand=True)
        for info in session.tensors.values():
            label = highlight(info.text)
            label.append(f"  {info.role}", style="dim italic")
            every.add_leaf(label, data=info.name)
        self.root.expand()

    def _section(self, title: str, values: list[ValueInfo]) -> None:
        node = self.root.add(f"{title} ({len(values)})", expand=True)
        for v in values:
            node.add_leaf(highlight(v.text), data=v.name if v.is_tensor else None)

    @property
    def current_tensor(self) -> str | None:
        node = self.cursor_node
        return node.data if node is not None else None

    def select_tensor(self, name: str) -> bool:
        """Move the cursor to the first node of tensor `name`; False when there is none."""
        node = self._find(self.root, name)
        if node is None:
            return False
        self.move_cursor(node)
        return True

    def _find(self, node: TreeNode[str], name: str) -> TreeNode[str] | None:
        if node.data == name:
            return node
        for child in node.children:
            found = self._find(child, name)
            if found is not None:
                return found
        return None

    def on_tree_node_highlighted(self, event: Tree.NodeHighlighted[str]) -> None:
        # Following the cursor (not only Enter) makes browsing tensors one key per tensor.
        # An event about a node the cursor has left since is stale (keys repeat faster than
        # the app answers): echoing it moved the cursor back, and the tree and the listing
        # then sent each other old selections without end.
        if event.node.data is not None and event.node is self.cursor_node:
            self.post_message(TensorSelected(event.node.data, self))
