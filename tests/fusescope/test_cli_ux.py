"""The command line as a person meets it: --version, the top-level help, "did you mean" for a
mistyped sample, whole sample descriptions, a progress bar on a terminal (and none when piped),
and ctrl+c during a run."""

from __future__ import annotations

import io
import os
import pty
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from rich.console import Console

from fusescope import samples
from fusescope.cli_progress import Activity, RunBar
from fusescope.progress import RunProgress
from tests.fusescope.test_cli import run_cli

ROOT = Path(__file__).resolve().parents[2]


def test_version_and_the_top_level_help_name_every_command() -> None:
    r = run_cli("--version")
    assert r.returncode == 0 and r.stdout.startswith("fusescope ") and r.stdout.strip() != "fusescope"
    r = run_cli("--help")
    assert r.returncode == 0
    for command in ("show FILE", "run FILE", "export FILE", "serve [FILE]", "list"):
        assert f"\n  {command}" in r.stdout, command


def test_a_mistyped_sample_name_gets_a_suggestion() -> None:
    r = run_cli("show", "softmx", "--ir")
    assert r.returncode == 2
    assert r.stderr.strip() == "fusescope: error: no such file: softmx (did you mean softmax?)"
    r = run_cli("show", "nothing_like_it", "--ir")
    assert r.stderr.strip() == "fusescope: error: no such file: nothing_like_it"
    assert samples.did_you_mean("seed003_rope") == " (did you mean seed003_rope_bwd or seed003_rope_bwd_small?)"


def test_list_gives_each_description_whole(tmp_path: Path) -> None:
    (tmp_path / "a_copy.py").write_text("# Copy a tensor into a block-\n# quantized one, row by row. More words\n"
                                        "# that are not the first sentence.\n\n# Another paragraph.\nimport os\n")
    (tmp_path / "b_sum.py").write_text('"""A row sum over\nthe last axis.\n\nDetails."""\n')
    r = run_cli("list", env_samples=tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == ["a_copy  Copy a tensor into a block-quantized one, row by row.",
                                     "b_sum   A row sum over the last axis."]


def test_bundled_descriptions_end_their_sentence() -> None:
    for s in samples.list_samples():
        assert s.summary.endswith((".", ")", "]")), f"{s.name}: {s.summary!r}"


# ---- progress ------------------------------------------------------------------------------------
def _on_a_terminal(*args: str, timeout: float = 300) -> tuple[int, str]:
    """`fusescope ARGS` with stdout and stderr on a pseudo-terminal: (status, all it wrote)."""
    master, slave = pty.openpty()
    env = dict(os.environ, COLUMNS="160", LINES="30", TERM="xterm-256color")
    proc = subprocess.Popen([sys.executable, "-m", "fusescope", *args], stdin=subprocess.DEVNULL,
                            stdout=slave, stderr=slave, env=env, cwd=ROOT)
    os.close(slave)
    out = b""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([master], [], [], 0.2)
        if ready:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # the terminal closed: the process is done
                break
            if not chunk:
                break
            out += chunk
        elif proc.poll() is not None:
            break
    os.close(master)
    return proc.wait(10), out.decode(errors="replace")


def test_run_on_a_terminal_shows_the_workers_progress_then_the_report() -> None:
    from fusescope.model import load_session

    segments = load_session(samples.resolve("seed003_rope_bwd_small")).compile().segments
    n, last = len(segments), segments[-1]
    assert n > 2
    status, out = _on_a_terminal("run", "seed003_rope_bwd_small")
    assert status == 0, out
    # The bar's lines (rich redraws them in place) name each step as the worker reached it.
    assert "starting the worker process" in out or "compiling the fusion" in out
    assert f"segment 1 of {n} (g{segments[0].id} " in out and f"segment {n} of {n} (g{last.id} " in out
    assert "━" in out  # the bar itself
    assert out.rstrip().endswith("ok: 1 output(s) match the reference")


def test_run_piped_prints_exactly_the_report() -> None:
    r = run_cli("run", "seed003_rope_bwd_small")
    assert r.returncode == 0 and r.stderr == ""
    assert "\x1b" not in r.stdout and "segment 1 of" not in r.stdout and "━" not in r.stdout
    assert r.stdout.startswith("backend emulate (CPU emulator (g++)); ")


def test_show_on_a_terminal_draws_nothing_when_quick_and_a_spinner_when_slow() -> None:
    buffer = io.StringIO()
    console = Console(file=buffer, force_terminal=True, width=100)
    with Activity(enabled=True, delay=0.05, console=console) as activity:
        activity.say("compiling softmax at its example inputs")
        time.sleep(0.5)
    assert activity.shown and "compiling softmax at its example inputs" in buffer.getvalue()
    quick = io.StringIO()
    with Activity(enabled=True, delay=1.0, console=Console(file=quick, force_terminal=True)) as activity:
        activity.say("reading softmax")
    assert not activity.shown and quick.getvalue() == ""
    with Activity(enabled=False, delay=0.0, console=Console(file=quick, force_terminal=True)) as activity:
        time.sleep(0.2)
    assert not activity.shown and quick.getvalue() == ""


def test_run_bar_follows_the_reports() -> None:
    buffer = io.StringIO()
    with RunBar("emulate", False, enabled=True, delay=0.0, console=Console(file=buffer, force_terminal=True,
                                                                            width=150)) as bar:
        time.sleep(0.1)
        bar.update(RunProgress(2, 4, "building the kernel (g++)", 1.0, 0, 1, 2, "resize"))
        time.sleep(0.3)
        assert bar.tracker.fraction == 0.25
    assert "1/4" in buffer.getvalue() and "segment 1 of 2 (g0 resize): building the kernel (g++)" in buffer.getvalue()


# ---- ctrl+c --------------------------------------------------------------------------------------
def _children(pid: int) -> list[int]:
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(") ", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[1]) == pid:
            found.append(int(stat.parent.name))
    return found


def test_ctrl_c_during_a_run_stops_the_worker_and_exits_130() -> None:
    proc = subprocess.Popen([sys.executable, "-m", "fusescope", "run", "seed003_rope_bwd", "--profile"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)
    deadline = time.monotonic() + 60
    workers: list[int] = []
    while not workers and time.monotonic() < deadline:
        workers = _children(proc.pid)
        time.sleep(0.1)
    assert workers, "the worker process never started"
    time.sleep(1.0)  # the worker is busy importing or compiling: the run is far from done
    assert proc.poll() is None
    t0 = time.monotonic()
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    assert time.monotonic() - t0 < 5
    assert proc.returncode == 130 and err == "fusescope: interrupted\n" and out == ""
    for pid in workers:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            continue
        pytest.fail(f"worker {pid} still runs")
