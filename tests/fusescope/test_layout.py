"""The main screen at the sizes people use: every tab reachable by its key with its label on
screen, panes inside the screen with a usable width, the tensors pane narrowing with the screen
and hidden or resized on a key, the transforms pane only where it is used, dialogs that fit,
and the Segments header that stays in view."""

from __future__ import annotations

import pytest
from textual.geometry import Region
from textual.widgets import Label, TabbedContent

from fusescope import samples
from fusescope.app import FusescopeApp
from fusescope.layout import TABS, TRANSFORM_TABS
from fusescope.model import Session, load_session
from fusescope.screens.help_screen import HelpScreen
from fusescope.screens.open_file_screen import OpenFileScreen
from fusescope.screens.save_screen import SaveScreen
from fusescope.widgets.segments_view import SegmentsView
from fusescope.widgets.tensor_tree import TensorTree
from fusescope.widgets.transform_view import TransformView

pytestmark = pytest.mark.asyncio
SIZES = [(80, 24), (120, 35), (200, 50)]
# The widget that shows each tab's content.
VIEWS = {"tab-ir": "#listing", "tab-schedule": "#schedule-code", "tab-segments": "#segments",
         "tab-cuda": "#cuda-code", "tab-run": "#run-table", "tab-host-ir": "#host-ir", "tab-options": "#options"}
_SESSIONS: dict[str, Session] = {}


def session_of(name: str) -> Session:
    if name not in _SESSIONS:
        path = samples.resolve(name)
        assert path.exists(), f"bundled sample {name} is missing"
        _SESSIONS[name] = load_session(path)
    return _SESSIONS[name]


def inside(region: Region, screen: Region) -> bool:
    return region.x >= screen.x and region.y >= screen.y and region.right <= screen.right and \
        region.bottom <= screen.bottom


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
async def test_every_tab_is_reachable_by_its_key_and_fits(size: tuple[int, int]) -> None:
    width, height = size
    app = FusescopeApp(session_of("cross_entropy"))
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        screen = app.screen.region
        views = app.query_one(TabbedContent)
        for tab, (key, long, short) in TABS.items():
            await pilot.press(key)
            await app.workers.wait_for_complete()
            await pilot.pause()
            assert views.active == tab
            label = views.get_tab(tab)
            assert inside(label.region, screen) and label.region.width > 0, (tab, label.region)
            assert label.label.plain in (f"{key} {long}", f"{key} {short}")  # the key is in the label
            view = app.query_one(VIEWS[tab])
            assert inside(view.region, screen), (tab, view.region)
            assert view.region.width >= 40, (tab, view.region)
            # The whole column, less the tab strip and the borders; the tabs that select tensors
            # share it with the transforms pane.
            tall = (height - 4) // 2 if tab in TRANSFORM_TABS else height - 12
            assert view.region.height >= tall, (tab, view.region)
        # Every tab's label is on screen at once, not only the active one.
        for tab in TABS:
            assert inside(views.get_tab(tab).region, screen)
        tree = app.query_one(TensorTree)
        assert tree.outer_size.width == {80: 24, 120: 32, 200: 44}[width]
        assert inside(app.query_one("Footer").region, screen)


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
async def test_the_code_panes_get_the_height_of_the_screen(size: tuple[int, int]) -> None:
    # The report: at 120x35 the CUDA tab showed one line of code.
    width, height = size
    app = FusescopeApp(session_of("cross_entropy"))
    async with app.run_test(size=size) as pilot:
        for key, selector in (("u", "#cuda-code-lines"), ("h", "#host-ir-lines")):
            await pilot.press(key)
            await app.workers.wait_for_complete()
            await pilot.pause()
            lines = app.query_one(selector)
            assert lines.scrollable_content_region.height >= height - 9, (selector, lines.region)
        assert not app.query_one(TransformView).display  # not on the CUDA and Host IR tabs
        await pilot.press("i")
        app.show_tensor("T3")
        await pilot.pause()
        assert app.query_one(TransformView).display and app.query_one(TransformView).region.height >= 5


@pytest.mark.parametrize("size", [(80, 24), (200, 50)], ids=lambda s: f"{s[0]}x{s[1]}")
async def test_the_transforms_pane_takes_the_rows_it_needs(size: tuple[int, int]) -> None:
    # The report: at 200x50 the Schedule tab gave an empty transforms pane half the column
    # ("Select a TensorView ...") while the schedule above it was cut.
    app = FusescopeApp(session_of("seed001_inner_outer_alloc"))
    async with app.run_test(size=size) as pilot:
        await pilot.press("s")
        await app.workers.wait_for_complete()
        await pilot.pause()
        main, views = app.query_one("#main"), app.query_one("#views")
        transforms = app.query_one(TransformView)
        # Nothing selected: the placeholder's lines and the border, the rest for the schedule.
        placeholder = len(transforms.lines._display)  # noqa: SLF001 (the wrapped lines)
        assert placeholder == (1 if size[0] == 200 else 2)
        assert transforms.region.height == placeholder + 2 and transforms.lines.max_scroll_y == 0
        assert views.region.height == main.region.height - transforms.region.height
        schedule = app.query_one("#schedule-code-lines")
        assert schedule.region.height == views.region.height - 4  # the tab strip and the borders
        app.show_tensor("T0")
        await pilot.pause()
        block = transforms.lines.source
        assert transforms.scheduled and len(block) == len(transforms.text.rstrip("\n").splitlines()) > 5
        # Its lines, the border and a sideways scrollbar where the lines are wider than the pane,
        # at most half the column; here the whole block fits.
        sideways = 1 if transforms.lines.max_scroll_x > 0 else 0
        assert sideways == (0 if size == (200, 50) else 1)
        assert transforms.region.height == min(len(block) + 2 + sideways, main.region.height // 2)
        assert transforms.lines.max_scroll_y == 0
        if size == (200, 50):
            assert schedule.region.height > 3 * transforms.region.height
        # A block longer than half the column: capped there, the rest scrolls.
        transforms.show_block("T0", "\n".join(f"line {k}" for k in range(60)))
        await pilot.pause()
        assert transforms.region.height == main.region.height // 2
        assert transforms.lines.max_scroll_y == 60 - transforms.lines.scrollable_content_region.height > 0
        assert views.region.height == main.region.height - transforms.region.height
        # A tab without the pane gives the view the whole column.
        await pilot.press("g")
        await pilot.pause()
        assert not transforms.display and views.region.height == main.region.height


async def test_ctrl_t_hides_the_tensors_pane_and_angle_brackets_size_it() -> None:
    app = FusescopeApp(session_of("cross_entropy"))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        tree, main = app.query_one(TensorTree), app.query_one("#main")
        assert tree.has_focus and main.region.width == 56
        assert app.query_one(TabbedContent).get_tab("tab-ir").label.plain == "i IR"  # short labels
        await pilot.press("ctrl+t")
        await pilot.pause()
        assert not tree.display and main.region.width == 80
        assert app.focused is not None and app.focused is not tree  # the focus left the hidden pane
        assert app.query_one(TabbedContent).get_tab("tab-ir").label.plain == "i Fusion IR"  # room again
        await pilot.press("ctrl+t")
        await pilot.pause()
        assert tree.display and tree.outer_size.width == 24
        await pilot.press("greater_than_sign", "greater_than_sign")
        await pilot.pause()
        assert tree.outer_size.width == 32 and main.region.width == 48
        for _ in range(10):
            await pilot.press("less_than_sign")
        await pilot.pause()
        assert tree.outer_size.width == 16  # no narrower than SIDE_MIN


async def test_the_palettes_show_tensor_brings_the_transforms_into_view() -> None:
    app = FusescopeApp(session_of("cross_entropy"))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("x")
        await pilot.pause()
        assert not app.query_one(TransformView).display
        app.show_tensor("T3", reveal=True)
        await pilot.pause()
        view = app.query_one(TransformView)
        assert app.query_one(TabbedContent).active == "tab-ir" and view.display and view.tensor == "T3"


@pytest.mark.parametrize("screen_type, key", [(OpenFileScreen, "o"), (SaveScreen, "b"), (SaveScreen, "w")])
async def test_the_dialogs_prompts_fit_at_80x24(screen_type: type, key: str) -> None:
    app = FusescopeApp(session_of("cross_entropy"))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press(key)
        await pilot.pause()
        assert isinstance(app.screen, screen_type)
        label = app.screen.query_one(Label)
        prompt = str(label.render())
        assert inside(label.region, app.screen.region)
        # Every word of the prompt is drawn: it wraps onto as many lines as it needs.
        drawn = " ".join("".join(seg.text for seg in app.screen._compositor.render_strips()[y])  # noqa: SLF001
                         for y in range(label.region.y, label.region.bottom))
        for word in prompt.split():
            assert word in drawn, (word, drawn)
        await pilot.press("escape")


async def test_the_help_screen_fits_and_names_the_new_keys() -> None:
    app = FusescopeApp(session_of("cross_entropy"))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("f1")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        assert inside(app.screen.query_one("VerticalScroll").region, app.screen.region)
        described = {(r.key, r.description) for r in app.screen.rows}
        for key, what in (("esc", "Cancel"), ("^t", "Tensors pane"), ("W", "Wrap"), ("/ ^f", "Search"),
                          ("n", "Next match"), ("N", "Previous match"), ("<", "Narrower tensors pane")):
            assert (key, what) in described, (key, what)


async def test_the_segments_header_stays_in_view_while_the_graph_scrolls() -> None:
    app = FusescopeApp(session_of("seed003_rope_bwd_small"))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("g")
        await app.workers.wait_for_complete()
        await pilot.pause()
        view = app.query_one(SegmentsView)
        head = view.query_one("#segments-head")
        n = len(app.session.compile().segments)
        assert view.head_text.startswith(f"{n} segment(s); ") and "cross segment boundaries" in view.head_text
        view.scroll_end(animate=False)
        await pilot.pause()
        assert view.scroll_y > 10  # the graph and the log scrolled ...
        assert head.region.y == view.content_region.y and head.region.height >= 1  # ... the header did not
        assert view.max_scroll_x >= 0 and view.styles.overflow_x == "auto"
