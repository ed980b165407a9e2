"""The keys and events that fit the main screen to its terminal: the tab labels follow the
width (long or short, fusescope/layout.py), ctrl+t hides or shows the tensors pane, < and >
narrow or widen it."""

from __future__ import annotations

from textual import events
from textual.app import App
from textual.widgets import TabbedContent

from fusescope.layout import SIDE_MAX, SIDE_MIN, SIDE_STEP, TABS, tab_label, use_short_labels
from fusescope.widgets.tensor_tree import TensorTree


class LayoutActions(App[None]):
    """The layout keys and the resize handling of FusescopeApp."""

    def on_resize(self, event: events.Resize) -> None:
        self.call_after_refresh(self._fit_tabs)

    def _fit_tabs(self) -> None:
        """Long tab labels when they fit the tab strip, else short ones: every tab stays on
        screen, with its key."""
        views = self.query_one(TabbedContent)
        short = use_short_labels(self.query_one("#main").size.width)
        for tab in TABS:
            views.get_tab(tab).label = tab_label(tab, short)

    def action_toggle_tensors(self) -> None:
        """Hide or show the tensors pane (the views take its room)."""
        tree = self.query_one(TensorTree)
        tree.display = not tree.display
        if not tree.display and tree.has_focus:
            self.screen.set_focus(None)
            self.screen.focus_next()  # the first pane of the view: the hidden tree is skipped
        self.call_after_refresh(self._fit_tabs)

    def action_side_width(self, step: int) -> None:
        """Make the tensors pane SIDE_STEP columns wider (1) or narrower (-1)."""
        tree = self.query_one(TensorTree)
        tree.display = True
        width = tree.outer_size.width + step * SIDE_STEP
        tree.styles.width = max(SIDE_MIN, min(SIDE_MAX, width, self.size.width - 40))
        self.call_after_refresh(self._fit_tabs)
