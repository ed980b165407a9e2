"""Expression lowering: each fusion expression becomes indexed, predicated statements.

Runs over the loop nest (loops.py): for every expression it computes the loop
indices of its output, indexes the output and every producer (index.py), guards the
statement with the predicates its index ranges call for, and lowers reductions into
accumulators, block/grid all-reduces and write-backs. What it decides beyond the
nest (allocations, work after a loop closes, barriers) is attached to scope items
and assembled into the kernel IR at the end.

ExprLowering holds the lowering's state and lowers one expression at a time; its parts live
beside it, one job each: loop indices (loop_index.py), predicates (predicates.py) and
operands as typed expressions (operands.py).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from engine.ir import exprs as ex
from engine.ir.base import Expr, Val
from engine.ir.iterdomain import IterDomain, ParallelType
from engine.ir.logical_map import pairwise_logical_map
from engine.ir.quant_exprs import BlockQuantizationOp, PreprocessGroupedMatmulInputSf
from engine.ir.scalar import Scalar
from engine.ir.tensorview import TensorView
from engine.lower import kexpr, kir
from engine.lower.buffers import Buffer, make_buffer
from engine.lower.grid_epilogue import GridSync
from engine.lower.index import Extents, Ix
from engine.lower.loop_index import LoopIndexing
from engine.lower.loops import LoopNode, in_tvs, out_tv
from engine.lower.op_values import value_of
from engine.lower.operands import Operands
from engine.lower.predicates import Predicates
from engine.lower.quantize import lower_block_quantize, lower_layout_op
from engine.lower.reduction_ops import lower_reduction, lower_welford
from engine.runtime.device import DeviceProperties


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
class ScopeWork:
    """What the lowering attaches around the nest's items."""

    allocs: dict[int, list[kir.Stmt]] = field(default_factory=lambda: defaultdict(list))
    pre: dict[int, list[kir.Stmt]] = field(default_factory=lambda: defaultdict(list))
    post: dict[int, list[kir.Stmt]] = field(default_factory=lambda: defaultdict(list))


class ExprLowering(LoopIndexing, Predicates, Operands):
    """The lowering of one kernel's expressions: its buffers, the work attached around the
    nest, and each expression's statements (`lower`)."""

    def __init__(self, ext: Extents, launch_dims: dict[ParallelType, int],
                 scalar_names: dict[Scalar, str], *, fusion_inputs: Iterable[Val] = (),
                 constants: dict[TensorView, Scalar] | None = None,
                 layouts: dict[str, tuple[list[int], int]] | None = None,
                 constant_strides: dict[str, list[int]] | None = None,
                 coresident_blocks: int = 0, min_blocks_per_sm: int = 1,
                 device: DeviceProperties | None = None,
                 show: Callable[[kexpr.Expr], str] = repr) -> None:
        """The keyword arguments are what the kernel is compiled for, fixed for the whole
        lowering (each kept as the attribute of its name, described below)."""
        # How an error message shows an expression: lowering renders none, the pipeline passes
        # codegen's renderer.
        self.show = show
        self.ext = ext
        self.launch_dims = launch_dims
        self.scalar_names = scalar_names
        # Scalars computed from scalar arguments -> the names they are defined under at the top
        # of the kernel (Operands.scalar).
        self.hoisted: dict[Scalar, str] = {}
        # The fusion's inputs, tensors and scalars.
        self.fusion_inputs: set[Val] = set(fusion_inputs)
        # Local `full` outputs read as their fill value (pipeline.constant_fulls): never stored.
        self.constants: dict[TensorView, Scalar] = dict(constants or {})
        # The compiled-for inputs' allocation strides and pointer alignment (bytes), by name.
        self.layouts: dict[str, tuple[list[int], int]] = dict(layouts or {})
        # Global tensors whose allocation strides are compile-time constants (by name).
        self.constant_strides: dict[str, list[int]] = dict(constant_strides or {})
        # Blocks each SM must hold at once (the kernel's launch bounds), and the device the
        # kernel is compiled for (its register file; None: not known).
        self.min_blocks_per_sm = min_blocks_per_sm
        self.device = device
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
        # exactly this many values (welford_two_pass.py uses it for an equal-count block combine).
        self.fixed_counts: dict[TensorView, int] = {}
        self.workspaces: dict[str, tuple[str, int, bool]] = {}
        # Grids of at most this many blocks are co-resident (one per SM) and may wait at a grid
        # barrier (0: never); `cooperative` records that some grid reduction does.
        self.coresident_blocks = coresident_blocks
        self.cooperative = False
        # flag -> its cooperative grouped grid reduction's call (grid_epilogue.py)
        self.grid_syncs: dict[str, GridSync] = {}
        # the expression being lowered reads memory, or a buffer where it may leave its axes
        self.unbounded_read = False
        # (level, loops, expr, why, the shared buffer fenced or None)
        self.pending_sync: list[tuple[int, list[LoopNode], Expr, str, str | None]] = []
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

    # ---- expressions -------------------------------------------------------------------
    def lower(self, expr: Expr, loops: list[LoopNode]) -> None:
        out = out_tv(expr)
        self._register_allocations(expr, loops)
        c_index = self.output_index(out, loops)
        flag_names = sorted({f for p in in_tvs(expr) for f in self.flags.get(p, [])})
        flags: list[kexpr.Expr] = [kexpr.Var(f) for f in flag_names]
        one_block = frozenset().union(*(self.flag_blocks.get(f, frozenset()) for f in flag_names))
        placement = (self.thread_predicates(loops, out) + self.promoted_loop_predicates(loops, out)
                     + self.redundant_write_predicates(loops, out, one_block))
        preds = placement + self.bounds_predicates(out, c_index)
        for o in expr.outputs:
            if isinstance(o, TensorView) and flag_names:
                self.flags[o] = flag_names
        if isinstance(expr, PreprocessGroupedMatmulInputSf):
            stmts = lower_layout_op(self, expr, loops, c_index, preds + flags)
        elif isinstance(expr, BlockQuantizationOp):
            stmts = lower_block_quantize(self, expr, loops, c_index, preds + flags)
        elif isinstance(expr, ex.WelfordOp):
            stmts = lower_welford(self, expr, loops, c_index, preds + flags)
        elif isinstance(expr, ex.ReductionOp):
            stmts = lower_reduction(self, expr, loops, c_index, preds + flags)
        else:
            self.unbounded_read = False
            rhs = self.value(expr, out, c_index)
            lhs = self.address(out, c_index, out.short_name)
            if self._register_only(expr, out):
                preds = placement
            copy = None
            # A slice's element is its input's at a shifted index: a copy too (vectorized
            # when the shift keeps the vector aligned, engine.lower.vectorize.base_access).
            if isinstance(expr, (ex.LoadStoreOp, ex.SliceOp)) and expr.inputs[0].dtype == out.dtype:
                copy = out.dtype.cuda_name
            preds = preds + self.shared_write_predicates(loops, out)
            stmts = kir.guard(preds + flags, [kir.Assign(lhs, rhs, _source(expr), copy)])
        self.body[expr] = stmts

    def _register_only(self, expr: Expr, out: TensorView) -> bool:
        """`expr` reads registers at indices inside their buffers and writes a register: a
        statement whose result needs no bounds predicate, as nvFuser predicates only what
        touches memory (its predicate elimination). An element outside the tensor is then
        computed and never used: every statement that could use it (a store to memory, a
        reduction) is predicated. A statement without tensor operands (iota, full, random
        numbers) keeps its test, which costs less than what it computes."""
        return (not self.unbounded_read and bool(in_tvs(expr))
                and all(self.buffer(o).memory == "local" for o in expr.outputs if isinstance(o, TensorView)))

    def _register_allocations(self, expr: Expr, loops: list[LoopNode]) -> None:
        for o in expr.outputs:
            if not isinstance(o, TensorView):
                continue
            b = self.buffer(o, loops)
            if b.memory == "global":
                continue
            self.alloc_at(b.level, loops, kir.Allocate(b.name, b.ctype, b.size, b.memory, b.offset))
            if b.memory == "shared":
                self.pending_sync.append((b.level, list(loops), expr, f"{b.name} in shared memory", b.name))

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

    def value(self, expr: Expr, out: TensorView, c_index: dict[IterDomain, Ix]) -> str | kexpr.Expr:
        """The C expression of one output element."""
        return value_of(self, expr, out, c_index)


def _align(n: int, a: int) -> int:
    return (n + a - 1) // a * a


def _source(expr: Expr) -> str:
    outs = ", ".join(o.short_name for o in expr.outputs if isinstance(o, TensorView))
    # Not getattr(v, "short_name", str(v)): that prints every tensor operand whole first.
    ins = ", ".join(v.short_name if hasattr(v, "short_name") else str(v) for v in expr.inputs)
    return f"{outs} = {expr.op_name}({ins})"
