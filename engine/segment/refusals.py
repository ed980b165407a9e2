"""What failed attempts to compile a fusion teach the next segmentation.

A scheduler's compile-time checks can accept a group whose kernel then fails to lower
(compile_fusion catches SegmentLoweringError). The fusion is segmented again with that
knowledge: first the scheduler is refused for exactly that group, so the segmenter may
find another scheduler or another grouping for the same ops; when that does not help,
the group's ops become segments of their own. A persistent scheduler that no block shape
lets keep its arrays in registers is refused for every group holding the same reductions
(any such group keeps at least those arrays).
"""

from __future__ import annotations

from dataclasses import dataclass, field


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
