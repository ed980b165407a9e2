"""Tools every scheduler uses: caching inputs and outputs, propagation, parallelization,
inlining. Thin, named steps over the TensorView primitives so that what a scheduler does
reads as a list, and a user can do the same by hand with `fd.sched`."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from engine.errors import ScheduleError
from engine.ir.fusion import Fusion
from engine.ir.iterdomain import ParallelType
from engine.ir.propagate import inline_all_at as _inline_all_at
from engine.ir.propagate import inline_most as _inline_most
from engine.ir.propagate import parallelize_like as _parallelize_like
from engine.ir.propagate import propagate_max_info as _propagate_max_info
from engine.ir.propagate import transform_like as _transform_like
from engine.ir.tensorview import TensorView
from engine.trace import Trace

# A predicate that says a tensor must not be cached or forked (seed 000's layout op
# and its offsets, seed 004's block scales); schedulers pass theirs in.
Keep = Callable[[TensorView], bool]


def _never(_: TensorView) -> bool:
    return False


def cache_inputs(fusion: Fusion, keep: Keep = _never, trace: Trace | None = None) -> list[TensorView]:
    """`cache_after` every tensor input that has uses; returns the caches.

    An input that cannot be cached (kept by `keep`, or refused by the primitive, e.g.
    read by a cat's pad) is read from global memory directly; the trace says why.
    """
    caches = []
    for tv in [v for v in fusion.inputs if isinstance(v, TensorView)]:
        if not fusion.uses_of(tv):
            continue
        if keep(tv):
            _note(trace, tv, "input not cached: it must stay in global memory")
            continue
        try:
            caches.append(tv.cache_after())
        except ScheduleError as e:
            _note(trace, tv, f"input not cached: {e}")
    return caches


def cache_and_fork_outputs(fusion: Fusion, keep: Keep = _never, trace: Trace | None = None) -> list[TensorView]:
    """Give each computed output a local producer: cache_before, or cache_fork when the
    output is also read inside the fusion. Returns the local tensors."""
    caches = []
    for tv in [v for v in fusion.outputs if isinstance(v, TensorView)]:
        if tv.definition is None or tv in fusion.inputs:
            continue
        if keep(tv):
            _note(trace, tv, "output not cached: written directly")
            continue
        try:
            if fusion.uses_of(tv):
                tv.cache_fork()
                caches.append(tv)  # tv itself is now the local value its uses read
            else:
                caches.append(tv.cache_before())
        except ScheduleError as e:
            _note(trace, tv, f"output not cached: {e}")
    return caches


def propagate(reference: TensorView, selected: Sequence[TensorView] | None = None) -> None:
    """Replay the reference's loop transforms onto every (selected) tensor."""
    _transform_like(reference, selected)


def propagate_max_info(reference: TensorView, selected: Sequence[TensorView] | None = None,
                       parallel: bool = True) -> None:
    """Replay the reference's transforms along the tree that carries the most of its axes
    (nvFuser's MaxLogicalDomainInfoSpanningTree); parallel types follow the same tree."""
    _propagate_max_info(reference, list(selected) if selected is not None else None, parallel)


def parallelize_all_like(
    reference: TensorView,
    pos: int = -1,
    selected: Sequence[TensorView] | None = None,
    parallel_types: Iterable[ParallelType] | None = None,
) -> None:
    _parallelize_like(reference, pos, selected, parallel_types)


def inline_most(fusion: Fusion, selected: Sequence[TensorView] | None = None) -> None:
    _inline_most(fusion, selected)


def inline_at(reference: TensorView, pos: int = -1, best_effort: bool = True,
              selected: Sequence[TensorView] | None = None) -> None:
    _inline_all_at(reference, pos, best_effort, selected)


def _note(trace: Trace | None, tv: TensorView, message: str) -> None:
    if trace is not None:
        trace.event("transform", tv.short_name, message)
