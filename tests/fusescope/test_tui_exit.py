"""The report's steps on a real terminal: open a multi-segment fusion, x, e, wait, q (or ctrl+c).
The TUI lived a minute more (until the run finished) and ctrl+c printed a traceback; now it
ends in seconds and leaves no worker process behind."""

from __future__ import annotations

import os
import pty
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.fusescope.test_cancel import _gone
from tests.fusescope.test_cli_ux import ROOT, _children


@pytest.mark.parametrize("key", [b"q", b"\x03"], ids=["q", "ctrl+c"])
def test_the_tui_on_a_terminal_exits_at_once_during_a_run(key: bytes) -> None:
    master, slave = pty.openpty()
    env = dict(os.environ, TERM="xterm-256color", COLUMNS="80", LINES="24")
    proc = subprocess.Popen([sys.executable, "-m", "fusescope", "seed003_rope_bwd"], stdin=slave, stdout=slave,
                            stderr=slave, env=env, cwd=ROOT, start_new_session=True)
    os.close(slave)
    out = bytearray()

    def drain(seconds: float) -> None:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            ready, _, _ = select.select([master], [], [], 0.05)
            if ready:
                try:
                    out.extend(os.read(master, 65536))
                except OSError:
                    return

    try:
        drain(6)  # the TUI starts
        os.write(master, b"x")
        drain(1)
        os.write(master, b"e")
        deadline = time.monotonic() + 60
        workers: list[int] = []
        while not workers and time.monotonic() < deadline:
            drain(0.2)
            workers = [p for p in _children(proc.pid) if "_child_main" in Path(f"/proc/{p}/cmdline").read_text()]
        assert workers, "the run never started a worker"
        drain(2)  # the worker is importing torch or compiling: the run has a long way to go
        assert proc.poll() is None
        t0 = time.monotonic()
        os.write(master, key)
        while proc.poll() is None and time.monotonic() - t0 < 30:
            drain(0.1)
        took = time.monotonic() - t0
        assert proc.returncode == 0, out[-2000:].decode(errors="replace")
        assert took < 5, f"the TUI took {took:.1f} s to exit"
        assert b"Traceback" not in out and b"KeyboardInterrupt" not in out
        time.sleep(0.5)
        assert all(_gone(pid) for pid in workers), "the worker process outlived the TUI"
    finally:
        if proc.poll() is None:
            proc.kill()
        os.close(master)
