"""A thread-local Welford lowered as two passes over values already in registers: the sum,
then the squared deviations from the mean (more accurate than the serial update, and without
its division per value); and the block combine of such partials, whose counts are equal.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from engine.ir import exprs as ex
from engine.ir.iterdomain import ParallelType
from engine.ir.tensorview import TensorView
from engine.lower import kir
from engine.lower.kexpr import Div, Expr, Lit, Mul, StaticCast, Sub, Var
from engine.lower.loops import LoopNode
from engine.lower.reductions import THREADS, Accumulator, parallel_reduction

if TYPE_CHECKING:
    from engine.lower.lowering import ExprLowering


def cast_source(low: ExprLowering, inp: object) -> TensorView | None:
    """The register buffer `inp` is a cast of (a float Welford over a projected bf16 row),
    or None."""
    d = getattr(inp, "definition", None)
    if not (isinstance(d, ex.UnaryOp) and d.op == "cast" and isinstance(d.inputs[0], TensorView)):
        return None
    src = d.inputs[0]
    buf = low.buffers.get(src)
    return src if buf is not None and buf.memory == "local" else None


def two_pass_steps(low: ExprLowering, expr: ex.WelfordOp, accs: list[Accumulator],
                   loops: list[LoopNode], level: int, preds: list[str],
                   source: TensorView | None = None) -> int | None:
    """How many values each thread folds in, when a thread-local Welford can be two passes over
    values already in its registers: the sum, then the squared deviations from the mean, read
    again after the loop nest (more accurate than the serial update, which also divides at
    every value). Only a single-input Welford over serial loops alone, unpredicated (every
    thread folds the same count), of one accumulator element, whose input is a register
    buffer allocated outside the nest: it also drops the serial update's division per value,
    which makes a persistent layer norm's thread part cheaper. `source`: the buffer the input
    is a cast of (cast_source), read in its place."""
    if len(expr.inputs) != 1 or any(a.size != 1 for a in accs) or preds:
        return None
    threads, blocks = parallel_reduction(expr.outputs[0])
    if any(threads) or any(blocks):
        return None
    inp = source if source is not None else expr.inputs[0]
    if not isinstance(inp, TensorView) or inp not in low.buffers:
        return None
    buf = low.buffers[inp]
    # Allocated in a scope around the nest: only loops that emit nothing (thread- and
    # block-bound levels) may lie between the accumulators' level and the buffer's.
    if buf.memory != "local" or any(not n.virtual for n in loops[level:buf.level]):
        return None
    count = 1
    for node in loops[level:]:
        if node.virtual:
            continue
        # Not an unswitched loop: its bounds may be checked once outside, not in `preds`.
        if node.concrete.parallel_type not in (ParallelType.serial, ParallelType.unroll, ParallelType.vectorize):
            return None
        count *= low.ext.of(node.concrete)
    return count or None  # an empty reduction keeps the update's (0, 0, 0)


def block_welford(low: ExprLowering, expr: ex.WelfordOp, avg: TensorView, preds: list[str]) -> str:
    """The runtime function that combines this Welford's partials across the block:
    blockWelfordFixedCounts (two float all-reductions) when every thread holds the same
    count, that is, it combines the partials of a two-pass thread Welford (a fixed count per
    thread), unpredicated, over reduced thread axes that span their launch dimensions exactly;
    blockWelford otherwise."""
    if len(expr.inputs) != 3 or preds or expr.inputs[2] not in low.fixed_counts:
        return "blockWelford"
    for i in avg.domain.loop:
        if i.is_reduction and i.parallel_type in THREADS:
            if low.ext.of(i) != low.launch_dims.get(i.parallel_type, 1):
                return "blockWelford"
        elif i.is_reduction and low.ext.of(i) > 1:
            return "blockWelford"  # a serial or block part: not the tree alone
    return "blockWelfordFixedCounts"


def second_pass(low: ExprLowering, loops: list[LoopNode], level: int, count: int, x: Expr,
                a_e: Expr, m_e: Expr, n_e: Expr, ct: str) -> list[kir.Stmt]:
    """After the first pass summed the values into the mean's accumulator: the mean, the loops
    again (the same variables, so `x` reads the same values) summing squared deviations, and
    the count."""
    d = Var("fs_d")
    body: list[kir.Stmt] = [kir.Scope([kir.ScalarDef(ct, d.name, Sub(x, a_e)), kir.AddTo(m_e, Mul(d, d))],
                                      inline=True)]
    for node in reversed(loops[level:]):
        if not node.virtual:
            c = node.concrete
            body = [kir.ForLoop(f"i{c.name}", low.ext.of(c), "unroll", str(c), body)]
    return [kir.Assign(a_e, Div(a_e, StaticCast(ct, count))), *body, kir.Assign(n_e, Lit(str(count)))]
