"""Resharding: make every expr either local or a communication (nvFuser's
InsertReshardingsPass and DecomposeReshardingsPass, on a fusion after propagation).

An expr is local when, for each device parallel type, its inputs and its output hold the
same axis on it (or neither holds it). Otherwise copies (`set` exprs) that communicate are
inserted around it, so that the expr itself becomes local:

- an input sharded on an axis the output does not hold sharded -> `Allgather` of the input;
- an output sharded on an axis its input holds whole -> the input is cut to this device's
  part first (`ShardByDevice`, a local narrow: no communication);
- an input sharded on an axis the expr reduces (a sum over it, linear's or matmul's K) ->
  the expr computes a partial result on each device from its part (nvFuser's rfactor of the
  sharded reduction axis), then `Allreduce` (output replicated on that type) or
  `ReduceScatter` (output sharded on another axis) completes it; a linear's bias is added
  after the reduction, once;
- the partial products of a matmul rfactor'ed by hand (engine.ir.rfactor: [M, N, iS{d},
  rS{K/d}] with iS{d} on the devices) read the operands' K blocks where they are: block j
  is index j of the part axis (no communication); their sum is a reduction over a sharded
  axis, as above;
- an input on other devices than the output -> `Broadcast` (one device to several) or
  `SendRecv` (one to one) of the replicated tensor.
"""

from __future__ import annotations

from dataclasses import dataclass

from engine.ir import exprs as ex
from engine.ir.base import Expr
from engine.ir.fusion import Fusion
from engine.ir.iterdomain import IterDomain, ParallelType, Split
from engine.ir.tensorview import TensorView
from engine.multidevice.axis_map import device_map, whole_axis
from engine.multidevice.mesh import DeviceMesh
from engine.multidevice.propagate import mark_partial, reference_inputs, shard_like
from engine.multidevice.sharding import (
    AxisSharding,
    MultiDeviceError,
    check_partial_k,
    mesh_of,
    sharding_of,
    shardings,
)
from engine.ops.arith import add as _add
from engine.ops.arith import cast as _cast
from engine.ops.matmul import linear as _linear
from engine.ops.matmul import matmul as _matmul
from engine.ops.reduction import reduce as _reduce
from engine.ops.shape import set_ as _set

KINDS = ("Allgather", "ReduceScatter", "Allreduce", "Broadcast", "SendRecv", "ShardByDevice")
_REDUCE_OPS = {"add": "sum", "max": "max", "min": "min"}


@dataclass
class Resharding:
    """What the `set` expr `expr` (input -> output) does between devices."""

    kind: str
    expr: Expr
    pt: ParallelType | None = None
    reduce_op: str = "sum"
    root: int | None = None

    @property
    def input(self) -> TensorView:
        return self.expr.input

    @property
    def output(self) -> TensorView:
        return self.expr.output


def _tvs(vals: list) -> list[TensorView]:
    return [v for v in vals if isinstance(v, TensorView)]


class _Decomposer:
    def __init__(self, fusion: Fusion) -> None:
        self.fusion = fusion
        self.comms: dict[int, Resharding] = {}

    # ---- new tensors -----------------------------------------------------------------------
    def _copy(self, tv: TensorView, mesh: DeviceMesh, keep: list[AxisSharding]) -> TensorView:
        """A `set` of `tv` on `mesh` holding `keep` of tv's shardings (mapped positionally)."""
        out = _set(tv)
        out.device_mesh = mesh
        m = device_map(tv, out)
        for s in keep:
            _shard_axis(out, s, m[s.logical])
        return out

    def _reroute(self, expr: Expr, old: TensorView, new: TensorView) -> None:
        self.fusion.replace_input_of(expr, old, new)

    # ---- inputs ----------------------------------------------------------------------------
    def _move(self, expr: Expr, p: TensorView, out_mesh: DeviceMesh) -> TensorView:
        """Bring `p` onto `out_mesh` when it lives elsewhere."""
        pm = mesh_of(p)
        if pm is None or pm == out_mesh or all(pm.has(d) for d in out_mesh.devices) and not _sharded(p):
            return p
        if _sharded(p):
            raise MultiDeviceError(f"{p.short_name} is sharded on {pm} but {_first_out(expr).short_name} is on "
                                   f"{out_mesh}: only replicated tensors move between meshes")
        if pm.size != 1:
            raise MultiDeviceError(f"{p.short_name} is replicated on {pm} and used on {out_mesh}: a move between "
                                   "meshes starts from one device")
        new = self._copy(p, out_mesh, [])
        kind = "SendRecv" if out_mesh.size == 1 else "Broadcast"
        self.comms[id(new.definition)] = Resharding(kind, new.definition, root=pm.devices[0])
        self._reroute(expr, p, new)
        return new

    def _gather(self, expr: Expr, p: TensorView, s: AxisSharding) -> TensorView:
        keep = [x for x in shardings(p) if x.pt != s.pt and not x.reduction]
        new = self._copy(p, mesh_of(p), keep)
        self.comms[id(new.definition)] = Resharding("Allgather", new.definition, s.pt)
        self._reroute(expr, p, new)
        return new

    def _slice(self, expr: Expr, p: TensorView, o_s: AxisSharding, axis: object) -> TensorView:
        keep = [x for x in shardings(p) if not x.reduction]
        new = self._copy(p, mesh_of(p), keep)
        m = device_map(p, new)
        _shard_axis(new, AxisSharding(o_s.pt, axis, o_s.split), m[axis])
        self.comms[id(new.definition)] = Resharding("ShardByDevice", new.definition, o_s.pt)
        self._reroute(expr, p, new)
        return new

    # ---- one expr --------------------------------------------------------------------------
    def handle(self, expr: Expr) -> None:
        outs = _tvs(expr.outputs)
        if not outs or id(expr) in self.comms:
            return
        out = _first_out(expr)
        o_mesh = mesh_of(out)
        if o_mesh is None:
            return
        if isinstance(expr, (ex.RFactorMatmulOp, ex.RFactorLinearOp)):
            check_partial_k(out)
        # Reduction axes of `out` that a sharded input reduces: partial over that type.
        partial: dict[ParallelType, AxisSharding] = {}
        for p in list(dict.fromkeys(_tvs(expr.inputs))):
            p = self._move(expr, p, o_mesh)
            for s in shardings(p):
                if s.reduction:
                    continue
                to = device_map(p, out).get(s.logical)
                if to is not None and to.is_reduction:
                    partial.setdefault(s.pt, AxisSharding(s.pt, to, s.split))
                    continue
                if to is not None and _same_part(s, to, sharding_of(out, s.pt), o_mesh):
                    continue
                p = self._gather(expr, p, s)
        # Inputs whole on an axis `out` holds sharded, or on a reduced axis others hold
        # sharded: cut to this device's part.
        wanted = [s for s in shardings(out) if not s.reduction] + list(partial.values())
        for p in list(dict.fromkeys(_tvs(expr.inputs))):
            back = {c: q for q, c in device_map(p, out).items()}
            for o_s in wanted:
                if sharding_of(p, o_s.pt) is not None or (o_s.pt in partial and not o_s.reduction):
                    continue
                src = back.get(o_s.logical)
                if src is not None and whole_axis(src):
                    if not o_s.split and _outer_part(o_s.logical, o_mesh.extent(o_s.pt)):
                        # One index of the outer part of a split of the input's axis: a block of it.
                        o_s = AxisSharding(o_s.pt, o_s.logical, True)
                    p = self._slice(expr, p, o_s, src)
        if partial:
            self._decompose_partial(expr, out, list(partial))

    def _decompose_partial(self, expr: Expr, out: TensorView, pts: list[ParallelType]) -> None:
        """expr -> local partial expr, then Allreduce/ReduceScatter into a tensor that takes
        `out`'s place (and a linear's bias added after)."""
        bias = None
        if isinstance(expr, (ex.RFactorMatmulOp, ex.RFactorLinearOp)):
            raise MultiDeviceError(f"{out.short_name}: these partial products of an rfactor reduce the part of K "
                                   f"sharded on {pts[0]}; keep that part (the outer one of the split of K, "
                                   "rfactor(axes=[-1]) after outer_split(-1, d)) and reduce the others")
        if isinstance(expr, ex.LinearOp):
            a, w = expr.inputs[:2]
            bias = expr.inputs[2] if expr.has_bias else None
            part = _linear(a, w)
            op = "sum"
        elif isinstance(expr, ex.MatmulOp):
            part = _matmul(*expr.inputs)
            op = "sum"
        elif type(expr) is ex.ReductionOp and expr.op in _REDUCE_OPS:
            dims = [k for k, i in enumerate(out.domain.logical) if i.is_reduction]
            op = _REDUCE_OPS[expr.op]
            part = _reduce(expr.op, expr.input, dims, False, out.dtype)
        else:
            raise MultiDeviceError(f"{out.short_name} = {type(expr).__name__} reduces an axis sharded on "
                                   f"{pts[0]}: only sum/max/min, linear and matmul reduce over devices")
        if len(pts) > 1:
            raise MultiDeviceError(f"{out.short_name}: a reduction over several device types at once "
                                   f"({', '.join(str(p) for p in pts)}) is not supported")
        pt = pts[0]
        mesh = mesh_of(out)
        part.device_mesh = mesh
        src = expr.inputs[1] if isinstance(expr, (ex.LinearOp, ex.MatmulOp)) else expr.input
        for inp in reference_inputs(part.definition):
            shard_like(inp, part, device_map(inp, part))
        mark_partial(src, part, device_map(src, part))
        scatter = sharding_of(out, pt)
        # The partial result is whole on the axis a ReduceScatter will cut.
        if scatter is not None:
            _unshard(part, pt)
        done = _set(part)
        done.device_mesh = mesh
        whole = [i for i in out.domain.logical if not i.is_reduction]
        for s in shardings(out):
            if not s.reduction:
                _shard_axis(done, s, done.domain.logical[whole.index(s.logical)])
        kind = "ReduceScatter" if scatter is not None else "Allreduce"
        self.comms[id(done.definition)] = Resharding(kind, done.definition, pt, reduce_op=op)
        final, later = done, []
        if bias is not None:
            final = _add(done, bias)
            later.append(final.definition)
            if final.dtype != out.dtype:
                final = _cast(final, out.dtype)
                later.append(final.definition)
            prev = done
            for e in later:
                t = e.output
                t.device_mesh = mesh
                shard_like(prev, t, device_map(prev, t))
                prev = t
        for use in list(self.fusion.uses_of(out)):
            self._reroute(use, out, final)
        if out in self.fusion.outputs:
            self.fusion.replace_output(out, final)
        self.fusion.remove_expr(expr)
        for e in later:
            self.handle(e)


def _same_part(s: AxisSharding, to: IterDomain, o_s: AxisSharding | None, mesh: DeviceMesh) -> bool:
    """Whether the output's sharding `o_s` holds on each device the part of `to` that the
    input's sharding `s` holds of the axis mapped to it: the same layout, or the input's
    axis cut in blocks by the devices and `to` the outer part of a split of it with one
    index per device, parallelized directly (the K of an rfactor'ed matmul,
    [iS{d}, rS{K/d}] of [rK], with iS{d} on the devices: device j holds block j)."""
    if o_s is None or o_s.logical is not to:
        return False
    if o_s.split == s.split:
        return True
    return s.split and _outer_part(to, mesh.extent(s.pt))


def _outer_part(i: IterDomain, d: int) -> bool:
    """Whether `i` is the outer part, `d` long, of a split (made from its tensor's root)."""
    t = i.definition
    return isinstance(t, Split) and t.outer is i and i.extent.is_const and int(i.extent.value) == d


def _sharded(tv: TensorView) -> bool:
    return any(not s.reduction for s in shardings(tv))


def _first_out(expr: Expr) -> TensorView:
    outs = _tvs(expr.outputs)
    return max(outs, key=lambda t: len([s for s in shardings(t) if not s.reduction]))


def _shard_axis(tv: TensorView, s: AxisSharding, to: object) -> None:
    loop = tv.domain.loop
    pos = loop.index(to)
    if s.split:
        tv.split(pos, mesh_of(tv).extent(s.pt), inner_split=False)
    tv.domain.loop[pos].parallelize(s.pt)


def _unshard(tv: TensorView, pt: ParallelType) -> None:
    """Drop `tv`'s non-reduction sharding on `pt` (its loop goes back to the logical axis)."""
    s = sharding_of(tv, pt)
    if s is None:
        return
    loop = tv.domain.loop
    if s.split:
        k = next(k for k, i in enumerate(loop) if i.parallel_type == pt and not i.is_reduction)
        loop[k:k + 2] = [s.logical]
    else:
        s.logical.parallel_type = ParallelType.serial


def decompose_reshardings(fusion: Fusion) -> dict[int, Resharding]:
    """Insert the communications; returns them by id of their `set` expr."""
    d = _Decomposer(fusion)
    for expr in list(fusion.exprs()):
        if expr in fusion.all_exprs:
            d.handle(expr)
    return d.comms
