"""IterDomains and the transforms between them (Split, Merge, Resize, Swizzle).

An IterDomain is one axis of iteration: an extent, an iter type and a parallel
type. Transforms record how one set of IterDomains was derived from another, so
any tensor's loop domain can be explained from its logical domain.
"""

from __future__ import annotations

import contextlib
import enum
import threading
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING

from engine.ir.graph_copy import copy_node
from engine.ir.scalar import Scalar, ScalarLike, as_scalar, binary, ceil_div

if TYPE_CHECKING:
    from engine.ir.fusion import Fusion


class IterType(enum.Enum):
    Iteration = "i"
    Reduction = "r"
    Broadcast = "b"
    Symbolic = "?"
    GatherScatter = "g"
    Stride = "s"
    VectorComponent = "v"


_ITERATION, _REDUCTION, _BROADCAST = IterType.Iteration, IterType.Reduction, IterType.Broadcast


class ParallelType(enum.Enum):
    """Members carry nvFuser's python names; the value is the printed form."""

    grid_x = "blockIdx.x"
    grid_y = "blockIdx.y"
    grid_z = "blockIdx.z"
    block_x = "threadIdx.x"
    block_y = "threadIdx.y"
    block_z = "threadIdx.z"
    mesh_x = "deviceIdx.x"
    mesh_y = "deviceIdx.y"
    mesh_z = "deviceIdx.z"
    stream = "StreamIdx"
    vectorize = "V"
    unroll = "UR"
    unswitch = "US"
    group = "G"
    mma = "MMA"
    bulk = "B"
    serial = "S"

    @property
    def is_block_dim(self) -> bool:
        return self._value_.startswith("blockIdx")

    @property
    def is_thread_dim(self) -> bool:
        return self._value_.startswith("threadIdx")

    @property
    def is_device_dim(self) -> bool:
        return self._value_.startswith("deviceIdx")

    def __str__(self) -> str:
        return self._value_  # these read `_value_`: `.value` is a slower descriptor


class IterDomain:
    __deepcopy__ = copy_node

    def __init__(
        self,
        fusion: Fusion,
        extent: ScalarLike,
        iter_type: IterType = IterType.Iteration,
        parallel_type: ParallelType = ParallelType.serial,
        *,
        expanded_extent: ScalarLike | None = None,
        is_rfactor: bool = False,
        start: ScalarLike = 0,
        stop_offset: ScalarLike = 0,
    ) -> None:
        self.fusion = fusion
        self.name = fusion.new_id_name()
        self.extent: Scalar = as_scalar(extent)
        self.iter_type = iter_type
        self.parallel_type = parallel_type
        self.expanded_extent = None if expanded_extent is None else as_scalar(expanded_extent)
        self.is_rfactor = is_rfactor
        # Kept as given: an int stays an atom, so the ids that fusion copies make by the
        # thousand (segmenter trial cuts, clones) carry no two Scalars each.
        self._start = start
        self._stop_offset = stop_offset
        self.definition: IdTransform | None = None
        self.uses: list[IdTransform] = []

    # ---- queries -----------------------------------------------------------
    @property
    def start(self) -> Scalar:
        return as_scalar(self._start)

    @property
    def stop_offset(self) -> Scalar:
        return as_scalar(self._stop_offset)

    # Enum members are singletons: `is` gives `==`'s answer without a rich comparison
    # (these are asked hundreds of thousands of times per compile).
    @property
    def is_reduction(self) -> bool:
        return self.iter_type is _REDUCTION

    @property
    def is_broadcast(self) -> bool:
        return self.iter_type is _BROADCAST

    @property
    def is_iteration(self) -> bool:
        return self.iter_type is _ITERATION

    @property
    def has_expanded_extent(self) -> bool:
        return self.expanded_extent is not None

    @property
    def is_parallelized(self) -> bool:
        return self.parallel_type != ParallelType.serial

    # ---- mutation ----------------------------------------------------------
    def parallelize(self, parallel_type: ParallelType) -> IterDomain:
        self.parallel_type = parallel_type
        return self

    def clone(
        self,
        *,
        iter_type: IterType | None = None,
        is_rfactor: bool = False,
        keep_parallel: bool = False,
    ) -> IterDomain:
        """A fresh IterDomain (new name, no history) with the same extent."""
        return IterDomain(
            self.fusion,
            self.extent,
            iter_type or self.iter_type,
            self.parallel_type if keep_parallel else ParallelType.serial,
            expanded_extent=self.expanded_extent,
            is_rfactor=is_rfactor,
        )

    # ---- printing ----------------------------------------------------------
    def __str__(self) -> str:
        extent = self.extent.inline()
        if self.expanded_extent is not None:
            extent = f"{extent} ex {self.expanded_extent.inline()}"
        rf = "rf" if self.is_rfactor else ""
        # `_value_` rather than the `.value` descriptor: every listing prints every id.
        return f"{self.iter_type._value_}{self.parallel_type._value_}{self.name}{{{extent}}}{rf}"

    def __repr__(self) -> str:
        return f"<IterDomain {self}>"


class IdTransform:
    """A transform between IterDomains; it links itself into their history."""

    kind = "transform"
    __deepcopy__ = copy_node

    def __init__(self, inputs: list[IterDomain], outputs: list[IterDomain]) -> None:
        self.inputs = inputs
        self.outputs = outputs
        for i in inputs:
            i.uses.append(self)
        for o in outputs:
            o.definition = self


def _merged_iter_type(a: IterDomain, b: IterDomain) -> IterType:
    if a.is_broadcast and b.is_broadcast:
        return IterType.Broadcast
    if a.is_reduction or b.is_reduction:
        return IterType.Reduction
    return IterType.Iteration


def _iterations(i: IterDomain) -> Scalar:
    return i.expanded_extent if i.expanded_extent is not None else i.extent


class Split(IdTransform):
    """`in` -> (outer, inner). An inner split fixes the inner extent to `factor`."""

    kind = "Split"

    def __init__(self, in_id: IterDomain, factor: ScalarLike, inner_split: bool = True) -> None:
        self.factor = as_scalar(factor)
        self.inner_split = inner_split
        rest = ceil_div(in_id.extent, self.factor)
        outer_extent, inner_extent = (rest, self.factor) if inner_split else (self.factor, rest)
        expanded = in_id.expanded_extent is not None
        outer = IterDomain(in_id.fusion, outer_extent, in_id.iter_type)
        inner = IterDomain(in_id.fusion, inner_extent, in_id.iter_type)
        if expanded:
            # An expanded broadcast splits like its expanded extent.
            rest_ex = ceil_div(in_id.expanded_extent, self.factor)
            outer.expanded_extent, inner.expanded_extent = (
                (rest_ex, self.factor) if inner_split else (self.factor, rest_ex)
            )
        super().__init__([in_id], [outer, inner])

    @property
    def in_id(self) -> IterDomain:
        return self.inputs[0]

    @property
    def outer(self) -> IterDomain:
        return self.outputs[0]

    @property
    def inner(self) -> IterDomain:
        return self.outputs[1]

    def __str__(self) -> str:
        head = "Split" if self.inner_split else "Outer split"
        return (
            f"{head}: {self.in_id} by factor {self.factor.inline()} -> "
            f"{self.outer}, {self.inner}"
        )


class Merge(IdTransform):
    """(outer, inner) -> out, with extent outer * inner."""

    kind = "Merge"

    def __init__(self, outer: IterDomain, inner: IterDomain) -> None:
        kind = _merged_iter_type(outer, inner)
        expanded = outer.expanded_extent is not None or inner.expanded_extent is not None
        if expanded and kind != IterType.Broadcast:
            # An expanded broadcast merged with a real axis iterates its expansion.
            extent = binary("mul", _iterations(outer), _iterations(inner))
        else:
            extent = binary("mul", outer.extent, inner.extent)
        out = IterDomain(outer.fusion, extent, kind)
        if expanded and kind == IterType.Broadcast:
            out.expanded_extent = binary("mul", _iterations(outer), _iterations(inner))
        super().__init__([outer, inner], [out])

    @property
    def outer(self) -> IterDomain:
        return self.inputs[0]

    @property
    def inner(self) -> IterDomain:
        return self.inputs[1]

    @property
    def out(self) -> IterDomain:
        return self.outputs[0]

    def __str__(self) -> str:
        return f"Merge: {self.outer} and {self.inner} -> {self.out}"


class Resize(IdTransform):
    """Expand (positive) or shrink (negative) an axis on the left and right: pad, slice, cat."""

    kind = "Resize"

    def __init__(
        self,
        in_id: IterDomain,
        left: ScalarLike,
        right: ScalarLike,
        iter_type: IterType | None = None,
        is_rfactor: bool = True,
    ) -> None:
        self.left = as_scalar(left)
        self.right = as_scalar(right)
        extent = binary("add", binary("add", self.left, in_id.extent), self.right)
        out = IterDomain(
            in_id.fusion,
            extent,
            iter_type or (IterType.Iteration if in_id.is_broadcast else in_id.iter_type),
            is_rfactor=is_rfactor,
        )
        super().__init__([in_id], [out])

    @property
    def in_id(self) -> IterDomain:
        return self.inputs[0]

    @property
    def out(self) -> IterDomain:
        return self.outputs[0]

    def __str__(self) -> str:
        return (
            f"Resize: {self.in_id} by {self.left.inline()} and {self.right.inline()} "
            f"-> {self.out}"
        )


class SwizzleType(enum.Enum):
    """nvFuser's SwizzleType (python names); the value is the printed name."""

    XOR = "Xor"
    CyclicShift = "CyclicShift"


class Swizzle(IdTransform):
    """A 2-D swizzle of two axes of equal extent (nvFuser's Swizzle2D, data mode): the x
    axis passes through and y becomes a permutation of itself chosen by x. Xor: y ^ x
    (a power-of-two extent, so the result stays in range); CyclicShift: (x + y) % extent.
    Both are bijections on each row, so a swizzled layout holds every element once; used
    to spread a shared-memory tile's columns over the banks."""

    kind = "Swizzle"

    def __init__(self, in_x: IterDomain, in_y: IterDomain, swizzle_type: SwizzleType = SwizzleType.XOR) -> None:
        self.swizzle_type = SwizzleType(swizzle_type)
        out_x = in_x.clone()
        out_y = in_y.clone()
        super().__init__([in_x, in_y], [out_x, out_y])

    @property
    def in_x(self) -> IterDomain:
        return self.inputs[0]

    @property
    def in_y(self) -> IterDomain:
        return self.inputs[1]

    @property
    def out_x(self) -> IterDomain:
        return self.outputs[0]

    @property
    def out_y(self) -> IterDomain:
        return self.outputs[1]

    def __str__(self) -> str:
        x, y = self.inputs
        ox, oy = self.outputs
        return f"{self.swizzle_type.value}(2D): {x} , {y} -> {ox} , {oy}"


def swizzle_extent_error(swizzle_type: SwizzleType, x: Scalar | int, y: Scalar | int) -> str | None:
    """Why two axes of these extents cannot be swizzled, or None. Extents that are not
    known yet (symbolic) pass: lowering asks again with the compiled sizes."""
    nx = x if isinstance(x, int) else _known(x)
    ny = y if isinstance(y, int) else _known(y)
    if nx is None or ny is None:
        return None
    if nx != ny:
        return f"a 2-D swizzle needs equal extents, got {nx} and {ny}"
    if swizzle_type == SwizzleType.XOR and (ny < 1 or ny & (ny - 1)):
        return f"an Xor swizzle needs a power-of-two extent, got {ny}"
    return None


def _known(s: Scalar) -> int | None:
    try:
        return int(s.evaluate({}))
    except (KeyError, TypeError, ValueError):
        return None


class _State(threading.local):
    """Per thread (a compile in a worker thread keeps its own): transforms_between's answers
    by (start, end) while transforms_kept holds, else None."""

    kept: dict[tuple[tuple[IterDomain, ...], tuple[IterDomain, ...]], list[IdTransform]] | None = None


_state = _State()


@contextlib.contextmanager
def transforms_kept() -> Iterator[None]:
    """Answer transforms_between once per pair of id lists. A transform never changes once
    made (its outputs are new ids, defined by it for good), so the transforms between two
    lists of ids stay the same: verifying, snapshotting, mapping and indexing ask for the
    same domains' histories over and over. Holds in the calling thread only."""
    outer = _state.kept
    _state.kept = {} if outer is None else outer
    try:
        yield
    finally:
        _state.kept = outer


def transforms_between(start: Iterable[IterDomain], end: Iterable[IterDomain]) -> list[IdTransform]:
    """Transforms on the paths from `start` ids to `end` ids, in the order they were applied.

    The walk goes backward from `end` and stops at `start`; ids that are neither
    reached from `start` nor in it end the walk too (the verifier reports those).
    """
    kept = _state.kept
    if kept is None:
        return _transforms_between(start, end)
    key = (tuple(start), tuple(end))
    found = kept.get(key)
    if found is None:
        found = kept[key] = _transforms_between(*key)
    return list(found)


def _transforms_between(start: Iterable[IterDomain], end: Iterable[IterDomain]) -> list[IdTransform]:
    seen = {id(i) for i in start}  # `start` stops the walk as a visited id would
    found: dict[int, IdTransform] = {}
    stack = list(end)
    while stack:
        i = stack.pop()
        k = id(i)
        if k in seen:
            continue
        seen.add(k)
        t = i.definition
        if t is not None and id(t) not in found:
            found[id(t)] = t
            stack.extend(t.inputs)
    if len(found) < 2:  # most domains are untransformed between the two lists
        return list(found.values())
    return sorted(found.values(), key=_applied_order)


def _applied_order(t: IdTransform) -> int:
    # IterDomains are numbered at creation and a transform's outputs are created with
    # it, so the smallest output name orders transforms as they were applied.
    return min([o.name for o in t.outputs])
