"""The cyclic garbage collector held back while the engine builds IR.

Defining and compiling a fusion makes a few hundred thousand short-lived objects (the
segmenter's trial copies among them), and their allocations start the collector's full passes
over the whole process heap (torch's and inductor's objects included) in the middle of a
definition or compile, pauses that can outlast the compile itself. The IR's cycles
(definition <-> uses) are freed by the first collection after the outermost definition or
compile, so memory stays bounded by one compile's garbage.

The collector is the process's, so holds are counted for the process, not per thread: a
hold in any thread keeps it off, and it is turned back on when the last hold in any thread
is released, and only if it was on when the first of them began. A lock makes each hold
and release (the count and the collector's switch together) one step: two threads that
begin a compile at once cannot both find no hold and the second take the collector, which
the first has just turned off, for one the caller had turned off (that would leave it off
for good).
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_lock = threading.Lock()
# Holds not yet released, in all threads; whether the collector was on at the first of them.
_depth = 0
_resume = False


def hold() -> None:
    """Hold the collector back (nestable, from any thread); `release` undoes one hold."""
    global _depth, _resume
    with _lock:
        if _depth == 0:
            _resume = gc.isenabled()
            gc.disable()
        _depth += 1


def release() -> None:
    global _depth
    with _lock:
        if _depth == 0:
            return
        _depth -= 1
        if _depth == 0 and _resume:
            gc.enable()


@contextmanager
def held() -> Iterator[None]:
    hold()
    try:
        yield
    finally:
        release()
