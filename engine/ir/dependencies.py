"""The tensors a tensor depends on, and those that depend on it, across the fusion's ops."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from engine.ir.logical_map import consumers_of, producers_of

if TYPE_CHECKING:
    from engine.ir.tensorview import TensorView


def _closure(tv: TensorView, step: Callable[[TensorView], list[TensorView]]) -> set[TensorView]:
    """Every tensor reached from `tv` by repeating `step` (producers_of or consumers_of)."""
    seen: set[TensorView] = set()
    stack = list(step(tv))
    while stack:
        t = stack.pop()
        if t not in seen:
            seen.add(t)
            stack.extend(step(t))
    return seen


def upstream_tvs(tv: TensorView) -> set[TensorView]:
    """Every tensor `tv` depends on."""
    return _closure(tv, producers_of)


def downstream_tvs(tv: TensorView) -> set[TensorView]:
    """Every tensor that depends on `tv` (all of a consuming Welford's outputs among them)."""
    return _closure(tv, consumers_of)
