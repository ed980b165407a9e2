"""A child process that runs jobs which may crash or hang: emulated kernels (native code
loaded into the process), GPU launches that fault, a compiler stuck in a loop.

The worker is a long-lived process (importing torch and the engine takes seconds, and its
compiled fusions stay cached between runs) that answers one job at a time over a socket. When
a job kills it (a signal, os._exit) or runs past its timeout, only the worker dies: the caller
gets an Outcome saying what happened, and the next call starts a fresh worker.

This module knows nothing of the engine: the job function is passed in (model.py's) and
pickled by reference, so the child imports it itself. The child is a fresh interpreter
(`python -c ...`), not a fork: a forked child of a process that has touched CUDA (or holds a
Textual thread's lock) cannot be trusted; and not multiprocessing's "spawn" either, which
re-imports the parent's __main__ (a script without a main guard would run again).
"""

from __future__ import annotations

import atexit
import os
import pickle
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import traceback
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any, Literal

Status = Literal["ok", "error", "crashed", "timeout"]


@dataclass(frozen=True)
class Outcome:
    status: Status
    value: Any = None  # the job's return value when status is "ok"
    message: str = ""  # one line for the user otherwise
    details: str = ""  # a traceback (job error) or the tail of the worker's output (crash)


def _serve(conn: Connection, log_path: str) -> None:
    """The child's loop: the job function first, then a job in, ("ok", value) or
    ("error", line, traceback) out, until the parent sends None or goes away."""
    # Ctrl+C in the terminal reaches the whole process group; the parent decides when the
    # worker stops, so a keypress meant for the TUI must not kill a run half way.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # Compilers and native code may print; that would scribble over the TUI. Keep it in a
    # file whose tail explains a crash.
    fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)
    try:
        target = conn.recv()
    except (EOFError, OSError):
        return
    while True:
        try:
            job = conn.recv()
        except (EOFError, OSError):
            return  # the parent went away
        if job is None:
            return
        try:
            value = target(job)
        except BaseException as e:  # a job's own failure is data, the worker lives on
            line = " | ".join(x.strip() for x in f"{type(e).__name__}: {e}".splitlines() if x.strip())
            conn.send(("error", line, traceback.format_exc()))
        else:
            try:
                conn.send(("ok", value, ""))
            except (pickle.PicklingError, TypeError, AttributeError) as e:
                conn.send(("error", f"the job's result cannot be sent back: {type(e).__name__}: {e}", ""))


def _child_main() -> None:
    """Entry point of the child interpreter: argv is [fd of the socket, log path]."""
    _serve(Connection(int(sys.argv[1])), sys.argv[2])


def _signal_name(exitcode: int | None) -> str:
    if exitcode is None:
        return "still running"
    if exitcode < 0:
        try:
            return f"signal {signal.Signals(-exitcode).name}"
        except ValueError:
            return f"signal {-exitcode}"
    return f"exit status {exitcode}"


# Workers still running when the interpreter exits are stopped (a worker also exits on its
# own when its socket closes, but not while it is busy with a job).
_LIVE: weakref.WeakSet[Worker] = weakref.WeakSet()


@atexit.register
def _stop_all() -> None:
    for w in list(_LIVE):
        w.stop()


class Worker:
    """Calls `target(job)` in a child process, one job at a time, with a timeout."""

    def __init__(self, target: Callable[[Any], Any]) -> None:
        self.target = target
        self.started = 0  # processes started so far (a restart after a crash counts)
        self._proc: subprocess.Popen[bytes] | None = None
        self._conn: Connection | None = None
        self._lock = threading.Lock()  # one job at a time, whatever thread asks
        fd, self._log = tempfile.mkstemp(prefix="fusescope-worker-", suffix=".log")
        os.close(fd)
        _LIVE.add(self)

    @property
    def alive(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    def _start(self) -> None:
        with open(self._log, "w"):
            pass  # a fresh log per process: its tail is about this process only
        ours, theirs = socket.socketpair()
        env = dict(os.environ)
        # The child imports the job function by name: give it the parent's import path.
        env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
        try:
            self._proc = subprocess.Popen(
                [sys.executable, "-c", "from fusescope.worker import _child_main; _child_main()",
                 str(theirs.fileno()), self._log],
                pass_fds=(theirs.fileno(),), stdin=subprocess.DEVNULL, env=env, close_fds=True,
            )
        finally:
            theirs.close()
        self._conn = Connection(ours.detach())
        self._conn.send(self.target)
        self.started += 1

    def call(self, job: Any, timeout: float) -> Outcome:
        with self._lock:
            if not self.alive:
                self._discard()
                self._start()
            assert self._conn is not None and self._proc is not None
            try:
                self._conn.send(job)
                ready = self._conn.poll(timeout)
            except (OSError, EOFError):
                ready = True  # the socket broke: the worker is gone, recv below says so
            if not ready:
                self._kill()
                return Outcome("timeout", message=(
                    f"the run took longer than {timeout:g} s; the worker process was stopped "
                    "(a new one starts with the next run)"), details=self._log_tail())
            try:
                status, value, details = self._conn.recv()
            except (EOFError, OSError):
                # poll() also returns when the socket closes: the worker died during the job.
                try:
                    self._proc.wait(5)
                except subprocess.TimeoutExpired:
                    pass
                how = _signal_name(self._proc.returncode)
                tail = self._log_tail()
                self._kill()
                msg = f"the worker process died ({how}) during the run; a new one starts with the next run"
                last = tail.splitlines()[-1].strip() if tail else ""
                if last:
                    msg += f" (its last output: {last[:200]})"
                return Outcome("crashed", message=msg, details=tail)
            if status == "ok":
                return Outcome("ok", value=value)
            return Outcome("error", message=str(value), details=str(details))

    def _log_tail(self, limit: int = 4000) -> str:
        try:
            with open(self._log, "rb") as f:
                f.seek(0, os.SEEK_END)
                f.seek(max(0, f.tell() - limit))
                return f.read().decode(errors="replace").strip()
        except OSError:
            return ""

    def _kill(self) -> None:
        proc = self._proc
        if proc is not None and proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(2)
            except subprocess.TimeoutExpired:
                proc.kill()  # SIGTERM ignored, or the process is stuck in native code
                proc.wait(2)
        self._discard()

    def _discard(self) -> None:
        if self._conn is not None:
            self._conn.close()
        self._proc = None
        self._conn = None

    def stop(self) -> None:
        """Ask the worker to finish (it is killed if it does not) and forget it."""
        with self._lock:
            if self._conn is not None and self.alive:
                try:
                    self._conn.send(None)
                    assert self._proc is not None
                    self._proc.wait(2)
                except (OSError, subprocess.TimeoutExpired):
                    pass
            self._kill()
            try:
                os.unlink(self._log)
            except OSError:
                pass
