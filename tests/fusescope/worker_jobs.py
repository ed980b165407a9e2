"""Jobs for the worker tests, in a module of their own so that the worker's child process,
which imports them by name, need not import torch or the engine (a start in a fraction of a
second instead of seconds)."""

from __future__ import annotations

import os
import time


def dispatch(job: str) -> object:
    if job == "crash":
        os.abort()  # what a segfaulting emulated kernel looks like from outside: a signal
    if job == "hang":
        time.sleep(600)
    if job == "fail":
        raise ValueError("bad job\nsecond line")
    return ("echo", job, os.getpid())
