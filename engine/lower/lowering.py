"""Expression lowering: each fusion expression becomes indexed, predicated statements.

Runs over the loop nest (loops.py): for every expression it computes the loop
indices of its output, indexes the output and every producer (index.py), guards the
statement with the predicates its index ranges call for, and lowers reductions into
accumulators, block/grid all-reduces and write-backs. What it decides beyond the
nest (allocations, work after a loop closes, barriers) is attached to scope items
and assembled into the kernel IR at the end.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from engine.analysis.logical_map import consumers_of, logical_map, pairwise_logical_map
from engine.codegen import ops_table
from engine.dtypes import DataType
from engine.errors import CompileError
from engine.ir import exprs as ex
from engine.ir.base import Expr, Val
from engine.ir.iterdomain import IterDomain, ParallelType, Resize, Split
from engine.ir.quant_exprs import BlockQuantizationOp, PreprocessGroupedMatmulInputSf
from engine.ir.scalar import EXTENT_OPS, Scalar, binary_compute_dtype
from engine.ir.tensorview import TensorView
from engine.lower import cexpr, kir
from engine.lower.buffers import Buffer, make_buffer
from engine.lower.grid_epilogue import GridSync
from engine.lower.index import Extents, Ix, lower_bound_test, producer_known, propagate, same_split_source
from engine.lower.loops import LoopNode, in_tvs, out_tv
from engine.lower.op_values import value_of
from engine.lower.quantize import lower_block_quantize, lower_layout_op
from engine.lower.reductions import lower_reduction, lower_welford

_THREAD_VARS = {
    ParallelType.block_x: "threadIdx.x", ParallelType.block_y: "threadIdx.y", ParallelType.block_z: "threadIdx.z",
    ParallelType.grid_x: "blockIdx.x", ParallelType.grid_y: "blockIdx.y", ParallelType.grid_z: "blockIdx.z",
}
_COMPARE = {"lt", "le", "gt", "ge", "eq", "ne"}
_LOGICAL = {"logical_and", "logical_or"}


def loop_kind(pt: ParallelType) -> str:
    if pt == ParallelType.bulk:
        # A bulk copy into shared memory: the block's threads share its iterations.
        return "block_strided"
    if pt == ParallelType.vectorize:
        return "vectorize"
    if pt in (ParallelType.unroll, ParallelType.unswitch):
        return "unroll"
    return "serial"


@dataclass
class Access:
    """A tensor element as C text, and the indices that produced it."""

    text: str
    index: dict[IterDomain, Ix]


@dataclass
class ScopeWork:
    """What the lowering attaches around the nest's items."""

    allocs: dict[int, list[kir.Stmt]] = field(default_factory=lambda: defaultdict(list))
    pre: dict[int, list[kir.Stmt]] = field(default_factory=lambda: defaultdict(list))
    post: dict[int, list[kir.Stmt]] = field(default_factory=lambda: defaultdict(list))


class ExprLowering:
    def __init__(self, ext: Extents, launch_dims: dict[ParallelType, int],
                 scalar_names: dict[Scalar, str]) -> None:
        self.ext = ext
        self.launch_dims = launch_dims
        self.scalar_names = scalar_names
        self.fusion_inputs: set = set()
        # Local `full` outputs read as their fill value (pipeline.constant_fulls): never stored.
        self.constants: dict[TensorView, Scalar] = {}
        self.layouts: dict[str, tuple[list[int], int]] = {}
        # Global tensors whose allocation strides are compile-time constants (by name).
        self.constant_strides: dict[str, list[int]] = {}
        self.buffers: dict[TensorView, Buffer] = {}
        self.work = ScopeWork()
        self.body: dict[Expr, list[kir.Stmt]] = {}
        self.flags: dict[TensorView, list[str]] = {}  # grid-reduced values valid only where true
        # The block dimensions each flag's grid reduction reduced: along them, only the
        # flag's block holds the value.
        self.flag_blocks: dict[str, frozenset[ParallelType]] = {}
        self.smem_bytes = 0
        self.reduce_smem_bytes = 0
        # Count outputs of thread-local Welfords lowered as two passes: every thread folds
        # exactly this many values (reductions.py uses it for an equal-count block combine).
        self.fixed_counts: dict[TensorView, int] = {}
        self.workspaces: dict[str, tuple[str, int, bool]] = {}
        # Grids of at most this many blocks are co-resident (one per SM) and may wait at a grid
        # barrier (0: never); `cooperative` records that some grid reduction does.
        self.coresident_blocks = 0
        self.cooperative = False
        # flag -> its cooperative grouped grid reduction's call (grid_epilogue.py)
        self.grid_syncs: dict[str, GridSync] = {}
        self.pending_sync: list[tuple[int, list[LoopNode], Expr, str]] = []
        # A reduction's root id -> the rfactor producer's logical id it continues (see
        # note_rfactor_sources): the split chain an id comes from goes on through it.
        self.rfactor_source: dict[IterDomain, IterDomain] = {}
        # loop_seeded_index results: every expression's index walks its consumers' chain
        # again, the same (tensor, loops) pairs over and over (see _seeded_index).
        self._seeded: dict[tuple, dict[IterDomain, Ix]] = {}
        self._forwarded: dict[tuple[IterDomain, IterDomain], bool] = {}

    def note_rfactor_sources(self, exprs: list[Expr]) -> None:
        """Record, for every reduction of an rfactor tensor, which of the producer's logical
        ids (a split of a reduced axis: the per-block or per-thread partials) each of its
        root ids continues. A loop that such a reduction shares with the tensors feeding the
        rfactor (the grid axis of an outer reduction's final grid reduction) then runs the
        same split of the same axis for all of them, as nvFuser's exact map says."""
        for e in exprs:
            if not isinstance(e, ex.ReductionOp | ex.WelfordOp):
                continue
            for p in in_tvs(e):
                if p.domain.root is None:
                    continue
                for o in e.outputs:
                    if not isinstance(o, TensorView):
                        continue
                    for pid, cid in pairwise_logical_map(p, o).items():
                        if (cid.definition is None and pid.definition is not None
                                and not pid.is_broadcast and self.ext.of(pid) == self.ext.of(cid)):
                            self.rfactor_source.setdefault(cid, pid)

    # ---- buffers --------------------------------------------------------------------
    def buffer(self, tv: TensorView, loops: list[LoopNode] | None = None) -> Buffer:
        """`tv`'s buffer, made on first use: by its writer, whose `loops` give the parallel
        types of the loops it shares with consumers (a shared buffer keeps the thread-bound ones)."""
        b = self.buffers.get(tv)
        if b is None:
            types = [n.concrete.parallel_type for n in loops] if loops is not None else None
            b = make_buffer(tv, self.ext, loop_types=types)
            if b.memory == "shared":
                b.offset = _align(self.smem_bytes, 16)
                self.smem_bytes = b.offset + b.size * max(tv.dtype.bits // 8, 1)
            self.buffers[tv] = b
        return b

    def reserve_reduction_smem(self, bytes_per_thread: int) -> None:
        self.reduce_smem_bytes = max(self.reduce_smem_bytes, bytes_per_thread * self.block_threads())

    def block_threads(self) -> int:
        d = self.launch_dims
        return d.get(ParallelType.block_x, 1) * d.get(ParallelType.block_y, 1) * d.get(ParallelType.block_z, 1)

    # ---- loop indices -----------------------------------------------------------------
    def loop_index(self, node: LoopNode, own: IterDomain | None = None) -> Ix:
        """The index a loop gives: its variable, a thread/block index, or 0.

        In a virtual loop (merged parallel or single-iteration groups) each expression's
        own id gives the range, since the merged groups may differ in extent.
        """
        c = node.concrete
        pt = c.parallel_type
        n = self.ext.of(own if (node.virtual and own is not None) else c)
        if pt in _THREAD_VARS:
            return Ix(_THREAD_VARS[pt], 0, n)
        if node.virtual:
            return Ix(0, 0, 1)
        return Ix(f"i{c.name}", 0, n)

    def output_index(self, out: TensorView, loops: list[LoopNode]) -> dict[IterDomain, Ix]:
        return self.loop_seeded_index(out, loops, len(loops))

    def forwarded(self, node: LoopNode, own: IterDomain) -> bool:
        """The loop runs a larger (promoted) id than `own`: a consumer merged a broadcast in.
        Split outputs may have the loop's extent and still split a smaller id (a tensor
        before a broadcast, in the loop of the tensor after it): their splits differ."""
        if own.is_broadcast and own not in self.ext.promoted:
            return False
        concrete = node.concrete
        # Asked for every loop level of every index; extents, promotions and rfactor
        # sources are fixed while lowering, so the answer per pair of ids is too.
        key = (own, concrete)
        got = self._forwarded.get(key)
        if got is None:
            got = self._forwarded[key] = (
                self.ext.of(own) != self.ext.of(concrete)
                or not same_split_source(own, concrete, self.ext, self.rfactor_source))
        return got

    def loop_seeded_index(self, tv: TensorView, loops: list[LoopNode], upto: int,
                          avoid: frozenset[TensorView] = frozenset()) -> dict[IterDomain, Ix]:
        """Indices of `tv`'s ids from the loops below `upto`.

        Loop ids the loops run directly take the loop's index; the positions shared with
        a consumer (ca_pos) also take what the consumer's indices give through the op, so
        an axis whose loop is a consumer's merge with a broadcast is indexed correctly.
        """
        return dict(self._seeded_index(tv, loops, upto, avoid))

    def _seeded_index(self, tv: TensorView, loops: list[LoopNode], upto: int,
                      avoid: frozenset[TensorView]) -> dict[IterDomain, Ix]:
        """loop_seeded_index, shared (callers must not change it). The result depends on the
        loops below `upto` only through their concrete ids and virtual flags (walk makes
        new virtual nodes per expression, so the nodes themselves do not key it); the
        schedule, extents and rfactor sources are fixed while lowering."""
        key = (tv, upto, avoid, tuple((n.concrete, n.virtual) for n in loops[:upto]))
        got = self._seeded.get(key)
        if got is None:
            got = self._seeded[key] = self._fresh_seeded_index(tv, loops, upto, avoid)
        return got

    def _fresh_seeded_index(self, tv: TensorView, loops: list[LoopNode], upto: int,
                            avoid: frozenset[TensorView]) -> dict[IterDomain, Ix]:
        known: dict[IterDomain, Ix] = {}
        for k in range(min(upto, tv.nloop)):
            i = tv.axis(k)
            if i.is_broadcast and i not in self.ext.promoted:
                known[i] = Ix(0, 0, 1)
            elif not self.forwarded(loops[k], i):
                known[i] = self.loop_index(loops[k], i)
        m = min(upto, tv.compute_at_pos)
        consumers = [c for c in consumers_of(tv) if c not in avoid] if m > 0 else []
        if consumers:
            c_idx = self._seeded_index(consumers[0], loops, m, avoid)
            for pid, ix in producer_known(tv, consumers[0], c_idx, self.ext).items():
                known.setdefault(pid, ix)
        elif any(self.forwarded(loops[k], tv.axis(k)) for k in range(min(upto, tv.nloop))):
            self._seed_from_producer(tv, loops, upto, known, avoid | {tv})
        return propagate(tv, known, self.ext)

    def _seed_from_producer(self, tv: TensorView, loops: list[LoopNode], upto: int,
                            known: dict[IterDomain, Ix], avoid: frozenset[TensorView]) -> None:
        """A tensor no consumer is inlined into, in loops that run another tensor's (larger)
        ids: its logical indices are those of an inlined producer's, whose own indices come
        through that producer's other consumers (as nvFuser's loop promotion gives them)."""
        d = tv.definition
        for p in (d.inputs if d is not None else []):
            if not isinstance(p, TensorView) or p.compute_at_pos == 0:
                continue
            p_idx = self._seeded_index(p, loops, min(upto, p.compute_at_pos), avoid)
            for pid, cid in logical_map(p, tv, map_broadcast=False).items():
                if pid in p_idx:
                    known.setdefault(cid, p_idx[pid])
            return

    def thread_predicates(self, loops: list[LoopNode], out: TensorView | None = None) -> list[str]:
        preds: list[str] = []
        for k, node in enumerate(loops):
            own = out.axis(k) if out is not None else None
            if own is not None and own.is_broadcast and own not in self.ext.promoted:
                continue
            if own is not None and self.forwarded(node, own):
                continue  # bounds come through the consumer's indices
            ix = self.loop_index(node, own)
            pt = node.concrete.parallel_type
            if pt in _THREAD_VARS and ix.hi < self.launch_dims.get(pt, 1):
                cond = f"{_THREAD_VARS[pt]} < {ix.hi}"
                if cond not in preds:
                    preds.append(cond)
        return preds

    def promoted_loop_predicates(self, loops: list[LoopNode], out: TensorView) -> list[str]:
        """Bounds of the loop nest itself for a tensor that runs in larger (promoted) loops
        and that no consumer is inlined into. Its indices come from an inlined producer
        (_seed_from_producer), so its own bounds only say that those indices are in range:
        the iterations past the end of a non-divisible split of the promoted loop (threads
        112..127 of a 112-element loop) still map to valid elements and would write what
        the producer, predicated off there, never computed. Every
        split among the loop ids' definitions whose outer and inner parts the nest runs
        bounds its input."""
        if out.compute_at_pos > 0 and consumers_of(out):
            return []  # bounds come through the consumer's indices
        if not any(self.forwarded(n, out.axis(k)) for k, n in enumerate(loops) if k < out.nloop):
            return []
        known = {n.concrete: self.loop_index(n) for n in loops}
        preds: list[str] = []
        queue = list(known)
        while queue:
            t = queue.pop(0).definition
            if not isinstance(t, Split) or t.in_id in known or t.outer not in known or t.inner not in known:
                continue
            o, i = known[t.outer], known[t.inner]
            n = self.ext.of(t.inner)
            ix = Ix(cexpr.add(cexpr.mul(o.term, n), i.term), o.lo * n + i.lo, (o.hi - 1) * n + i.hi)
            known[t.in_id] = ix
            queue.append(t.in_id)
            if ix.hi > self.ext.of(t.in_id):
                pred = f"{_wrap(ix.term)} < {self.ext.of(t.in_id)}"
                if pred not in preds:
                    preds.append(pred)
        return preds

    def redundant_write_predicates(self, loops: list[LoopNode], out: TensorView,
                                   one_block: frozenset[ParallelType] = frozenset()) -> list[str]:
        """One writer per element of a global output that has a broadcast axis bound to a
        thread or block dimension: every index along it addresses the same element (an
        expanded input passed on between segments was written by all 32 blocks of a RoPE
        kernel's blockIdx.y). Only for outputs the kernel does not read back, which other
        blocks would then read before the one writer has written. Along `one_block` (block
        dimensions a grid reduction feeding `out` reduced) the writer is already one block,
        the last to arrive, which need not be block 0."""
        if self.buffer(out).memory != "global" or out.uses:
            return []
        preds: list[str] = []
        for k, node in enumerate(loops):
            own = out.axis(k)
            if own is None or not own.is_broadcast or own in self.ext.promoted:
                continue
            pt = node.concrete.parallel_type
            if pt in _THREAD_VARS and self.launch_dims.get(pt, 1) > 1 and pt not in one_block:
                preds.append(f"{_THREAD_VARS[pt]} == 0")
        return preds

    def shared_write_predicates(self, loops: list[LoopNode], out: TensorView) -> list[str]:
        """One writer per element of a shared tensor: the block's threads share the buffer, and
        those along a launched thread dimension that no loop of the write binds (the tensor's
        loop is serial there, or its axis a broadcast, which the buffer does not hold) would
        all write the same elements; as with nvFuser's thread predicates, only thread 0 along
        that dimension writes (a barrier then separates the writes from other threads' reads).
        Bulk loops share their iterations among the threads already."""
        if self.buffer(out).memory != "shared":
            return []
        owned: set[ParallelType] = set()
        for k, node in enumerate(loops):
            pt = node.concrete.parallel_type
            if pt == ParallelType.bulk:
                return []
            own = out.axis(k) if k < out.nloop else None
            if pt.is_thread_dim and not (own is not None and own.is_broadcast):
                owned.add(pt)
        return [f"{_THREAD_VARS[pt]} == 0" for pt in (ParallelType.block_x, ParallelType.block_y, ParallelType.block_z)
                if pt not in owned and self.launch_dims.get(pt, 1) > 1]

    def bounds_predicates(self, tv: TensorView, index: dict[IterDomain, Ix],
                          skip: frozenset[IterDomain] = frozenset()) -> list[str]:
        out: list[str] = []
        for i in _checked_ids(tv, self.ext):
            if i.is_broadcast or i in skip:
                continue
            ix = index.get(i)
            if ix is None:
                raise CompileError(f"{tv.short_name}: axis {i} cannot be indexed from the loop nest")
            n = self.ext.of(i)
            if isinstance(ix.term, int):
                if not 0 <= ix.term < n:
                    out.append("false")
                continue
            # A quotient and a remainder of one dividend share their lower bound test.
            if ix.lo < 0 and (low_test := lower_bound_test(ix, _wrap)) not in out:
                out.append(low_test)
            if ix.hi > n:
                out.append(f"{_wrap(ix.term)} < {n}")
        return out

    # ---- addressing ------------------------------------------------------------------
    def address(self, tv: TensorView, index: dict[IterDomain, Ix], reader: str) -> str:
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
                stride: cexpr.Term = f"{b.name}.alloc_stride[{k}]" if known is None else known[k]
                if k == len(alloc) - 1 and _innermost_contiguous(tv):
                    stride = 1
                terms.append(cexpr.mul(ix.term, stride))
            lin: cexpr.Term = 0
            for t in terms:
                lin = cexpr.add(lin, t)
            return f"{b.name}[{cexpr.text(lin)}]"
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
        return f"{b.name}[{cexpr.text(lin)}]"

    def _check_same_thread(self, tv: TensorView, b: Buffer, index: dict[IterDomain, Ix], reader: str) -> None:
        for i in tv.domain.loop[b.level:]:
            pt = i.parallel_type
            if i.is_broadcast or i.is_reduction or pt not in _THREAD_VARS:
                continue
            if b.memory in ("shared", "global") and not pt.is_block_dim:
                continue
            ix = index.get(i)
            # An axis of one element bound to a launched dimension of more is computed by the
            # first thread (block) alone: another reading it would read its own, unset, copy.
            wide = self.ext.of(i) > 1 or self.launch_dims.get(pt, 1) > 1
            if ix is not None and ix.term != _THREAD_VARS[pt] and wide:
                where = "thread" if pt.is_thread_dim else "block"
                raise CompileError(
                    f"{reader} reads {tv.short_name} ({b.memory} memory) at elements another {where} "
                    f"computed (axis {i} is indexed by {ix.term}, not {_THREAD_VARS[pt]}); "
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
        if v.definition is not None and self.buffer(v).memory == "global":
            # Written in this kernel: a block reads it back only where it wrote it (blocks do
            # not wait for each other).
            self._check_same_thread(v, self.buffer(v), index, consumer.short_name)
        return Access(self.address(v, index, consumer.short_name), index)

    def scalar(self, s: Scalar) -> str:
        if s.value is not None:
            return ops_table.literal(s.value, s.dtype)
        if s in self.scalar_names:
            return self.scalar_names[s]
        free = s.free_symbols()
        # Scalar inputs stay runtime arguments; only sizes are specialised.
        if all(f in self.ext.env and f not in self.scalar_names for f in free):
            return ops_table.literal(s.evaluate(self.ext.env), s.dtype)
        if s.op is None:
            raise CompileError(f"scalar {s.inline()} is neither an input nor known at compile time")
        if len(s.operands) == 1:
            (x,) = s.operands
            return _scalar_unary(s.op, self.scalar(x), x.dtype, s.dtype)
        if len(s.operands) == 3:  # where, clamp, lerp: value operands already of s.dtype
            texts = [self.scalar(x) for x in s.operands]
            first = DataType.Bool if s.op == "where" else s.dtype
            texts[0] = self.converted(texts[0], s.operands[0].dtype, first)
            texts[1:] = [self.converted(t, x.dtype, s.dtype) for t, x in zip(texts[1:], s.operands[1:])]
            return ops_table.ternary(s.op, *texts, s.dtype)
        x, y = s.operands
        a, b = self.scalar(x), self.scalar(y)
        if s.op not in EXTENT_OPS:
            # A frontend op on scalars (lt, fmod, bitwise_and, ...): the tensor op's C form,
            # on operands converted to the type it computes in.
            dt = binary_compute_dtype(s.op, x.dtype, y.dtype, s.dtype)
            a, b = self.converted(a, x.dtype, dt), self.converted(b, y.dtype, dt)
            res = DataType.Bool if s.op in _COMPARE | _LOGICAL else dt
            return self.converted(ops_table.binary(s.op, a, b, dt), res, s.dtype)
        return _scalar_op(s.op, a, b, s.dtype)

    # ---- expressions -------------------------------------------------------------------
    def lower(self, expr: Expr, loops: list[LoopNode]) -> None:
        out = out_tv(expr)
        self._register_allocations(expr, loops)
        c_index = self.output_index(out, loops)
        flags = sorted({f for p in in_tvs(expr) for f in self.flags.get(p, [])})
        one_block = frozenset().union(*(self.flag_blocks.get(f, frozenset()) for f in flags))
        preds = (self.thread_predicates(loops, out) + self.promoted_loop_predicates(loops, out)
                 + self.redundant_write_predicates(loops, out, one_block) + self.bounds_predicates(out, c_index))
        for o in expr.outputs:
            if isinstance(o, TensorView) and flags:
                self.flags[o] = flags
        if isinstance(expr, PreprocessGroupedMatmulInputSf):
            stmts = lower_layout_op(self, expr, loops, c_index, preds + flags)
        elif isinstance(expr, BlockQuantizationOp):
            stmts = lower_block_quantize(self, expr, loops, c_index, preds + flags)
        elif isinstance(expr, ex.WelfordOp):
            stmts = lower_welford(self, expr, loops, c_index, preds + flags)
        elif isinstance(expr, ex.ReductionOp):
            stmts = lower_reduction(self, expr, loops, c_index, preds + flags)
        else:
            rhs = self.value(expr, out, c_index)
            lhs = self.address(out, c_index, out.short_name)
            copy = None
            if isinstance(expr, ex.LoadStoreOp) and expr.inputs[0].dtype == out.dtype:
                copy = out.dtype.cuda_name
            preds = preds + self.shared_write_predicates(loops, out)
            stmts = kir.guard(preds + flags, [kir.Assign(lhs, rhs, _source(expr), copy)])
        self.body[expr] = stmts

    def _register_allocations(self, expr: Expr, loops: list[LoopNode]) -> None:
        for o in expr.outputs:
            if not isinstance(o, TensorView):
                continue
            b = self.buffer(o, loops)
            if b.memory == "global":
                continue
            self.alloc_at(b.level, loops, kir.Allocate(b.name, b.ctype, b.size, b.memory, b.offset))
            if b.memory == "shared":
                self.pending_sync.append((b.level, list(loops), expr, f"{b.name} in shared memory"))

    def alloc_at(self, level: int, loops: list[LoopNode], stmt: kir.Stmt) -> None:
        self.work.allocs[self.scope_key(level, loops)].append(stmt)

    def item_at(self, level: int, loops: list[LoopNode], expr: Expr) -> int:
        """The item of the scope at depth `level` that contains `expr`: the first real loop
        at or below `level`, or the expression itself."""
        for node in loops[level:]:
            if not node.virtual:
                return id(node)
        return id(expr)

    def scope_key(self, level: int, loops: list[LoopNode]) -> int:
        """The scope that allocations at depth `level` go to: the innermost real loop above."""
        for node in reversed(loops[:level]):
            if not node.virtual:
                return id(node)
        return 0

    def value(self, expr: Expr, out: TensorView, c_index: dict[IterDomain, Ix]) -> str:
        """The C expression of one output element."""
        return value_of(self, expr, out, c_index)

    # ---- dtype helpers ------------------------------------------------------------------
    def operand_dtype(self, expr: Expr, out: TensorView) -> DataType:
        if isinstance(expr, ex.BinaryOp) and expr.op in _COMPARE | _LOGICAL:
            if expr.op in _LOGICAL:
                return DataType.Bool
            return _compute(expr.operand_dtype())
        return _compute(out.dtype)

    def converted(self, text: str, src: DataType, dst: DataType) -> str:
        return text if src == dst else ops_table.cast(text, src, dst)


def _checked_ids(tv: TensorView, ext: Extents) -> list[IterDomain]:
    """Logical ids, and root ids an rfactor or reshape transformed (a split may overhang them).
    Root ids of a pad's Resize are not checked: out of the input's range is the padding.
    `ext` keeps the tensor's transforms (tv_transforms) for the whole lowering."""
    dom = tv.domain
    ids = list(dom.logical)
    if dom.root is not None:
        logical = set(dom.logical)
        ids += [r for r in dom.root if r not in logical and not any(isinstance(u, Resize) for u in r.uses)]
    # A split whose pieces overhang its input (a non-divisible inner split) would repeat
    # elements: the input of every split between logical and loop is checked too.
    seen = set(ids)
    for t in ext.transforms(tv):
        if isinstance(t, Split) and t.in_id not in seen:
            seen.add(t.in_id)
            ids.append(t.in_id)
    return ids


def _compute(dt: DataType) -> DataType:
    return DataType.Float if dt.is_low_precision_float else dt


def _align(n: int, a: int) -> int:
    return (n + a - 1) // a * a


def _wrap(t: cexpr.Term) -> str:
    s = str(t)
    return s if s.isidentifier() or s.replace(".", "").isalnum() else f"({s})"


def _innermost_contiguous(tv: TensorView) -> bool:
    dom = tv.domain
    alloc = [i for i in dom.maybe_allocation if not i.is_reduction]
    contig = [c for i, c in zip(dom.maybe_allocation, dom.contiguity) if not i.is_reduction]
    return bool(alloc) and not alloc[-1].is_broadcast and contig[-1] is True




def _source(expr: Expr) -> str:
    outs = ", ".join(o.short_name for o in expr.outputs if isinstance(o, TensorView))
    # Not getattr(v, "short_name", str(v)): that prints every tensor operand whole first.
    ins = ", ".join(v.short_name if hasattr(v, "short_name") else str(v) for v in expr.inputs)
    return f"{outs} = {expr.op_name}({ins})"


_SCALAR_OPS = {"add": "+", "sub": "-", "mul": "*", "div": "/", "mod": "%"}


def _scalar_op(op: str, a: str, b: str, dtype: DataType | None = None) -> str:
    if op == "mod" and dtype is not None and dtype.is_float:
        return f"fmod({a}, {b})"  # C's % takes integers only
    if op in _SCALAR_OPS:
        return f"({a} {_SCALAR_OPS[op]} {b})"
    if op == "ceilDiv":
        return f"ceilDiv({a}, {b})"
    if op in ("max", "min"):
        return f"({a} {'>' if op == 'max' else '<'} {b} ? {a} : {b})"
    raise CompileError(f"scalar operation {op} has no C form")


def _scalar_unary(op: str, x: str, src: DataType, dst: DataType) -> str:
    if op == "cast":
        return ops_table.cast(x, src, dst)
    if dst == DataType.Bool:  # predicates compute in their operand's type
        return ops_table.unary(op, x, src)
    # The op computes in its result type, as nvFuser's promotion casts the operand first.
    return ops_table.unary(op, ops_table.cast(x, src, dst), dst)
