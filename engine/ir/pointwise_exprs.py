"""Pointwise op expressions: unary (casts included), binary and ternary ops, with the CUDA
spelling nvFuser's listing gives each op."""

from __future__ import annotations

from engine.dtypes import DataType, result_type
from engine.ir.base import Expr, Val
from engine.ir.expr_text import ind, operand, two_lines
from engine.ir.scalar import Scalar
from engine.ir.unary_text import unary_text


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
