"""Crash isolation (issue 9 part 4): a replaced kernel that faults, hangs or kills the process
runs in the worker; `fusescope run` and the TUI report the failure naming the segment, and the
next run works. Kernels are the generated one altered (Options.kernel_sources)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from textual.widgets import TabbedContent

from fusescope.app import FusescopeApp
from fusescope.model import CompileOptions, Session, load_session
from fusescope.widgets.run_view import RunView
from tests.fusescope.fusions import EXP_FILE, faulty_kernels

HANG_TIMEOUT_S = 8.0  # long enough for a cold start of the worker and g++; the spin never ends


@pytest.fixture(scope="module")
def exp_case(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Path]]:
    folder = tmp_path_factory.mktemp("crash")
    fusion = folder / "exp.py"
    fusion.write_text(EXP_FILE)
    source = load_session(fusion).compile().segment(0).cuda_source
    assert source is not None
    kernels = {}
    for name, text in faulty_kernels(source).items():
        kernels[name] = folder / f"{name}.cu"
        kernels[name].write_text(text)
        _build(fusion, text)
    return fusion, kernels


def _build(fusion: Path, kernel: str) -> None:
    """g++ builds the altered kernel into the emulator's disk cache here (loading it runs
    nothing), so that the hang test's short timeout measures the run, not the compiler."""
    from engine import load_fusion
    from engine.compile import compile_fusion
    from engine.config import Options

    fd = load_fusion(str(fusion))
    compile_fusion(fd, fd.example_inputs(device="cpu", seed=0), Options(kernel_sources={0: kernel})
                   ).segments[0].kernel("emulate")


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "fusescope", *args], capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("case, says", [
    ("fault", "SIGSEGV: invalid memory access"),
    ("hang", f"the run took longer than {HANG_TIMEOUT_S:g} s"),
    ("crash", "the worker process died (signal SIGKILL) during the run"),
])
def test_cli_run_reports_a_faulty_kernel_naming_its_segment(exp_case: tuple[Path, dict[str, Path]],
                                                           case: str, says: str) -> None:
    fusion, kernels = exp_case
    timeout = HANG_TIMEOUT_S if case == "hang" else 300
    r = run_cli("run", str(fusion), "--kernel-source", f"0={kernels[case]}", "--timeout", str(timeout))
    assert r.returncode == 4, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in r.stderr
    assert "segment 0 (" in lines[0] and says in lines[0]


def test_cli_kernel_source_errors_are_one_line(exp_case: tuple[Path, dict[str, Path]], tmp_path: Path) -> None:
    fusion, _ = exp_case
    r = run_cli("run", str(fusion), "--kernel-source", f"0={tmp_path / 'missing.cu'}")
    assert r.returncode == 2 and r.stderr.startswith("fusescope: error: kernel source for segment 0: cannot read ")
    r = run_cli("run", str(fusion), "--kernel-source", "zero.cu")
    assert r.returncode == 2 and "write N=PATH.cu" in r.stderr


@pytest.mark.asyncio
async def test_tui_reports_each_failure_and_keeps_working(exp_case: tuple[Path, dict[str, Path]]) -> None:
    fusion, kernels = exp_case
    session: Session = load_session(fusion)
    app = FusescopeApp(session)
    async with app.run_test(size=(140, 40)) as pilot:
        view = app.query_one(RunView)
        for case, says in (("fault", "SIGSEGV"), ("hang", "took longer than"), ("crash", "SIGKILL")):
            app.options = CompileOptions().with_(kernel_sources={0: kernels[case].read_text()})
            app.run_timeout = HANG_TIMEOUT_S if case == "hang" else 300
            app.start_run("emulate", profile=False)
            await app.workers.wait_for_complete()
            await pilot.pause()
            assert app.query_one(TabbedContent).active == "tab-run"
            result = view.result
            assert result is not None and result.status != "ok"
            assert result.message.count("segment 0 (") == 1 and says in result.message, result.message
            assert says in view.status_text and view.running is None
            notes = [n.message for n in app._notifications]
            assert any(says in m for m in notes)
        app.options = CompileOptions()
        app.start_run("emulate", profile=False)  # the original kernel in a fresh worker
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert view.result is not None and view.result.status == "ok", view.result.message
