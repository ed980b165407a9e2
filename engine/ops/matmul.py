"""matmul, linear and grouped_mm, with torch's shape rules. The output carries the
contracted K axis as a trailing reduction IterDomain, as nvFuser's MatmulOp/LinearOp/
GroupedMmaOp outputs do."""

from __future__ import annotations

from engine.errors import FusionDefinitionError
from engine.ir import rfactor as _rfactor
from engine.ir.aten_exprs import GroupedMmaOp
from engine.ir.exprs import LinearOp, MatmulOp
from engine.ir.iterdomain import IterDomain, IterType
from engine.ir.tensorview import TensorView
from engine.ops.arith import add, cast
from engine.ops.axes import broadcast
from engine.ops.common import check_tensor, copy_id, new_tv, no_reductions

__all__ = ["grouped_mm", "linear", "matmul"]


def _check_float(op: str, *tvs: TensorView) -> None:
    for t in tvs:
        if not t.dtype.is_float:
            raise FusionDefinitionError(f"{op}: {t.short_name} must be a floating tensor, got {t.dtype.cuda_name}")
    if len({t.dtype for t in tvs}) != 1:
        kinds = ", ".join(f"{t.short_name} is {t.dtype.cuda_name}" for t in tvs)
        raise FusionDefinitionError(f"{op}: operands must have one dtype ({kinds})")


def _check_k(op: str, a: TensorView, ka: IterDomain, b: TensorView, kb: IterDomain) -> None:
    ea, eb = ka.extent, kb.extent
    if ea.is_const and eb.is_const and ea.value != eb.value:
        raise FusionDefinitionError(
            f"{op}: contracted sizes differ: {a.short_name} has {ea.value}, {b.short_name} has {eb.value}"
        )


def _batch(op: str, fusion, a: TensorView, ba: list[IterDomain], b: TensorView, bb: list[IterDomain]) -> list[IterDomain]:
    """Broadcast the batch axes (right-aligned), as torch.matmul does."""
    n = max(len(ba), len(bb))
    ba = [None] * (n - len(ba)) + ba
    bb = [None] * (n - len(bb)) + bb
    out = []
    for k, (x, y) in enumerate(zip(ba, bb)):
        cands = [i for i in (x, y) if i is not None and not i.is_broadcast]
        if not cands:
            src = x if x is not None else y
            out.append(copy_id(fusion, src))
            continue
        if len(cands) == 2:
            ex, ey = cands[0].extent, cands[1].extent
            if ex.is_const and ey.is_const and ex.value != ey.value:
                raise FusionDefinitionError(
                    f"{op}: batch axis {k} does not broadcast: {a.short_name} has {ex.value}, "
                    f"{b.short_name} has {ey.value}"
                )
        out.append(IterDomain(fusion, cands[0].extent, IterType.Iteration))
    return out


def matmul(arg1: TensorView, arg2: TensorView) -> TensorView:
    """torch.matmul: 1-D operands are vectors, batch axes broadcast; output dtype is the
    inputs' dtype."""
    a = check_tensor("matmul", arg1, "arg1")
    b = check_tensor("matmul", arg2, "arg2")
    _check_float("matmul", a, b)
    da, db = no_reductions(a), no_reductions(b)
    if not da or not db:
        raise FusionDefinitionError(f"matmul: operands must have rank >= 1 ({a.short_name}, {b.short_name})")
    fusion = a.fusion
    ka = da[-1]
    kb = db[0] if len(db) == 1 else db[-2]
    _check_k("matmul", a, ka, b, kb)
    ids: list[IterDomain] = []
    if len(da) == 1 and len(db) == 1:
        pass
    elif len(da) == 1:
        ids = _batch("matmul", fusion, a, [], b, db[:-2]) + [copy_id(fusion, db[-1])]
    elif len(db) == 1:
        ids = _batch("matmul", fusion, a, da[:-2], b, []) + [copy_id(fusion, da[-2])]
    else:
        ids = _batch("matmul", fusion, a, da[:-2], b, db[:-2]) + [copy_id(fusion, da[-2]), copy_id(fusion, db[-1])]
    ids.append(IterDomain(fusion, ka.extent, IterType.Reduction))
    out = new_tv(fusion, ids, a.dtype)
    MatmulOp(fusion, out, a, b)
    return out


def linear(arg1: TensorView, arg2: TensorView, bias: TensorView | None = None) -> TensorView:
    """torch.nn.functional.linear: arg1 [..., K], weight arg2 [N, K] or [K], bias [N] or [].

    As in nvFuser, the weight may have leading axes before [N, K] (meant to be parallelized
    on devices: a weight cut into `D` column blocks, [D, N, K], with bias [D, N]); they lead
    the output: [D, ..., N], each block's linear of the whole input."""
    a = check_tensor("linear", arg1, "arg1")
    w = check_tensor("linear", arg2, "arg2")
    tvs = [a, w]
    if bias is not None:
        tvs.append(check_tensor("linear", bias, "bias"))
    _check_float("linear", *tvs)
    da, dw = no_reductions(a), no_reductions(w)
    if not da:
        raise FusionDefinitionError(f"linear: {a.short_name} must have rank >= 1")
    if not dw:
        raise FusionDefinitionError(f"linear: weight {w.short_name} must have rank >= 1")
    _check_k("linear", a, da[-1], w, dw[-1])
    fusion = a.fusion
    extra = dw[:-2]  # the leading weight axes of a [..., N, K] weight
    ids = [copy_id(fusion, i) for i in extra] + [copy_id(fusion, i) for i in da[:-1]]
    if len(dw) >= 2:
        ids.append(copy_id(fusion, dw[-2]))
    if bias is not None:
        db = no_reductions(bias)
        want = len(dw) - 1
        if len(dw) >= 2 and len(db) not in (want, 0) or len(dw) == 1 and db:
            shape = "[" + ", ".join([*(str(i.extent.inline()) for i in extra), "N"]) + "]"
            raise FusionDefinitionError(
                f"linear: bias {bias.short_name} has rank {len(db)}; it must be {shape} (or 0-D)"
            )
        if len(dw) >= 2 and db:
            for k, (i, j) in enumerate(zip(db, dw[:-1])):
                eb, en = i.extent, j.extent
                if eb.is_const and en.is_const and eb.value != en.value:
                    what = "outputs" if k == len(db) - 1 else f"along axis {k}"
                    raise FusionDefinitionError(
                        f"linear: bias {bias.short_name} has {eb.value} elements but weight {w.short_name} "
                        f"has {en.value} {what}"
                    )
    ids.append(IterDomain(fusion, da[-1].extent, IterType.Reduction))
    out = new_tv(fusion, ids, a.dtype)
    LinearOp(fusion, out, a, w, bias)
    return out


def grouped_mm(mat1: TensorView, mat2: TensorView, offsets: TensorView, *scaled: object, **kw: object) -> TensorView:
    """torch._grouped_mm: the groups end at the cumulative `offsets` (1-D, g entries) along
    the axis that one 2-D operand splits. [m, k] x [k, n] splits k: [g, m, n];
    [g, m, k] x [k, n] splits n: [m, n]; [m, k] x [g, k, n] splits m: [m, n]. The scaled
    form (scale1, scale2, alpha, bias, beta, ...) is not supported."""
    if scaled or kw:
        raise FusionDefinitionError("grouped_mm: the scaled form (scale1, scale2, alpha, bias, beta, dtype, "
                                    "output block scales) is not supported; only grouped_mm(mat1, mat2, offsets)")
    a = check_tensor("grouped_mm", mat1, "mat1")
    b = check_tensor("grouped_mm", mat2, "mat2")
    offs = check_tensor("grouped_mm", offsets, "offsets")
    _check_float("grouped_mm", a, b)
    if not offs.dtype.is_integer or len(no_reductions(offs)) != 1:
        raise FusionDefinitionError(f"grouped_mm: offsets {offs.short_name} must be a 1-D integer tensor")
    da, db = no_reductions(a), no_reductions(b)
    fusion = a.fusion
    if (len(da), len(db)) == (2, 2):
        ids = [copy_id(fusion, no_reductions(offs)[0]), copy_id(fusion, da[0]), copy_id(fusion, db[1])]
    elif (len(da), len(db)) == (3, 2):
        ids = [copy_id(fusion, da[1]), copy_id(fusion, db[1])]
    elif (len(da), len(db)) == (2, 3):
        ids = [copy_id(fusion, da[0]), copy_id(fusion, db[2])]
    else:
        raise FusionDefinitionError(f"grouped_mm: operands of rank {len(da)} and {len(db)}; one must be 2-D and "
                                    "the other 2-D or 3-D (two 3-D operands are a bmm)")
    ka, kb = da[-1], db[-2]
    _check_k("grouped_mm", a, ka, b, kb)
    ids.append(IterDomain(fusion, ka.extent, IterType.Reduction))
    out = new_tv(fusion, ids, a.dtype)
    GroupedMmaOp(fusion, out, a, b, offs)
    return out


def _bias_after(total: TensorView, bias: TensorView) -> TensorView:
    """A rfactor'ed linear's bias, added once to the sum of its partials (in the dtype the
    linear had: an add of half-precision floats computes in float). A bias [E..., N] of a
    weight with leading axes is broadcast over the input's axes between them."""
    nt, nb = len(no_reductions(total)), len(no_reductions(bias))
    if nb >= 2 and nt > nb:
        bias = broadcast(bias, [False] * (nb - 1) + [True] * (nt - nb) + [False])
    out = add(total, bias)
    return out if out.dtype == total.dtype else cast(out, total.dtype)


_rfactor.ADD_BIAS = _bias_after
