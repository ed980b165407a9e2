"""Pointwise ops: unary math, casts, binary and ternary ops with PyTorch's promotion."""

from __future__ import annotations

from engine.dtypes import DataType, category, promote, result_type
from engine.errors import FusionDefinitionError
from engine.ir.base import Val
from engine.ir.exprs import BinaryOp, LoadStoreOp, TernaryOp, UnaryOp
from engine.ir.scalar import SCALAR_DTYPES, Scalar
from engine.ir.scalar import binary as scalar_binary
from engine.ir.scalar import ternary as scalar_ternary
from engine.ir.scalar import unary as scalar_unary
from engine.ir.tensorview import TensorView
from engine.ops.axes import broadcast, set_
from engine.ops.common import Operand, fusion_of, new_tv, no_reductions, pointwise_ids, to_val

# Unary ops that produce floating values from integer or bool input (promote to float).
FLOAT_UNARY = [
    "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sqrt", "rsqrt", "reciprocal",
    "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh", "asinh", "acosh",
    "atanh", "sigmoid", "erf", "erfc", "erfinv", "erfcinv", "lgamma", "digamma", "gelu", "silu",
]
# Unary ops that keep the input's dtype.
SAME_UNARY = ["neg", "abs", "relu", "ceil", "floor", "round", "trunc", "frac", "sign", "bitwise_not"]
# Unary predicates.
BOOL_UNARY = ["isfinite", "isinf", "isnan", "isneginf", "isposinf", "isreal", "signbit", "logical_not"]

ARITH_BINARY = ["add", "sub", "mul", "div", "mod", "fmod", "remainder", "pow", "maximum", "minimum", "atan2",
                "nextafter"]
COMPARE_BINARY = ["lt", "le", "gt", "ge", "eq", "ne", "logical_and", "logical_or"]
BITWISE_BINARY = ["bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_left_shift", "bitwise_right_shift",
                  "logical_right_shift", "gcd"]
# Integer-only binary ops that torch does not define on bool.
_INT_ONLY_BINARY = ("logical_right_shift", "gcd")
# Arithmetic with a bool result that torch refuses (and the kernels cannot spell), and why.
_NOT_ON_BOOL = {
    **{op: f"{op}: not defined for bool operands (torch rejects it too); cast them to a number type first"
       for op in ("sub", "mod", "fmod", "remainder", "pow")},
    "div": "div: bool operands divide as integers here; torch's bool division is truediv (a float quotient): "
           "use fd.ops.truediv, or cast them first",
}


def _make_tensor_out(op: str, operands: list[Val], dtype: DataType) -> TensorView:
    tvs = [v for v in operands if isinstance(v, TensorView)]
    fusion = fusion_of(*tvs)
    return new_tv(fusion, pointwise_ids(op, fusion, tvs), dtype)


def _result_dtype(vals: list[Val]) -> DataType:
    """PyTorch's rule (engine.dtypes.result_type): tensors decide within a category, 0-dim
    tensors and scalars only raise it. A tensor's rank is its logical domain's, reduction
    axes included, as nvFuser counts it: a full reduction's output is not a 0-dim tensor."""
    tensors = [v for v in vals if isinstance(v, TensorView)]
    scalars = [v.dtype for v in vals if not isinstance(v, TensorView)]
    if not tensors:
        out = scalars[0]
        for d in scalars[1:]:
            out = promote(out, d)
        return out
    return result_type([t.dtype for t in tensors if t.domain.logical],
                       [t.dtype for t in tensors if not t.domain.logical], scalars)


def _narrowed(vals: list[Val], dtype: DataType) -> list[Val]:
    """A 0-dim tensor operand of a wider type than the op's (a float one next to a half
    tensor) cast to it first, as torch and nvFuser's promoteValues round it before the op."""
    return [cast(v, dtype) if isinstance(v, TensorView) and promote(v.dtype, dtype) != dtype else v
            for v in vals]


def maybe_broadcast(op: str, vals: list[Val]) -> list[Val]:
    """Right-align tensors of lower rank by adding leading broadcast axes (numpy rule)."""
    tvs = [v for v in vals if isinstance(v, TensorView)]
    if not tvs:
        return vals
    rank = max(len(no_reductions(t)) for t in tvs)
    out = []
    for v in vals:
        if isinstance(v, TensorView):
            r = len(no_reductions(v))
            if r < rank:
                v = broadcast(v, [True] * (rank - r) + [False] * r)
        out.append(v)
    return out


# Scalar-only binary ops (fd.ops name -> engine.ir.scalar op): a derived scalar.
_SCALAR_BINARY = {"add": "add", "sub": "sub", "mul": "mul", "div": "div", "mod": "mod",
                  "maximum": "max", "minimum": "min"}


def _scalar_result(op: str, vals: list[Val], dtype: DataType) -> Scalar:
    # Scalar-only arithmetic: a derived scalar (folded when constant).

    if len(vals) != 2 or not all(isinstance(v, Scalar) for v in vals):
        raise FusionDefinitionError(f"{op}: scalar-only operands are not supported; pass a tensor")
    if not all(v.is_const for v in vals):
        _check_scalar_dtype(op, dtype)
    if op in _SCALAR_BINARY:
        a, b = (_promote_scalar(v, dtype) for v in vals)
        return scalar_binary(_SCALAR_BINARY[op], a, b, dtype)
    # Comparisons, fmod, bitwise ops, pow, ... (Thunder's size arithmetic uses them): the
    # operands keep their types, the op computes as its tensor form does.
    try:
        return scalar_binary(op, vals[0], vals[1], dtype)
    except (RuntimeError, ValueError, ZeroDivisionError) as e:  # folding constants: 2 ** -1, fmod(1, 0)
        raise FusionDefinitionError(f"{op}: {str(e).splitlines()[0]}") from None


def _check_scalar_dtype(op: str, dtype: DataType) -> None:
    if dtype not in SCALAR_DTYPES:
        raise FusionDefinitionError(f"{op}: a scalar of type {dtype.cuda_name} is not supported "
                                    "(bool, integer, float or double)")


def _promote_scalar(v: Scalar, dtype: DataType) -> Scalar:
    """nvFuser's optionalCast: a scalar operand changing category (int to float, any bool)
    gets an explicit cast, one of the same category is used as it is."""
    if v.dtype == dtype or (category(v.dtype) == category(dtype) and not v.dtype.is_bool):
        return v
    return scalar_unary("cast", v, dtype)


def _unary_dtype(op: str, dtype: DataType) -> DataType:
    if op in BOOL_UNARY:
        return DataType.Bool
    if op == "abs" and dtype.is_complex:
        return _REAL_OF[dtype]  # the magnitude, as torch.abs and nvFuser's abs
    if op in FLOAT_UNARY and (dtype.is_integer or dtype.is_bool):
        return DataType.Float  # nvFuser's float_op_config: integers promote to float
    return dtype


def unary(op: str, x: Operand) -> Val:
    v = to_val(x)
    dtype = _unary_dtype(op, v.dtype)
    if op == "bitwise_not" and v.dtype.is_float:
        raise FusionDefinitionError(f"bitwise_not: {v.short_name} is {v.dtype.cuda_name}, not an integer")
    if (op in SAME_UNARY and op not in ("bitwise_not", "sign") and v.dtype.is_bool) or (
            op == "frac" and v.dtype.is_integer):
        # torch defines none of these on bool but sign (the identity there), nor frac on
        # integers; nvFuser has no kernel for them.
        raise FusionDefinitionError(f"{op}: {getattr(v, 'short_name', v)} is {v.dtype.cuda_name}; "
                                    f"cast it to a {'number' if v.dtype.is_bool else 'float'} type first")
    if isinstance(v, Scalar):
        if not v.is_const:
            _check_scalar_dtype(op, v.dtype)
        if op not in BOOL_UNARY:
            v = _promote_scalar(v, dtype)
        return scalar_unary(op, v, dtype)
    if dtype != v.dtype and op in FLOAT_UNARY:
        # nvFuser's float_op_config casts an integer or bool tensor to float before the op
        # (its IR holds the cast); the op itself then computes float to float.
        v = cast(v, dtype)
    out = _make_tensor_out(op, [v], dtype)
    UnaryOp(v.fusion, op, out, v)
    return out


def cast(arg: Operand, dtype: DataType) -> Val:
    v = to_val(arg)
    if not isinstance(dtype, DataType):
        raise FusionDefinitionError(f"cast: dtype must be a DataType, got {dtype!r}")
    if isinstance(v, Scalar):
        if v.is_const:
            value = v.value
            if dtype.is_bool:
                value = bool(value)
            elif dtype.is_integer:
                value = int(value)
            elif dtype.is_float:
                value = float(value)
            return Scalar(dtype, value)

        _check_scalar_dtype("cast", v.dtype)
        _check_scalar_dtype("cast", dtype)
        return scalar_unary("cast", v, dtype)
    out = _make_tensor_out("cast", [v], dtype)
    if dtype == v.dtype:
        LoadStoreOp(v.fusion, out, v)
        return out
    UnaryOp(v.fusion, "cast", out, v)
    return out


def binary(op: str, a: Operand, b: Operand) -> Val:
    vals = [to_val(a), to_val(b)]
    base = _result_dtype(vals)
    vals = maybe_broadcast(op, _narrowed(vals, base))
    if op in COMPARE_BINARY:
        dtype = DataType.Bool
    elif op in BITWISE_BINARY:
        if base.is_float or base.is_complex or (op in _INT_ONLY_BINARY and base.is_bool):
            kinds = "integer" if op in _INT_ONLY_BINARY else "integer or bool"
            raise FusionDefinitionError(f"{op}: operands must be {kinds}, got {base.cuda_name}")
        dtype = base
    elif op == "nextafter":
        # Stepping to the neighbouring value is only exact in the type itself; half and
        # bfloat16 compute in float here, so their neighbour would be float's.
        if base not in (DataType.Float, DataType.Double):
            raise FusionDefinitionError(f"nextafter: operands must be float or double, got {base.cuda_name}")
        dtype = base
    elif op == "atan2" and not base.is_float:
        dtype = DataType.Float
    else:
        dtype = base
    if not any(isinstance(v, TensorView) for v in vals):
        return _scalar_result(op, vals, dtype)
    if dtype.is_bool and op in _NOT_ON_BOOL:
        raise FusionDefinitionError(_NOT_ON_BOOL[op])
    out = _make_tensor_out(op, vals, dtype)
    BinaryOp(out.fusion, op, out, vals[0], vals[1])
    return out


def truediv(a: Operand, b: Operand) -> Val:
    """Division that yields a float for integer operands (Python's `/`)."""
    vals = [to_val(a), to_val(b)]
    if all(v.dtype.is_integer or v.dtype.is_bool for v in vals):
        vals = [to_val(float(v.value)) if isinstance(v, Scalar) and v.is_const else cast(v, DataType.Float)
                for v in vals]
    return binary("div", vals[0], vals[1])


def ternary(op: str, a: Operand, b: Operand, c: Operand) -> Val:
    vals = [to_val(a), to_val(b), to_val(c)]
    if not any(isinstance(v, TensorView) for v in vals):
        return _scalar_ternary(op, vals)
    if op == "where":
        if vals[0].dtype != DataType.Bool:
            raise FusionDefinitionError(
                f"where: condition {getattr(vals[0], 'short_name', '?')} must be bool, "
                f"got {vals[0].dtype.cuda_name}"
            )
        dtype = _result_dtype(vals[1:])
        vals = [vals[0], *_narrowed(vals[1:], dtype)]
    else:
        dtype = _result_dtype(vals)
        vals = _narrowed(vals, dtype)
    vals = maybe_broadcast(op, vals)
    out = _make_tensor_out(op, vals, dtype)
    TernaryOp(out.fusion, op, out, *vals)
    return out


def _scalar_ternary(op: str, vals: list[Val]) -> Scalar:
    """where/clamp/lerp of scalars only (nvFuser binds them on Vals too): a derived scalar,
    folded when constant. The value operands are cast to the promoted result type."""
    if op == "where":
        if not vals[0].dtype.is_bool:
            raise FusionDefinitionError(f"where: condition {vals[0]} must be bool, got {vals[0].dtype.cuda_name}")
        dtype = _result_dtype(vals[1:])
        operands = [vals[0], *(_promote_scalar(v, dtype) for v in vals[1:])]
    else:
        dtype = _result_dtype(vals)
        if op == "lerp" and not dtype.is_float:
            raise FusionDefinitionError(f"lerp: scalar operands must be floating, got {dtype.cuda_name}")
        operands = [_promote_scalar(v, dtype) for v in vals]
    if not all(v.is_const for v in vals):
        for v in vals:
            _check_scalar_dtype(op, v.dtype)
        _check_scalar_dtype(op, dtype)
    return scalar_ternary(op, *operands, dtype)


def where(pred: Operand, a: Operand, b: Operand) -> Val:
    return ternary("where", pred, a, b)


def clamp(x: Operand, lo: Operand, hi: Operand) -> Val:
    return ternary("clamp", x, lo, hi)


def lerp(start: Operand, end: Operand, weight: Operand) -> Val:
    return ternary("lerp", start, end, weight)


_REAL_OF = {DataType.ComplexFloat: DataType.Float, DataType.ComplexDouble: DataType.Double}


def real(arg: Operand) -> Val:
    """The real part: a copy for a real tensor (as torch.real), else a float tensor."""
    v = to_val(arg)
    if not isinstance(v, TensorView):
        raise FusionDefinitionError(f"real: operand must be a tensor, got {v!r}")
    if not v.dtype.is_complex:
        return set_(v)
    out = _make_tensor_out("real", [v], _REAL_OF[v.dtype])
    UnaryOp(v.fusion, "real", out, v)
    return out


def imag(arg: Operand) -> Val:
    """The imaginary part of a complex tensor (torch.imag rejects real tensors too)."""
    v = to_val(arg)
    if not isinstance(v, TensorView):
        raise FusionDefinitionError(f"imag: operand must be a tensor, got {v!r}")
    if not v.dtype.is_complex:
        raise FusionDefinitionError(f"imag: {v.short_name} is {v.dtype.cuda_name}, not complex")
    out = _make_tensor_out("imag", [v], _REAL_OF[v.dtype])
    UnaryOp(v.fusion, "imag", out, v)
    return out


def _bind_unary(name: str):
    def op(arg: Operand) -> Val:
        return unary(name, arg)

    op.__name__ = name
    op.__doc__ = f"Elementwise {name}."
    return op


def _bind_binary(name: str):
    def op(lhs: Operand, rhs: Operand) -> Val:
        return binary(name, lhs, rhs)

    op.__name__ = name
    op.__doc__ = f"Elementwise {name} with broadcasting and type promotion."
    return op


UNARY_OPS = {n: _bind_unary(n) for n in FLOAT_UNARY + SAME_UNARY + BOOL_UNARY}
BINARY_OPS = {n: _bind_binary(n) for n in ARITH_BINARY + COMPARE_BINARY + BITWISE_BINARY}


__all__ = [
    "binary", "cast", "clamp", "imag", "lerp", "real", "ternary", "truediv", "unary", "where",
    *UNARY_OPS, *BINARY_OPS,
]
globals().update(UNARY_OPS)
globals().update(BINARY_OPS)
