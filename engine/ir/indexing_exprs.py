"""Expressions that read a tensor at given indices: select, index_select and gather."""

from __future__ import annotations

from engine.ir.base import Expr, Val
from engine.ir.expr_text import operand, two_lines
from engine.ir.iterdomain import IterDomain


class SelectOp(Expr):
    """Select one index of `dim`; the output drops that axis."""

    op_name = "select"

    def __init__(self, fusion, out: Val, inp: Val, dim: int, index: Val) -> None:
        super().__init__(fusion, [inp, index], [out], dim=dim)

    @property
    def index(self) -> Val:
        return self.inputs[1]

    @property
    def select_axis(self) -> IterDomain:
        return [i for i in self.input.domain.logical if not i.is_reduction][self.dim]

    def to_string(self, indent: int = 0) -> str:
        rhs = f"select( {self.input}, axis = {self.select_axis}, index = {operand(self.index)} )"
        return two_lines(self.output, rhs, indent)


class IndexSelectOp(Expr):
    op_name = "index_select"

    def __init__(self, fusion, out: Val, inp: Val, dim: int, index: Val) -> None:
        super().__init__(fusion, [inp, index], [out], dim=dim)

    def to_string(self, indent: int = 0) -> str:
        inp, index = self.inputs
        return two_lines(self.output, f"indexSelect( {inp}, dim = {self.dim}, {index} )", indent)


class GatherOp(Expr):
    """torch.gather along `dim` (take_along_axis when `exact_sizes`)."""

    op_name = "gather"

    def __init__(self, fusion, out: Val, inp: Val, dim: int, index: Val, exact_sizes: bool = False) -> None:
        super().__init__(fusion, [inp, index], [out], dim=dim, exact_sizes=exact_sizes)

    def to_string(self, indent: int = 0) -> str:
        inp, index = self.inputs
        if self.exact_sizes:
            return two_lines(self.output, f"takeAlongAxis( {inp}, {index}, dim = {self.dim} )", indent)
        return two_lines(self.output, f"torchGather( {inp}, dim = {self.dim}, {index} )", indent)


# Ops that read their first input (the lookup table) at positions taken from data.
INDEXING_OPS = (SelectOp, IndexSelectOp, GatherOp)
