"""Shape ops: broadcast, squeeze, set, segment_set, expand, reshape, permute, slice, pad, cat.

Built in engine.ops.axes (broadcast, broadcast_in_dim, expand, squeeze, permute, set,
segment_set), engine.ops.reshaping (reshape) and engine.ops.resize (slice, pad, cat); this
module lists them for engine.ops.
"""

from __future__ import annotations

from engine.ops.axes import broadcast, broadcast_in_dim, expand, permute, segment_set, squeeze
from engine.ops.axes import set_ as set_
from engine.ops.common import ShapeEntry as ShapeEntry
from engine.ops.reshaping import reshape
from engine.ops.resize import cat, pad
from engine.ops.resize import slice_ as slice_

__all__ = [
    "broadcast", "broadcast_in_dim", "cat", "expand", "pad", "permute", "reshape",
    "segment_set", "set", "slice", "squeeze",
]
