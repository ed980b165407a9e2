"""A child process that runs jobs which may crash or hang: emulated kernels (native code
loaded into the process), GPU launches that fault, a compiler stuck in a loop.

The worker is a long-lived process (importing torch and the engine takes seconds, and its
compiled fusions stay cached between runs) that answers one job at a time over a socket. When
a job kills it (a signal, os._exit) or runs past its timeout, only the worker dies: the caller
gets an Outcome saying what happened, and the next call starts a fresh worker.

While a job runs it may call `report(payload)`: the payload reaches the caller's `on_progress`
at once, so a long job says where it is. A caller cancels a job by setting the `cancel` event it
passed: the worker's process group (the worker and the compilers it started) is killed within
POLL_S, and the next call starts a fresh worker.

This module knows nothing of the engine: the job function is passed in (run_job.py's) and
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
import time
import traceback
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any, Literal

Status = Literal["ok", "error", "crashed", "timeout", "cancelled"]
ProgressCallback = Callable[[Any], None]
# How often a waiting caller looks at its cancel event (seconds).
POLL_S = 0.1


@dataclass(frozen=True)
class Outcome:
    status: Status
    value: Any = None  # the job's return value when status is "ok"
    message: str = ""  # one line for the user otherwise
    details: str = ""  # a traceback (job error) or the tail of the worker's output (crash)


# In the child: the connection to the parent, for report().
_CHILD_CONN: Connection | None = None


def report(payload: Any) -> None:
    """From a job running in the worker: send `payload` to the caller's on_progress now.
    Outside the worker (a job called in-process, a test) it does nothing."""
    if _CHILD_CONN is not None:
        _CHILD_CONN.send(("progress", payload, ""))


def _serve(conn: Connection, log_path: str) -> None:
    """The child's loop: the job function first, then a job in, any number of
    ("progress", payload) and then ("ok", value) or ("error", line, traceback) out, until the
    parent sends None or goes away."""
    global _CHILD_CONN
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
    _CHILD_CONN = conn
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
    # Done: leave without the interpreter's teardown (torch's takes a second or two, which
    # the caller, quitting, would wait for); the log is all there is to flush.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


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


def _signal_group(proc: subprocess.Popen[bytes], sig: signal.Signals) -> None:
    """Send `sig` to the process group `proc` leads (its own session: see Worker._start)."""
    try:
        os.killpg(proc.pid, sig)
    except (ProcessLookupError, PermissionError):
        pass  # the group is gone already


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
            # A session of its own: the worker and every compiler it starts are one process
            # group, killed together (a g++ left running would hold a core for a minute), and
            # ctrl+c in the terminal reaches only the caller, which decides what stops.
            self._proc = subprocess.Popen(
                [sys.executable, "-c", "from fusescope.worker import _child_main; _child_main()",
                 str(theirs.fileno()), self._log],
                pass_fds=(theirs.fileno(),), stdin=subprocess.DEVNULL, env=env, close_fds=True,
                start_new_session=True,
            )
        finally:
            theirs.close()
        self._conn = Connection(ours.detach())
        self._conn.send(self.target)
        self.started += 1

    def call(self, job: Any, timeout: float, on_progress: ProgressCallback | None = None,
             cancel: threading.Event | None = None) -> Outcome:
        """Run `job` in the worker: its result, or what stopped it. `on_progress` gets each
        payload the job reports, in the calling thread, while it runs; setting `cancel` stops
        the worker (within POLL_S) and the outcome is "cancelled"."""
        with self._lock:
            if not self.alive:
                self._discard()
                self._start()
            assert self._conn is not None and self._proc is not None
            try:
                return self._wait(job, timeout, on_progress, cancel)
            except BaseException:
                # KeyboardInterrupt in the caller (ctrl+c in `fusescope run`), or a failing
                # on_progress: the job's answer would arrive for nobody; stop it now.
                self._kill()
                raise

    def _wait(self, job: Any, timeout: float, on_progress: ProgressCallback | None,
              cancel: threading.Event | None) -> Outcome:
        assert self._conn is not None and self._proc is not None
        deadline = time.monotonic() + timeout
        broken = False
        try:
            self._conn.send(job)
        except (OSError, EOFError):
            broken = True  # the socket broke: the worker is gone, recv below says so
        while True:
            if cancel is not None and cancel.is_set():
                self._kill()
                return Outcome("cancelled", message=(
                    "the worker process was stopped (a new one starts with the next run)"))
            left = deadline - time.monotonic()
            if left <= 0:
                self._kill()
                return Outcome("timeout", message=(
                    f"the run took longer than {timeout:g} s; the worker process was stopped "
                    "(a new one starts with the next run)"), details=self._log_tail())
            if not broken:
                try:
                    if not self._conn.poll(min(left, POLL_S)):
                        continue
                except (OSError, EOFError):
                    pass  # recv below says the worker is gone
            try:
                status, value, details = self._conn.recv()
            except (EOFError, OSError):
                return self._died()
            if status == "progress":
                if on_progress is not None:
                    on_progress(value)
                continue
            if status == "ok":
                return Outcome("ok", value=value)
            return Outcome("error", message=str(value), details=str(details))

    def _died(self) -> Outcome:
        """The socket closed during a job: the worker died (poll returns when it closes)."""
        assert self._proc is not None
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

    def _log_tail(self, limit: int = 4000) -> str:
        try:
            with open(self._log, "rb") as f:
                f.seek(0, os.SEEK_END)
                f.seek(max(0, f.tell() - limit))
                return f.read().decode(errors="replace").strip()
        except OSError:
            return ""

    def _kill(self) -> None:
        """Stop the worker's process group: SIGTERM, then SIGKILL for what ignores it."""
        proc = self._proc
        if proc is not None and proc.poll() is None:
            _signal_group(proc, signal.SIGTERM)
            try:
                proc.wait(2)
            except subprocess.TimeoutExpired:
                proc.kill()  # stuck in native code
                proc.wait(2)
        if proc is not None and proc.returncode != 0:
            # A worker that died or was stopped in the middle of a job may leave the compilers
            # it started running: they are still its group.
            _signal_group(proc, signal.SIGKILL)
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
