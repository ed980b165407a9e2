"""What a kernel's dynamic shared memory holds, as the lowering laid it out.

The launch asks for one figure (LaunchConfig.shared_mem_bytes); this is its breakdown: each
shared buffer at its offset (a cache of a global tensor that the circular-buffer pass
pipelined is loaded by cp.async in `stages` stages), the alignment gaps between them, and
the block reductions' workspace (`red_smem`) after the buffers.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SharedBuffer:
    name: str  # the kernel's name for it, e.g. "T7"
    offset: int  # bytes into dynamic shared memory
    bytes: int
    source: str | None  # the global tensor it caches, when it is a plain copy of one
    stages: int  # circular-buffer stages loaded ahead by cp.async; 0: written by plain stores

    def describe(self) -> str:
        what = f"{self.name}: a cache of {self.source}" if self.source else f"{self.name}: a buffer"
        if self.stages:
            return f"{what}, {self.stages} circular-buffer stages loaded ahead by cp.async"
        return what + (", loaded by plain copies" if self.source else "")


@dataclass(frozen=True)
class SharedMemoryUse:
    buffers: tuple[SharedBuffer, ...]
    # Where the block reductions' workspace starts: the end of the buffers, rounded up to 16
    # bytes (the launch asks for this much even without a reduction).
    reduction_offset: int
    reduction_bytes: int  # one value (or Welford triple) per thread, for the largest reduction

    @property
    def total(self) -> int:
        """The bytes the launch asks for."""
        return self.reduction_offset + self.reduction_bytes

    @property
    def staged_bytes(self) -> int:
        """Bytes of the caches the circular-buffer pass pipelined (cp.async)."""
        return sum(b.bytes for b in self.buffers if b.stages)

    @property
    def other_bytes(self) -> int:
        """Bytes of the other shared buffers (persistent buffers, transpose tiles, plain caches)."""
        return sum(b.bytes for b in self.buffers if not b.stages)

    @property
    def padding(self) -> int:
        """Alignment gaps: between buffers, and after the last one up to 16 bytes."""
        return self.total - self.staged_bytes - self.other_bytes - self.reduction_bytes

    @property
    def cp_async(self) -> bool:
        """Whether any shared buffer is loaded by cp.async."""
        return any(b.stages for b in self.buffers)

    def parts(self) -> list[tuple[int, str]]:
        """(bytes, what) for each part, in offset order; empty when nothing is shared."""
        out = [(b.bytes, b.describe()) for b in self.buffers]
        if self.reduction_bytes:
            out.append((self.reduction_bytes, f"block-reduction workspace (red_smem, at offset {self.reduction_offset})"))
        if self.padding:
            out.append((self.padding, "alignment padding (buffers start at 16-byte offsets)"))
        return out

    def lines(self) -> list[str]:
        """The breakdown, one part a line, each with its bytes."""
        return [f"{n:>8} B  {what}" for n, what in self.parts()]
