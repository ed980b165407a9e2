"""The cyclic garbage collector held back while the engine builds IR.

Defining and compiling a fusion makes a few hundred thousand short-lived objects (the
segmenter's trial copies among them), and their allocations start the collector's full passes
over the whole process heap (torch's and inductor's objects included) in the middle of a
definition or compile, pauses that can outlast the compile itself. The IR's cycles
(definition <-> uses) are freed by the first collection after the outermost definition or
compile, so memory stays bounded by one compile's garbage.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

_depth = 0
_resume = False


def hold() -> None:
    """Hold the collector back (nestable); `release` undoes one hold."""
    global _depth, _resume
    if _depth == 0:
        _resume = gc.isenabled()
        gc.disable()
    _depth += 1


def release() -> None:
    global _depth
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
