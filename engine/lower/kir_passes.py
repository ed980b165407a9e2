"""The kernel-IR passes: the assembled kernel's statements rewritten, pass by pass.

Every pass has one signature, `(body, ctx) -> (body, notes)`: it takes the kernel's
statements and the facts of the lowering it needs (`PassContext`), and returns the new
statements and its notes, one line each. `run_passes` runs `PASSES` in order and records each
pass's notes under its stage name in `Lowered.stages` (a stage already recorded by an earlier
step, as "sync", gets them appended). In order:
  circular_buffer   shared caches of global tensors pipelined by cp.async (circular_buffer.py)
  grid_epilogue     cooperative grid reductions' epilogues run per share (grid_epilogue.py)
  shared_loads      repeated loads of an input read from the first array (shared_loads.py)
  sync              barriers back to back merged, shared-memory fills sharing one pair
                    (barriers.py)
  unroll            serial loops indexing local arrays unrolled whole (unroll.py)
  hoist             loop-invariant element computations moved out of their loops (hoist.py)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from engine.lower import kir
from engine.lower.barriers import drop_fill_barriers, merge_adjacent_barriers
from engine.lower.circular_buffer import circular_buffer, circular_buffers_of
from engine.lower.grid_epilogue import GridSync, share_epilogue
from engine.lower.hoist import hoist_invariants
from engine.lower.shared_loads import share_loads
from engine.lower.unroll import unroll_local_indexing

if TYPE_CHECKING:
    from engine.ir.fusion import Fusion
    from engine.lower.buffers import Buffer
    from engine.lower.index import Extents


@dataclass(frozen=True)
class PassContext:
    """What the kernel-IR passes need of the lowering."""

    fusion: Fusion
    ext: Extents
    buffers: tuple[Buffer, ...]  # every buffer, in the order the lowering made them
    grid_syncs: dict[str, GridSync]  # flag -> its cooperative grouped grid reduction's call
    kernel_names: set[str]  # the kernel's parameter and workspace names
    input_names: set[str]  # the kernel names of the fusion's input tensors (read-only)
    # What the passes report back: the shared buffers pipelined by cp.async, name -> depth.
    pipelined: dict[str, int] = field(default_factory=dict)


Pass = Callable[[list[kir.Stmt], PassContext], tuple[list[kir.Stmt], list[str]]]


def circular_buffer_pass(body: list[kir.Stmt], ctx: PassContext) -> tuple[list[kir.Stmt], list[str]]:
    """Shared caches marked for circular buffering pipelined where their loops allow; a note
    for each: how, or why not."""
    bufs, notes = circular_buffers_of(ctx.buffers, ctx.ext, ctx.fusion)
    if not bufs:
        return body, notes
    pipelined: set[str] = set()
    body = circular_buffer(body, bufs, notes, pipelined)
    notes += [f"{n}: not circular-buffered: it is not allocated at the top of a loop or of the kernel" for n in bufs
              if not any(line.startswith(f"{n}:") for line in notes)]
    ctx.pipelined.update({n: bufs[n].depth for n in pipelined})
    return body, notes


def grid_epilogue_pass(body: list[kir.Stmt], ctx: PassContext) -> tuple[list[kir.Stmt], list[str]]:
    """Cooperative grid reductions' epilogues run by every block for its share."""
    return share_epilogue(body, ctx.grid_syncs, ctx.kernel_names)


def shared_loads_pass(body: list[kir.Stmt], ctx: PassContext) -> tuple[list[kir.Stmt], list[str]]:
    """Repeated loads of the fusion's inputs read from the array loaded first."""
    return share_loads(body, ctx.input_names)


def barriers_pass(body: list[kir.Stmt], ctx: PassContext) -> tuple[list[kir.Stmt], list[str]]:
    """Barriers back to back merged into one; shared-memory fills sharing one barrier pair."""
    body, merged = merge_adjacent_barriers(body)
    body, fills = drop_fill_barriers(body)
    merged += fills
    return body, [f"{merged} barrier(s) merged into a neighbouring one"] if merged else []


def unroll_pass(body: list[kir.Stmt], ctx: PassContext) -> tuple[list[kir.Stmt], list[str]]:
    """Serial loops indexing local arrays marked `unroll`, so the arrays stay in registers."""
    unrolled = unroll_local_indexing(body)
    return body, ["serial loops indexing local arrays, unrolled: " + ", ".join(unrolled)] if unrolled else []


def hoist_pass(body: list[kir.Stmt], ctx: PassContext) -> tuple[list[kir.Stmt], list[str]]:
    """Statements computing the same value in every iteration of a loop moved before it."""
    memory = ctx.kernel_names | {b.name for b in ctx.buffers if b.memory != "local"}
    body, moved = hoist_invariants(body, memory)
    return body, [f"{moved} loop-invariant statement(s) moved out of their loops"] if moved else []


# (stage name, pass), in the order they run: the names are the stages the trace and fusescope show.
PASSES: tuple[tuple[str, Pass], ...] = (
    ("circular_buffer", circular_buffer_pass),
    ("grid_epilogue", grid_epilogue_pass),
    ("shared_loads", shared_loads_pass),
    ("sync", barriers_pass),
    ("unroll", unroll_pass),
    ("hoist", hoist_pass),
)


def run_passes(body: list[kir.Stmt], ctx: PassContext, stages: dict[str, str]) -> list[kir.Stmt]:
    """`body` after every pass of PASSES; each pass's notes, if any, go to `stages` under its
    name, after the text already there."""
    for name, run in PASSES:
        body, notes = run(body, ctx)
        if notes:
            stages[name] = stages.get(name, "") + "".join(f"{line}\n" for line in notes)
    return body
