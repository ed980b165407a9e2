"""How each op is spelled in C, for the CUDA code generator.

Every function returns a C expression string over the runtime headers
(engine/runtime/headers/*.cuh). Conventions:
- `dtype` is the engine DataType the op computes in, already promoted: for arithmetic it
  is the result type; for predicates and comparisons (isnan, lt, logical_and, ...) it is
  the operands' type and the expression is `bool`. Operand strings are C expressions
  already of that type. Low-precision floats (bf16, fp16, fp8, fp4) never compute: the
  generator casts them to float first (see `compute_dtype`).
- Semantics are engine/reference/pointwise.py's (torch on the CPU): NaN-propagating maximum and
  minimum, truncating integer division, Python-style remainder, torch's shifts and
  integer pow, the reference's `a + c * (b - a)` lerp.
- An op or dtype this table cannot spell raises CompileError naming it.

Floating-point contraction: nvcc contracts `a * b + c` into an fma by default, which rounds
once where the reference rounds twice. Ops whose torch formula has such a pattern (lerp)
use the runtime's non-contracting helpers; across separate ops it is the generator's or
the compile options' (`--fmad=false`) choice.
"""

from __future__ import annotations

import math
import struct

from engine.dtypes import DataType, promote
from engine.errors import CompileError
from engine.ops.arith import (
    ARITH_BINARY,
    BITWISE_BINARY,
    BOOL_UNARY,
    COMPARE_BINARY,
    FLOAT_UNARY,
    SAME_UNARY,
)

_F = DataType.Float
_D = DataType.Double
_I64 = (DataType.Int, DataType.Index)
_I32 = DataType.Int32
_B = DataType.Bool

# ---- dtype classes -----------------------------------------------------------------------


def _is_fp(dtype: DataType) -> bool:
    return dtype in (_F, _D)


def _is_int(dtype: DataType) -> bool:
    return dtype in _I64 or dtype == _I32


def _check_compute(op: str, dtype: DataType) -> None:
    if dtype.is_complex:
        raise CompileError(f"{op}: complex types ({dtype.cuda_name}) are not supported by the CUDA code generator")
    if dtype.is_low_precision_float:
        raise CompileError(
            f"{op}: {dtype.cuda_name} is a storage type; cast the operands to float first "
            f"(ops_table.compute_dtype says which type an op computes in)"
        )
    if dtype == DataType.Null:
        raise CompileError(f"{op}: no dtype given")


def _unsupported(op: str, dtype: DataType) -> CompileError:
    return CompileError(f"{op}: not defined for {dtype.cuda_name} (torch rejects it too)")


def _unknown(kind: str, op: str) -> CompileError:
    return CompileError(f"unknown {kind} op '{op}': ops_table has no CUDA spelling for it")


# ---- unary -------------------------------------------------------------------------------

# Ops that are one CUDA math call matching torch: float name, double name.
_MATH_CALLS: dict[str, tuple[str, str]] = {
    "exp": ("expf", "exp"), "exp2": ("exp2f", "exp2"), "expm1": ("expm1f", "expm1"),
    "log": ("logf", "log"), "log2": ("log2f", "log2"), "log10": ("log10f", "log10"),
    "log1p": ("log1pf", "log1p"), "sqrt": ("sqrtf", "sqrt"),
    "sin": ("sinf", "sin"), "cos": ("cosf", "cos"), "tan": ("tanf", "tan"),
    "asin": ("asinf", "asin"), "acos": ("acosf", "acos"), "atan": ("atanf", "atan"),
    "sinh": ("sinhf", "sinh"), "cosh": ("coshf", "cosh"), "tanh": ("tanhf", "tanh"),
    "asinh": ("asinhf", "asinh"), "acosh": ("acoshf", "acosh"), "atanh": ("atanhf", "atanh"),
    "erf": ("erff", "erf"), "erfc": ("erfcf", "erfc"), "erfcinv": ("erfcinvf", "erfcinv"),
    "lgamma": ("lgammaf", "lgamma"),
    "ceil": ("ceilf", "ceil"), "floor": ("floorf", "floor"), "trunc": ("truncf", "trunc"),
    # torch.round rounds half to even, as rint in the default rounding mode
    "round": ("rintf", "rint"), "abs": ("fabsf", "fabs"),
}
# Ops spelled with an overloaded runtime helper (float and double).
_FP_HELPERS: dict[str, str] = {
    "rsqrt": "fsRsqrt", "reciprocal": "fsReciprocal", "sigmoid": "fsSigmoid", "gelu": "fsGelu",
    "silu": "fsSilu", "erfinv": "fsErfinv", "digamma": "fsDigamma", "relu": "fsRelu",
    "frac": "fsFrac", "sign": "fsSign",
}
_PREDICATES: dict[str, str] = {
    "isfinite": "fsIsfinite", "isinf": "fsIsinf", "isnan": "fsIsnan", "isneginf": "fsIsneginf",
    "isposinf": "fsIsposinf", "signbit": "fsSignbit",
}


def unary(op: str, x: str, dtype: DataType) -> str:
    """C expression of a unary op on `x` (of type `dtype`)."""
    if op in ("real", "imag"):  # only built on complex operands (engine.ops.arith.real/imag)
        raise CompileError(f"{op}: complex types ({dtype.cuda_name}) are not supported by the CUDA code generator")
    if op not in FLOAT_UNARY and op not in SAME_UNARY and op not in BOOL_UNARY:
        raise _unknown("unary", op)
    _check_compute(op, dtype)
    if op in _PREDICATES:
        return f"{_PREDICATES[op]}({x})"
    if op == "isreal":
        return "true"  # complex operands were refused above: every value is real
    if op == "logical_not":
        return f"(!{x})" if dtype == _B else f"({x} == {literal(0, dtype)})"
    if _is_fp(dtype):
        if op == "neg":
            return f"(-{x})"
        if op == "bitwise_not":
            raise _unsupported(op, dtype)
        if op in _MATH_CALLS:
            return f"{_MATH_CALLS[op][dtype == _D]}({x})"
        return f"{_FP_HELPERS[op]}({x})"
    if op in FLOAT_UNARY:
        raise CompileError(
            f"{op}: computes in float; cast the {dtype.cuda_name} operand to float first "
            f"(compute_dtype gives the type)"
        )
    if dtype == _B:
        if op == "bitwise_not":
            return f"(!{x})"
        if op == "sign":
            return x
        raise _unsupported(op, dtype)
    # integers
    if op == "neg":
        return f"(-{x})"
    if op == "abs":
        return f"fsAbs({x})"
    if op in ("ceil", "floor", "round", "trunc"):
        return x  # integral already
    if op == "relu":
        return f"fsRelu({x})"
    if op == "sign":
        return f"fsSign({x})"
    if op == "bitwise_not":
        return f"(~{x})"
    raise _unsupported(op, dtype)  # frac


# ---- binary ------------------------------------------------------------------------------

_CMP = {"lt": "<", "le": "<=", "gt": ">", "ge": ">=", "eq": "==", "ne": "!="}
_BITWISE = {"bitwise_and": "&", "bitwise_or": "|", "bitwise_xor": "^"}


def binary(op: str, a: str, b: str, dtype: DataType, b_value: float | int | None = None) -> str:
    """C expression of a binary op on `a` and `b` (both of type `dtype`); `b_value` is b's value
    when it is a compile-time constant."""
    if op not in ARITH_BINARY and op not in COMPARE_BINARY and op not in BITWISE_BINARY:
        raise _unknown("binary", op)
    _check_compute(op, dtype)
    if op in _CMP:
        return f"({a} {_CMP[op]} {b})"
    if op in ("logical_and", "logical_or"):
        sym = "&&" if op == "logical_and" else "||"
        if dtype == _B:
            return f"({a} {sym} {b})"
        zero = literal(0, dtype)
        return f"(({a} != {zero}) {sym} ({b} != {zero}))"
    if op in _BITWISE:
        if _is_fp(dtype):
            raise _unsupported(op, dtype)
        if dtype == _B:
            return f"static_cast<bool>({a} {_BITWISE[op]} {b})"
        return f"({a} {_BITWISE[op]} {b})"
    if op in ("bitwise_left_shift", "bitwise_right_shift"):
        if not _is_int(dtype):
            raise _unsupported(op, dtype)
        fn = "fsShiftLeft" if op == "bitwise_left_shift" else "fsShiftRight"
        return f"{fn}({a}, {b})"
    if op in ("logical_right_shift", "gcd"):
        if not _is_int(dtype):
            raise _unsupported(op, dtype)
        fn = "fsLogicalShiftRight" if op == "logical_right_shift" else "fsGcd"
        return f"{fn}({a}, {b})"
    if dtype == _B:
        # torch on bools: add is or, mul is and, maximum or, minimum and; the rest raise
        if op in ("add", "maximum"):
            return f"({a} || {b})"
        if op in ("mul", "minimum"):
            return f"({a} && {b})"
        raise _unsupported(op, dtype)
    if op in ("add", "sub", "mul"):
        sym = {"add": "+", "sub": "-", "mul": "*"}[op]
        return f"({a} {sym} {b})"
    if op == "div":
        return f"({a} / {b})" if _is_fp(dtype) else f"fsDiv({a}, {b})"
    if op in ("mod", "fmod"):  # the reference computes "mod" with torch.fmod
        return f"fsFmod({a}, {b})"
    if op == "remainder":
        return f"fsRemainder({a}, {b})"
    if op == "pow":
        if _is_fp(dtype) and b_value in (1, 2, 3) and not isinstance(b_value, bool):
            # x**2 and x**3 as products, as torch's kernels compute them (powf is a long
            # library routine: it made RMSNorm's sum of squares compute-bound).
            return "(" + " * ".join([a] * int(b_value)) + ")"
        return f"fsPow({a}, {b})"
    if op == "maximum":
        return f"fsMax({a}, {b})"
    if op == "minimum":
        return f"fsMin({a}, {b})"
    if op == "nextafter":
        if not _is_fp(dtype):
            raise _unsupported(op, dtype)
        return f"{'nextafter' if dtype == _D else 'nextafterf'}({a}, {b})"
    if op == "atan2":
        if not _is_fp(dtype):
            raise CompileError(f"atan2: computes in float; cast the {dtype.cuda_name} operands first")
        return f"{'atan2' if dtype == _D else 'atan2f'}({a}, {b})"
    raise _unknown("binary", op)


# ---- ternary -----------------------------------------------------------------------------


def ternary(op: str, a: str, b: str, c: str, dtype: DataType) -> str:
    """C expression of where(a, b, c) (a bool; b, c of `dtype`), clamp(a, b, c) or
    lerp(a, b, c) (start, end, weight), all of type `dtype`."""
    if op not in ("where", "clamp", "lerp"):
        raise _unknown("ternary", op)
    _check_compute(op, dtype)
    if op == "where":
        return f"({a} ? {b} : {c})"
    if op == "clamp":
        return f"fsClamp({a}, {b}, {c})"
    if dtype == _B:
        raise _unsupported(op, dtype)
    return f"fsLerp({a}, {b}, {c})"


# ---- casts -------------------------------------------------------------------------------

# float -> storage type, and storage type -> float
_FROM_FLOAT = {
    DataType.Half: "__float2half", DataType.BFloat16: "__float2bfloat",
    DataType.Float8_e4m3fn: "__float2e4m3", DataType.Float8_e5m2: "__float2e5m2",
    DataType.Float8_e8m0fnu: "__float2e8m0", DataType.Float4_e2m1fn: "__float2e2m1",
}
_FROM_DOUBLE = {
    DataType.Half: "__double2half", DataType.BFloat16: "__double2bfloat",
    DataType.Float8_e4m3fn: "__double2e4m3", DataType.Float8_e5m2: "__double2e5m2",
    DataType.Float8_e8m0fnu: "__double2e8m0", DataType.Float4_e2m1fn: "__double2e2m1",
}
_TO_FLOAT = {
    DataType.Half: "__half2float", DataType.BFloat16: "__bfloat2float",
    DataType.Float8_e4m3fn: "__e4m32float", DataType.Float8_e5m2: "__e5m22float",
    DataType.Float8_e8m0fnu: "__e8m02float", DataType.Float4_e2m1fn: "__e2m12float",
}


# The same for a read that must convert on its own (kops.Cast.each)
_TO_FLOAT_EACH = {DataType.Half: "fsHalfToFloatEach", DataType.BFloat16: "fsBfloatToFloatEach"}


def cast(x: str, src: DataType, dst: DataType, each: bool = False) -> str:
    """C expression converting `x` from `src` to `dst` exactly as the reference's casts:
    storage types go through float (torch's c10 types convert only from float, so a double
    or an int64 rounds twice there too); -> fp8/fp4 saturate (nvfp4.py's rules); -> bool is
    `!= 0` (NaN is true); float -> int truncates (out of range is undefined in torch too).
    `each`: a half or bfloat16 value is converted by a conversion of its own, which the
    compiler keeps apart from other conversions of the same value (same result)."""
    for d in (src, dst):
        if d.is_complex or d == DataType.Null:
            raise CompileError(f"cast {src.cuda_name} -> {dst.cuda_name}: {d.cuda_name} is not supported")
    if src == dst or (src in _I64 and dst in _I64):
        return x
    if src.is_low_precision_float:
        to_float = _TO_FLOAT_EACH.get(src, _TO_FLOAT[src]) if each else _TO_FLOAT[src]
        return cast(f"{to_float}({x})", _F, dst)
    if dst.is_low_precision_float:
        if src == _D:
            return f"{_FROM_DOUBLE[dst]}({x})"
        if src == _F:
            return f"{_FROM_FLOAT[dst]}({x})"
        return f"{_FROM_FLOAT[dst]}(static_cast<float>({x}))"
    if dst == _B:
        return f"({x} != {literal(0, src)})"
    return f"static_cast<{dst.cuda_name}>({x})"


# ---- literals ----------------------------------------------------------------------------


def _to_f32(v: float) -> float:
    """v rounded to float32 (inf when it rounds beyond float's range)."""
    try:
        return struct.unpack("<f", struct.pack("<f", v))[0]
    except OverflowError:
        return math.copysign(math.inf, v)


def _float32_repr(v: float) -> str:
    """The shortest decimal that reads back as the same float32."""
    f32 = _to_f32(v)
    for digits in range(1, 10):
        s = f"{f32:.{digits}g}"
        if _to_f32(float(s)) == f32:
            break
    if "e" not in s and "." not in s and "inf" not in s:
        s += ".0"
    return s


def _double_repr(v: float) -> str:
    s = repr(v)
    if "e" not in s and "." not in s:
        s += ".0"
    return s


def literal(value: float | int | bool, dtype: DataType) -> str:
    """A C literal of `dtype` holding `value` (a float value is rounded to the type, as
    torch.full would). inf, nan and -0.0 are exact; float literals carry an `f`."""
    if dtype.is_complex or dtype == DataType.Null:
        raise CompileError(f"literal {value!r}: {dtype.cuda_name} is not supported")
    if dtype == _B:
        return "true" if value else "false"
    if _is_int(dtype):
        if isinstance(value, float):
            if not math.isfinite(value):
                raise CompileError(f"literal {value!r} cannot be {dtype.cuda_name}")
            value = int(value)
        v = int(value)
        bits = 32 if dtype == _I32 else 64
        lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
        if not lo <= v <= hi:
            raise CompileError(f"literal {v} does not fit {dtype.cuda_name}")
        if bits == 32:
            return "(-2147483647 - 1)" if v == lo else str(v) if v >= 0 else f"({v})"
        text = "(-9223372036854775807LL - 1)" if v == lo else f"{v}LL"
        return f"static_cast<{dtype.cuda_name}>({text})"
    v = float(value)
    if dtype.is_low_precision_float:
        return f"{_FROM_FLOAT[dtype]}({literal(v, _F)})"
    if math.isnan(v):
        return "NAN" if dtype == _F else "static_cast<double>(NAN)"
    if math.isinf(v):
        if dtype == _F:
            return "INFINITY" if v > 0 else "(-INFINITY)"
        return "static_cast<double>(INFINITY)" if v > 0 else "(-static_cast<double>(INFINITY))"
    if dtype == _F:
        f32 = _to_f32(v)
        if math.isinf(f32):  # rounds beyond float's range: inf, as torch does
            return "INFINITY" if v > 0 else "(-INFINITY)"
        s = _float32_repr(f32)
        return f"{s}f" if not s.startswith("-") else f"({s}f)"
    s = _double_repr(v)
    return s if not s.startswith("-") else f"({s})"


# ---- reductions --------------------------------------------------------------------------

REDUCTION_OPS = ("add", "mul", "max", "min")


def reduction_init(op: str, dtype: DataType) -> str:
    """The identity of a reduction (engine/ops/reduction.py's initial values): 0, 1, the
    lowest value (-inf for floats) for max, the highest for min; bools: false/true."""
    if op not in REDUCTION_OPS:
        raise _unknown("reduction", op)
    _check_compute(op, dtype)
    if dtype == _B:
        return {"add": "false", "mul": "true", "max": "false", "min": "true"}[op]
    if op == "add":
        return literal(0, dtype)
    if op == "mul":
        return literal(1, dtype)
    if _is_fp(dtype):
        return literal(-math.inf if op == "max" else math.inf, dtype)
    bits = 32 if dtype == _I32 else 64
    return literal(-(1 << (bits - 1)) if op == "max" else (1 << (bits - 1)) - 1, dtype)


def reduction_combine(op: str, a: str, b: str, dtype: DataType) -> str:
    """C expression combining two partial results (torch.amax/amin propagate NaN)."""
    if op not in REDUCTION_OPS:
        raise _unknown("reduction", op)
    _check_compute(op, dtype)
    if dtype == _B:
        return f"({a} || {b})" if op in ("add", "max") else f"({a} && {b})"
    if op == "add":
        return f"({a} + {b})"
    if op == "mul":
        return f"({a} * {b})"
    return f"{'fsMax' if op == 'max' else 'fsMin'}({a}, {b})"


def reduction_lambda(op: str, dtype: DataType) -> str:
    """A C++ lambda for blockAllReduce / gridReduce's `op` argument."""
    t = dtype.cuda_name
    return f"[](const {t}& a, const {t}& b) {{ return {reduction_combine(op, 'a', 'b', dtype)}; }}"


# ---- compute types -----------------------------------------------------------------------


def _float_of(dtype: DataType) -> DataType:
    return _F if dtype.is_low_precision_float else dtype


def compute_dtype(op: str, operand_dtypes: list[DataType]) -> DataType:
    """The DataType to pass as `dtype` for `op` over operands of these types: the promoted
    operand type, low-precision floats raised to float, and integers/bools raised to float
    for float-valued math (exp, atan2, ...). For `where` the condition is left out; for
    `cast` the source type's compute type."""
    if not operand_dtypes:
        raise CompileError(f"{op}: no operand types given")
    types = list(operand_dtypes)
    if op == "where" and len(types) == 3:
        types = types[1:]
    t = types[0]
    for d in types[1:]:
        t = promote(t, d)
    if op in FLOAT_UNARY or op == "atan2":
        if t.is_integer or t.is_bool:
            return _F
    return _float_of(t)


def grid_reduce_buffer_sizes(
    grid: tuple[int, int, int],
    block: tuple[int, int, int],
    block_flags: tuple[bool, bool, bool],
    thread_flags: tuple[bool, bool, bool],
) -> tuple[int, int]:
    """(work_buf elements, sync_flags elements) one gridReduce / gridWelford call site needs
    (grid_reduce.cuh). sync_flags are nvfuser_index_t, zeroed once before the first launch;
    gridWelford needs three work buffers of this size (avg, m2, n)."""
    work = grid[0] * grid[1] * grid[2]
    for size, reduced in zip(block, thread_flags):
        work *= 1 if reduced else size
    flags = 1
    for size, reduced in zip(grid, block_flags):
        flags *= 1 if reduced else size
    return work, flags
