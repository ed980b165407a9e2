"""How the main screen fits its terminal: tab labels that carry their keys (long ones when the
tab strip has room, short ones when it has not), which tabs show the transforms pane, and the
side pane's width steps. app.tcss has the widths that follow the screen's size."""

from __future__ import annotations

from textual.content import Content

# Tab id -> (its key, long label, short label).
TABS: dict[str, tuple[str, str, str]] = {
    "tab-ir": ("i", "Fusion IR", "IR"),
    "tab-schedule": ("s", "Schedule", "Sched"),
    "tab-segments": ("g", "Segments", "Segs"),
    "tab-cuda": ("u", "CUDA", "CUDA"),
    "tab-run": ("x", "Run", "Run"),
    "tab-host-ir": ("h", "Host IR", "Host"),
    "tab-options": ("t", "Options", "Opts"),
}
TAB_PADDING = 2  # a Tab's own padding, one cell each side

# The transforms pane follows the tensor selection; on these tabs it is under the view, on the
# others the view takes its room.
TRANSFORM_TABS = frozenset({"tab-ir", "tab-schedule"})

SIDE_STEP = 4  # columns the side pane grows or shrinks by per key press
SIDE_MIN, SIDE_MAX = 16, 80


def tab_label(tab: str, short: bool) -> Content:
    """"g Segments", the key underlined."""
    key, long, brief = TABS[tab]
    return Content.assemble((key, "bold underline"), " " + (brief if short else long))


def tabs_width(short: bool) -> int:
    """Cells the tab strip needs with long or short labels."""
    return sum(tab_label(t, short).cell_length + TAB_PADDING for t in TABS)


def use_short_labels(width: int) -> bool:
    """Whether a tab strip `width` cells wide needs the short labels."""
    return tabs_width(short=False) > width
