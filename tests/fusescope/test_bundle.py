"""Session bundles: saved from the CLI and the TUI, reopened without running anything, and
hostile or broken bundles refused with one line naming what is wrong."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from fusescope.app import FusescopeApp
from fusescope.model import CompileOptions, LoadError, RunResult, TimelineRow, load_session
from fusescope.widgets.host_ir_view import NO_TIMELINE, HostIrView
from fusescope.widgets.run_view import RunView


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "fusescope", *args], capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A bundle of cross_entropy with a reference run, saved by `fusescope run`."""
    out = tmp_path_factory.mktemp("bundle") / "ce.json"
    r = run_cli("run", "cross_entropy", "--backend", "reference", "--no-forwarding", "--save-bundle", str(out))
    assert r.returncode == 0, r.stderr
    return out


def test_cli_saves_and_reopens_a_bundle(saved: Path) -> None:
    data = json.loads(saved.read_text())
    assert data["format"] == "fusescope-bundle" and data["version"] == 1
    assert data["inputs"] == [{"shape": [32, 100], "dtype": "float32", "strides": [100, 1]},
                              {"shape": [32], "dtype": "int64", "strides": [1]}]
    assert data["option_sets"]["o0"]["forwarding"] is False and data["runs"][0]["options"] == "o0"
    assert {"python", "torch", "textual"} <= set(data["versions"])
    session = load_session(saved)
    assert session.title == "cross_entropy.py" and len(session.runs) == 1
    assert session.runs[0].backend == "reference" and session.runs[0].ok
    shown = run_cli("show", str(saved), "--runs")
    assert shown.returncode == 0 and "== run 1 of 1\nbackend reference" in shown.stdout
    assert "forwarding off" in shown.stdout
    replay = run_cli("run", str(saved), "--backend", "reference", "--json")
    assert replay.returncode == 0, replay.stderr
    assert json.loads(replay.stdout)["options"]["forwarding"] is False  # the recorded options


def _broken(saved: Path, tmp_path: Path, change: object) -> Path:
    data = json.loads(saved.read_text())
    if callable(change):
        change(data)
    out = tmp_path / "broken.json"
    out.write_text(json.dumps(data))
    return out


def _set(path: list[object], value: object):  # noqa: ANN202 (a test helper returning a closure)
    def change(data: dict) -> None:
        node = data
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = value
    return change


# The fusion uses a module the loader never imports: refused (a payload the fusion does not
# use would be skipped unread instead; either way nothing runs).
EVIL_SOURCE = ("import os\n"
               "def nvfuser_fusion_id0(fd : FusionDefinition) -> None :\n"
               "    T0 = fd.define_tensor(shape=[os.system('touch {marker}')], dtype=DataType.Float)\n"
               "    fd.add_output(T0)\n")


@pytest.mark.parametrize("change, says", [
    (_set(["version"], 7), "bundle version 7 is not supported"),
    (_set(["format"], "zip"), "not a fusescope bundle"),
    (_set(["fusion", "source"], 12), "fusion.source must be str, got int"),
    (_set(["runs", 0, "options"], "o9"), "refers to option set 'o9', which the bundle does not have"),
    (_set(["runs", 0, "previous"], "r0"), "loop back to r0"),
    (_set(["runs", 0, "previous"], "r5"), "refers to a previous run 'r5'"),
    (_set(["runs", 0, "result", "segments", 0, "time_ms"], "fast"), "time_ms must be float or int, got str"),
    (_set(["runs", 0, "result", "status"], "great"), "'great' is not a run status"),
    (_set(["option_sets", "o0", "num_streams"], -3), "num_streams must be an integer from 1 to 64"),
    (_set(["option_sets", "o0", "forwarding"], "no"), "options.forwarding must be true or false"),
])
def test_a_malformed_bundle_is_refused_in_one_line(saved: Path, tmp_path: Path, change: object, says: str) -> None:
    with pytest.raises(LoadError, match="broken.json: ") as e:
        load_session(_broken(saved, tmp_path, change))
    assert says in str(e.value) and "\n" not in str(e.value)


def test_a_truncated_or_executing_bundle_is_refused_and_nothing_runs(saved: Path, tmp_path: Path) -> None:
    cut = tmp_path / "cut.json"
    cut.write_text(saved.read_text()[:500])
    with pytest.raises(LoadError, match="cut.json: not valid JSON \\(truncated\\?\\)"):
        load_session(cut)
    marker = tmp_path / "ran"
    evil = _broken(saved, tmp_path, _set(["fusion", "source"], EVIL_SOURCE.format(marker=marker)))
    with pytest.raises(LoadError, match="its fusion source is refused: FusionFileError"):
        load_session(evil)
    assert not marker.exists()
    r = run_cli("show", str(evil), "--runs")
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and not marker.exists()


@pytest.mark.asyncio
async def test_tui_shows_a_bundles_runs_and_timeline_and_saves_one(saved: Path, tmp_path: Path) -> None:
    session = load_session(saved)
    # A recorded cuda run with a timeline, as a GPU session would have saved it.
    gpu = RunResult("cuda", "ok", "1 output(s) match the reference", CompileOptions(forwarding=False), True,
                    session.runs[0].segments, session.runs[0].outputs, "CUDA events", "NVIDIA H100", 0.5, 1024,
                    (TimelineRow("LaunchKernel g0", "caller", 0.0, 0.25), TimelineRow("LaunchKernel g1", "pool 0",
                                                                                      0.25, 0.5, 0)))
    app = FusescopeApp(session)
    async with app.run_test(size=(140, 40)) as pilot:
        await pilot.pause()
        run = app.query_one(RunView)
        assert run.result is session.runs[0] and "reference: ok" in run.status_text
        host = app.query_one(HostIrView)
        assert host.timeline_text.startswith(NO_TIMELINE) and "last run was on reference" in host.timeline_text
        session.runs.append(gpu)
        app.query_one(HostIrView).show_timeline(session.runs)
        run.show_runs(session.runs)
        assert "Stream timeline (NVIDIA H100, 2 ops, 0.500 ms)" in host.timeline_text
        assert "LaunchKernel g1" in host.timeline_text and "pool 0" in host.timeline_text
        out = tmp_path / "again.json"
        await pilot.press("b")
        await pilot.pause()
        field = app.screen.query_one("#save-path")
        field.value = str(out)
        await pilot.press("enter")
        await pilot.pause()
        again = load_session(out)
        assert [r.backend for r in again.runs] == ["reference", "cuda"]
        assert again.runs[1].timeline == gpu.timeline
        # Export: the current view's text, the Run table as CSV, a screenshot as SVG.
        await pilot.press("x")
        for name in ("run.txt", "run.csv", "shot.svg"):
            await pilot.press("w")
            await pilot.pause()
            app.screen.query_one("#save-path").value = str(tmp_path / name)
            await pilot.press("enter")
            await pilot.pause()
        assert (tmp_path / "run.txt").read_text().startswith("backend cuda (NVIDIA H100)")
        assert (tmp_path / "run.csv").read_text().splitlines()[0].startswith("seg,scheduler,time,Δ time")
        assert (tmp_path / "shot.svg").read_text().lstrip().startswith("<svg")
        await pilot.press("w")
        await pilot.pause()
        app.screen.query_one("#save-path").value = str(tmp_path / "no" / "such" / "dir.txt")
        await pilot.press("enter")
        await pilot.pause()
        assert any("cannot write" in n.message for n in app._notifications if n.severity == "error")
