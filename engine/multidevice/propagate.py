"""Sharding propagation (nvFuser's PropagateShardingsPass).

Tensors with a device mesh are the user's: they are left as written. Every other tensor
takes its mesh and device parallelization from its neighbours:

1. Forward, expr by expr in order: each output without a mesh copies the sharding of the
   expr's inputs, taken in priority order (linear: weight, bias, input; matmul: the second
   operand, then the first; other ops: the inputs with the most device axes first). A
   parallel type the output already carries on a non-reduction axis is not added again,
   so `linear` of a token-sharded input and an N-sharded weight comes out N-sharded.
   A sharded axis that meets a reduction axis of the output (a sum over it, linear's K)
   marks the reduction axis: the output is then partial over that parallel type.
2. Backward, expr by expr in reverse: inputs that are not fusion inputs and are not the
   user's take the parallel types they lack from the output with the most device axes.

Axes map through the ops' logical maps (engine.ir.logical_map): pointwise, casts,
broadcasts (an expanded one like the axis it spans), reductions, permutes, reshapes that keep
the axis whole or split it (the outer part takes the sharding: engine.multidevice.axis_map),
linear and matmul.
"""

from __future__ import annotations

from engine.ir import exprs as ex
from engine.ir.base import Expr
from engine.ir.fusion import Fusion
from engine.ir.iterdomain import IterDomain, ParallelType
from engine.ir.tensorview import TensorView
from engine.multidevice.axis_map import device_map, whole_axis
from engine.multidevice.mesh import DEVICE_TYPES
from engine.multidevice.sharding import AxisSharding, mesh_of, shardings


def has_meshes(fusion: Fusion) -> bool:
    """Whether any tensor has a device mesh or a device-parallel axis."""
    return any(isinstance(v, TensorView) and (mesh_of(v) is not None or
                                              any(i.parallel_type in DEVICE_TYPES for i in v.domain.loop))
               for v in fusion.vals())


def _tvs(vals: list) -> list[TensorView]:
    return [v for v in vals if isinstance(v, TensorView)]


def _parallel_dims(tv: TensorView) -> int:
    return sum(1 for i in tv.domain.loop if i.parallel_type in DEVICE_TYPES and not i.is_reduction)


def _by_parallel_dims(tvs: list[TensorView]) -> list[TensorView]:
    def key(t: TensorView) -> tuple[int, int]:
        m = mesh_of(t)
        return (_parallel_dims(t), m.rank if m is not None else -1)

    return sorted(tvs, key=key, reverse=True)


def reference_inputs(expr: Expr) -> list[TensorView]:
    if isinstance(expr, ex.LinearOp):
        a, w = expr.inputs[:2]
        return [w, *expr.inputs[2:], a]
    if isinstance(expr, ex.MatmulOp):
        return [expr.inputs[1], expr.inputs[0]]
    return _by_parallel_dims(_tvs(expr.inputs))


def _present(tv: TensorView) -> set[ParallelType]:
    return {i.parallel_type for i in tv.domain.loop if i.parallel_type in DEVICE_TYPES and not i.is_reduction}


def shard_like(ref: TensorView, target: TensorView, id_map: dict[IterDomain, IterDomain]) -> None:
    """Give `target` `ref`'s mesh and each of `ref`'s shardings that `id_map` (ref logical
    -> target logical) carries over and `target` lacks."""
    mesh = mesh_of(ref)
    if mesh is None:
        return
    if mesh_of(target) is None:
        target.device_mesh = mesh
    present = _present(target)
    for s in shardings(ref):
        if s.reduction or s.pt in present:
            continue
        to = id_map.get(s.logical)
        # An expanded broadcast holds the whole axis's positions: it is cut like it (each
        # device expands to its own part); a plain broadcast has one element for all.
        if to is None or not whole_axis(to) or to.parallel_type in DEVICE_TYPES:
            continue
        if _apply(target, s, to):
            present.add(s.pt)


def _apply(target: TensorView, s: AxisSharding, to: IterDomain) -> bool:
    loop = target.domain.loop
    if to not in loop:
        return False  # the axis was transformed already; leave it to the user
    if any(i.parallel_type == s.pt and i.is_reduction == to.is_reduction for i in loop):
        return False
    pos = loop.index(to)
    mesh = mesh_of(target)
    if s.split:
        target.split(pos, mesh.extent(s.pt), inner_split=False)
    target.domain.loop[pos].parallelize(s.pt)
    return True


def propagate_shardings(fusion: Fusion) -> None:
    """Fill in meshes and device parallelization of the tensors the user left alone."""
    tvs = _tvs(fusion.vals())
    user = {id(t) for t in tvs if mesh_of(t) is not None}
    inputs = {id(v) for v in fusion.inputs}
    exprs = fusion.exprs()
    for expr in exprs:
        outs = [o for o in _tvs(expr.outputs) if id(o) not in user]
        for ref in reference_inputs(expr):
            for out in outs:
                shard_like(ref, out, device_map(ref, out))
        # A sharded axis reduced by the expr: mark the output's reduction axis.
        for out in _tvs(expr.outputs):
            for ref in _tvs(expr.inputs):
                mark_partial(ref, out, device_map(ref, out))
    for expr in reversed(exprs):
        outs = _by_parallel_dims(_tvs(expr.outputs))
        if not outs:
            continue
        ref = outs[0]
        for inp in _tvs(expr.inputs):
            if id(inp) in user or id(inp) in inputs:
                continue
            back = {c: p for p, c in device_map(inp, ref).items()}
            shard_like(ref, inp, back)


def mark_partial(ref: TensorView, out: TensorView, id_map: dict[IterDomain, IterDomain]) -> None:
    """Parallelize each reduction axis of `out` that a sharded axis of `ref` maps to."""
    for s in shardings(ref):
        if s.reduction:
            continue
        to = id_map.get(s.logical)
        if to is None or not to.is_reduction or to.parallel_type in DEVICE_TYPES:
            continue
        if mesh_of(out) is None:
            out.device_mesh = mesh_of(ref)
        _apply(out, s, to)
