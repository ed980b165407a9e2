"""Where the fuzz generators get their decisions from.

A generator asks a Chooser for every decision (`int`, `choice`, `flip`). RandomChooser draws
from a seeded random.Random and records each draw, so a case is reproducible from its seed
and its draws can be replayed (ReplayChooser) or shrunk (see shrink.py). HypothesisChooser
draws through hypothesis, so a strategy wraps the same generator.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any, Protocol, TypeVar

T = TypeVar("T")


class Chooser(Protocol):
    def int(self, lo: int, hi: int) -> int:
        """An int in [lo, hi]; smaller values are the simpler ones."""


def choice(ch: Chooser, xs: Sequence[T]) -> T:
    """One of `xs`: the first ones are the simpler ones (what a shrink moves towards)."""
    return xs[ch.int(0, len(xs) - 1)]


def flip(ch: Chooser, p: float) -> bool:
    """True with probability about `p`; False is the simpler answer."""
    return ch.int(0, 999) < int(p * 1000)


def weighted(ch: Chooser, table: Sequence[tuple[T, int]]) -> T:
    """A key of `table` [(key, weight)], drawn by weight; the first key is the simplest."""
    total = sum(w for _, w in table)
    x = ch.int(0, total - 1)
    for key, w in table:
        if x < w:
            return key
        x -= w
    return table[-1][0]


class RandomChooser:
    """Draws from random.Random(seed) and records them (`draws`) for replay and shrinking."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.draws: list[int] = []

    def int(self, lo: int, hi: int) -> int:
        x = self.rng.randint(lo, hi)
        self.draws.append(x - lo)
        return x


class ReplayChooser:
    """Replays recorded draws (offsets above each call's `lo`), clamped into the range asked;
    past the end of the record every draw is the simplest (lo)."""

    def __init__(self, draws: Sequence[int]) -> None:
        self.source = list(draws)
        self.pos = 0
        self.draws: list[int] = []

    def int(self, lo: int, hi: int) -> int:
        off = self.source[self.pos] if self.pos < len(self.source) else 0
        self.pos += 1
        x = min(lo + max(off, 0), hi)
        self.draws.append(x - lo)
        return x


class HypothesisChooser:
    """Draws through hypothesis's `data` object, so hypothesis can shrink the case."""

    def __init__(self, data: Any) -> None:
        from hypothesis import strategies as st

        self._data = data
        self._st = st

    def int(self, lo: int, hi: int) -> int:
        return self._data.draw(self._st.integers(lo, hi))
