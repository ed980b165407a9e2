"""Jobs for the worker tests, in a module of their own so that the worker's child process,
which imports them by name, need not import torch or the engine (a start in a fraction of a
second instead of seconds)."""

from __future__ import annotations

import os
import subprocess
import time

from fusescope.worker import report


def dispatch(job: str) -> object:
    if job == "crash":
        os.abort()  # what a segfaulting emulated kernel looks like from outside: a signal
    if job == "hang":
        time.sleep(600)
    if job == "fail":
        raise ValueError("bad job\nsecond line")
    if job == "progress":  # three reports, then the answer
        for k in range(3):
            report(("step", k, os.getpid()))
        return ("done", os.getpid())
    if job.startswith("child "):  # a compiler that runs long: a child process of the worker
        report(("child", os.getpid()))
        child = subprocess.Popen(["sleep", "600"])
        with open(job.split(" ", 1)[1], "w") as f:
            f.write(str(child.pid))
        report(("started", child.pid))
        child.wait()
    return ("echo", job, os.getpid())
