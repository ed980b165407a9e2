"""The app's main screen: width classes for the layout (app.tcss narrows the panes on small
terminals) and a footer that lists the cancel key first while there is work to cancel, so that
a narrow footer, which shows the focused pane's keys before the app's, still shows it."""

from __future__ import annotations

from textual.binding import ActiveBinding
from textual.screen import Screen

# Screen width -> class; app.tcss sizes the side pane and the segment lists by them.
BREAKPOINTS = [(0, "-bp-narrow"), (100, "-bp-medium"), (140, "-bp-wide")]


class MainScreen(Screen[None]):
    HORIZONTAL_BREAKPOINTS = BREAKPOINTS

    @property
    def active_bindings(self) -> dict[str, ActiveBinding]:
        bindings = super().active_bindings
        first = {key: b for key, b in bindings.items() if b.binding.action in ("cancel", "app.cancel")}
        return first | {key: b for key, b in bindings.items() if key not in first}
