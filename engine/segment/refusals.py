"""What failed attempts to compile a fusion teach the next segmentation.

A scheduler's compile-time checks can accept a group whose kernel then fails to lower
(compile_fusion catches SegmentLoweringError). The fusion is segmented again with that
knowledge: first the scheduler is refused for exactly that group, so the segmenter may
find another scheduler or another grouping for the same ops; when that does not help,
the group's ops become segments of their own.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Refusals:
    # expr name -> why it must be a segment of its own
    isolated: dict[int, str] = field(default_factory=dict)
    # the expr names of a group -> scheduler name -> why its kernel failed to lower
    schedulers: dict[frozenset[int], dict[str, str]] = field(default_factory=dict)

    def refuse(self, exprs: frozenset[int], scheduler: str, why: str, limit: int) -> bool:
        """Refuse `scheduler` for the group of `exprs`; False when it already was, or when
        `limit` refusals were made (each costs a segmentation)."""
        known = self.schedulers.setdefault(exprs, {})
        if scheduler in known or sum(map(len, self.schedulers.values())) >= limit:
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
        return self.schedulers.get(exprs, {}).get(scheduler)
