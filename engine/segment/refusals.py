"""What failed attempts to compile a fusion teach the next segmentation.

A scheduler's compile-time checks can accept a group whose kernel then fails to lower
(compile_fusion catches SegmentLoweringError). The fusion is segmented again with that
knowledge: first the scheduler is refused for exactly that group, so the segmenter may
find another scheduler or another grouping for the same ops; when that does not help,
the group's ops become segments of their own. A persistent scheduler that no block shape
lets keep its arrays in registers is refused for every group holding the same reductions
(any such group keeps at least those arrays). When the failure names one tensor, the op that
made it is isolated first (`op_at_fault`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from engine.ir.shape_exprs import LoadStoreOp
from engine.ir.tensorview import TensorView


@dataclass
class Refusals:
    # expr name -> why it must be a segment of its own
    isolated: dict[int, str] = field(default_factory=dict)
    # the expr names of a group -> scheduler name -> why its kernel failed to lower
    schedulers: dict[frozenset[int], dict[str, str]] = field(default_factory=dict)
    # expr names -> scheduler name -> why it fails for any group holding all of them
    containing: dict[frozenset[int], dict[str, str]] = field(default_factory=dict)

    def refuse(self, exprs: frozenset[int], scheduler: str, why: str, limit: int,
               containing: frozenset[int] = frozenset()) -> bool:
        """Refuse `scheduler` for the group of `exprs`, or with `containing` for every group
        holding those; False when it already was, or when `limit` refusals were made (each
        costs a segmentation)."""
        table, key = (self.containing, containing) if containing else (self.schedulers, exprs)
        known = table.setdefault(key, {})
        made = sum(map(len, self.schedulers.values())) + sum(map(len, self.containing.values()))
        if scheduler in known or made >= limit:
            return False
        known[scheduler] = why
        return True

    def isolate(self, exprs: frozenset[int], why: str) -> bool:
        """Make each of `exprs` a segment of its own; False when all already are."""
        if exprs <= self.isolated.keys():
            return False
        self.isolated.update(dict.fromkeys(exprs, why))
        return True

    def why_refused(self, exprs: frozenset[int], scheduler: str) -> str | None:
        got = self.schedulers.get(exprs, {}).get(scheduler)
        if got is None:
            got = next((why[scheduler] for held, why in self.containing.items()
                        if scheduler in why and held <= exprs), None)
        return got


def op_at_fault(seg: Any, core: list, cause: BaseException | None) -> int | None:
    """The name of the op of `core` whose output the lowering failure names: the tensor
    itself, or the one a scheduler's cache or output copy of it (a set) was made from."""
    at = getattr(cause, "tensor", None)
    made = {o.short_name: x.name for x in core for o in x.outputs if isinstance(o, TensorView)}
    tv = next((t for t in seg.fusion.tensors() if t.short_name == at), None) if at else None
    while tv is not None and tv.short_name not in made:
        d = tv.definition
        tv = d.inputs[0] if isinstance(d, LoadStoreOp) and isinstance(d.inputs[0], TensorView) else None
    return made[tv.short_name] if tv is not None else None


def core_exprs(segmented: Any, gid: int) -> list:
    """The ops of group `gid` that are its own (not forwarded into it)."""
    if segmented is None:
        return []
    g = next((g for g in segmented.groups if g.id == gid), None)
    return [] if g is None else [e for e in g.exprs if e not in set(g.forwarded_exprs)]


def engine_chose(seg: Any, options: Any) -> bool:
    """Whether the segment's kernel is the engine's own choice: a user's schedule, forced
    scheduler, heuristic values or kernel source fail as they are."""
    return (seg.scheduler not in ("user", "expr_eval") and not options.force_scheduler
            and not options.heuristic_overrides and not options.kernel_sources)


def may_resegment(seg: Any, core: list, options: Any) -> bool:
    """Only the engine's own choices are undone, and only a group of several ops of its own
    can be split."""
    return len(core) > 1 and engine_chose(seg, options)


def holds_forwarded(segmented: Any, gid: int) -> bool:
    """Whether group `gid` recomputes ops forwarded into it (an input's casts or views)."""
    g = None if segmented is None else next((g for g in segmented.groups if g.id == gid), None)
    return g is not None and bool(g.forwarded_exprs)
