"""The Stream-parallel pass (nvFuser's StreamParallelType, seed 002).

It reads a host program's top-level statements and turns every fusion expr whose output
has a Stream axis into the body of a host for-loop over that axis:

1. Group: walk the top-level statements in order. An expr with a Stream output axis joins
   the previous statement when that is a for-loop whose axis maps to the expr's stream axis
   (the fusion's IterDomain map); otherwise it opens a new `FOR StreamIdx in <axis>:`. Any
   other statement between them ends the loop.
2. Allocate: before each loop, every body output that has the loop's axis gets a global
   buffer; each iteration writes one slice of it.
3. Index: in each body, every input or output with an axis mapped to the loop's is replaced
   by a HirAliasSelect of it at StreamIdx (one per tensor and loop); a reduced output keeps
   its reduction axis, since the op writing the slice is the reduction.
4. Streams: `GetCurrentStream` before each loop; a first loop where every pool stream waits
   for the caller's stream (kept out of the compute loop so that the waits do not serialise
   the iterations, seed 002's second listing); the compute loop sets the pool stream, runs
   the body, sets the caller's stream back and makes it wait for the pool stream.

Restrictions, as nvFuser's: a Stream axis must be a logical axis of an op's output (not of a
fusion input, not made by a split or merge), and only ops that run standalone on the host
(set, binary ops, reductions, matmul, linear, select) can be Stream-parallelized.
"""

from __future__ import annotations

import copy
from typing import Any

from engine.errors import CompileError
from engine.host.hir import (
    Allocate,
    ForLoop,
    GetCurrentStream,
    HirAliasSelect,
    HostIrContainer,
    SetCurrentStream,
    Synchronize,
)
from engine.ir import exprs as ex
from engine.ir.base import Expr
from engine.ir.fusion import Fusion
from engine.ir.iterdomain import IterDomain, ParallelType
from engine.ir.logical_map import logical_map, tensor_edges
from engine.ir.scalar import Scalar, binary
from engine.ir.tensorview import MemoryType, TensorDomain, TensorView
from engine.trace import Trace

# Ops the host evaluator runs as one torch call on whole (or sliced) tensors.
STANDALONE_OPS: tuple[type, ...] = (ex.LoadStoreOp, ex.BinaryOp, ex.ReductionOp, ex.MatmulOp, ex.LinearOp,
                                    ex.SelectOp)


def is_standalone_host_op(expr: Expr) -> bool:
    """nvFuser's isLowerableAsStandaloneHostOp, for this engine's ops."""
    if type(expr) not in STANDALONE_OPS:  # exact types: an rfactor'ed reduction is a kernel's
        return False
    if isinstance(expr, ex.LoadStoreOp):
        return expr.kind == "Set" and not expr.is_permute
    return True


def stream_ids(tv: TensorView) -> list[IterDomain]:
    """The tensor's Stream-parallel IterDomains (loop, logical or allocation)."""
    dom = tv.domain
    ids = {id(i): i for i in [*dom.loop, *dom.logical, *dom.maybe_allocation]}
    return [i for i in ids.values() if i.parallel_type == ParallelType.stream]


def has_stream_axis(vals: list[Any]) -> bool:
    return any(isinstance(v, TensorView) and stream_ids(v) for v in vals)


class IdGroups:
    """IterDomains that are the same axis across the fusion's exprs (union-find over the
    producer-consumer logical maps): nvFuser's IdModel graph that the pass asks
    `strictAreMapped`. Broadcasts are not mapped to concrete axes: a size-1 axis cannot be
    selected at every StreamIdx."""

    def __init__(self, fusion: Fusion) -> None:
        self._parent: dict[int, IterDomain] = {}
        for p, c, _ in tensor_edges(fusion):
            for a, b in logical_map(p, c, map_broadcast=False).items():
                self._union(a, b)

    def _find(self, i: IterDomain) -> IterDomain:
        root = i
        while id(root) in self._parent:
            root = self._parent[id(root)]
        return root

    def _union(self, a: IterDomain, b: IterDomain) -> None:
        ra, rb = self._find(a), self._find(b)
        if ra is not rb:
            self._parent[id(rb)] = ra

    def mapped(self, a: IterDomain, b: IterDomain) -> bool:
        return a is b or self._find(a) is self._find(b)


def _stream_axis(expr: Expr) -> IterDomain | None:
    """The one Stream axis of `expr`'s outputs, checked as nvFuser's getStreamAxis."""
    found: list[tuple[TensorView, IterDomain]] = []
    for tv in expr.outputs:
        if not isinstance(tv, TensorView):
            continue
        ids = stream_ids(tv)
        if len(ids) > 1:
            raise CompileError(f"{tv.short_name}: more than one Stream axis ({', '.join(map(str, ids))}); "
                               "a tensor can be Stream-parallelized on one axis only")
        for i in ids:
            if i not in tv.domain.logical:
                how = i.definition.kind if i.definition is not None else "a transform"
                raise CompileError(
                    f"{tv.short_name}: the Stream axis {i} is not a logical axis (it comes from a {how}); "
                    "Stream parallelization of a split or merged axis is not supported: parallelize a "
                    "logical axis of the tensor"
                )
            found.append((tv, i))
    if len(found) > 1:
        raise CompileError(f"{expr.op_name} producing {', '.join(t.short_name for t, _ in found)} has several "
                           "Stream-parallel outputs; at most one is supported")
    if not found:
        return None
    tv, axis = found[0]
    if not is_standalone_host_op(expr):
        raise CompileError(
            f"{tv.short_name} = {expr.op_name}(...) has a Stream axis ({axis}), but a {type(expr).__name__} "
            "does not run as a standalone host op; only set, binary ops, reductions, matmul, linear and "
            "select can be Stream-parallelized"
        )
    return axis


def _check_inputs(container: HostIrContainer) -> None:
    for v in container.inputs:
        if isinstance(v, TensorView) and stream_ids(v):
            raise CompileError(
                f"{v.short_name} is a fusion input with a Stream axis ({stream_ids(v)[0]}); inputs arrive "
                "whole, so only the outputs of host ops can be Stream-parallelized"
            )


def _group(container: HostIrContainer, top: list[Any], groups: IdGroups, trace: Trace | None) -> list[Any]:
    out: list[Any] = []
    for s in top:
        axis = _stream_axis(s) if isinstance(s, Expr) else None
        name = ", ".join(getattr(o, "short_name", "?") for o in getattr(s, "outputs", []))
        if axis is None:
            if out and isinstance(out[-1], ForLoop) and trace is not None:
                trace.event("host_ir", name or type(s).__name__,
                            f"not Stream-parallel: ends the loop over {out[-1].axis}")
            out.append(s)
            continue
        last = out[-1] if out else None
        if isinstance(last, ForLoop) and groups.mapped(last.axis, axis):
            last.body.append(s)
            if trace is not None:
                trace.event("host_ir", name, f"joins the stream loop over {last.axis} ({axis} maps to it)")
        else:
            out.append(ForLoop(container.stream_index, axis, [s]))
            if trace is not None:
                trace.event("host_ir", name, f"opens a stream loop over {axis}")
    return out


def _mapped_axis(tv: TensorView, axis: IterDomain, groups: IdGroups) -> IterDomain | None:
    hits = [i for i in tv.domain.logical if not i.is_reduction and groups.mapped(i, axis)]
    if len(hits) > 1:
        raise CompileError(f"{tv.short_name}: axes {', '.join(map(str, hits))} all map to the Stream axis {axis}; "
                           "which one to slice is ambiguous")
    return hits[0] if hits else None


def _size(tv: TensorView) -> Scalar:
    size: Scalar | int = 1
    for i in tv.domain.maybe_allocation:
        if not i.is_reduction:
            size = binary("mul", size, i.extent)
    return size if isinstance(size, Scalar) else Scalar(value=size)


def _allocate(top: list[Any], groups: IdGroups) -> list[Any]:
    out: list[Any] = []
    for s in top:
        if isinstance(s, ForLoop):
            for e in s.body:
                for tv in e.outputs:
                    if isinstance(tv, TensorView) and _mapped_axis(tv, s.axis, groups) is not None:
                        out.append(Allocate(tv, _size(tv)))
        out.append(s)
    return out


def _slice_tv(fusion: Fusion, tv: TensorView, axis: IterDomain, keep_reduction: bool) -> TensorView:
    ids = [IterDomain(fusion, i.extent, i.iter_type, expanded_extent=i.expanded_extent)
           for i in tv.domain.logical if i is not axis and (keep_reduction or not i.is_reduction)]
    return TensorView(fusion, TensorDomain(ids), tv.dtype, MemoryType.Local)


def _clone_expr(fusion: Fusion, expr: Expr, inputs: list[Any], outputs: list[Any]) -> Expr:
    """`expr` over other operands (the slices): same class and attributes, a new name."""
    new = copy.copy(expr)
    new.attributes = dict(expr.attributes)
    new.inputs, new.outputs = list(inputs), list(outputs)
    new.fusion = fusion
    new.name = fusion.register_expr(new)
    return new


def _index_body(container: HostIrContainer, loop: ForLoop, groups: IdGroups) -> list[Any]:
    """The loop's body over slices: a HirAliasSelect per tensor with the loop's axis (the
    first time the body touches it), then each expr over the slices."""
    fusion = container.fusion
    slices: dict[int, TensorView] = {}
    body: list[Any] = []

    def sliced(tv: Any, keep_reduction: bool) -> Any:
        if not isinstance(tv, TensorView):
            return tv
        axis = _mapped_axis(tv, loop.axis, groups)
        if axis is None:
            return tv
        if id(tv) not in slices:
            out = _slice_tv(fusion, tv, axis, keep_reduction)
            slices[id(tv)] = out
            body.append(HirAliasSelect(tv, out, axis, container.stream_index))
        return slices[id(tv)]

    for e in loop.body:
        ins = [sliced(v, False) for v in e.inputs]
        outs = [sliced(v, True) for v in e.outputs]
        body.append(_clone_expr(fusion, e, ins, outs))
    return body


def _manage_streams(container: HostIrContainer, top: list[Any]) -> list[Any]:
    out: list[Any] = []
    for s in top:
        if not isinstance(s, ForLoop):
            out.append(s)
            continue
        caller = container.new_stream()
        out.append(GetCurrentStream(caller))
        pool = container.pool_stream()
        out.append(ForLoop(s.index, s.axis, [SetCurrentStream(pool), Synchronize(caller)]))
        s.body = [SetCurrentStream(pool), *s.body, SetCurrentStream(caller), Synchronize(pool)]
        out.append(s)
    return out


def stream_parallel_pass(container: HostIrContainer, top: list[Any], trace: Trace | None = None) -> list[Any]:
    """The top-level statements with Stream-parallel exprs lowered into stream loops."""
    _check_inputs(container)
    if not any(isinstance(s, Expr) and has_stream_axis(s.outputs) for s in top):
        return list(top)
    groups = IdGroups(container.fusion)
    top = _group(container, top, groups, trace)
    top = _allocate(top, groups)
    for loop in top:
        if isinstance(loop, ForLoop):
            loop.body = _index_body(container, loop, groups)
    return _manage_streams(container, top)
