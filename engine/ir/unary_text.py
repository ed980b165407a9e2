"""The CUDA spelling nvFuser's listing gives a unary op and a cast (`-x`, `sqrtf(x)`,
`__float2half(x)`, `(int)(x)`): shared by the tensor op (pointwise_exprs.UnaryOp) and the
scalar expressions (scalar.Scalar.inline), which sit below the exprs."""

from __future__ import annotations

from engine.dtypes import DataType

_UNARY_INLINE = {"neg": "-", "logical_not": "!", "bitwise_not": "~"}
# Ops whose CUDA function takes no `f` suffix for float (nvFuser's needFloatSuffix).
_UNARY_NO_SUFFIX = {
    "abs", "cast", "frac", "gelu", "silu", "neg", "relu", "reciprocal", "sigmoid",
    "isfinite", "isinf", "isnan", "signbit", "real", "imag", "bitcast",
}
_LOW_NAMES = {
    DataType.Float: "float",
    DataType.Double: "double",
    DataType.Half: "half",
    DataType.BFloat16: "bfloat",
    DataType.Float8_e4m3fn: "e4m3",
    DataType.Float8_e5m2: "e5m2",
    DataType.Float8_e8m0fnu: "e8m0",
    DataType.Float4_e2m1fn: "e2m1",
}


def cast_func(src: DataType, dst: DataType) -> str:
    """nvFuser's cast function names: `__bfloat2float`, `__float2half`, else `(int)`."""
    if src in _LOW_NAMES and dst in _LOW_NAMES and (
        src.is_low_precision_float or dst.is_low_precision_float
    ):
        return f"__{_LOW_NAMES[src]}2{_LOW_NAMES[dst]}"
    return f"({dst.cuda_name})"


def unary_text(op: str, x: str, src: DataType, dst: DataType) -> str:
    """nvFuser's printing of a unary op on `x` (a tensor's or a scalar's text)."""
    if op in _UNARY_INLINE:
        return f"{_UNARY_INLINE[op]}{x}"
    if op == "cast":
        fn = cast_func(src, dst)
    else:
        fn = op + ("f" if dst == DataType.Float and op not in _UNARY_NO_SUFFIX else "")
    return f"{fn}({x})"
