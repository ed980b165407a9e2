"""TensorView's inlining: the compute-at position (inline_at, inline_most) and compute_at,
which first replays a consumer's loop transforms onto the producer."""

from __future__ import annotations

from typing import TYPE_CHECKING

from engine.errors import ScheduleError
from engine.ir.logical_map import consumers_of, producers_of
from engine.ir.transactions import transaction
from engine.ir.transform_replay import replay_edge
from engine.ir.verify import max_inline_position, reduction_read_in_its_loop

if TYPE_CHECKING:
    from engine.ir.tensorview import TensorView


class InliningMixin:
    """The inlining primitives of TensorView (which inherits them)."""

    def inline_at(self, pos: int = -1, best_effort: bool = False) -> TensorView:
        """Compute this tensor inside its consumers' first `pos` loops (ca_pos).

        Legal positions: this tensor's first `pos` loop ids contain no reduction or
        vectorized id and each maps (logical map plus matching transforms) to the
        consumer's loop id at the same position, for every consumer, and no loop they
        join holds both a reduction over it and a reader of its result. A fusion input
        is never inlined. With best_effort the position is lowered to the largest
        legal one; otherwise an illegal position raises ScheduleError.
        """
        n = self.nloop
        p = pos + n + 1 if pos < 0 else pos
        if not 0 <= p <= n:
            raise ScheduleError(f"{self.short_name}: inline position {pos} is outside 0..{n}")
        legal = max_inline_position(self)
        if p > legal:
            if not best_effort:
                why = reduction_read_in_its_loop(self, legal)
                raise ScheduleError(
                    f"{self.short_name}: cannot inline at position {p}; the largest legal "
                    f"position is {legal}" + (f" ({why})" if why else "")
                )
            p = legal
        self._set_ca(p)
        return self

    def inline_most(self) -> TensorView:
        return self.inline_at(-1, best_effort=True)

    def compute_at(self, consumer: TensorView, pos: int = -1, best_effort: bool = False) -> TensorView:
        """Replay `consumer`'s loop transforms onto this producer, then inline at `pos`."""
        if consumer not in consumers_of(self):
            raise ScheduleError(f"{self.short_name}: {consumer.short_name} is not a direct consumer")
        # The replay rewrites this tensor's whole loop domain.
        self._require_not_inlined("compute_at")
        # Setting ca_pos raises the consumers' produce_pos: they are part of the change.
        with transaction([self, *consumers_of(self)]):
            replay_edge(consumer, self)
            self.inline_at(pos if pos >= 0 else consumer.nloop + 1 + pos, best_effort)
        return self

    def _set_ca(self, pos: int) -> None:
        self.compute_at_pos = pos
        for c in consumers_of(self):
            c.max_producer_pos = max((p.compute_at_pos for p in producers_of(c)), default=0)
