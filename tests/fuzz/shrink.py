"""Shrink a failing case by simplifying its recorded draws (hypothesis's idea, in small).

A case is its list of draws (see choices.RandomChooser); replaying a shorter list, or one
with smaller values, gives a simpler case (fewer ops, smaller extents, the first option of
each choice). A candidate is kept when it still fails the same way (same outcome kind and
category) and the draws its replay consumed are smaller in shortlex order (fewer, then
smaller), until no pass simplifies anything or the attempt budget is spent.
"""

from __future__ import annotations

from collections.abc import Callable

# The draws a replay of the candidate consumed when it still fails the same way, else None.
Check = Callable[[list[int]], list[int] | None]


def _smaller(a: list[int], b: list[int]) -> bool:
    return (len(a), a) < (len(b), b)


def shrink(draws: list[int], still_fails: Check, budget: int = 80) -> list[int]:
    best = list(draws)
    tries = 0

    def attempt(candidate: list[int]) -> bool:
        nonlocal best, tries
        if tries >= budget or candidate == best:
            return False
        tries += 1
        used = still_fails(candidate)
        if used is not None and _smaller(used, best):
            best = used
            return True
        return False

    changed = True
    while changed and tries < budget:
        changed = False
        # Cut the tail: later draws become the simplest ones (fewer ops, smaller choices).
        for keep in _cut_points(len(best)):
            if attempt(best[:keep]):
                changed = True
                break
        # Zero or halve single draws, from the last (ops) to the first (shapes).
        for k in reversed(range(len(best))):
            for value in (0, best[k] // 2):
                if k < len(best) and best[k] > value and attempt(best[:k] + [value] + best[k + 1:]):
                    changed = True
                    break
    return best


def _cut_points(n: int) -> list[int]:
    """Prefix lengths to try, shortest first."""
    points, size = [], n // 2
    while size >= 1:
        points.append(n - size)
        size //= 2
    return sorted(set(p for p in points if 0 <= p < n))
