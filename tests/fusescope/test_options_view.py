"""The Options tab: change options, recompile in a worker, see what changed."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import Input, Switch, TabbedContent

from fusescope import samples
from fusescope.app import FusescopeApp
from fusescope.model import load_session
from fusescope.widgets.cuda_view import CudaView
from fusescope.widgets.options_view import OptionsView
from fusescope.widgets.segments_view import SegmentsView

pytestmark = pytest.mark.asyncio


async def settle(app: FusescopeApp, pilot: object) -> None:
    await app.workers.wait_for_complete()
    await pilot.pause()  # type: ignore[attr-defined]


async def test_toggling_forwarding_recompiles_seed003_and_shows_the_difference() -> None:
    path = samples.resolve("seed003_rope_bwd_small")
    assert path.exists(), "bundled sample seed003_rope_bwd_small is missing"
    session = load_session(path)
    app = FusescopeApp(session)
    async with app.run_test(size=(160, 50)) as pilot:
        await pilot.press("t")
        await settle(app, pilot)
        assert app.query_one(TabbedContent).active == "tab-options"
        before = session.compile()
        assert app.focused is app.query_one("#opt-forwarding", Switch)
        await pilot.press("space")  # forwarding off
        await pilot.press("ctrl+a")
        await settle(app, pilot)
        await settle(app, pilot)
        assert not app.options.forwarding
        after = session.compile(app.options)
        view = app.query_one(OptionsView)
        assert view.text.startswith("options: forwarding on, 4 streams  ->  forwarding off, 4 streams\n")
        assert f"segments: {len(before.segments)} -> {len(after.segments)}" in view.text
        # Without forwarding the forwarded chains stay in their own segments: the segments differ.
        assert [(s.scheduler, s.ops) for s in before.segments] != [(s.scheduler, s.ops) for s in after.segments]
        assert "boundary bytes: " in view.text and "differs" in view.text
        segments = app.query_one(SegmentsView)
        assert segments.result is after and "forwarding off" in segments.border_title


async def test_a_heuristic_override_changes_the_parameters_and_bad_input_is_refused() -> None:
    path = samples.resolve("gelu_bias")
    assert path.exists(), "bundled sample gelu_bias is missing"
    app = FusescopeApp(load_session(path))
    async with app.run_test(size=(160, 50)) as pilot:
        await pilot.press("t")
        await settle(app, pilot)
        field = app.query_one("#opt-heuristics", Input)
        field.value = "vectorization_factor=lots"
        field.focus()
        await pilot.press("enter")
        await pilot.pause()
        errors = [n.message for n in app._notifications if n.severity == "error"]
        assert any("'lots' is not a number" in m for m in errors) and app.options.heuristic_overrides == ()
        field.value = "g0.vectorization_factor=2"
        await pilot.press("enter")
        await settle(app, pilot)
        await settle(app, pilot)
        assert app.options.heuristic_overrides == (("g0.vectorization_factor", 2),)
        assert "g0 (pointwise): vectorization_factor: 8 -> vectorization_factor: 2" in app.query_one(OptionsView).text
        cuda, segments = app.query_one(CudaView), app.query_one(SegmentsView)
        assert cuda._scroll.border_title.startswith("CUDA · g0") and segments.graph_text
        field.value = "no_such_parameter=1"  # the engine refuses it: the compile error is shown
        await pilot.press("enter")
        await settle(app, pilot)
        await settle(app, pilot)
        errors = [n.message for n in app._notifications if n.severity == "error"]
        assert any("no_such_parameter" in m for m in errors)
        # Nothing of the last compilation stays on show: not the segment's title, not its graph.
        assert cuda._scroll.border_title == "CUDA · no compilation"
        assert segments.graph_text == segments.log_text == ""
        await pilot.press("escape")
        await pilot.click("#opt-reset")
        await settle(app, pilot)
        await settle(app, pilot)
        assert app.options.heuristic_overrides == () and app.session.compiled(app.options).ok


async def test_opening_another_fusion_clears_the_comparison_and_its_replacement_kernels() -> None:
    # The comparison and the replaced kernels (by segment id) were about the fusion open
    # before: shown and compiled into the next fusion opened, they described or changed
    # segments of a different fusion.
    first = samples.resolve("seed003_rope_bwd_small")
    app = FusescopeApp(load_session(first))
    async with app.run_test(size=(160, 50)) as pilot:
        await pilot.press("t")
        await settle(app, pilot)
        await pilot.press("space", "ctrl+a")  # forwarding off
        await settle(app, pilot)
        await settle(app, pilot)
        view = app.query_one(OptionsView)
        assert view.text.startswith("options: forwarding on")
        app.options = app.options.with_(kernel_sources={0: "// a kernel for seed003's g0"})
        app.open_path(str(samples.resolve("softmax")))
        await settle(app, pilot)
        await settle(app, pilot)
        assert app.session is not None and app.session.title == "softmax.py"
        assert view.text == "" and "What changed" not in str(view.query_one("#options-diff").render())
        assert app.options.kernel_sources == () and not app.options.forwarding  # the rest stays
        notes = [n.message for n in app._notifications]
        assert any("replacement kernel" in m and "seed003_rope_bwd_small.py" in m for m in notes)
        assert app.query_one(SegmentsView).result is app.session.compiled(app.options)
        # A reload of the same file keeps them (the user is iterating on that fusion).
        app.options = app.options.with_(kernel_sources={0: "// softmax g0"})
        await pilot.press("r")
        await settle(app, pilot)
        assert app.options.kernel_sources == ((0, "// softmax g0"),)


async def test_input_sizes_compile_a_file_without_an_inputs_list(symbolic_file: Path) -> None:
    # No inputs list and symbolic sizes: the compile says which sizes are missing and where to
    # give them; the Options tab's Input sizes field takes them as --size does.
    app = FusescopeApp(load_session(symbolic_file))
    async with app.run_test(size=(160, 50)) as pilot:
        await pilot.press("g")
        await settle(app, pilot)
        segments = app.query_one(SegmentsView)
        assert segments.result is not None and "--size T0=i0,i2" in (segments.result.error or "")
        assert any(n.title == "Sizes needed" and "Options tab" in n.message for n in app._notifications)
        await pilot.press("t")
        await settle(app, pilot)
        field = app.query_one("#opt-sizes", Input)
        field.value = "T0=4,x"
        field.focus()
        await pilot.press("enter")
        await pilot.pause()
        errors = [n.message for n in app._notifications if n.severity == "error"]
        assert any("--size 'T0=4,x'" in m for m in errors) and app.options.input_sizes == ()
        field.value = "T0=4,8"  # T1's size is T0's first: the fusion adds them
        await pilot.press("enter")
        await settle(app, pilot)
        await settle(app, pilot)
        assert app.options.input_sizes == (("T0", (4, 8)),)
        assert segments.result is not None and segments.result.ok and segments.result.segments
        assert segments.border_title.endswith("sizes T0=4,8")
        assert app.query_one(OptionsView).text.startswith("options: forwarding on, 4 streams  ->  forwarding on, 4 streams, "
                                                          "sizes T0=4,8\n")


async def test_the_tui_starts_with_the_sizes_given_on_the_command_line(symbolic_file: Path) -> None:
    from fusescope.model import CompileOptions

    options = CompileOptions().with_(input_sizes={"*": (6,)})
    app = FusescopeApp(load_session(symbolic_file), options)
    async with app.run_test(size=(160, 50)) as pilot:
        assert app.query_one("#opt-sizes", Input).value == "6"
        await pilot.press("g")
        await settle(app, pilot)
        result = app.query_one(SegmentsView).result
        assert result is not None and result.ok

