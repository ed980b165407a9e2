"""The code panes (CUDA, kernel IR, Schedule, Host IR, Transforms): long lines scroll sideways,
W wraps them, / and ctrl+f search with n / N, at 80x24 and 200x50."""

from __future__ import annotations

import pytest

from fusescope import samples
from fusescope.app import FusescopeApp
from fusescope.model import Session, load_session
from fusescope.widgets.code_view import CURRENT, CodeLines, CodeView
from fusescope.widgets.cuda_view import CudaView
from fusescope.widgets.transform_view import TransformView

pytestmark = pytest.mark.asyncio
SIZES = [(80, 24), (200, 50)]
_SESSIONS: dict[str, Session] = {}


def session_of(name: str) -> Session:
    if name not in _SESSIONS:
        path = samples.resolve(name)
        assert path.exists(), f"bundled sample {name} is missing"
        _SESSIONS[name] = load_session(path)
    return _SESSIONS[name]


def visible(lines: CodeLines) -> list[str]:
    """The text of every row the pane draws now."""
    return ["".join(seg.text for seg in lines.render_line(y)) for y in range(lines.scrollable_content_region.height)]


async def open_cuda(app: FusescopeApp, pilot) -> tuple[CudaView, CodeLines]:  # noqa: ANN001
    await pilot.press("u")
    await app.workers.wait_for_complete()
    await pilot.pause()
    view = app.query_one(CudaView)
    return view, view.code.lines


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
async def test_the_kernel_signature_scrolls_sideways_to_its_end(size: tuple[int, int]) -> None:
    session = session_of("layer_norm")
    app = FusescopeApp(session)
    async with app.run_test(size=size) as pilot:
        view, lines = await open_cuda(app, pilot)
        seg = view.segment
        assert seg is not None and view.mode == "source"
        signature = next(t.plain for t in lines.source if f"{seg.kernel_name}(" in t.plain)
        assert signature.rstrip().endswith(") {")
        row = next(k for k, t in enumerate(lines.source) if t.plain == signature)
        width = lines.scrollable_content_region.width
        assert width >= 30  # a usable pane, also at 80x24
        assert lines.virtual_size.width >= len(signature) > width  # the line is longer than the pane
        assert ") {" not in visible(lines)[row]  # cut at first ...
        lines.focus()
        # One column a press: as many presses as the pane scrolls, and one more at the end.
        await pilot.press(*["right"] * (lines.max_scroll_x + 1))
        await pilot.pause()
        assert lines.scroll_x == lines.max_scroll_x > 0
        assert visible(lines)[row].rstrip().endswith(") {")  # ... the end is on screen now


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
async def test_w_wraps_long_lines_and_back(size: tuple[int, int]) -> None:
    app = FusescopeApp(session_of("layer_norm"))
    async with app.run_test(size=size) as pilot:
        view, lines = await open_cuda(app, pilot)
        lines.focus()
        longest = max(range(len(lines.source)), key=lambda k: lines.source[k].cell_len)
        await pilot.press("W")
        await pilot.pause()
        width = lines.scrollable_content_region.width
        assert lines.wrap and lines.virtual_size.width == width and lines.max_scroll_x == 0
        first, after = lines._first[longest], lines._first[longest + 1]
        assert after - first >= 2  # the longest line now takes several rows ...
        folded = "".join(t.plain for t in lines._display[first:after])
        assert folded.replace(" ", "") == lines.source[longest].plain.replace(" ", "")  # ... and all of it
        await pilot.press("W")
        await pilot.pause()
        assert not lines.wrap and lines.virtual_size.width > width


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
@pytest.mark.parametrize("key", ["slash", "ctrl+f"])
async def test_search_marks_every_match_and_n_moves_between_them(size: tuple[int, int], key: str) -> None:
    app = FusescopeApp(session_of("layer_norm"))
    async with app.run_test(size=size) as pilot:
        view, lines = await open_cuda(app, pilot)
        lines.focus()
        code = view.code
        await pilot.press(key)
        await pilot.pause()
        assert app.focused is code.field
        await pilot.press(*"blockdim")
        await pilot.pause()
        expected = sum(t.plain.lower().count("blockdim") for t in lines.source)
        assert expected >= 2 and len(lines.matches) == expected
        assert code.border_subtitle == f"1 of {expected}: 'blockdim' · n/N"

        def current_on_screen() -> bool:
            m = lines.matches[lines.current]
            y = lines._first[m.line] - round(lines.scroll_y)
            if not 0 <= y < lines.scrollable_content_region.height:
                return False
            line = lines._display[lines._first[m.line]]
            return any(span.style == CURRENT for span in line.spans)

        assert current_on_screen()
        await pilot.press("enter")  # back to the text: n and N move
        await pilot.pause()
        assert app.focused is lines
        await pilot.press("n")
        assert lines.current == 1 and current_on_screen()
        await pilot.press("N", "N")
        assert lines.current == expected - 1 and current_on_screen()  # it wraps round
        assert code.border_subtitle.startswith(f"{expected} of {expected}: ")
        await pilot.press("escape")  # ends the search
        await pilot.pause()
        assert lines.matches == [] and code.search_text == "" and code.border_subtitle == "W wrap · / search"
        assert not code.field.display
        await pilot.press("escape")  # nothing to end, nothing running: nothing happens
        await pilot.press("slash", *"no such text")
        await pilot.pause()
        assert code.border_subtitle == "no match for 'no such text'"


async def test_every_code_pane_is_a_code_view_that_scrolls_sideways() -> None:
    session = session_of("seed003_rope_bwd_small")
    app = FusescopeApp(session)
    async with app.run_test(size=(80, 24)) as pilot:
        longest = max(session.tensors, key=lambda n: max(len(ln) for ln in session.tensors[n].transforms.splitlines()))
        app.show_tensor(longest)
        await pilot.pause()
        transforms = app.query_one(TransformView)
        assert isinstance(transforms, CodeView) and transforms.text == session.transforms(longest)
        assert transforms.lines.max_scroll_x > 0  # its longest line is wider than the pane
        for key, selector in (("s", "#schedule-code"), ("h", "#host-ir"), ("u", "#cuda-code")):
            await pilot.press(key)
            await app.workers.wait_for_complete()
            await pilot.pause()
            pane = app.query_one(selector, CodeView)
            assert pane.lines.source, selector
            region = pane.region
            assert region.x >= 0 and region.right <= 80 and region.width >= 30, (selector, region)


async def test_the_cuda_tab_shows_the_kernel_alone_until_a_asks_for_the_runtime() -> None:
    app = FusescopeApp(session_of("layer_norm"))
    async with app.run_test(size=(80, 24)) as pilot:
        view, lines = await open_cuda(app, pilot)
        seg = view.segment
        assert seg is not None and seg.runtime_lines > 1000
        assert not view.show_runtime and view.text == seg.kernel_source
        shown = view.code.shown_text
        assert "struct Tensor" not in shown and len(lines.source) < 200
        assert f"({seg.runtime_lines} lines of runtime headers hidden: key a shows them)" in shown
        await pilot.press("a")
        await pilot.pause()
        assert view.show_runtime and view.text == seg.cuda_source
        assert len(lines.source) > seg.runtime_lines and "struct Tensor" in view.code.shown_text
        await pilot.press("a")
        await pilot.pause()
        assert view.text == seg.kernel_source


async def test_keys_typed_right_after_slash_go_to_the_search() -> None:
    from fusescope.screens.save_screen import SaveScreen

    app = FusescopeApp(session_of("layer_norm"))
    async with app.run_test(size=(80, 24)) as pilot:
        view, lines = await open_cuda(app, pilot)
        lines.focus()
        await pilot.pause()
        assert app._driver is not None
        from textual import events

        # As tmux or a fast typist sends them: all queued before the app answers the first.
        for key, char in (("slash", "/"), ("b", "b"), ("l", "l")):
            app._driver.send_message(events.Key(key, char))
        await pilot.pause(0.3)
        assert not isinstance(app.screen, SaveScreen)  # b is not "save bundle" here
        assert view.code.field.value == "bl" and app.focused is view.code.field
        await pilot.press("o")  # and typing goes on after them
        assert view.code.field.value == "blo" and view.code.search_text == "blo"


async def test_n_sent_together_with_enter_moves_to_the_next_match() -> None:
    from textual import events

    app = FusescopeApp(session_of("layer_norm"))
    async with app.run_test(size=(80, 24)) as pilot:
        view, lines = await open_cuda(app, pilot)
        lines.focus()
        await pilot.pause()
        assert app._driver is not None
        for key, char in (("slash", "/"), ("b", "b"), ("l", "l"), ("enter", "\r"), ("n", "n"), ("n", "n")):
            app._driver.send_message(events.Key(key, char))
        # The keys go through the driver's queue: wait (up to 10 s on a loaded machine) for
        # the last one to be handled.
        for _ in range(100):
            await pilot.pause(0.1)
            if view.code.search_text == "bl" and app.focused is lines and lines.current == 2:
                break
        assert view.code.search_text == "bl" and app.focused is lines
        assert lines.current == 2  # the first match, then two steps on
