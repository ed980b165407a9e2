"""Rewrites before segmentation that build new ops (nvFuser's pre-segmentation passes that
need its op builders; those that only rewire or refill tensors are in engine.concretize).

`matmul_without_reduction`: a matmul whose contracted axis is a broadcast (K = 1) is an
outer product: nvFuser's TranslateNoReductionMatmulToMulSqueeze writes it as a multiply of
the operands broadcast against each other, then a squeeze of the K axis. The segmenter can
then fuse it with the pointwise ops around it instead of running a GEMM for it (a rotary
embedding's inverse frequencies times positions is one).

`expanded_outputs_apart`: an output that is a computed tensor broadcast and expanded (a
RoPE's cos and sin handed back as [B, H, S, D] views of [S, D]) is a view of that tensor.
As nvFuser's MarkAliasesPrepare does, a segment_set cuts the chain of view ops from the
tensor they start at, so they form a segment of their own that runs no kernel (an alias:
engine.schedule.expr_eval), and no kernel iterates the expanded axes to write the same
values again and again.

`views_of_outputs_apart`: an output that is a view (reshape, permute, squeeze, broadcast,
expand, set) of another output (a norm backward's grad handed back as [1, N, H], as [N, H]
and transposed as [H, N]) is cut from it by a segment_set as nvFuser's MarkAliasesPrepare
does: the kernel writes the values once, and the views are that buffer's sizes and strides
(a transposed view would otherwise be a second, strided write of every element).

`scatters_as_selects`: a scatter of one value (a scalar, or a full tensor) into a full tensor
at one index per row (the index's extent along the scattered axis is 1: a cross entropy's
one-hot gradient, a router's count matrix) is a select, out = where(iota == index, value,
fill), broadcast over the rows. It is then a pointwise op the kernels around it compute,
not a copy of the whole tensor written through torch (nvFuser runs it as a kernel of its
own). An index out of range selects nothing where torch would fault.

`replan_reshapes`: a reshape of symbolic sizes whose symbols do not nest (equal only at run
time) merged all its axes and split them again; at the bound sizes it is planned again, as
nvFuser concretizes a dynamic reshape, keeping the axes that match
(engine.ops.reshaping.replan_view).
"""

from __future__ import annotations

from collections.abc import Callable

from engine.analysis.view_chains import only_views_from, view_chain
from engine.dtypes import DataType
from engine.errors import FusionDefinitionError
from engine.ir import exprs as ex
from engine.ir.aten_exprs import ScatterOp
from engine.ir.base import FusionGuard
from engine.ir.fusion import Fusion
from engine.ir.iterdomain import IterDomain
from engine.ir.scalar import Scalar
from engine.ir.tensorview import TensorDomain, TensorView
from engine.ops.arith import binary, cast, where
from engine.ops.axes import segment_set
from engine.ops.common import full_extent, no_reductions
from engine.ops.factory import iota
from engine.ops.reduction import sum as reduce_sum
from engine.ops.reshaping import replan_view
from engine.ops.shape import broadcast, squeeze
from engine.trace import Trace


def _outer_product_operands(e: ex.MatmulOp) -> tuple[TensorView, TensorView] | None:
    """A and B of a matmul whose K axis is a broadcast in both (at least 2-D each), else None."""
    a, b = e.inputs
    if not (isinstance(a, TensorView) and isinstance(b, TensorView)):
        return None
    da, db = no_reductions(a), no_reductions(b)
    if len(da) < 2 or len(db) < 2:
        return None
    ka, kb = da[-1], db[-2]
    if not (ka.is_broadcast and kb.is_broadcast) or ka.expanded_extent is not None or kb.expanded_extent is not None:
        return None
    return a, b


def matmul_without_reduction(fusion: Fusion, trace: Trace | None = None) -> None:
    """Each matmul [..., M, 1] x [..., 1, N] becomes squeeze(mul(A[..., M, 1, b], B[..., b, 1, N]))."""
    for e in fusion.exprs():
        if type(e) is not ex.MatmulOp:  # the partial products of an rfactor keep their parts of K
            continue
        operands = _outer_product_operands(e)
        out = e.outputs[0]
        if operands is None or not isinstance(out, TensorView) or out.domain.allocation is not None:
            continue
        a, b = operands
        na, nb = len(no_reductions(a)), len(no_reductions(b))
        batch = max(na, nb) - 2
        try:
            # Batch axes right-aligned as torch.matmul aligns them; A gains an N axis, B an M axis.
            wide_a = broadcast(a, [True] * (batch + 2 - na) + [False] * na + [True])
            wide_b = broadcast(b, [True] * (batch + 2 - nb) + [False] * (nb - 2) + [True, False, False])
            product = squeeze(binary("mul", wide_a, wide_b), [batch + 1])
        except FusionDefinitionError:
            continue  # batch axes that torch would broadcast but the IR cannot (a concrete 1)
        if product.dtype != out.dtype:
            continue
        fusion.replace_all_uses(out, product)
        if trace is not None:
            trace.event("preseg", out.short_name,
                        f"matmul of {a.short_name} and {b.short_name} contracts a broadcast axis (K = 1): "
                        f"{out.short_name} is {product.short_name}, their product with K squeezed",
                        rule="matmul_without_reduction")


def _clone_chain(fusion: Fusion, chain: list[ex.Expr], start: TensorView) -> TensorView:
    """The ops of `chain` (nearest the output first) again, from `start`."""
    cur = start
    for e in reversed(chain):
        out = e.outputs[0]
        made = TensorView(fusion, TensorDomain([
            IterDomain(fusion, i.extent, i.iter_type, expanded_extent=i.expanded_extent)
            for i in out.domain.logical if not i.is_reduction]), out.dtype)
        clone = object.__new__(type(e))
        clone.fusion, clone.inputs, clone.outputs = fusion, [cur, *e.inputs[1:]], [made]
        clone.attributes = dict(e.attributes)
        clone.name = fusion.register_expr(clone)
        cur = made
    return cur


def expanded_outputs_apart(fusion: Fusion, trace: Trace | None = None) -> None:
    """Each expanded output becomes its view ops again from a segment_set of the computed
    tensor they start at; the fusion's own reads of the output read the original ops, from
    the same segment_set (in their own segment, where the views are only indexing)."""
    inputs = set(fusion.inputs)
    for out in list(fusion.outputs):
        if not isinstance(out, TensorView) or out.domain.allocation is not None:
            continue
        src, chain = view_chain(out, reshapes=False)
        if (not chain or src in inputs or src.definition is None
                or not any(isinstance(e, ex.ExpandOp) for e in chain)):
            continue
        cut = segment_set(src)
        fusion.replace_input_of(chain[-1], src, cut)
        view = _clone_chain(fusion, chain, cut)
        fusion.replace_output(out, view)
        if trace is not None:
            trace.event("preseg", out.short_name,
                        f"{out.short_name} is an expanded view of {src.short_name}: the output is "
                        f"{view.short_name}, the same view ops from segment_set {cut.short_name}, a "
                        "segment with no kernel", rule="expanded_outputs_apart")


def views_of_outputs_apart(fusion: Fusion, trace: Trace | None = None) -> None:
    """Each output that is a chain of view ops from another output's computed tensor reads
    that tensor through a segment_set, when nothing but views (and outputs) follows it; in a
    fusion with reductions, so does an output reshaped from any computed tensor (a reduction
    schedule cannot carry a reshape that merges its reduced axes with others) through views
    that keep it contiguous (no permute: a reshape of a permuted tensor is a copy)."""
    outputs = set(fusion.outputs)
    reducing = any(isinstance(e, ex.ReductionOp | ex.WelfordOp) for e in fusion.exprs())
    for out in list(fusion.outputs):
        if not isinstance(out, TensorView) or out.domain.allocation is not None:
            continue
        src, chain = view_chain(out)
        if (not chain or src.definition is None
                or src in fusion.inputs or src.domain.allocation is not None):
            continue
        if src not in outputs and not (reducing and any(isinstance(e, ex.ViewOp) for e in chain)
                                       and not any(_is_permute(e) for e in chain)):
            continue
        first = chain[-1]
        if not only_views_from(fusion, [first]):
            continue
        cut = segment_set(src)
        fusion.replace_input_of(first, src, cut)
        _permutes_keep_layout(fusion, cut)
        if trace is not None:
            trace.event("preseg", out.short_name,
                        f"{out.short_name} is a view of output {src.short_name}: it reads "
                        f"segment_set {cut.short_name}, a segment with no kernel, and the kernel "
                        f"writes {src.short_name} only", rule="views_of_outputs_apart")


def _is_permute(e: ex.Expr) -> bool:
    return isinstance(e, ex.LoadStoreOp) and e.is_permute


def _permutes_keep_layout(fusion: Fusion, start: TensorView) -> None:
    """Each permute after `start` keeps its input's memory order as its allocation domain (its
    root order), as nvFuser gives an aliased output the layout of the tensor it aliases: the
    output is the transposed view, not a transposed copy."""
    stack = list(fusion.uses_of(start))
    while stack:
        e = stack.pop()
        t = e.outputs[0]
        if (isinstance(e, ex.LoadStoreOp) and e.is_permute and isinstance(t, TensorView)
                and t.domain.allocation is None and isinstance(e.inputs[0], TensorView)
                and e.inputs[0].domain.allocation is None):
            t.set_allocation_domain(list(t.domain.root), True)
        stack.extend(fusion.uses_of(t))


def replan_reshapes(fusion: Fusion, value_of: Callable[[Scalar], int], trace: Trace | None = None) -> None:
    """Each reshape of symbolic sizes planned again at the bound sizes
    (engine.ops.reshaping.replan_view); its readers read the new view."""
    for e in fusion.exprs():
        if not isinstance(e, ex.ViewOp) or not isinstance(e.output, TensorView):
            continue
        new = replan_view(e, value_of)
        if new is None:
            continue
        old = e.output
        fusion.replace_all_uses(old, new)
        if trace is not None:
            trace.event("concretize", old.short_name,
                        f"reshape of {e.input.short_name} planned at the bound sizes: {new.short_name} "
                        f"keeps the axes that match ({new.domain}) instead of merging all of them",
                        rule="replan_reshapes")


def _fill(v: object) -> Scalar | None:
    """The value every element of `v` holds: a scalar, or a full tensor's fill."""
    if isinstance(v, Scalar):
        return v
    if isinstance(v, TensorView) and isinstance(v.definition, ex.FullOp):
        return v.definition.fill
    return None


# The most indices a row a scatter may have to become a select (each element compares with each).
SELECT_MAX_INDICES = 16


def _select_of(e: ScatterOp, value_of: Callable[[Scalar], int]) -> TensorView | None:
    """where(iota == index, value, fill) for a scatter of one value into a full tensor
    (several indices a row: where any of them is the element's position); None when the
    scatter is not one."""
    inp, index, src = e.inputs
    fill, value = _fill(inp), _fill(src)
    out = e.outputs[0]
    if (e.accumulate or fill is None or value is None or not isinstance(index, TensorView)
            or not isinstance(out, TensorView) or out.domain.allocation is not None):
        return None
    axes, keys = no_reductions(inp), no_reductions(index)
    rank, dim = len(axes), e.dim
    try:
        per_row = value_of(full_extent(keys[dim]))
        if not 1 <= per_row <= SELECT_MAX_INDICES or any(
                value_of(full_extent(k)) != value_of(full_extent(a))
                for d, (k, a) in enumerate(zip(keys, axes)) if d != dim):
            return None  # an index covering part of the rows writes only those
    except KeyError:
        return None
    with FusionGuard(inp.fusion):
        positions = iota(full_extent(axes[dim]), 0, 1, index.dtype)
        if keys[dim].is_broadcast and not keys[dim].has_expanded_extent:
            hit = binary("eq", index, broadcast(positions, [d != dim for d in range(rank)]))
        else:
            # [..., position, index, ...]: each position against each of its row's indices.
            pos = broadcast(positions, [d != dim for d in range(rank + 1)])
            key = broadcast(index, [d == dim for d in range(rank + 1)])
            count = reduce_sum(cast(binary("eq", key, pos), DataType.Int32), [dim + 1])
            hit = binary("gt", count, 0)
        picked = where(hit, value, fill)
        if not isinstance(picked, TensorView):
            return None
        return picked if picked.dtype == out.dtype else cast(picked, out.dtype)


def scatters_as_selects(fusion: Fusion, value_of: Callable[[Scalar], int], trace: Trace | None = None) -> None:
    """Each scatter of one value into a full tensor becomes a select."""
    for e in fusion.exprs():
        if not isinstance(e, ScatterOp):
            continue
        try:
            picked = _select_of(e, value_of)
        except FusionDefinitionError:
            continue
        if picked is None:
            continue
        old = e.outputs[0]
        fusion.replace_all_uses(old, picked)
        if trace is not None:
            trace.event("preseg", old.short_name,
                        f"scatter of one value into full {e.inputs[0].short_name}: "
                        f"{old.short_name} is {picked.short_name}, where(iota == {e.inputs[1].short_name}, "
                        "value, fill)", rule="scatters_as_selects")
