"""BlockQuantizationOp: nvfp4 quantization of 16-element blocks through the runtime function.

The quantized output's innermost loop must run whole blocks in one thread (an inner
split of the last axis by a multiple of the block size, serial, unrolled or
vectorized). Inside that loop each element of the input is gathered into registers;
once the loop closes, every block of 16 is quantized by `nvfp4QuantizeBlock` and its 8
packed bytes and its e4m3 scale are stored. Both outputs live in global memory, where
fp4 values are packed two per byte along the contiguous innermost axis.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from engine.dtypes import DataType
from engine.errors import CompileError
from engine.ir.iterdomain import IterDomain, Merge, Split
from engine.ir.quant_exprs import BlockQuantizationOp, PreprocessGroupedMatmulInputSf
from engine.ir.tensorview import MemoryType, TensorView
from engine.lower import cexpr, kir
from engine.lower.index import Ix, propagate
from engine.lower.kexpr import (
    FALSE,
    TRUE,
    Access,
    Add,
    And,
    Call,
    Cmp,
    Deref,
    Div,
    Lit,
    Paren,
    PtrCast,
    Stride,
    Var,
)
from engine.lower.loops import LoopNode

if TYPE_CHECKING:
    from engine.lower.lowering import ExprLowering


def _block_loop(q: TensorView, low: ExprLowering, block: int) -> tuple[IterDomain, int]:
    inner = q.axis(-1)
    n = low.ext.of(inner)
    t = inner.definition
    last = [i for i in q.domain.logical if not i.is_reduction][-1]
    ok = (isinstance(t, Split) and t.inner is inner and _aligned(t.in_id, last, n, low) and n % block == 0
          and not inner.parallel_type.is_thread_dim and not inner.parallel_type.is_block_dim)
    if not ok and inner is last and n % block == 0:
        ok = True  # an unscheduled last axis: one thread runs the whole row
    if not ok:
        raise CompileError(
            f"{q.short_name}: block quantization needs its innermost loop to be a serial inner split "
            f"of the last axis by a multiple of {block} (whole blocks in one thread); it is {inner}"
        )
    return inner, n


def _aligned(i: IterDomain, last: IterDomain, n: int, low: ExprLowering) -> bool:
    """Chunks of `n` consecutive positions of `i` stay inside one row of `last`, block-aligned:
    `i` is the last axis, or a merge whose inner part is (and which `n` divides)."""
    if i is last:
        return True
    t = i.definition
    return isinstance(t, Merge) and low.ext.of(t.inner) % n == 0 and _aligned(t.inner, last, n, low)


def lower_layout_op(low: ExprLowering, expr: PreprocessGroupedMatmulInputSf, loops: list[LoopNode],
                    c_index: dict[IterDomain, Ix], preds: list[str]) -> list[kir.Stmt]:
    """Each input scale goes to the output buffer slot the runtime function computes (seed 000):
    padded rows of 128 per group, the 128x4 swizzle inside; the padding is never written."""
    out = expr.outputs[0]
    inp, in_off, out_off = expr.inputs[0], expr.input_offsets, expr.output_offsets
    for t in (out, in_off, out_off):
        if t.memory_type != MemoryType.Global:
            raise CompileError(f"{t.short_name}: the layout op reads its offsets and writes its output in global memory")
    o_ids = [i for i in out.domain.logical if not i.is_reduction]
    i_ids = [i for i in inp.domain.logical if not i.is_reduction]
    known = {p: c_index[c] for p, c in zip(i_ids, o_ids) if c in c_index}
    src = low.read(inp, out, c_index, known).expr
    row, col = (c_index[i].term for i in o_ids)
    groups = low.ext.of([i for i in in_off.domain.logical if not i.is_reduction][0])
    k = low.ext.of(o_ids[1])
    on = out.short_name
    off = Var(f"{on}_off")
    at = Call("preprocessGroupedMatmulInputSfOffset", (), (
        row, col, k, groups, Var(f"{in_off.short_name}.data"), Var(f"{out_off.short_name}.data")))
    stmt = kir.Scope([kir.Local("nvfuser_index_t", off.name, at),
                      kir.IfThenElse(Cmp(off, ">=", 0), [kir.Assign(Access(f"{on}.data", off), src)])])
    return kir.guard(preds, [stmt])


def global_linear(low: ExprLowering, tv: TensorView, index: dict[IterDomain, Ix], nibbles: bool) -> cexpr.Term:
    """Element offset into a global tensor; for packed fp4, in nibbles (strides count bytes)."""
    b = low.buffer(tv)
    alloc = b.alloc_ids
    lin: cexpr.Term = 0
    for k, i in enumerate(alloc):
        if i.is_broadcast:
            continue
        ix = index.get(i)
        if ix is None:
            raise CompileError(f"cannot index {tv.short_name}'s allocation axis {i}")
        if k == len(alloc) - 1:
            stride: cexpr.Term = 1
        else:
            stride = Stride(b.name, k)
            if nibbles:
                stride = cexpr.mul(stride, 2)
        lin = cexpr.add(lin, cexpr.mul(ix.term, stride))
    return lin


def lower_block_quantize(low: ExprLowering, expr: BlockQuantizationOp, loops: list[LoopNode],
                         c_index: dict[IterDomain, Ix], preds: list[str]) -> list[kir.Stmt]:
    q, s = expr.outputs
    for t in (q, s):
        if t.memory_type != MemoryType.Global:
            raise CompileError(f"{t.short_name}: the outputs of block quantization must be in global memory")
    block = expr.block_size
    inner, n = _block_loop(q, low, block)
    level = q.nloop - 1
    xb = f"{q.short_name}_xb"
    x = expr.inputs[0]
    value = low.read(x, q, c_index).expr
    if x.dtype == DataType.BFloat16:
        # The runtime quantizes bf16 two values at a time, on their bits.
        low.alloc_at(level, loops, kir.Allocate(xb, "__bfloat", n, "local", init=Call("fsBfloatFromBits", (), (0,))))
    else:
        low.alloc_at(level, loops, kir.Allocate(xb, "float", n, "local", init=Lit("0.0f")))
        value = low.converted(value, x.dtype, DataType.Float)
    pos = c_index[inner].term
    gather = kir.guard(preds, [kir.Assign(Access(xb, pos), value, f"{q.short_name} block gather")])

    # Indices at the first element of block `qb` of the innermost loop.
    known = {q.axis(k): c_index[q.axis(k)] for k in range(level)}
    known[inner] = Ix(Var("qb"), 0, n)
    qi = propagate(q, known, low.ext)
    last = [i for i in q.domain.logical if not i.is_reduction][-1]
    s_last = [i for i in s.domain.logical if not i.is_reduction][-1]
    s_known = dict(zip([i for i in s.domain.logical if not i.is_reduction][:-1],
                       [qi[i] for i in q.domain.logical if not i.is_reduction][:-1]))
    s_known[s_last] = Ix(cexpr.div(qi[last].term, block), 0, low.ext.of(s_last))
    si = propagate(s, s_known, low.ext)
    q_off = global_linear(low, q, qi, nibbles=True)
    s_addr = low.address(s, si, s.short_name)
    if len(expr.inputs) > 1:
        gs, has = low.read(expr.inputs[1], q, c_index).expr, TRUE
    else:
        gs, has = Lit("1.0f"), FALSE
    store_preds = [p for p in low.thread_predicates(loops[:level], q)] + low.bounds_predicates(q, qi)
    cond = And(tuple(store_preds)) if store_preds else TRUE
    qn = q.short_name
    scale, packed = Var(f"{qn}_scale"), Var(f"{qn}_packed")
    # The 8 packed bytes of a block are 8-aligned (K is a multiple of the block): one store.
    dst = Deref(PtrCast("FsNvfp4Packed", Add(PtrCast("uint8_t", Var(f"{qn}.data")), Div(Paren(q_off), 2))))
    # Unrolled: constant offsets into the gathered block keep it in registers.
    post = kir.ForLoop("qb", n, "unroll", f"{qn} blocks", [
        kir.Local("__e4m3", scale.name),
        kir.ScalarDef("FsNvfp4Packed", packed.name,
                      Call("nvfp4QuantizeBlock", (), (Add(Var(xb), Var("qb")), scale, gs, has))),
        kir.IfThenElse(cond, [kir.Assign(dst, packed), kir.Assign(s_addr, scale)])], step=block)
    low.work.post[low.item_at(level, loops, expr)].append(post)
    return gather


