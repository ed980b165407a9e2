"""Reduction expressions: ReductionOp and WelfordOp, and the first halves of their rfactor'ed
forms."""

from __future__ import annotations

from engine.ir.base import Expr, Val
from engine.ir.expr_text import ind, two_lines, typed_value


class ReductionOp(Expr):
    """op is add, max, min or mul; `init` is the initial value (a number)."""

    op_name = "reduction"

    def __init__(self, fusion, op: str, out: Val, inp: Val, init: float | int | bool,
                 allreduce: bool = False) -> None:
        super().__init__(fusion, [inp], [out], op=op, init=init, allreduce=allreduce)

    def to_string(self, indent: int = 0) -> str:
        init = typed_value(self.init, self.output.dtype)
        rhs = (f"reduction( {self.input}, op = {self.op}, initial value = {init}, "
               f"allreduce = {'true' if self.allreduce else 'false'} )")
        return two_lines(self.output, rhs, indent)


class RFactorReductionOp(ReductionOp):
    """The first half of an rfactor'ed reduction: its output's logical domain is a
    transformed (split/merged) view of its root, which the reduction works on."""


class WelfordOp(Expr):
    """Outputs (avg, var_sum, count) of a Welford over the reduced axes.

    With one input it is nvFuser's single-value Welford of that input; with three
    (avg, var_sum, count partials, as an rfactor makes) it combines the partials.
    """

    op_name = "welford"

    def __init__(self, fusion, avg: Val, var_sum: Val, n: Val, inp: Val,
                 in_var_sum: Val | None = None, in_n: Val | None = None) -> None:
        ins = [inp] if in_var_sum is None else [inp, in_var_sum, in_n]
        super().__init__(fusion, ins, [avg, var_sum, n], allreduce=False)

    def to_string(self, indent: int = 0) -> str:
        avg, var, n = self.outputs
        i0, i1 = ind(indent), ind(indent + 1)
        if len(self.inputs) == 1:
            ins = f"{self.input}(Avg), "
        else:
            a, v, c = self.inputs
            ins = f"{a}(Avg)\n{i1}  {v}(Var)\n{i1}  {c}(Count)"
        return (f"{i0}{avg}(Avg),\n{i0}{var}(Var),\n{i0}{n}(Count)\n"
                f"{i1} = Welford ( {ins}\n"
                f"{i1}  allreduce = {'true' if self.allreduce else 'false'} )\n")


class RFactorWelfordOp(WelfordOp):
    """The first half of an rfactor'ed Welford: its outputs' logical domains are a
    transformed (split/merged) view of their roots, which the partial Welford works on."""
