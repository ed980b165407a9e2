"""The decision log as read (`show --why`, the Segments tab): repeats collapsed with a count,
merge groups named by the final segments, tensors linked to the file's own names and lines."""

from __future__ import annotations

import re
from collections import Counter

import pytest
from textual.widgets import TabbedContent

from fusescope import samples
from fusescope.app import FusescopeApp
from fusescope.cli import main
from fusescope.model import load_session
from fusescope.render.decision_log import collapse, file_names
from fusescope.widgets.segments_view import SegmentsView

SAMPLE = "seed003_rope_bwd"  # 4 segments, merges refused in several phases, renumbered tensors
_FILE_NOTE = re.compile(r"(T\d+) is (?:(T\d+) \()?line (\d+)\)?")


def test_collapse_keeps_first_order_and_counts() -> None:
    assert collapse(["a", "b", "a", "c", "a"]) == [("a", 3), ("b", 1), ("c", 1)]
    assert file_names("T5 = T7 + T5", {"T5": ("T4", 17), "T7": ("T7", 3)}) == "T5 is T4 (line 17), T7 is line 3"


def test_why_collapses_repeats_names_final_segments_and_links_the_file(capsys: pytest.CaptureFixture[str]) -> None:
    session = load_session(samples.resolve(SAMPLE))
    compiled = session.compile()
    assert compiled.ok
    assert main(["show", SAMPLE, "--why"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == len(set(lines))  # nothing repeated word for word

    # Every decision is on a line once, with its count; the counts add up to the decisions.
    repeats = Counter(d.text for d in compiled.decisions)
    assert any(n > 1 for n in repeats.values())
    for text, n in repeats.items():
        shown = [ln for ln in lines if ln.startswith(text + (f" (x{n})" if n > 1 else ""))]
        assert len(shown) == 1, text

    # Merge attempts name the final segments their groups ended in.
    ids = {f"g{s.id}" for s in compiled.segments}
    merges = [d for d in compiled.decisions if d.kind == "merge"]
    # ("g1/g2": a group whose expressions ended in both, as a recomputed one does.)
    assert merges and all(d.finals and {g for f in d.finals for g in f.split("/")} <= ids for d in merges)
    assert all(d.text.startswith(f"[merge] {'+'.join(d.finals)} (groups g{{") for d in merges)
    # (An accepted merge's groups may still end apart: narrowing boundaries moves expressions.)

    # The file's names and lines: each note points at the line that assigns that name.
    source = samples.resolve(SAMPLE).read_text().splitlines()
    notes = [m.groups() for ln in lines for m in _FILE_NOTE.finditer(ln.partition("  [file: ")[2])]
    assert len(notes) > 10
    renamed = 0
    for engine_name, file_name, line in notes:
        file_name = file_name or engine_name
        renamed += file_name != engine_name
        assert source[int(line) - 1].strip().startswith(f"{file_name} = "), (engine_name, file_name, line)
    assert renamed > 0  # this file's tensors are renumbered by the engine


@pytest.mark.asyncio
async def test_the_segments_tab_log_is_collapsed_and_linked() -> None:
    session = load_session(samples.resolve(SAMPLE))
    compiled = session.compile()
    app = FusescopeApp(session)
    async with app.run_test(size=(200, 50)) as pilot:
        await pilot.press("g")
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert app.query_one(TabbedContent).active == "tab-segments"
        log = app.query_one(SegmentsView).log_text
        for text, n in Counter(d.text for d in compiled.decisions).items():
            assert log.count(text + (f" (x{n})" if n > 1 else "")) == 1
        fold = next(d for d in compiled.decisions if d.kind == "fold")
        assert f"{fold.text}  [file: {file_names(fold.text, compiled.origins)}]" in log
