"""Allocation: where each tensor lives, at which loop level, and how it is addressed.

A local or shared tensor is allocated in the scope of its compute-at position and
holds the loop ids right of it, without broadcast and reduction ids, and without
the parallel ids whose threads (local) or blocks (local and shared) each keep their
own copy. A shared tensor also holds the ids left of its compute-at position whose
loop is bound to a thread dimension (as nvFuser's allocation does): the block's
threads share the buffer, so each writes its own element there. Global tensors are
kernel arguments addressed by their allocation domain and the runtime strides of the
Tensor struct.
"""

from __future__ import annotations

from dataclasses import dataclass

from engine.errors import CompileError
from engine.ir.iterdomain import IterDomain, ParallelType
from engine.ir.tensorview import MemoryType, TensorView
from engine.lower.index import Extents


@dataclass
class Buffer:
    tv: TensorView
    memory: str  # "global", "local", "shared"
    name: str
    ctype: str
    level: int  # loop depth of the scope that allocates it (local/shared)
    layout: list[IterDomain]  # ids forming the address, outermost first
    strides: list[int]  # element strides of `layout` (local/shared)
    size: int  # elements (local/shared)
    offset: int = 0  # bytes into dynamic shared memory (shared)

    @property
    def alloc_ids(self) -> list[IterDomain]:
        """Global tensors: allocation ids with a stride in the Tensor struct."""
        return [i for i in self.tv.domain.maybe_allocation if not i.is_reduction]


def element_ctype(tv: TensorView) -> str:
    return tv.dtype.cuda_name


def _excluded(i: IterDomain, memory: str) -> bool:
    if i.is_broadcast or i.is_reduction:
        return True
    pt = i.parallel_type
    if pt.is_block_dim:
        return True
    return memory == "local" and pt.is_thread_dim


def local_layout(tv: TensorView, level: int, memory: str, ext: Extents,
                 outer: list[IterDomain] | None = None) -> tuple[list[IterDomain], list[int], int]:
    """The buffer's ids (`outer`, then the loop ids right of `level` it keeps), their strides
    and its size in elements."""
    ids = list(outer or []) + [i for i in tv.domain.loop[level:] if not _excluded(i, memory)]
    sizes = [ext.of(i) for i in ids]
    strides = [1] * len(ids)
    for k in range(len(ids) - 2, -1, -1):
        strides[k] = strides[k + 1] * sizes[k + 1]
    size = 1
    for s in sizes:
        size *= s
    return ids, strides, size


def shared_outer_ids(tv: TensorView, level: int, loop_types: list[ParallelType]) -> list[IterDomain]:
    """Ids of a shared tensor left of `level` whose loop (`loop_types`: the parallel type of
    each loop the tensor is computed in, the loop's own, which a consumer inlined into may
    have bound) is a thread dimension: every thread of the block computes its own element
    of them, so the buffer keeps one per thread."""
    out = []
    for k in range(min(level, len(loop_types), tv.nloop)):
        i = tv.axis(k)
        if not (i.is_broadcast or i.is_reduction) and loop_types[k].is_thread_dim:
            out.append(i)
    return out


def make_buffer(tv: TensorView, ext: Extents, level: int | None = None,
                loop_types: list[ParallelType] | None = None) -> Buffer:
    mem = {MemoryType.Global: "global", MemoryType.Local: "local", MemoryType.Shared: "shared"}[tv.memory_type]
    name = tv.short_name
    if mem == "global":
        return Buffer(tv, mem, name, element_ctype(tv), 0, [], [], 0)
    lvl = tv.compute_at_pos if level is None else level
    outer = shared_outer_ids(tv, lvl, loop_types or []) if mem == "shared" else []
    layout, strides, size = local_layout(tv, lvl, mem, ext, outer)
    if mem == "local" and size > 4096:
        raise CompileError(
            f"{tv.short_name}: a local buffer of {size} elements per thread (loop ids right of "
            f"ca_pos {lvl}) is too large; inline it further or parallelize its axes"
        )
    return Buffer(tv, mem, name, element_ctype(tv), lvl, layout, strides, size)
