"""Random manual schedules: sequences of `fd.sched` calls on small generated fusions.

Each call either changes the schedule or is refused with a ScheduleError that must name
the tensor or axis at fault; any other exception type is a bug. Refused calls change
nothing (sched.py's contract), so the sequence goes on after them. Axes are drawn from
slightly outside the valid range too, so the refusals are exercised as well.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from engine import FusionDefinition, MemoryType, ParallelType
from engine.errors import ScheduleError
from engine.ir.iterdomain import SwizzleType
from engine.ir.tensorview import TensorView
from tests.fuzz.choices import Chooser, choice, flip, weighted
from tests.fuzz.gen import FusionCase, generate_fusion

# Ops of the fusions that get manual schedules: one kernel's worth (no segment_set) of
# pointwise, broadcast, reduction and layout ops.
SCHED_FUSION_OPS = ("unary", "binary", "where", "cast", "reduce", "broadcast", "permute", "clamp",
                    "set", "factory", "iota", "slice", "pad", "rng")
PARALLEL_TYPES = [ParallelType.serial, ParallelType.block_x, ParallelType.grid_x, ParallelType.block_y,
                  ParallelType.grid_y, ParallelType.unroll, ParallelType.vectorize, ParallelType.block_z,
                  ParallelType.unswitch, ParallelType.grid_z]
FACTORS = [2, 4, 3, 8, 32, 1, 5, 128]
# A refusal is clear when it names a tensor (T3), an axis or position, or the call at fault.
CLEAR = re.compile(r"\bT\d+\b|axis|axes|dim|position|pos\b|sched\.")


@dataclass
class ScheduleCase:
    case: FusionCase
    calls: list[str] = field(default_factory=list)  # each call and its result, for reports
    refused_calls: int = 0
    vague: list[str] = field(default_factory=list)  # refusals that name nothing at fault


def _tensors(fd: FusionDefinition) -> list[TensorView]:
    return [t for t in fd.sched.tensors() if t not in fd.fusion.inputs]


def _axis(ch: Chooser, tv: TensorView) -> int:
    n = tv.nloop
    if flip(ch, 0.05):
        return choice(ch, [n, -n - 1, n + 2])  # out of range on purpose
    return ch.int(0, max(n - 1, 0))


def _call(ch: Chooser, fd: FusionDefinition, tvs: list[TensorView]) -> tuple[str, tuple]:
    """One random sched call: (name, args)."""
    tv = tvs[len(tvs) - 1 - ch.int(0, len(tvs) - 1)]
    name = weighted(ch, [("split", 5), ("parallelize", 6), ("merge", 3), ("reorder", 2),
                         ("transform_like", 2), ("parallelize_like", 2), ("inline_most", 2),
                         ("inline_at", 1), ("cache_after", 1), ("cache_before", 1),
                         ("set_memory_type", 1), ("rfactor", 1), ("swizzle", 1)])
    if name == "split":
        return name, (tv, _axis(ch, tv), choice(ch, FACTORS), not flip(ch, 0.2))
    if name == "merge":
        return name, (tv, _axis(ch, tv))
    if name == "reorder":
        return name, (tv, {_axis(ch, tv): _axis(ch, tv)})
    if name == "parallelize":
        return name, (tv, _axis(ch, tv), choice(ch, PARALLEL_TYPES))
    if name in ("transform_like", "parallelize_like"):
        return name, (tv,)
    if name == "inline_most":
        return name, ()
    if name == "inline_at":
        return name, (tv, ch.int(-1, tv.nloop), flip(ch, 0.5))
    if name == "cache_after":
        ins = [t for t in fd.fusion.inputs if isinstance(t, TensorView)]
        return name, (choice(ch, ins) if ins and flip(ch, 0.7) else tv,)
    if name == "cache_before":
        outs = [t for t in fd.fusion.outputs if isinstance(t, TensorView)]
        return name, (choice(ch, outs) if outs and flip(ch, 0.7) else tv,)
    if name == "swizzle":
        return name, (tv, choice(ch, list(SwizzleType)), *_swizzle_axes(ch, tv))
    if name == "set_memory_type":
        return name, (tv, choice(ch, [MemoryType.shared, MemoryType.local]))
    reds = [t for t in tvs if any(i.is_reduction for i in t.domain.loop)]
    target = choice(ch, reds) if reds else tv
    return "rfactor", (target, [_axis(ch, target)])


def _swizzle_axes(ch: Chooser, tv: TensorView) -> tuple[int, int]:
    """Mostly two axes of one constant extent (a swizzle's precondition), else any two."""
    ext = [i.extent.value if i.extent.is_const else None for i in tv.domain.loop]
    pairs = [(a, b) for a in range(len(ext)) for b in range(len(ext))
             if a != b and ext[a] is not None and ext[a] == ext[b]]
    if pairs and flip(ch, 0.8):
        return choice(ch, pairs)
    return _axis(ch, tv), _axis(ch, tv)


def _show(name: str, args: tuple) -> str:
    def one(a: object) -> str:
        return a.short_name if isinstance(a, TensorView) else repr(a)

    return f"{name}({', '.join(one(a) for a in args)})"


def random_schedule(ch: Chooser) -> ScheduleCase:
    """A small fusion with a random manual schedule applied; raises what a sched call raises
    other than ScheduleError (a bug)."""
    case = generate_fusion(ch, max_ops=4, ops=SCHED_FUSION_OPS, max_numel=1024)
    fd = case.fd
    out = ScheduleCase(case)
    for _ in range(ch.int(1, 10)):
        name, args = _call(ch, fd, _tensors(fd))
        try:
            getattr(fd.sched, name)(*args)
            out.calls.append(_show(name, args))
        except ScheduleError as e:
            out.refused_calls += 1
            out.calls.append(f"{_show(name, args)}  # refused: {e}")
            if not CLEAR.search(str(e)):
                out.vague.append(f"{_show(name, args)}: {e}")
    return out
