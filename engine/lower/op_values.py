"""The value of one output element, per fusion op, as a typed kernel-IR expression (the
fusion's ops as engine.lower.kops nodes; reductions live in reduction_ops.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from engine.dtypes import DataType
from engine.errors import CompileError
from engine.ir import exprs as ex
from engine.ir.base import Expr
from engine.ir.iterdomain import IterDomain, Resize
from engine.ir.scalar import Scalar
from engine.ir.tensorview import TensorView
from engine.lower import cexpr, kexpr, kir, kops
from engine.lower.index import Ix, lower_bound_test
from engine.lower.kexpr import FALSE, TRUE, Add, And, Call, CCast, Cmp, Lit, Mul, Paren, Select, Signed, Var
from engine.runtime.registers import register_cap, registers_needed

if TYPE_CHECKING:
    from engine.lower.lowering import ExprLowering


Value = kexpr.Expr


def _dtype(v) -> DataType:
    return v.dtype


def _operand(low: ExprLowering, v, out: TensorView, c_index, dt: DataType) -> Value:
    acc = low.read(v, out, c_index)
    src = _dtype(v)
    if isinstance(v, Scalar) and v.value is not None:
        return kops.literal(v.value, dt)
    return low.converted(acc.expr, src, dt)


def value_of(low: ExprLowering, expr: Expr, out: TensorView, c_index: dict[IterDomain, Ix]) -> Value:
    if isinstance(expr, ex.UnaryOp):
        return _unary(low, expr, out, c_index)
    if isinstance(expr, ex.BinaryOp):
        dt = low.operand_dtype(expr, out)
        a, b = (_operand(low, v, out, c_index, dt) for v in expr.inputs)
        rhs = expr.inputs[1]
        b_value = rhs.value if isinstance(rhs, Scalar) else None
        value = kops.binary(expr.op, a, b, dt, b_value)
        return low.converted(value, _result_dtype(expr.op, dt), out.dtype)
    if isinstance(expr, ex.TernaryOp):
        return _ternary(low, expr, out, c_index)
    if isinstance(expr, ex.LoadStoreOp | ex.BroadcastOp | ex.SqueezeOp | ex.ExpandOp | ex.ViewOp | ex.SliceOp):
        v = expr.inputs[0]
        return low.converted(low.read(v, out, c_index).expr, v.dtype, out.dtype)
    if isinstance(expr, ex.PadOp):
        return _pad(low, expr, out, c_index)
    if isinstance(expr, ex.CatOp):
        return _cat(low, expr, out, c_index)
    if isinstance(expr, ex.FullOp):
        return _operand(low, expr.fill, out, c_index, out.dtype)
    if isinstance(expr, ex.IotaOp):
        return _iota(low, expr, out, c_index)
    if isinstance(expr, ex.RNGOp):
        return _rng(low, expr, out, c_index)
    if isinstance(expr, ex.SelectOp):
        return _select(low, expr, out, c_index)
    if isinstance(expr, ex.IndexSelectOp | ex.GatherOp):
        return _lookup(low, expr, out, c_index)
    raise CompileError(
        f"{out.short_name}: code generation does not support {expr.op_name} "
        "(it runs through expr_eval or is not implemented)"
    )


def _result_dtype(op: str, dt: DataType) -> DataType:
    if op in ("lt", "le", "gt", "ge", "eq", "ne", "logical_and", "logical_or"):
        return DataType.Bool
    return dt


def _converted_apart(low: ExprLowering, v: object) -> bool:
    """Whether each cast of `v` converts it on its own: a half or bfloat16 register buffer
    that is not inlined into its readers, that several casts read (a persistent buffer kept
    narrow, read before and after a reduction), and whose converted values would not fit
    the registers beside it. The compiler merges the conversions of one value and keeps the
    converted copy, twice the registers, alive from the first read to the last: where that
    does not fit, it spills or takes registers that halve the blocks an SM holds."""
    if not (isinstance(v, TensorView) and v.dtype in (DataType.Half, DataType.BFloat16)):
        return False
    if v in low.fusion_inputs or v.compute_at_pos >= v.nloop:
        return False
    buf = low.buffer(v)
    if buf.memory != "local":
        return False
    casts = [e for e in v.fusion.uses_of(v) if isinstance(e, ex.UnaryOp) and e.op == "cast"]
    if len(casts) < 2:
        return False
    if low.device is None:
        return False
    cap = register_cap(low.device, low.block_threads() * max(1, low.min_blocks_per_sm))
    return registers_needed(buf.size * (v.dtype.bits // 8 + 4)) > cap  # the row and its copy


def _unary(low: ExprLowering, expr: ex.UnaryOp, out: TensorView, c_index) -> Value:
    v = expr.inputs[0]
    x: Value = low.read(v, out, c_index).expr
    if isinstance(v, Scalar) and v.value is not None:
        x = kops.literal(v.value, v.dtype)
    if expr.op == "cast":
        return kops.cast(x, v.dtype, out.dtype, each=_converted_apart(low, v))
    # Bool-valued predicates (isnan, ...) compute in their input's type.
    dt = DataType.Float if v.dtype.is_low_precision_float else v.dtype
    x = low.converted(x, v.dtype, dt)
    res_dt = DataType.Bool if out.dtype == DataType.Bool else dt
    return low.converted(kops.unary(expr.op, x, dt), res_dt, out.dtype)


def _ternary(low: ExprLowering, expr: ex.TernaryOp, out: TensorView, c_index) -> Value:
    dt = DataType.Float if out.dtype.is_low_precision_float else out.dtype
    args = list(expr.inputs)
    if expr.op == "where":
        c: Value = low.read(args[0], out, c_index).expr
        if isinstance(args[0], Scalar) and args[0].value is not None:
            c = kops.literal(args[0].value, DataType.Bool)
        c = low.converted(c, args[0].dtype, DataType.Bool)
        a = _operand(low, args[1], out, c_index, dt)
        b = _operand(low, args[2], out, c_index, dt)
        return low.converted(kops.ternary("where", c, a, b, dt), dt, out.dtype)
    a, b, c = (_operand(low, v, out, c_index, dt) for v in args)
    return low.converted(kops.ternary(expr.op, a, b, c, dt), dt, out.dtype)


def _logical_noreduction(tv: TensorView) -> list[IterDomain]:
    return [i for i in tv.domain.logical if not i.is_reduction]


def _pad(low: ExprLowering, expr: ex.PadOp, out: TensorView, c_index) -> Value:
    inp = expr.inputs[0]
    acc = low.read(inp, out, c_index)
    conds: list[kexpr.Expr] = []
    for k, pid in enumerate(_logical_noreduction(inp)):
        oid = _logical_noreduction(out)[k]
        if isinstance(oid.definition, Resize) and oid in c_index:
            conds += _inside_conds(low, out, k, c_index)
            continue
        if pid.is_broadcast:
            continue
        ix = acc.index.get(pid)
        if ix is None:
            continue
        n = low.ext.of(pid)
        if ix.lo < 0 and (low_test := lower_bound_test(ix, _w)) not in conds:
            conds.append(low_test)
        if ix.hi > n:
            conds.append(Cmp(_w(ix.term), "<", n))
    val = _operand(low, expr.value, out, c_index, out.dtype)
    inside = low.converted(acc.expr, inp.dtype, out.dtype)
    if not conds:
        return inside
    return Select(Paren(And(tuple(conds))), inside, val)


def _inside_conds(low: ExprLowering, out: TensorView, dim: int, c_index) -> list[kexpr.Expr]:
    """The consumer's index on a padded axis falls in the unpadded range. Tested on the
    consumer's index, which is never negative: the producer's (index - left) may be, and the
    thread and block indices it is made of are unsigned in CUDA. A broadcast producer axis
    (always index 0) has only this test."""
    oid = _logical_noreduction(out)[dim]
    lo, hi = _unpadded_range(low, out, dim)
    term = _w(c_index[oid].term)
    return ([Cmp(term, ">=", lo)] if lo > 0 else []) + ([Cmp(term, "<", hi)] if hi < low.ext.of(oid) else [])


def _unpadded_range(low: ExprLowering, tv: TensorView, dim: int) -> tuple[int, int]:
    i = _logical_noreduction(tv)[dim]
    t = i.definition
    if isinstance(t, Resize):
        left = low.ext.value(t.left)
        return left, left + low.ext.of(t.in_id)
    return 0, low.ext.of(i)


def _cat(low: ExprLowering, expr: ex.CatOp, out: TensorView, c_index) -> Value:
    d = expr.dim
    cid = _logical_noreduction(out)[d]
    idx = c_index[cid].term
    spans = [(low.ext.value(a), low.ext.value(a) + low.ext.value(n)) for a, n in expr.spans]
    parts = [(span, _operand(low, v, out, c_index, out.dtype)) for span, v in zip(spans, expr.inputs)]
    value = parts[-1][1]
    for (_lo, hi), val in reversed(parts[:-1]):
        value = Select(Cmp(_w(idx), "<", hi), val, value)
    return value


def _iota(low: ExprLowering, expr: ex.IotaOp, out: TensorView, c_index) -> Value:
    i = _logical_noreduction(out)[0]
    idx = c_index[i].term
    start, step = expr.inputs[1], expr.inputs[2]
    dt = out.dtype
    s = low.converted(low.scalar(start), start.dtype, dt) if isinstance(start, Scalar) else 0
    k = low.converted(low.scalar(step), step.dtype, dt) if isinstance(step, Scalar) else 1
    pos = low.converted(idx, DataType.Index, dt)  # type: ignore[arg-type]
    # The index may be a sum: (i * 2 + j) * step.
    return Paren(Add(s, Mul(Paren(pos), k)))


def _rng(low: ExprLowering, expr: ex.RNGOp, out: TensorView, c_index) -> Value:
    """fsRng at the element's row-major index over the logical axes (nvFuser's philox index)."""
    linear: cexpr.Term = 0
    stride = 1
    for i in reversed(_logical_noreduction(out)):
        # A size-1 axis is a broadcast: one draw, whatever extent a consumer promotes it to.
        n = 1 if i.is_broadcast else low.ext.of(i)
        if n > 1:
            linear = cexpr.add(linear, cexpr.mul(c_index[i].term, stride))
        stride *= n
    if expr.seed is not None:
        seed, offset = (CCast("uint64_t", low.scalar(s)) for s in (expr.seed, expr.offset))
    else:
        seed, offset = Lit("0ull"), Lit(f"{expr.rng_id}ull")
    a, b = (low.converted(low.scalar(p), p.dtype, DataType.Double) for p in expr.params)
    normal = TRUE if expr.dist == "normal" else FALSE
    _declare_rng_cache(low)
    return Call("fsRng", (out.dtype.cuda_name,), (Var(_RNG_CACHE), normal, seed, offset, linear, a, b))


_RNG_CACHE = "fs_rng"


def _declare_rng_cache(low: ExprLowering) -> None:
    """One Philox block cache per thread, at the top of the kernel (see random.cuh)."""
    if not any(isinstance(st, kir.Local) and st.name == _RNG_CACHE for st in low.work.allocs[0]):
        low.alloc_at(0, [], kir.Local("FsPhiloxCache", _RNG_CACHE, zeroed=True))


def _select(low: ExprLowering, expr: ex.SelectOp, out: TensorView, c_index) -> Value:
    inp = expr.inputs[0]
    index = expr.index
    axis = expr.select_axis
    n = low.ext.of(axis)
    if isinstance(index, Scalar) and index.value is not None:
        k = int(index.value)
        sel: Value = Lit(str(k + n if k < 0 else k))  # a negative index counts from the end, as torch's
    else:
        s = low.scalar(index) if isinstance(index, Scalar) else low.read(index, out, c_index).expr
        sel = Select(Cmp(Paren(s), "<", 0), Add(Paren(s), n), Paren(s))
    extra = {axis: Ix(Signed(Paren(sel)), 0, n)}
    return low.converted(low.read(inp, out, c_index, extra).expr, inp.dtype, out.dtype)


def _lookup(low: ExprLowering, expr: Expr, out: TensorView, c_index) -> Value:
    """index_select, gather and take_along_axis read their lookup table (in global memory)
    at the index tensor's value on axis `dim`, and on every other axis at the output's own
    position: out[.., j, ..] = table[.., index[..], ..]. The other axes are seeded here
    from the output's logical indices, not only through the domain map: torch.gather's
    index may be smaller than the table, so the map leaves those axes unpaired (their
    extents differ), yet output element (i, j) still reads table row i. A broadcast axis
    of the table (take_along_axis broadcasts it against the index) reads position 0."""
    inp, index = expr.inputs[0], expr.inputs[1]
    p_ids, o_ids = _logical_noreduction(inp), _logical_noreduction(out)
    axis = p_ids[expr.dim]
    n = low.ext.of(axis)
    idx = low.read(index, out, c_index).expr
    extra = {axis: Ix(Signed(Paren(idx)), 0, n)}
    if len(p_ids) == len(o_ids):
        for k, (pid, oid) in enumerate(zip(p_ids, o_ids)):
            if k == expr.dim:
                continue
            if pid.is_broadcast:
                extra[pid] = Ix(0, 0, 1)
            elif oid in c_index:
                extra[pid] = c_index[oid]
    return low.converted(low.read(inp, out, c_index, extra).expr, inp.dtype, out.dtype)


def _w(t: cexpr.Term) -> cexpr.Term:
    """`t` as a comparison's operand: parenthesised unless a constant or a plain name."""
    return t if isinstance(t, int) or isinstance(t, Var) and t.name.isidentifier() else Paren(t)
