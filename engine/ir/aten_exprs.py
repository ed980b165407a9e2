"""Expressions that this engine evaluates through ATen only: scan, topk, argsort, scatter,
index_put_accumulate and the plain grouped matmul.

nvFuser evaluates grouped_mm and index_put_accumulate with ATen (ExprEval), and first did
the same for scan, argsort, topk and scatter before its greedy scheduler generated kernels
for them. Here all six run as expr_eval segments: `ATEN_ONLY` is the set every kernel
scheduler refuses (engine.schedule.registry), so the segmenter gives each one a segment of
its own. Each prints itself as nvFuser's `toString` does.
"""

from __future__ import annotations

from engine.dtypes import DataType
from engine.ir import exprs as ex
from engine.ir.base import Expr, Val
from engine.ir.exprs import ind, operand, two_lines

# op name -> nvFuser's BinaryOpType as it prints in a scan's op_type.
SCAN_OPS = {"cumsum": "add", "cumprod": "mul", "cummax": "max", "cummin": "min"}


def _bool(b: bool) -> str:
    return "True" if b else "False"


class ScanOp(Expr):
    """An inclusive scan along `dim` (cumsum, cumprod, cummax, cummin): out[i] combines init
    with in[0..i]. inputs: [in, init]."""

    op_name = "scan"

    def __init__(self, fusion, out: Val, inp: Val, init: Val, dim: int, kind: str) -> None:
        super().__init__(fusion, [inp, init], [out], dim=dim, kind=kind)

    def to_string(self, indent: int = 0) -> str:
        i1 = ind(indent + 1)
        inp, init = self.inputs
        return (f"{ind(indent)}{self.output}\n{i1} = scan({inp},\n{i1}        dim={self.dim},\n"
                f"{i1}        op_type={SCAN_OPS[self.kind]},\n{i1}        init={init.inline()})\n")


class TopKOp(Expr):
    """torch.topk along `dim`: outputs (values, int64 indices), axis `dim` of extent k.
    inputs: [in, k]."""

    op_name = "topk"

    def __init__(self, fusion, values: Val, indices: Val, inp: Val, k: Val, dim: int, largest: bool,
                 sorted: bool) -> None:  # noqa: A002 - nvFuser's argument name
        super().__init__(fusion, [inp, k], [values, indices], dim=dim, largest=largest, sorted=sorted)

    def to_string(self, indent: int = 0) -> str:
        values, indices = self.outputs
        inp, k = self.inputs
        return (f"{ind(indent)}( {values}, {indices} ) = topk( {inp}, {operand(k)}, dim = {self.dim}, "
                f"largest = {_bool(self.largest)}, sorted = {_bool(self.sorted)} )\n")


class ArgsortOp(Expr):
    """torch.argsort along `dim`: int64 indices of the input's shape."""

    op_name = "argsort"

    def __init__(self, fusion, out: Val, inp: Val, dim: int, descending: bool, stable: bool) -> None:
        super().__init__(fusion, [inp], [out], dim=dim, descending=descending, stable=stable)

    def to_string(self, indent: int = 0) -> str:
        return (f"{ind(indent)}{self.output} = argsort( {self.input}, dim = {self.dim}, "
                f"descending = {_bool(self.descending)}, stable = {_bool(self.stable)} )\n")


class ScatterOp(Expr):
    """torch.scatter out of place: a copy of `in` with src's elements written where `index`
    points along `dim` (combined by `accumulate`, a SCAN_OPS value, when given). src is a
    tensor or a scalar. inputs: [in, index, src]."""

    op_name = "scatter"

    def __init__(self, fusion, out: Val, inp: Val, dim: int, index: Val, src: Val,
                 accumulate: str | None = None) -> None:
        super().__init__(fusion, [inp, index, src], [out], dim=dim, accumulate=accumulate)

    def to_string(self, indent: int = 0) -> str:
        inp, index, src = self.inputs
        acc = f", accumulate = {self.accumulate}" if self.accumulate else ""
        return two_lines(self.output, f"scatter(in = {inp}, dim = {self.dim}, src = {operand(src)}, "
                                      f"idx = {index}{acc} )", indent)


class IndexPutAccumulateOp(Expr):
    """torch.index_put(acc, (index,), value, accumulate=True) with a 1-D index into axis 0.
    inputs: [acc, index, value]."""

    op_name = "index_put_accumulate"

    def __init__(self, fusion, out: Val, acc: Val, index: Val, value: Val) -> None:
        super().__init__(fusion, [acc, index, value], [out])

    def to_string(self, indent: int = 0) -> str:
        acc, index, value = self.inputs
        return two_lines(self.output, f"indexPutAccumulate( {acc}, {index}, {value} )", indent)


class GroupedMmaOp(Expr):
    """torch._grouped_mm without scales: groups of mat1 x mat2 split by the 1-D cumulative
    `offsets` (group g ends at offsets[g]). inputs: [mat1, mat2, offsets]."""

    op_name = "grouped_mm"

    def __init__(self, fusion, out: Val, mat1: Val, mat2: Val, offsets: Val) -> None:
        super().__init__(fusion, [mat1, mat2, offsets], [out])

    def to_string(self, indent: int = 0) -> str:
        m1, m2, offs = self.inputs
        return f"{ind(indent)}{self.output} = GroupedMmaOp(mat1={m1}, mat2={m2}, offsets={offs})\n"


ATEN_ONLY: tuple[type[Expr], ...] = (ScanOp, TopKOp, ArgsortOp, ScatterOp, IndexPutAccumulateOp, GroupedMmaOp,
                                     ex.SdpaFwdOp, ex.SdpaBwdOp)


def aten_only(e: Expr) -> bool:
    """Whether no generated kernel computes `e`: the ATEN_ONLY ops, and a plain cast to fp4
    (kernels write fp4, two values per byte, only through the block quantization runtime)."""
    return isinstance(e, ATEN_ONLY) or is_fp4_cast(e)


def is_fp4_cast(e: Expr) -> bool:
    return (type(e) is ex.UnaryOp and e.op == "cast"
            and getattr(e.outputs[0], "dtype", None) == DataType.Float4_e2m1fn)


def aten_only_name(e: Expr) -> str:
    return "cast to Float4_e2m1fn" if is_fp4_cast(e) else type(e).__name__
