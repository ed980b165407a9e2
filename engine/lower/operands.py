"""Operands as typed kernel-IR expressions: a tensor element's address, a producer read at a
consumer's indices, a scalar, and conversions between data types.

A global tensor is addressed through its allocation strides (compile-time constants where
known), a local or shared one through its buffer's layout; a read of another thread's (or
block's) element is refused. A scalar is a literal, a runtime argument or an expression of
those. A part of ExprLowering (engine.lower.lowering), whose state it reads.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from engine.dtypes import DataType
from engine.errors import CompileError
from engine.ir import exprs as ex
from engine.ir.base import Expr, Val
from engine.ir.iterdomain import IterDomain
from engine.ir.scalar import EXTENT_OPS, Scalar, binary_compute_dtype
from engine.ir.tensorview import TensorView
from engine.lower import cexpr, kexpr, kir, kops
from engine.lower.buffers import Buffer
from engine.lower.index import Ix, producer_known, propagate
from engine.lower.kexpr import Lit, Stride, Var
from engine.lower.loop_index import THREAD_VARS

_COMPARE = {"lt", "le", "gt", "ge", "eq", "ne"}
_LOGICAL = {"logical_and", "logical_or"}
# The first letter of a hoisted scalar's name, by type (as nvFuser names scalars: d3, i4, b7).
_PREFIX = {DataType.Double: "d", DataType.Float: "f", DataType.Int: "i", DataType.Int32: "i",
           DataType.Index: "i", DataType.Bool: "b"}


@dataclass
class Access:
    """A tensor element (or a scalar's value), and the indices that produced it."""

    expr: kexpr.Expr
    index: dict[IterDomain, Ix]


class Operands:
    """Addresses, reads, scalars and conversions of ExprLowering (its buffers, `ext`,
    `launch_dims`, `constants`, `constant_strides`, `scalar_names`, `hoisted` and `show`)."""

    def address(self, tv: TensorView, index: dict[IterDomain, Ix], reader: str) -> kexpr.Access:
        b = self.buffer(tv)
        if b.memory == "global":
            terms: list[cexpr.Term] = []
            alloc = b.alloc_ids
            known = self.constant_strides.get(b.name)
            if known is not None and len(known) != len(alloc):
                known = None
            for k, i in enumerate(alloc):
                if i.is_broadcast:
                    continue
                ix = index.get(i)
                if ix is None:
                    raise CompileError(f"{reader}: cannot index {tv.short_name}'s allocation axis {i}")
                stride: cexpr.Term = Stride(b.name, k) if known is None else known[k]
                if k == len(alloc) - 1 and _innermost_contiguous(tv):
                    stride = 1
                terms.append(cexpr.mul(ix.term, stride))
            lin: cexpr.Term = 0
            for t in terms:
                lin = cexpr.add(lin, t)
            return kexpr.Access(b.name, lin)
        lin = 0
        for i, s in zip(b.layout, b.strides):
            ix = index.get(i)
            if ix is None:
                raise CompileError(
                    f"{reader}: cannot index {tv.short_name} ({b.memory} memory) on its axis {i}: "
                    "the consumer's loops do not determine it"
                )
            lin = cexpr.add(lin, cexpr.mul(ix.term, s))
        self._check_same_thread(tv, b, index, reader)
        return kexpr.Access(b.name, lin)

    def _check_same_thread(self, tv: TensorView, b: Buffer, index: dict[IterDomain, Ix], reader: str) -> None:
        for i in tv.domain.loop[b.level:]:
            pt = i.parallel_type
            if i.is_broadcast or i.is_reduction or pt not in THREAD_VARS:
                continue
            if b.memory in ("shared", "global") and not pt.is_block_dim:
                continue
            ix = index.get(i)
            # An axis of one element bound to a launched dimension of more is computed by the
            # first thread (block) alone: another reading it would read its own, unset, copy.
            wide = self.ext.of(i) > 1 or self.launch_dims.get(pt, 1) > 1
            if ix is not None and ix.term != Var(THREAD_VARS[pt]) and wide:
                where = "thread" if pt.is_thread_dim else "block"
                raise CompileError(
                    f"{reader} reads {tv.short_name} ({b.memory} memory) at elements another {where} "
                    f"computed (axis {i} is indexed by {self.show(ix.term)}, not {THREAD_VARS[pt]}); "
                    + ("keep it in shared or global memory" if pt.is_thread_dim
                       else "keep it in global memory" if b.memory != "global"
                       else "a grid-wide wait between the two is not supported: segment them apart")
                )

    def read(self, v: Val, consumer: TensorView, c_index: dict[IterDomain, Ix],
             extra: dict[IterDomain, Ix] | None = None) -> Access:
        if isinstance(v, Scalar):
            return Access(self.scalar(v), {})
        assert isinstance(v, TensorView)
        fill = self.constants.get(v)
        if fill is not None:
            return Access(self.converted(self.scalar(fill), fill.dtype, v.dtype), {})
        known = producer_known(v, consumer, c_index, self.ext)
        if extra:
            known.update(extra)
        index = propagate(v, known, self.ext)
        b = self.buffer(v)
        # `extra` places an axis by data (a gather's or index_select's index), which the
        # ranges do not bound: outside the consumer's elements that index is arbitrary.
        if b.memory != "local" or extra or not _within(b, index, self.ext.of):
            self.unbounded_read = True
        if v.definition is not None and b.memory == "global":
            # Written in this kernel: a block reads it back only where it wrote it (blocks do
            # not wait for each other).
            self._check_same_thread(v, b, index, consumer.short_name)
        return Access(self.address(v, index, consumer.short_name), index)

    def scalar(self, s: Scalar) -> kexpr.Expr:
        if s.value is not None:
            return kops.literal(s.value, s.dtype)
        if s in self.scalar_names:
            return Lit(self.scalar_names[s])
        free = s.free_symbols()
        # Scalar inputs stay runtime arguments; only sizes are specialised.
        if all(f in self.ext.env and f not in self.scalar_names for f in free):
            return kops.literal(s.evaluate(self.ext.env), s.dtype)
        if s.op is None:
            raise CompileError(f"scalar {s.inline()} is neither an input nor known at compile time")
        return self._hoisted(s)

    def _hoisted(self, s: Scalar) -> kexpr.Expr:
        """The name of a scalar computed from scalar arguments, defined once at the kernel's top
        (its operands' definitions first): every element's expression names it."""
        name = self.hoisted.get(s)
        if name is None:
            value = self._scalar_value(s)
            if isinstance(value, Lit) and value.text.isidentifier():
                return value  # an op that is the identity on its operand's type
            name = f"{_PREFIX.get(s.dtype, 's')}h{len(self.hoisted)}"
            self.hoisted[s] = name
            ctype = "nvfuser_index_t" if s.dtype == DataType.Index else s.dtype.cuda_name
            self.alloc_at(0, [], kir.ScalarDef(ctype, name, value))
        return Lit(name)

    def _scalar_value(self, s: Scalar) -> kexpr.Expr:
        if len(s.operands) == 1:
            (x,) = s.operands
            return _scalar_unary(s.op, self.scalar(x), x.dtype, s.dtype)
        if len(s.operands) == 3:  # where, clamp, lerp: value operands already of s.dtype
            first = DataType.Bool if s.op == "where" else s.dtype
            c, d, e = (self.converted(self.scalar(x), x.dtype, t)
                       for x, t in zip(s.operands, (first, s.dtype, s.dtype)))
            return kops.ternary(s.op, c, d, e, s.dtype)
        x, y = s.operands
        a, b = self.scalar(x), self.scalar(y)
        if s.op not in EXTENT_OPS:
            # A frontend op on scalars (lt, fmod, bitwise_and, ...): the tensor op's C form,
            # on operands converted to the type it computes in.
            dt = binary_compute_dtype(s.op, x.dtype, y.dtype, s.dtype)
            a, b = self.converted(a, x.dtype, dt), self.converted(b, y.dtype, dt)
            res = DataType.Bool if s.op in _COMPARE | _LOGICAL else dt
            return self.converted(kops.binary(s.op, a, b, dt), res, s.dtype)
        return _scalar_op(s.op, a, b, s.dtype)

    # ---- dtype helpers ------------------------------------------------------------------
    def operand_dtype(self, expr: Expr, out: TensorView) -> DataType:
        if isinstance(expr, ex.BinaryOp) and expr.op in _COMPARE | _LOGICAL:
            if expr.op in _LOGICAL:
                return DataType.Bool
            return _compute(expr.operand_dtype())
        return _compute(out.dtype)

    def converted(self, x: kexpr.Expr, src: DataType, dst: DataType) -> kexpr.Expr:
        """`x` converted from `src` to `dst` (a kops.Cast, or `x` where that is spelled as it)."""
        if src == dst:
            return x
        return kops.cast(x, src, dst)  # type: ignore[return-value]


def _within(b: Buffer, index: dict[IterDomain, Ix], extent: Callable[[IterDomain], int]) -> bool:
    """Every index of the buffer's layout stays inside its axis, wherever the reader runs."""
    return all((ix := index.get(i)) is not None and ix.lo >= 0 and ix.hi <= extent(i) for i in b.layout)


def _compute(dt: DataType) -> DataType:
    return DataType.Float if dt.is_low_precision_float else dt


def _innermost_contiguous(tv: TensorView) -> bool:
    dom = tv.domain
    alloc = [i for i in dom.maybe_allocation if not i.is_reduction]
    contig = [c for i, c in zip(dom.maybe_allocation, dom.contiguity) if not i.is_reduction]
    return bool(alloc) and not alloc[-1].is_broadcast and contig[-1] is True


_SCALAR_OPS = ("add", "sub", "mul", "div", "mod")


def _scalar_op(op: str, a: kexpr.Expr, b: kexpr.Expr, dtype: DataType | None = None) -> kexpr.Expr:
    if op == "mod" and dtype is not None and dtype.is_float:
        return kexpr.Call("fmod", (), (a, b))
    if op in _SCALAR_OPS:
        return kexpr.Arith(op, a, b)
    if op == "ceilDiv":
        return kexpr.Call("ceilDiv", (), (a, b))
    if op in ("max", "min"):
        return kexpr.Select(kexpr.Cmp(a, ">" if op == "max" else "<", b), a, b)
    raise CompileError(f"scalar operation {op} has no C form")


def _scalar_unary(op: str, x: kexpr.Expr, src: DataType, dst: DataType) -> kexpr.Expr:
    if op == "cast":
        return kops.cast(x, src, dst)  # type: ignore[return-value]
    if dst == DataType.Bool:  # predicates compute in their operand's type
        return kops.unary(op, x, src)  # type: ignore[return-value]
    # The op computes in its result type, as nvFuser's promotion casts the operand first.
    return kops.unary(op, kops.cast(x, src, dst), dst)  # type: ignore[return-value]
