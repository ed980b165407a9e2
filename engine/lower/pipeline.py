"""The lowering pipeline: a scheduled fusion (one segment) to a kernel, pass by pass.

Passes, in order (names as nvFuser's lower_verbose stages where one exists):
  1. validate          every expression can be generated; sizes are bound
  2. loop_nests        loops from loop domains and compute-at positions (loops.py)
  3. parallel_dims     launch configuration from parallelized IterDomains
  4. allocation        buffers: memory type, scope, size (buffers.py)
  5. index_and_predicate   indexed, predicated statements; reductions (lowering.py and
                           its parts)
  6. sync              __syncthreads after shared/global writes read by other threads
  7. assemble          the kernel IR's statements
  8. the kernel-IR passes, `kir_passes.PASSES` in order, each `(body, ctx) -> (body, notes)`:
     circular_buffer, grid_epilogue, shared_loads, sync (barriers merged), unroll, hoist
  9. shared_memory     the dynamic shared memory's layout; then the kernel, of which no global
                       tensor may be written whole by every thread of the launch
                       (check_partitioned_writes)
Each pass's result is kept as text in `Lowered.stages`, under its name (a kernel-IR pass
only where it has notes; the barrier merges add theirs to "sync"). The kernel IR's listing
(the `kernel_ir` stage) is written by engine.codegen.statements, which spells statements.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from engine.dtypes import DataType
from engine.errors import CompileError, UnpartitionedWriteError
from engine.ir import exprs as ex
from engine.ir.aten_exprs import ATEN_ONLY
from engine.ir.base import Expr
from engine.ir.fusion import Fusion
from engine.ir.iterdomain import ParallelType
from engine.ir.loop_map import loop_maps_frozen
from engine.ir.scalar import Scalar
from engine.ir.tensorview import MemoryType, TensorView
from engine.lower import kir
from engine.lower.bulk_copy import widen_bulk_copy
from engine.lower.index import Extents
from engine.lower.kexpr import Expr as KExpr
from engine.lower.kexpr import Var
from engine.lower.kir_passes import PassContext, run_passes
from engine.lower.launch_dims import DIMS as _DIMS
from engine.lower.launch_dims import check_partitioned_writes, parallel_dims
from engine.lower.loops import LoopNode, Nest, _exprs_of, out_tv, walk
from engine.lower.lowering import ExprLowering, loop_kind
from engine.lower.reductions import acc_level, check_grid_results
from engine.lower.smem import SharedBuffer, SharedMemoryUse
from engine.lower.split_chains import split_chain
from engine.lower.vectorize import hoist_shared_reads, vector_widths, vectorize_loop
from engine.runtime.abi import ArgSpec, LaunchConfig, ScalarArg, TensorArg
from engine.runtime.device import DeviceProperties

_UNSUPPORTED = (ex.MatmulOp, ex.LinearOp, *ATEN_ONLY)


@dataclass
class Lowered:
    kernel: kir.Kernel
    stages: dict[str, str] = field(default_factory=dict)
    # How the host binds each tensor argument: TensorView by kernel parameter name.
    tensors: dict[str, TensorView] = field(default_factory=dict)
    # The dynamic shared memory the launch asks for, part by part.
    shared_memory: SharedMemoryUse = field(default_factory=lambda: SharedMemoryUse((), 0, 0))
    # The widths (elements) of the kernel's vector copies, smallest first.
    vector_widths: tuple[int, ...] = ()
    # Why every thread of the launch would write some global tensor whole (check_partitioned_
    # writes), or None: the caller decides (a user's schedule keeps it, a scheduler's is refused).
    unpartitioned: str | None = None


def tensor_arg(tv: TensorView) -> TensorArg:
    nd = len([i for i in tv.domain.logical if not i.is_reduction])
    na = len([i for i in tv.domain.maybe_allocation if not i.is_reduction])
    return TensorArg(tv.short_name, tv.dtype.cuda_name, nd, na)


# Parallel types that bind one loop axis of a tensor: a second axis with the same type would
# share its index (nvFuser refuses this too).
_ONE_AXIS = frozenset({
    ParallelType.grid_x, ParallelType.grid_y, ParallelType.grid_z, ParallelType.block_x,
    ParallelType.block_y, ParallelType.block_z, ParallelType.vectorize,
})


def _check_parallel_types(tv: TensorView) -> None:
    seen: dict[ParallelType, int] = {}
    for k, i in enumerate(tv.domain.loop):
        p = i.parallel_type
        if p in _ONE_AXIS:
            if p in seen:
                raise CompileError(
                    f"{tv.short_name}: loop axes {seen[p]} and {k} are both parallelized as {p.name}; "
                    "a parallel type binds one axis of a tensor"
                )
            seen[p] = k


# Ops whose lowering reads each operand through ExprLowering.read (op_values.value_of).
_CONSTANT_READERS = (ex.UnaryOp, ex.BinaryOp, ex.TernaryOp, ex.PadOp, ex.SliceOp, ex.CatOp)


def constant_fulls(fusion: Fusion, exprs: list[Expr]) -> dict[TensorView, Scalar]:
    """Local tensors made by `full` that only pointwise, pad, slice and cat ops read: every
    element is the fill value, so the readers use it directly and nothing is stored (a pad
    of a `full` then needs no loop of its own: see schedule.global_memory.memory_promotion_reason)."""
    out: dict[TensorView, Scalar] = {}
    for e in exprs:
        if not isinstance(e, ex.FullOp):
            continue
        tv = out_tv(e)
        if tv.memory_type == MemoryType.Global or tv in fusion.outputs:
            continue
        if all(isinstance(u, _CONSTANT_READERS) for u in fusion.uses_of(tv)) and isinstance(e.fill, Scalar):
            out[tv] = e.fill
    return out


def _validate(fusion: Fusion) -> list[Expr]:
    exprs = fusion.exprs()
    for e in exprs:
        for o in e.outputs:
            if isinstance(o, TensorView):
                _check_parallel_types(o)
        if isinstance(e, _UNSUPPORTED):
            raise CompileError(f"{out_tv(e).short_name}: {e.op_name} is not generated as CUDA; it runs through expr_eval")
        for o in e.outputs:
            if isinstance(o, TensorView) and o.dtype == DataType.Float4_e2m1fn and \
                    type(e).__name__ != "BlockQuantizationOp":
                raise CompileError(f"{o.short_name}: fp4 tensors are produced by the quantization runtime only")

    check_grid_results(exprs)
    return exprs


def _nest_text(nest: list[LoopNode | Expr], depth: int = 0) -> list[str]:
    out: list[str] = []
    for item in nest:
        if isinstance(item, LoopNode):
            out.append("  " * depth + f"FOR {item.concrete}:")
            out.extend(_nest_text(item.children, depth + 1))
        else:
            out.append("  " * depth + f"{out_tv(item).short_name} = {item.op_name}(...)")
    return out


def _is_virtual(i, ext: Extents) -> bool:
    return i.parallel_type in _DIMS or ext.of(i) == 1


def _covers(i, like, ext: Extents) -> int:
    """The elements a loop over `i` walks, those of the id it was split from (a block index
    over 48 merged elements and one over 6 both have extent 1 at 128 threads), when `i`
    went through the same splits as `like`; else 0."""
    root, steps = split_chain(i, ext)
    return ext.of(root) if steps == split_chain(like, ext)[1] else 0


def _params(fusion: Fusion) -> tuple[list[ArgSpec], dict[str, TensorView], dict[Scalar, str]]:
    params: list[ArgSpec] = []
    tensors: dict[str, TensorView] = {}
    for v in fusion.inputs:
        if isinstance(v, TensorView):
            params.append(tensor_arg(v))
            tensors[v.short_name] = v
        elif isinstance(v, Scalar):
            params.append(ScalarArg(v.inline(), v.dtype.cuda_name if v.dtype != DataType.Index else "int64_t"))
    for v in fusion.outputs:
        if isinstance(v, TensorView) and v.short_name not in tensors:
            params.append(tensor_arg(v))
            tensors[v.short_name] = v
    for tv in fusion.tensors():
        if isinstance(tv, TensorView) and tv.memory_type == MemoryType.Global and tv.short_name not in tensors:
            params.append(tensor_arg(tv))
            tensors[tv.short_name] = tv
    return params, tensors, {v: v.inline() for v in fusion.inputs if isinstance(v, Scalar)}


def _syncs(low: ExprLowering) -> list[str]:
    notes: list[str] = []
    for level, loops, expr, why, shared in low.pending_sync:
        fenced = frozenset({shared} if shared else ())
        low.work.post[low.item_at(level, loops, expr)].append(kir.BlockSync(f"RAW: {why}", raw=fenced))
        if any(not n.virtual for n in loops[:level]):
            low.work.pre[low.item_at(level, loops, expr)].append(kir.BlockSync(f"WAR: {why}", war=fenced))
        notes.append(f"sync around {why}")
    return notes


def _engine_allocated(low: ExprLowering) -> set[str]:
    """Global tensors the engine allocates (outputs, intermediates): aligned and contiguous in
    their allocation order, so a store of a contiguous, divisible run can be widened."""
    out = set()
    for b in low.buffers.values():
        if b.memory != "global" or b.tv in low.fusion_inputs:
            continue
        dom = b.tv.domain
        if all(c is not False for c in dom.contiguity):
            out.add(b.name)
    return out


def _bulk_copy_only(node: LoopNode) -> bool:
    """Sharing a loop's iterations among threads is right only for plain copies into shared memory
    (a barrier follows them); anything else keeps the serial loop every thread runs."""
    return all(isinstance(e, ex.LoadStoreOp) and out_tv(e).memory_type == MemoryType.Shared
               for e in _exprs_of(node))


def _assemble(nest: list[LoopNode | Expr], low: ExprLowering, key: int) -> list[kir.Stmt]:
    body: list[kir.Stmt] = list(low.work.allocs.get(key, []))
    for item in nest:
        body.extend(low.work.pre.get(id(item), []))
        if isinstance(item, LoopNode):  # a real loop: virtual levels never become nodes
            body.extend(_emit_loop(item, _assemble(item.children, low, id(item)), low))
        else:
            body.extend(low.body[item])
        body.extend(low.work.post.get(id(item), []))
    return body


def _emit_loop(item: LoopNode, inner: list[kir.Stmt], low: ExprLowering) -> list[kir.Stmt]:
    """The loop over `item`, as the kind of its id asks, widened where the accesses allow."""
    ix = low.loop_index(item)
    assert isinstance(ix.term, Var), ix.term  # a loop's own index is its variable
    var = ix.term.name
    kind = loop_kind(item.concrete.parallel_type)
    if kind == "block_strided":
        if not _bulk_copy_only(item):
            kind = "serial"
        else:
            widened = widen_bulk_copy(var, ix.hi, inner, low.block_threads(), low.layouts,
                                      {b.name: b.ctype for b in low.buffers.values()})
            if widened is not None:
                return [widened]
    loop = kir.ForLoop(var, ix.hi, kind, str(item.concrete), inner, low.block_threads())
    if kind not in ("vectorize", "serial", "unroll"):
        return [loop]
    # Reads of a shared buffer along the loop become one vector read before it, in a loop
    # that vectorizes another tensor's access too (a persistent row read back from shared
    # memory to compute a vectorized output).
    shared = {b.name: b.ctype for b in low.buffers.values() if b.memory == "shared"}
    if kind == "vectorize":
        globals_ = {b.name for b in low.buffers.values() if b.memory == "global"}
        inputs = [t for t in low.fusion_inputs if isinstance(t, TensorView)]
        prefetch = {t.short_name: t.l2_prefetch for t in inputs if t.l2_prefetch}
        evict_last = {t.short_name for t in inputs if t.l2_evict_last}
        widened = (globals_, prefetch, evict_last)
    else:
        widened = (_engine_allocated(low),)
    return [vectorize_loop(st, item.concrete, low.ext, *widened) if st is loop else st
            for st in hoist_shared_reads(loop, shared)]


def _mark_global_syncs(low: ExprLowering, fusion: Fusion, exprs: list[Expr], loops_of: dict) -> None:
    """Global tensors read back in the same kernel: other threads may have written them."""
    for e in exprs:
        for o in e.outputs:
            if (isinstance(o, TensorView) and o.memory_type == MemoryType.Global and fusion.uses_of(o)):
                loops = loops_of[e]
                level = min(o.compute_at_pos, len(loops))
                if isinstance(e, ex.ReductionOp | ex.WelfordOp):
                    level = acc_level(out_tv(e))
                low.pending_sync.append((level, loops, e, f"{o.short_name} in global memory", None))


def lower_fusion(fusion: Fusion, env: dict, name: str,
                 layouts: dict[str, tuple[list[int], int]] | None = None,
                 coresident_blocks: int = 0, strides: dict[str, list[int]] | None = None,
                 min_blocks_per_sm: int = 1, device: DeviceProperties | None = None,
                 show: Callable[[KExpr], str] = repr) -> Lowered:
    """Lower a scheduled fusion for the sizes bound in `env`. `layouts`: the compiled-for inputs'
    allocation strides and pointer alignment (bytes), which let copies be widened safely.
    `coresident_blocks`: a grid of at most this many blocks may wait at a grid barrier (its
    kernel is then launched cooperatively); 0 keeps every block independent. `strides`: global
    tensors addressed with these allocation strides as constants instead of their Tensor's.
    `min_blocks_per_sm`: blocks each SM must hold at once (the kernel's launch bounds).
    `device`: the GPU compiled for (its register file decides how narrow rows convert).
    `show`: how an error message shows a kernel-IR expression (the pipeline passes codegen's
    renderer, engine.codegen.expressions.render: lowering renders no expression)."""
    with loop_maps_frozen():
        return _lower_fusion(fusion, env, name, layouts, coresident_blocks, strides or {}, min_blocks_per_sm,
                             device, show)


def _lower_fusion(fusion: Fusion, env: dict, name: str, layouts: dict[str, tuple[list[int], int]] | None,
                  coresident_blocks: int, strides: dict[str, list[int]], min_blocks_per_sm: int,
                  device: DeviceProperties | None, show: Callable[[KExpr], str]) -> Lowered:
    stages: dict[str, str] = {}
    exprs = _validate(fusion)
    constants = constant_fulls(fusion, exprs)
    exprs = [e for e in exprs if out_tv(e) not in constants]
    ext = Extents(env)
    ext.promote(exprs)
    ext.note_views(exprs)
    nest = Nest(exprs, lambda i: _is_virtual(i, ext), lambda i, like: _covers(i, like, ext))
    stages["loop_nests"] = "\n".join(_nest_text(nest.items)) + "\n"
    dims = parallel_dims(nest, ext)
    launch = LaunchConfig(
        (dims.get(ParallelType.grid_x, 1), dims.get(ParallelType.grid_y, 1), dims.get(ParallelType.grid_z, 1)),
        (dims.get(ParallelType.block_x, 1), dims.get(ParallelType.block_y, 1), dims.get(ParallelType.block_z, 1)),
    )
    stages["parallel_dims"] = str(launch) + "\n"
    params, tensors, scalars = _params(fusion)
    low = ExprLowering(ext, dims, scalars, fusion_inputs=fusion.inputs, constants=constants, layouts=layouts,
                       constant_strides=strides, coresident_blocks=coresident_blocks,
                       min_blocks_per_sm=min_blocks_per_sm, device=device, show=show)
    low.note_rfactor_sources(exprs)
    loops_of = {}
    for e, loops in walk(nest):
        loops_of[e] = loops
        low.lower(e, loops)
    stages["allocation"] = "".join(
        f"{b.name}: {b.memory} {b.ctype}[{b.size}] at level {b.level} over "
        f"({', '.join(str(i) for i in b.layout)})\n"
        for b in low.buffers.values() if b.memory != "global"
    )
    _mark_global_syncs(low, fusion, exprs, loops_of)
    stages["sync"] = "\n".join(_syncs(low)) + "\n"
    body = _assemble(nest.items, low, 0)
    ctx = PassContext(fusion, low.ext, tuple(low.buffers.values()), low.grid_syncs,
                      {p.name for p in params} | set(low.workspaces),
                      {n for n, tv in tensors.items() if tv in low.fusion_inputs})
    body = run_passes(body, ctx, stages)
    shared = shared_memory_use(low, ctx.pipelined)
    smem = shared.total
    red_off = shared.reduction_offset
    for wname, (ctype, _n, _z) in low.workspaces.items():
        params.append(TensorArg(wname, ctype, 1, 1))
    kernel = kir.Kernel(name, params, body,
                        LaunchConfig(launch.grid, launch.block, smem, low.cooperative), smem,
                        dict(low.workspaces), min_blocks_per_sm)
    kernel.reduction_smem_offset = red_off  # type: ignore[attr-defined]
    if smem:
        stages["shared_memory"] = f"{smem} bytes of dynamic shared memory:\n" + "".join(
            f"{line}\n" for line in shared.lines())
    # Last: a kernel that another check refuses (and the segmenter places otherwise) is not
    # this check's to judge.
    try:
        check_partitioned_writes(nest, ext, dims)
        unpartitioned = None
    except UnpartitionedWriteError as e:
        unpartitioned = str(e)
    return Lowered(kernel, stages, tensors, shared, vector_widths(body), unpartitioned)


def shared_memory_use(low: ExprLowering, stages: dict[str, int]) -> SharedMemoryUse:
    """The kernel's dynamic shared memory as laid out: its shared buffers in offset order (those
    in `stages`, name -> depth, pipelined by cp.async), then the block reductions' workspace
    at the next 16-byte boundary."""
    parts = []
    for b in sorted((b for b in low.buffers.values() if b.memory == "shared"), key=lambda b: b.offset):
        d = b.tv.definition
        src = d.inputs[0] if isinstance(d, ex.LoadStoreOp) else None
        source = src.short_name if isinstance(src, TensorView) and src.memory_type == MemoryType.Global else None
        parts.append(SharedBuffer(b.name, b.offset, b.size * max(b.tv.dtype.bits // 8, 1), source,
                                  stages.get(b.name, 0)))
    return SharedMemoryUse(tuple(parts), (low.smem_bytes + 15) // 16 * 16, low.reduce_smem_bytes)
