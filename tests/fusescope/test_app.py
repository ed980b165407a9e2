"""The TUI driven headless through Textual's Pilot, on the seed-001 fusion."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.command import CommandPalette
from textual.widgets import Footer, TabbedContent

from engine import load_fusion
from fusescope import samples
from fusescope.app import FusescopeApp
from fusescope.messages import TensorSelected
from fusescope.model import Session, load_session
from fusescope.screens.help_screen import HelpScreen
from fusescope.screens.open_file_screen import OpenFileScreen
from fusescope.screens.save_screen import SaveScreen
from fusescope.widgets.cuda_view import CudaView
from fusescope.widgets.host_ir_view import HostIrView
from fusescope.widgets.listing_view import ListingView
from fusescope.widgets.schedule_view import ScheduleView
from fusescope.widgets.segments_view import SegmentsView
from fusescope.widgets.tensor_tree import TensorTree
from fusescope.widgets.transform_view import TransformView
from tests.fusescope.fusions import build_seed001

pytestmark = pytest.mark.asyncio
SIZE = (140, 40)


@pytest.fixture
def session() -> Session:
    return Session.from_definition(build_seed001(split_t4=True), title="seed001")


def messages(app: FusescopeApp) -> list[tuple[str, str, str]]:
    return [(n.title, n.message, n.severity) for n in app._notifications]


async def test_starts_with_the_listing_and_the_tensors(session: Session) -> None:
    app = FusescopeApp(session)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        listing = app.query_one(ListingView)
        assert listing.text == str(build_seed001(split_t4=True).fusion)
        shown = "\n".join(str(o.prompt) for o in listing.options)
        assert shown + "\n" == listing.text  # every line of the listing is on screen
        tree = app.query_one(TensorTree)
        leaves = [n.data for n in tree.root.children[2].children]
        assert leaves == ["T0", "T1", "T2", "T3", "T4", "T5", "T6"]
        assert [n.data for n in tree.root.children[1].children] == ["T4", "T6"]
        assert app.sub_title == "seed001"


async def test_moving_the_tree_cursor_shows_each_tensors_transforms(session: Session) -> None:
    app = FusescopeApp(session)
    async with app.run_test(size=SIZE) as pilot:
        view = app.query_one(TransformView)
        assert view.text == ""  # nothing selected yet: the pane shows its placeholder
        await pilot.press("down", "down")  # root -> Inputs -> T0
        await pilot.pause()
        assert view.tensor == "T0"
        assert view.text == session.transforms("T0")
        assert " allocation domain : (iS1{4096}, bS0{1}, iS2{4096})" in view.text
        listing = app.query_one(ListingView)
        assert listing.selected == "T0" and listing.current_tensor == "T0"
        await pilot.press("down")  # the Outputs heading: not a tensor, selection stays
        await pilot.press("down")  # T4
        await pilot.pause()
        assert view.tensor == "T4"
        assert "  Split: iS11{4096} by factor 2 -> " in view.text


async def test_moving_the_listing_cursor_selects_the_expressions_tensor(session: Session) -> None:
    app = FusescopeApp(session)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("down", "down", "down")  # tree: root -> Inputs -> T0 -> Outputs
        await pilot.press("tab")
        await pilot.pause()
        listing = app.query_one(ListingView)
        assert app.focused is listing and listing.current_tensor == "T0"
        # Past the Outputs lines (T4, T6) to the first expression: T1 = squeeze(T0).
        await pilot.press("down", "down", "down")
        await pilot.pause()
        entry = listing.entries[listing.highlighted]
        assert entry.tensor == "T1" and "= squeeze( T0_g_float" in entry.text
        assert app.query_one(TransformView).tensor == "T1"
        assert app.query_one(TensorTree).cursor_node.data == "T1"
        # The tree's choice moves the listing to the tensor's defining expression.
        app.query_one(TensorTree).focus()
        await pilot.press("down")  # All tensors: T1 -> T2
        await pilot.pause()
        assert listing.current_tensor == "T2"
        assert listing.entries[listing.highlighted].text.startswith("T2_l_float[iS5{4096}, rS6{4096}]\n")


async def test_palette_show_tensor_selects_it_everywhere(session: Session) -> None:
    app = FusescopeApp(session)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("ctrl+p")
        await pilot.pause()
        assert isinstance(app.screen, CommandPalette)
        await pilot.press(*"Show tensor: T6")
        await pilot.pause(0.5)
        await pilot.press("enter")
        await pilot.pause()
        assert app.query_one(TransformView).tensor == "T6"
        assert app.query_one(TensorTree).cursor_node.data == "T6"
        assert app.query_one(ListingView).selected == "T6"


async def test_f1_opens_help_that_lists_the_keys_and_closes(session: Session) -> None:
    app = FusescopeApp(session)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("f1")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        described = {(r.key, r.description) for r in app.screen.rows}
        assert ("o", "Open") in described and ("c", "Copy text") in described
        assert "Not in this version" in str(app.screen.query_one("#not-yet").render())
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, HelpScreen)


async def footer_keys(app: FusescopeApp) -> set[str]:
    keys = {key for key, b in app.active_bindings.items() if b.binding.show}
    if app.query_one(Footer).show_command_palette:
        keys.add(app.COMMAND_PALETTE_BINDING)  # the footer shows it apart from the bindings
    return keys


async def test_every_footer_key_does_what_it_says(session: Session) -> None:
    """Each key shown in the footer, for each pane, has an effect checked here; a new footer
    key without a check fails this test."""
    app = FusescopeApp(session)
    checked: set[str] = set()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        shown = await footer_keys(app)

        await pilot.press("f1")
        assert isinstance(app.screen, HelpScreen)
        await pilot.press("escape")
        checked.add("f1")

        await pilot.press("o")
        assert isinstance(app.screen, OpenFileScreen)
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, OpenFileScreen)
        checked.add("o")

        await pilot.press("r")  # this session was built in Python: nothing to re-read
        await pilot.pause()
        assert any("Nothing to reload" in m for _, m, _ in messages(app))
        checked.add("r")

        await pilot.press("ctrl+p")
        await pilot.pause()
        assert isinstance(app.screen, CommandPalette)
        await pilot.press("escape")
        await pilot.pause()
        checked.add("ctrl+p")

        # s opens the Schedule tab and compiles in a worker; this Python-built fusion's user
        # schedule (T4 split, nothing parallel) cannot be lowered, so the view says why
        # instead of showing a schedule.
        await pilot.press("s")
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert app.query_one(TabbedContent).active == "tab-schedule"
        schedule = app.query_one(ScheduleView)
        assert schedule.result is not None and schedule.result.error is not None
        assert "local buffer" in schedule.result.error
        checked.add("s")

        # g, u and h show the same compilation; each view says why there is nothing to show.
        for key, tab, view_type in (("g", "tab-segments", SegmentsView), ("u", "tab-cuda", CudaView),
                                    ("h", "tab-host-ir", HostIrView)):
            await pilot.press(key)
            await app.workers.wait_for_complete()
            await pilot.pause()
            assert app.query_one(TabbedContent).active == tab
            result = app.query_one(view_type).result
            assert result is not None and "local buffer" in (result.error or "")
            checked.add(key)
        await pilot.press("x")
        await pilot.pause()
        assert app.query_one(TabbedContent).active == "tab-run"
        checked.add("x")

        await pilot.press("t")
        await pilot.pause()
        assert app.query_one(TabbedContent).active == "tab-options"
        checked.add("t")

        # ctrl+t hides the tensors pane and shows it again.
        await pilot.press("ctrl+t")
        await pilot.pause()
        assert not app.query_one(TensorTree).display
        await pilot.press("ctrl+t")
        await pilot.pause()
        assert app.query_one(TensorTree).display
        checked.add("ctrl+t")

        app.query_one(TensorTree).focus()
        await pilot.press("i")
        await pilot.pause()
        assert app.query_one(TabbedContent).active == "tab-ir"
        checked.add("i")

        # b and w ask for a file to write (a bundle; an export of the current view).
        for key, default in (("b", "seed001.bundle.json"), ("w", "fusescope-ir.txt")):
            await pilot.press(key)
            await pilot.pause()
            assert isinstance(app.screen, SaveScreen) and app.screen.query_one("#save-path").value == default
            await pilot.press("escape")
            await pilot.pause()
            checked.add(key)

        # The text panes add their own key.
        await pilot.press("tab")
        await pilot.pause()
        assert isinstance(app.focused, ListingView)
        shown |= await footer_keys(app)
        await pilot.press("c")
        await pilot.pause()
        assert app.clipboard == session.listing
        checked.add("c")

        await pilot.press("q")
        await pilot.pause()
        assert not app.is_running
        checked.add("q")
    # The tab keys are checked too, though the tabs' labels show them rather than the footer;
    # esc (cancel) is in the footer only while something runs: test_cancel.py checks it.
    assert shown <= checked
    assert {"i", "s", "g", "u", "x", "h", "t"} <= checked - shown


async def test_opening_a_missing_file_reports_it_and_the_app_goes_on(session: Session) -> None:
    app = FusescopeApp(session)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("o")
        await pilot.press(*"/no/such/fusion.py", "enter")
        await app.workers.wait_for_complete()
        await pilot.pause()
        errors = [(t, m) for t, m, sev in messages(app) if sev == "error"]
        assert errors == [("Could not open /no/such/fusion.py", "no such file: /no/such/fusion.py")]
        assert app.session is session  # the loaded fusion stays
        await pilot.press("f1")
        assert isinstance(app.screen, HelpScreen)


async def test_opening_a_malformed_file_reports_the_line_and_the_app_goes_on(
    session: Session, malformed_file: Path
) -> None:
    app = FusescopeApp(session)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("o")
        await pilot.press(*str(malformed_file), "enter")
        await app.workers.wait_for_complete()
        await pilot.pause()
        errors = [m for _, m, sev in messages(app) if sev == "error"]
        assert len(errors) == 1 and "FusionFileError" in errors[0] and "3" in errors[0]
        assert app.session is session
        assert app.query_one(ListingView).text == session.listing
        await pilot.press("down", "down")
        await pilot.pause()
        assert app.query_one(TransformView).tensor == "T0"


async def test_opening_a_file_replaces_the_fusion(session: Session, seed001_file: Path) -> None:
    app = FusescopeApp(session)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("o")
        await pilot.press(*str(seed001_file), "enter")
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert app.session is not session and app.session.path == seed001_file
        assert app.query_one(ListingView).text == str(build_seed001().fusion)
        assert app.sub_title == str(seed001_file)
        await pilot.press("r")  # a file-backed session re-reads its file
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert app.session.path == seed001_file
        assert sum("Opened seed001.py" in m for _, m, _ in messages(app)) == 2


async def test_opening_a_repro_with_checking_code_says_which_lines_were_skipped(session: Session) -> None:
    script = Path(__file__).parents[1] / "realworld" / "scripts" / "softmax_bwd_numpy_allclose_trailer.py"
    skipped = load_fusion(script).skipped_statements
    assert skipped
    app = FusescopeApp(session)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("o")
        await pilot.press(*str(script), "enter")
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert app.session.path == script
        notes = [m for t, m, _ in messages(app) if t == "Checking code skipped"]
        assert len(notes) == 1 and notes[0].startswith(f"{len(skipped)} statements after the run skipped, not evaluated")
        assert str(skipped[0].first_line) in notes[0]
    started = FusescopeApp(load_session(script))  # `fusescope FILE`: said at start too
    async with started.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert [t for t, _, _ in messages(started)].count("Checking code skipped") == 1


@pytest.mark.parametrize("sample", samples.list_samples(), ids=lambda s: s.name)
async def test_every_bundled_sample_opens_and_shows_each_tensor(sample: samples.Sample) -> None:
    session = load_session(sample.path)
    app = FusescopeApp(session)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        md = session.multidevice()
        # A multi-device sample's listing has its sharding column under it, and each
        # transform block the tensor's sharding line (tests/fusescope/test_multidevice_tui.py).
        listing = str(load_fusion(str(sample.path)).fusion)
        if md is not None:
            listing = listing.rstrip("\n") + "\n\n" + md.sharding_table()
        assert app.query_one(ListingView).text == listing
        view = app.query_one(TransformView)
        for name, info in session.tensors.items():
            app.show_tensor(name)
            await pilot.pause()
            tail = "" if md is None else md.sharding_line(name) + "\n"
            assert view.tensor == name and view.text == info.transforms + tail
            assert view.text.startswith(info.text + "\n") and "\n logical domain : (" in view.text


async def test_palette_opens_a_bundled_sample(session: Session) -> None:
    found = samples.list_samples()
    if not found:
        pytest.skip("no bundled samples")
    target = found[-1]
    app = FusescopeApp(session)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("ctrl+p")
        await pilot.press(*f"Open sample: {target.name}")
        await pilot.pause(0.5)
        await pilot.press("enter")
        await pilot.pause()
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert app.session.path == target.path
        assert app.query_one(ListingView).text == str(load_fusion(str(target.path)).fusion)


async def test_schedule_tab_shows_the_selected_segments_scheduler_and_scheduled_transforms() -> None:
    path = samples.resolve("cross_entropy")
    # The samples ship with the project: a missing one is a failure, not a skip.
    assert path.exists(), "bundled sample cross_entropy is missing"
    session = load_session(path)
    app = FusescopeApp(session)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("down", "down")  # tree: root -> Inputs -> T0
        await pilot.pause()
        transforms = app.query_one(TransformView)
        assert transforms.tensor == "T0" and not transforms.scheduled
        view = app.query_one(ScheduleView)
        assert view.result is None  # nothing is compiled until a compiled tab opens
        await pilot.press("s")
        await app.workers.wait_for_complete()
        await pilot.pause()
        compiled = session.compile()
        assert view.result is compiled and view.selected == 0 and app.focused.id == "schedule-segments"
        assert view.code.border_title == "Schedule · g0 · inner_persistent"
        seg0 = compiled.segment(0)
        assert view.text == seg0.schedule_report()  # the same text `show --schedule` prints for g0
        assert "Scheduler _pointwise_ ***rejected*** because : " in view.text
        assert "===== Reduction Parameters ========" in view.text and "Scheduled IR:" in view.text
        assert "Derivation:" in view.text and seg0.derivation
        # The launch shown is the compiled kernel's, as the CUDA tab launches it.
        assert seg0.block is not None and seg0.grid is not None
        assert (f"  grid {seg0.grid}, block {seg0.block}: " in view.text
                and f"  dynamic shared memory: {seg0.shared_mem_bytes} B" in view.text)
        drawn = view.code.lines.text
        assert "Launch (the compiled kernel's" in drawn and f"  grid {seg0.grid}, block {seg0.block}: " in drawn
        # On the Schedule tab the transform pane shows the tensor as the segment scheduled it.
        assert transforms.tensor == "T0" and transforms.scheduled
        assert transforms.text == dict(seg0.tensors)["T0"] != session.transforms("T0")
        assert "threadIdx.x" in transforms.text and "threadIdx" not in session.transforms("T0")
        # Down in the segment list selects g1 here and in every other view.
        await pilot.press("down")
        await pilot.pause()
        assert view.selected == 1 and app.selected_segment == 1
        assert "Accepted by: reduction" in view.text
        assert app.query_one(CudaView).selected == 1
        # ... and selecting g0 elsewhere selects it here.
        app.select_segment(0)
        await pilot.pause()
        assert view.selected == 0 and "Accepted by: inner_persistent" in view.text
        await pilot.press("i")  # back on the IR tab the unscheduled block returns
        await pilot.pause()
        assert transforms.text == session.transforms("T0") and not transforms.scheduled


async def test_opening_a_file_clears_the_previous_schedule(session: Session, symbolic_file: Path) -> None:
    sample = samples.resolve("gelu_bias")
    # The samples ship with the project: a missing one is a failure, not a skip.
    assert sample.exists(), "bundled sample gelu_bias is missing"
    app = FusescopeApp(load_session(sample))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("s")
        await app.workers.wait_for_complete()
        await pilot.pause()
        view = app.query_one(ScheduleView)
        assert view.segment is not None and view.segment.scheduler == "pointwise"
        app.open_path(str(symbolic_file))  # no inputs list, no sizes: it cannot be compiled
        await app.workers.wait_for_complete()
        await pilot.pause()
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert app.session.path == symbolic_file
        assert view.result is not None and view.segment is None
        assert "no example inputs" in str(view.result.error)


@pytest.mark.parametrize("pane", ["#tensors", "#listing"])
async def test_keys_faster_than_the_app_answers_end_on_the_last_tensor(pane: str) -> None:
    # A held arrow key queues cursor events faster than they are answered. Each stale one
    # was echoed as a selection: the cursor jumped back, and the tree and the listing sent
    # each other old tensors for as long as the app ran.
    from textual import events

    app = FusescopeApp(load_session(samples.resolve("seed003_rope_bwd_small")))
    shown: list[str] = []
    show = app.show_tensor

    def counting(name: str) -> None:
        shown.append(name)
        show(name)

    app.show_tensor = counting  # type: ignore[method-assign]
    async with app.run_test(size=SIZE) as pilot:
        app.query_one(pane).focus()
        await pilot.press("down")  # onto a tensor
        await pilot.pause()
        for _ in range(8):
            assert app._driver is not None
            app._driver.send_message(events.Key("down", None))
        # The queued keys are answered at the host's pace (a busy CI machine takes longer
        # than 0.3 s): wait until no selection has come for 0.3 s, at most 10 s. A stale
        # echo loop never goes quiet.
        for _ in range(33):
            seen = len(shown)
            await pilot.pause(0.3)
            if len(shown) == seen:
                break
        shown.clear()
        await pilot.pause(0.3)
        assert shown == []
        tree, listing = app.query_one(TensorTree), app.query_one(ListingView)
        if pane == "#listing":
            assert listing.highlighted == listing.entries.index(
                next(e for e in listing.entries if e.tensor == listing.current_tensor))
            assert tree.cursor_node is not None and tree.cursor_node.data == listing.current_tensor
            assert app.query_one(TransformView).tensor == listing.current_tensor
        else:
            assert tree.cursor_line == 9


@pytest.mark.parametrize("widget", [TensorTree, ListingView])
async def test_a_selection_posted_before_the_cursor_moved_on_does_not_take_it_back(widget) -> None:
    # A widget posts its selection; before the app reads it, the selection moves on (a
    # quicker key, the palette, a test's show_tensor). On a busy host the older message then
    # arrived last and showed its tensor again (the sample sweep saw T36 after T38).
    app = FusescopeApp(load_session(samples.resolve("seed003_rope_bwd_small")))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        first, then = list(app.session.tensors)[1:3]
        app.show_tensor(first)
        await pilot.pause()
        source = app.query_one(widget)
        assert source.current_tensor == first
        late = TensorSelected(first, source)  # posted by `source` while its cursor was on `first`
        app.show_tensor(then)
        await pilot.pause()
        app.post_message(late)  # read only now
        await pilot.pause()
        assert app.query_one(TransformView).tensor == then
        assert source.current_tensor == then
