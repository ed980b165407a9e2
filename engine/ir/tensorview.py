"""TensorView: a tensor of the fusion, with the scheduling primitives.

Every primitive leaves a valid tensor or refuses with ScheduleError and changes
nothing: cheap checks come first, and the mutation itself runs in a transaction
that verifies the tensors it touched (engine.ir.verify) and restores them when
the verifier refuses.

TensorView inherits the tensor's state (its shape, memory type, positions, devices and
printing) from TensorViewBase (tensorview_base), which the IR's analyses read, and the
primitives, which call those analyses, from one mixin per job:

- tensorview_loop: split, merge, swizzle, reorder, loop-only broadcasts, parallelize;
- tensorview_memory: setting the memory type, circular buffering, the allocation domain;
- tensorview_inline: inline_at, inline_most, compute_at;
- tensorview_insert: cache_after, cache_before, cache_fork, rfactor.

The axes are a TensorDomain (tensordomain); the transactions are in transactions.
"""

from __future__ import annotations

from engine.ir.tensordomain import TensorDomain
from engine.ir.tensorview_base import MemoryType, TensorViewBase
from engine.ir.tensorview_inline import InliningMixin
from engine.ir.tensorview_insert import TensorInsertMixin
from engine.ir.tensorview_loop import LoopTransformsMixin
from engine.ir.tensorview_memory import MemoryMixin
from engine.ir.transactions import (
    loop_edits_trusted,
    transaction,
    transactions_roll_back,
    verification_deferred,
    verify_around,
)

__all__ = [
    "MemoryType", "TensorDomain", "TensorView", "loop_edits_trusted", "transaction",
    "transactions_roll_back", "verification_deferred", "verify_around",
]


class TensorView(LoopTransformsMixin, MemoryMixin, InliningMixin, TensorInsertMixin, TensorViewBase):
    """A tensor in the fusion: T0, T1, ... in creation order, with the scheduling primitives."""
