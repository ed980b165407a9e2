"""The statements of a ReductionOp and a WelfordOp: an accumulator per output, the step that
folds one input element into it, then (after the accumulating loops) the block or grid
combine and the write-back (reductions.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from engine.dtypes import DataType
from engine.ir import exprs as ex
from engine.ir.iterdomain import IterDomain
from engine.lower import kir, kops
from engine.lower.grid_reduce import grid_reduction, grid_welford
from engine.lower.index import Ix
from engine.lower.kexpr import Access, Add, Call, Lit
from engine.lower.loops import LoopNode
from engine.lower.reductions import (
    Accumulator,
    acc_level,
    bools,
    check_no_broadcast_loop,
    check_reduction_loops,
    compute_dtype,
    each_element,
    parallel_reduction,
    red_smem,
    sibling_index,
    write_back,
)
from engine.lower.welford_two_pass import block_welford, cast_source, second_pass, two_pass_steps

if TYPE_CHECKING:
    from engine.lower.lowering import ExprLowering


def lower_reduction(low: ExprLowering, expr: ex.ReductionOp, loops: list[LoopNode],
                    c_index: dict[IterDomain, Ix], preds: list[str]) -> list[kir.Stmt]:
    out, inp = expr.output, expr.input
    check_no_broadcast_loop(low, out, loops)
    check_reduction_loops(low, out, loops)
    dt = compute_dtype(out.dtype)
    acc = Accumulator(low, out, f"{out.short_name}_acc", dt, loops, c_index)
    init = kops.literal(expr.init, dt)
    low.alloc_at(acc.level, loops, kir.Allocate(acc.name, dt.cuda_name, acc.size, "local", init=init))
    x = low.converted(low.read(inp, out, c_index).expr, inp.dtype, dt)
    step = kir.Assign(acc.element, kops.combine(expr.op, acc.element, x, dt),
                      f"{out.short_name} = reduction({inp.short_name})")
    post: list[kir.Stmt] = []
    threads, blocks = parallel_reduction(out)
    combine = kops.combiner(expr.op, dt)
    if any(blocks):
        post += grid_reduction(low, out, acc, threads, blocks, combine, init, loops)
    elif any(threads):
        low.reserve_reduction_smem(8)
        post.append(each_element(acc, lambda e: kir.Assign(
            e, Call("blockAllReduce", bools(threads), (e, combine, red_smem(dt.cuda_name))))))
    post += write_back(low, out, [(out, acc)], loops)
    low.work.post[low.item_at(acc.level, loops, expr)].extend(post)
    return kir.guard(preds, [step])


def lower_welford(low: ExprLowering, expr: ex.WelfordOp, loops: list[LoopNode],
                  c_index: dict[IterDomain, Ix], preds: list[str]) -> list[kir.Stmt]:
    avg, var, n = expr.outputs
    check_no_broadcast_loop(low, avg, loops)
    check_reduction_loops(low, avg, loops)
    dt = compute_dtype(avg.dtype)
    # One level for the three accumulators: they are combined and written back together
    # (siblings are never inlined, so their buffers are all at the top level).
    level = min(acc_level(t) for t in (avg, var, n))
    accs = [Accumulator(low, t, f"{t.short_name}_acc", d, loops, sibling_index(t, avg, c_index), level)
            for t, d in ((avg, dt), (var, dt), (n, DataType.Int))]
    for a in accs:
        low.alloc_at(a.level, loops, kir.Allocate(a.name, a.dtype.cuda_name, a.size, "local", init=Lit("0")))
    a_e, m_e, n_e = (a.element for a in accs)
    post: list[kir.Stmt] = []
    if len(expr.inputs) == 1:
        inp = expr.inputs[0]
        read = low.read(inp, avg, c_index)
        x = low.converted(read.expr, inp.dtype, dt)
        two_pass = two_pass_steps(low, expr, accs, loops, level, preds)
        src = cast_source(low, inp)
        if two_pass is None and src is not None:
            # The values are a cast of a register buffer (a persistent input projected to
            # its narrower dtype): both passes read the buffer and convert.
            two_pass = two_pass_steps(low, expr, accs, loops, level, preds, source=src)
            if two_pass is not None:
                x = low.converted(low.read(src, inp, read.index).expr, src.dtype, dt)
        if two_pass is not None:
            step = kir.AddTo(a_e, x)
            post = second_pass(low, loops, level, two_pass, x, a_e, m_e, n_e, dt.cuda_name)
            low.fixed_counts[n] = two_pass
        else:
            step = kir.Exec(Call("fs_welford_update", (), (a_e, m_e, n_e, x)))
    else:
        ia, im, inn = expr.inputs
        xa = low.converted(low.read(ia, avg, c_index).expr, ia.dtype, dt)
        xm = low.converted(low.read(im, avg, c_index).expr, im.dtype, dt)
        xn = low.converted(low.read(inn, avg, c_index).expr, inn.dtype, DataType.Int)
        step = kir.Exec(Call("fs_welford_combine", (), (a_e, m_e, n_e, xa, xm, xn)))
    threads, blocks = parallel_reduction(avg)
    a0 = accs[0]
    ct = dt.cuda_name
    nthreads = low.block_threads()
    # The three shared arrays of the block's Welford: avg, m2, n.
    smem = (red_smem(ct), Add(red_smem(ct), nthreads),
            red_smem("nvfuser_index_t", 2 * nthreads * max(dt.bits // 8, 1)))
    if any(blocks):
        post += grid_welford(low, expr, accs, threads, blocks, loops, smem)
    elif any(threads):
        low.reserve_reduction_smem(24)

        fn = block_welford(low, expr, avg, preds)

        def call(e: Access) -> kir.Stmt:
            a, m, c = (Access(acc.name, e.index) for acc in accs)
            return kir.Exec(Call(fn, bools(threads), (a, m, c, *smem)))

        post.append(each_element(a0, call))
    post += write_back(low, avg, list(zip((avg, var, n), accs)), loops)
    low.work.post[low.item_at(accs[0].level, loops, expr)].extend(post)
    return kir.guard(preds, [step])
