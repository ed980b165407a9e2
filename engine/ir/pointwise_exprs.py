"""Pointwise op expressions: unary (casts included), binary and ternary ops, with the CUDA
spelling nvFuser's listing gives each op."""

from __future__ import annotations

from engine.dtypes import DataType, result_type
from engine.ir.base import Expr, Val
from engine.ir.expr_text import ind, operand, two_lines
from engine.ir.scalar import Scalar

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


class UnaryOp(Expr):
    op_name = "unary"

    def __init__(self, fusion, op: str, out: Val, inp: Val) -> None:
        super().__init__(fusion, [inp], [out], op=op)

    def to_string(self, indent: int = 0) -> str:
        inp, out = self.input, self.output
        return two_lines(out, unary_text(self.op, operand(inp), inp.dtype, out.dtype), indent, ";\n")


_BINARY_INLINE = {
    "add": "+", "sub": "-", "mul": "*", "div": "/", "mod": "%",
    "lt": "<", "le": "<=", "gt": ">", "ge": ">=", "eq": "==", "ne": "!=",
    "logical_and": "&&", "logical_or": "||",
    "bitwise_and": "&", "bitwise_or": "|", "bitwise_xor": "^",
    "bitwise_left_shift": "<<", "bitwise_right_shift": ">>",
}
_BINARY_FUNC = {"maximum": "fmax", "minimum": "fmin", "pow": "pow", "atan2": "atan2", "fmod": "fmod",
                "remainder": "remainder", "truediv": "truediv", "nextafter": "nextafter"}
_BINARY_SUFFIX = {"fmax", "fmin", "pow", "atan2", "fmod", "nextafter"}


class BinaryOp(Expr):
    op_name = "binary"

    def __init__(self, fusion, op: str, out: Val, lhs: Val, rhs: Val) -> None:
        super().__init__(fusion, [lhs, rhs], [out], op=op)

    @property
    def lhs(self) -> Val:
        return self.inputs[0]

    @property
    def rhs(self) -> Val:
        return self.inputs[1]

    def operand_dtype(self) -> DataType:
        """The type the operands meet in (a comparison's: its output is bool): torch's
        result_type, where a scalar operand only raises the tensors' category. A bool tensor
        equals 3 in int64 (never), a float tensor is compared with 0.1 rounded to float."""
        tensors = [v.dtype for v in self.inputs if not isinstance(v, Scalar)]
        scalars = [v.dtype for v in self.inputs if isinstance(v, Scalar)]
        return result_type(tensors, (), scalars)

    def to_string(self, indent: int = 0) -> str:
        out = self.output
        pad = ind(indent + 1)
        if self.op in _BINARY_INLINE:
            body = f"{operand(self.lhs)}\n{pad} {_BINARY_INLINE[self.op]} {operand(self.rhs)}"
        else:
            fn = _BINARY_FUNC.get(self.op, self.op)
            if fn in _BINARY_SUFFIX and out.dtype == DataType.Float:
                fn += "f"
            body = f"{fn}({operand(self.lhs)}\n{pad} , {operand(self.rhs)})"
        return two_lines(out, body, indent, ";\n")


class TernaryOp(Expr):
    """where, clamp, lerp, threshold: three operands."""

    op_name = "ternary"

    def __init__(self, fusion, op: str, out: Val, a: Val, b: Val, c: Val) -> None:
        super().__init__(fusion, [a, b, c], [out], op=op)

    def to_string(self, indent: int = 0) -> str:
        a, b, c = (operand(v) for v in self.inputs)
        pad = ind(indent + 1)
        return two_lines(self.output, f"{self.op}({a}\n{pad} , {b}\n{pad} , {c})", indent, ";\n")
