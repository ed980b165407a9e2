"""The segmented fusion: groups of exprs (one kernel each), the tensors passed between them
through global memory, their run order, and nvFuser's printed form.

Groups hold exprs and TensorViews of the complete (original) fusion. `make_fusion` cuts a
standalone Fusion out of it for one group, which is what the schedulers are asked about
while segmenting and what the compile pipeline schedules, lowers and runs.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import torch

from engine.dtypes import DataType, to_torch
from engine.errors import ExecutionError
from engine.ir import exprs as ex
from engine.ir.base import Expr, Val
from engine.ir.fusion import Fusion
from engine.ir.graph_copy import copy_value
from engine.ir.quant_exprs import PreprocessGroupedMatmulInputSf
from engine.ir.scalar import Scalar
from engine.ir.tensorview import MemoryType, TensorView
from engine.reference import HANDLERS, Context, bind_input, check_extents, finish_output
from engine.runtime.placement import run_device

if TYPE_CHECKING:
    import networkx as nx

    from engine.config import Options
    from engine.schedule.base import SchedulerType, Verdict
    from engine.trace import Trace


# ---- sizes at the example inputs ------------------------------------------------------------

class Sizes:
    """Binds the complete fusion's free symbols from example inputs, so that any tensor's
    size, bytes and a stand-in torch tensor (for a segment's SchedulerRuntimeInfo) can be
    computed without running the fusion."""

    def __init__(self, fusion: Fusion, inputs: Sequence[Any]) -> None:
        if len(inputs) != len(fusion.inputs):
            raise ExecutionError(f"fusion takes {len(fusion.inputs)} inputs, got {len(inputs)}")
        ctx = Context(torch.device("meta"))
        self.given: dict[Val, Any] = {}
        for k, (val, x) in enumerate(zip(fusion.inputs, inputs)):
            # Sizes are all that binding needs: meta tensors, no copy of device data.
            meta = (torch.empty_strided(x.shape, x.stride(), dtype=x.dtype, device="meta")
                    if isinstance(x, torch.Tensor) else x)
            bind_input(k, val, meta, ctx)
            self.given[val] = x
        check_extents(fusion, ctx.env)
        self.env = ctx.env
        self._fakes: dict[TensorView, torch.Tensor] = {}

    def value(self, s: Scalar) -> Any:
        return s.evaluate(self.env)

    def sizes(self, tv: TensorView) -> list[int]:
        out = []
        for i in tv.domain.logical:
            if i.is_reduction:
                continue
            out.append(int(self.value(i.expanded_extent if i.expanded_extent is not None else i.extent)))
        return out

    def stored_numel(self, tv: TensorView) -> int:
        """Elements a tensor occupies in memory: expanded broadcasts are stored once."""
        n = 1
        for i in tv.domain.logical:
            if i.is_reduction or i.is_broadcast:
                continue
            n *= int(self.value(i.extent))
        return n

    def bytes(self, tv: TensorView) -> int:
        return (self.stored_numel(tv) * tv.dtype.bits + 7) // 8

    def tensor(self, tv: TensorView) -> torch.Tensor:
        """The given input tensor, or a meta tensor (sizes and strides, no memory) with
        `tv`'s sizes and dtype, laid out as the engine allocates intermediates (allocation
        order, expanded broadcasts with stride 0). Only sizes, strides and alignment are
        read; an intermediate of a large fusion ([B, S, vocab] logits, a batched matmul's
        product) is not allocated to be asked about. Its address reads as 0: aligned, as
        the engine's own allocations are."""
        if tv in self.given:
            return self.given[tv]  # on its own device: only sizes, strides and alignment are read
        if tv in self._fakes:
            return self._fakes[tv]
        logical = [i for i in tv.domain.logical if not i.is_reduction]
        full = self.sizes(tv)
        stored = [1 if i.is_broadcast else s for i, s in zip(logical, full)]
        order = list(range(len(logical)))
        alloc = tv.domain.allocation
        if alloc is not None:
            try:
                order = [logical.index(i) for i in alloc if not i.is_reduction]
            except ValueError:
                order = list(range(len(logical)))
        mem_shape = [stored[d] for d in order]
        if tv.dtype == DataType.Float4_e2m1fn:
            mem_shape[-1] = max(1, mem_shape[-1] // 2)
            base = torch.empty(mem_shape, dtype=torch.uint8, device="meta").view(torch.float4_e2m1fn_x2)
        else:
            base = torch.empty(mem_shape, dtype=to_torch(tv.dtype), device="meta")
        skew = self._view_misalignment(tv, base.element_size())
        if skew:  # addresses `skew` elements past a 16-byte boundary, as the viewed input's
            base = torch.empty(base.numel() + skew, dtype=base.dtype, device="meta").as_strided(
                base.shape, base.stride(), skew)
        inv = [order.index(d) for d in range(len(order))]
        t = base.permute(inv) if order != list(range(len(order))) else base
        if stored != full:
            t = t.expand(full)
        self._fakes[tv] = t
        return t

    def _view_misalignment(self, tv: TensorView, itemsize: int) -> int:
        """Elements past a 16-byte boundary at which `tv` starts when the ops making it only
        view a given input (a reshape, permute, squeeze, broadcast or expand run as expr_eval
        returns the input's own buffer): the kernels reading it then see the input's address.
        A slice on the way starts anywhere: one element. 0 for the engine's own allocations."""
        sliced, x = False, tv
        while x not in self.given:
            e = x.definition
            if not isinstance(e, ex.ViewOp | ex.SqueezeOp | ex.BroadcastOp | ex.ExpandOp | ex.LoadStoreOp
                              | ex.SliceOp) or not isinstance(e.inputs[0], TensorView):
                return 0
            sliced = sliced or isinstance(e, ex.SliceOp)
            x = e.inputs[0]
        if sliced:
            return 1
        off = self.given[x].data_ptr() % 16 if self.given[x].numel() else 0
        return (off // itemsize) if off % itemsize == 0 else 1


# ---- cutting a group out of the complete fusion -------------------------------------------

def referenced_symbols(exprs: Sequence[Expr], inputs: Sequence[TensorView],
                       memo: dict[object, tuple[Scalar, ...]] | None = None) -> list[Scalar]:
    """Free scalars a group needs that its tensor inputs do not bind: symbols in the
    extents of tensors it computes and in its exprs' scalar operands and attributes
    (slice ranges, pad widths, expand and full shapes). nvFuser passes these to a segment
    as scalar inputs (SegmentedGroup::finalize).

    `memo` keeps, per tensor and per expr, the non-constant scalars found in its extents
    or attributes, for a caller that asks about many groups of one fusion whose domains
    and attributes do not change meanwhile (the segmenter: every candidate group)."""
    bound: set[Scalar] = set()
    for tv in inputs:
        for i in tv.domain.logical:
            if i.is_reduction:
                continue
            e = i.expanded_extent if i.expanded_extent is not None else i.extent
            if e.is_symbol:
                bound.add(e)
    found: dict[Scalar, None] = {}

    def add(s: Scalar) -> None:
        if s.value is not None:
            return  # a constant (most extents at static sizes) has no free symbols
        for f in sorted(s.free_symbols(), key=lambda x: x.name if x.name is not None else -1):
            if f not in bound:
                found[f] = None

    def walk(x: Any) -> None:
        if isinstance(x, Scalar):
            add(x)
        elif isinstance(x, (list, tuple)):
            for y in x:
                walk(y)
        elif isinstance(x, dict):
            for y in x.values():
                walk(y)

    def tv_symbols(tv: TensorView) -> None:
        if memo is None:
            _tv_symbols(tv, add)
            return
        got = memo.get(tv)
        if got is None:
            got = memo[tv] = tuple(_tv_scalars(tv))
        for x in got:
            add(x)

    def attribute_symbols(e: Expr) -> None:
        if memo is None:
            walk(e.attributes)
            return
        got = memo.get(e)
        if got is None:
            got = memo[e] = tuple(x for x in _attribute_scalars(e.attributes) if x.value is None)
        for x in got:
            add(x)

    input_set = set(inputs)
    # Tensors whose extents were added already (a tensor is an output of one expr and
    # may be an input of several).
    seen: set[TensorView] = set()
    for tv in inputs:
        # An input whose extent is an expression of symbols (a cat's i0 + i0 made in
        # another segment) binds none of them; the heuristics still need its size.
        for i in tv.domain.logical:
            if not i.is_reduction:
                e = i.expanded_extent if i.expanded_extent is not None else i.extent
                if not e.is_symbol and not e.is_const:
                    add(e)
    for e in exprs:
        for v in e.inputs:
            if isinstance(v, Scalar):
                add(v)
            elif isinstance(v, TensorView) and v not in input_set and v not in seen:
                seen.add(v)
                tv_symbols(v)
        for v in e.outputs:
            if isinstance(v, TensorView) and v not in seen:
                seen.add(v)
                tv_symbols(v)
        attribute_symbols(e)
    return sorted(found, key=lambda s: s.name if s.name is not None else -1)


def _tv_symbols(tv: TensorView, add: Any) -> None:
    for x in _tv_scalars(tv):
        add(x)


def _tv_scalars(tv: TensorView) -> Iterator[Scalar]:
    """The non-constant extents of tv's ids, in the order referenced_symbols adds them."""
    dom = tv.domain
    ids = [*dom.maybe_root, *dom.logical, *dom.loop, *(dom.allocation or [])]
    for i in ids:
        if i.extent.value is None:  # constants (most extents at static sizes) add nothing
            yield i.extent
        if i.expanded_extent is not None and i.expanded_extent.value is None:
            yield i.expanded_extent


def _attribute_scalars(x: Any) -> Iterator[Scalar]:
    """The scalars among an expr's attributes, in the order referenced_symbols walks them."""
    if isinstance(x, Scalar):
        yield x
    elif isinstance(x, (list, tuple)):
        for y in x:
            yield from _attribute_scalars(y)
    elif isinstance(x, dict):
        for y in x.values():
            yield from _attribute_scalars(y)


def shareable_domains(exprs: Sequence[Expr], inputs: Sequence[Val],
                      memo: dict[object, tuple[Any, ...]] | None = None) -> dict[int, Any]:
    """The domains (and their ids) of the tensors `exprs` compute, by id, for a cut that only
    reads them (cut_fusion's `memo`): most of a cut's copy is these ids, their transforms
    and extents. A domain that holds an id of an input's domain is left out: cut_fusion
    edits the inputs' copies. Inputs' domains that cut_fusion leaves as they are (no root,
    no reduction axis: _plain_input changes nothing) and that share no id with a computed
    tensor are shared too. Only for a fusion without free symbols (see _Finder._static):
    the inputs' extents are then constants, as copies of them would be.

    `memo` keeps each tensor's domain and ids, for a caller that asks about many groups of
    one fusion whose domains do not change meanwhile (the segmenter)."""
    def ids_of(tv: TensorView) -> tuple[Any, ...]:
        got = memo.get(tv) if memo is not None else None
        if got is None:
            d = tv.domain
            ids = (*d.maybe_root, *d.logical, *d.loop, *(d.allocation or ()))
            got = (d, ids, frozenset(map(id, ids)))
            if memo is not None:
                memo[tv] = got
        return got

    input_ids: set[int] = set()
    for v in inputs:
        if isinstance(v, TensorView):
            input_ids |= ids_of(v)[2]
    shared: dict[int, Any] = {}
    computed_ids: set[int] = set()
    for e in exprs:
        for v in e.outputs:
            if not isinstance(v, TensorView) or id(v.domain) in shared:
                continue
            d, ids, keys = ids_of(v)
            computed_ids |= keys
            if not keys.isdisjoint(input_ids):
                continue
            shared[id(d)] = d
            for i in ids:
                shared[id(i)] = i
    for v in inputs:
        if not isinstance(v, TensorView) or not _plain_already(v):
            continue
        d, ids, keys = ids_of(v)
        if not keys.isdisjoint(computed_ids):
            continue  # a computed tensor's copy would hold one of its ids
        shared[id(d)] = d
        for i in ids:
            shared[id(i)] = i
    return shared


def _plain_already(tv: TensorView) -> bool:
    """Whether _plain_input leaves `tv`'s domain as it is."""
    d = tv.domain
    return d.root is None and not any(i.is_reduction for i in d.logical)


def unshare(sub: Fusion, memo: dict[int, Any], shared: dict[int, Any]) -> None:
    """Give a cut made with `shared` domains (and `memo`, the copy's memo) its own copies of
    them, the ones cut_fusion makes without sharing: before it is scheduled, which edits
    domains. The copies continue the same memo, so extents and transforms the cut copied
    already are the ones its domains use, as in one copy."""
    for k in shared:
        del memo[k]
    for v in sub.all_vals:
        if isinstance(v, TensorView) and id(v.domain) in shared:
            v.domain = copy_value(v.domain, memo)
    sub.__dict__.pop("ids_of", None)


def cut_fusion(
    complete: Fusion,
    exprs: Sequence[Expr],
    inputs: Sequence[Val],
    outputs: Sequence[Val],
    memo: dict[int, Any] | None = None,
    constant_memo: dict[Expr, bool] | None = None,
) -> tuple[Fusion, dict[Val, Val]]:
    """A standalone Fusion of `exprs` with `inputs` as its inputs and `outputs` as its
    outputs (all in global memory), and the map from the complete fusion's vals to it.

    Only the group's part of the graph is copied: every expr outside the group is mapped
    to nothing in the deep copy, which cuts the definitions of the group's inputs and the
    uses that leave the group. Inputs produced by reshape/resize get their logical domain
    as a plain root (nvFuser's convertInputRfactorsToRoots), since the transforms that
    made it happened in another segment.

    `memo`: the deep copy's memo to start from and fill. Objects it maps to themselves are
    shared with the complete fusion, not copied (shareable_domains); their ids then name
    the complete fusion as theirs, which the cut records as `ids_of` (see
    Fusion.__deepcopy__); unshare gives the cut its own copies. Exprs' attributes that
    hold only constants are shared then too. `constant_memo` keeps, per expr, whether its
    attributes do (attributes never change while segmenting).
    """
    keep = {id(e) for e in exprs}
    shell = Fusion()
    shell._counters = dict(complete._counters)
    sharing = bool(memo)
    if memo is None:
        memo = {}
    elif sharing:
        shell.ids_of = complete  # type: ignore[attr-defined]
    memo[id(complete)] = shell
    for e in complete.all_exprs:
        if id(e) not in keep:
            memo[id(e)] = None
    if sharing:
        # Domains are shared (see above): so are the exprs' constant attributes, which
        # are most of what remains to copy (slice ranges, pad widths, shapes).
        for e in exprs:
            attrs = e.attributes
            known = constant_memo.get(e) if constant_memo is not None else None
            if known is None:
                known = bool(attrs) and constant(attrs)
                if constant_memo is not None:
                    constant_memo[e] = known
            if known:
                memo[id(attrs)] = attrs
    new_exprs = [copy_value(e, memo) for e in exprs]
    new_in = [copy_value(v, memo) for v in inputs]
    new_out = [copy_value(v, memo) for v in outputs]
    val_map: dict[Val, Val] = {}
    for v in [*complete.all_vals, *inputs, *outputs]:
        c = memo.get(id(v))
        if c is not None and v not in val_map:
            val_map[v] = c
    for e in exprs:
        for v in [*e.inputs, *e.outputs]:
            c = memo.get(id(v))
            if c is not None:
                val_map.setdefault(v, c)
    live = {id(x) for x in new_exprs}
    for v in val_map.values():
        v.uses = [u for u in v.uses if u is not None]
        if v.definition is not None and id(v.definition) not in live:
            v.definition = None
    shell.all_exprs = list(new_exprs)
    shell.all_vals = list(dict.fromkeys(val_map.values()))
    if complete._zero is not None and id(complete._zero) in memo:
        shell._zero = memo[id(complete._zero)]
    for v in new_in:
        if isinstance(v, TensorView):
            _plain_input(v)
        shell.add_input(v)
    for v in new_out:
        shell.add_output(v)
    return shell, val_map


def constant(x: Any) -> bool:
    """Whether an attribute value holds nothing but atoms and unnamed constant scalars
    outside the graph: a copy of it would be the same values, so copies of a fusion may
    share it."""
    t = type(x)
    if t is Scalar:
        return (x.value is not None and x.name is None and x.definition is None and not x.uses
                and all(constant(o) for o in x.operands))
    if t is list or t is tuple:
        return all(constant(y) for y in x)
    if t is dict:
        return all(constant(y) for y in x.values())
    return t in (int, float, bool, str, type(None)) or isinstance(x, enum.Enum)


def _plain_input(tv: TensorView) -> None:
    dom = tv.domain
    if any(i.is_reduction for i in dom.logical):
        # A reduction output read by a later segment is a plain tensor there: its reduced
        # axes were consumed in the producing segment (nvFuser clears them as well).
        dom.logical = [i for i in dom.logical if not i.is_reduction]
        if dom.allocation is not None:
            dom.allocation = [i for i in dom.allocation if not i.is_reduction]
        dom.loop = [i for i in dom.loop if not i.is_reduction]
        dom.contiguity = dom.default_contiguity()
    if not dom.has_root:
        return
    for i in dom.logical:
        i.definition = None
        i.is_rfactor = False
    dom.root = None
    if dom.allocation is not None and set(map(id, dom.allocation)) != set(map(id, dom.logical)):
        dom.allocation = None
        dom.contiguity = dom.default_contiguity()


# ---- the model -------------------------------------------------------------------------------

def _tv_names(vals: Iterable[Val]) -> list[Val]:
    return sorted(vals, key=lambda v: (0, v.name) if isinstance(v, TensorView) else (1, v.name or 0))


@dataclass(eq=False)
class SegmentedGroup:
    """One segment: a kernel (or an ATen call) for `exprs`.

    `inputs`/`outputs` are TensorViews of the complete fusion, sorted by name as nvFuser
    prints them; `scalar_inputs` are free scalars the group needs that its tensor inputs do
    not bind. Exprs forwarded from fusion inputs or factories are replicated here
    (`forwarded_exprs` says which).
    """

    id: int
    scheduler: str
    exprs: list[Expr]
    inputs: list[TensorView]
    outputs: list[TensorView]
    complete: Fusion
    scalar_inputs: list[Scalar] = field(default_factory=list)
    forwarded_exprs: list[Expr] = field(default_factory=list)
    verdicts: list[Verdict] = field(default_factory=list)
    # Each scheduler's compile-time reason (None: no objection) for `make_fusion()`'s fusion,
    # when the segmenter's verdicts were found on a cut identical to it; else None.
    compile_reasons: dict[SchedulerType, str | None] | None = None
    # The segmenter's own cut of this group, when it is the fusion make_fusion would cut
    # (handed over once: the first make_fusion returns it instead of copying again).
    cut: tuple[Fusion, dict[Val, Val]] | None = field(default=None, repr=False)

    @property
    def name(self) -> str:
        return f"g{self.id}"

    @property
    def fusion_inputs(self) -> list[Val]:
        """Vals of the complete fusion in the order of `make_fusion()`'s inputs."""
        return [*self.inputs, *self.scalar_inputs]

    def make_fusion(self) -> tuple[Fusion, dict[Val, Val]]:
        """A standalone clone of this group and the map original -> clone."""
        if self.cut is not None:
            made, self.cut = self.cut, None
            return made
        return cut_fusion(self.complete, self.exprs, self.fusion_inputs, self.outputs)

    def input_values(self, values: dict[Val, Any], env: dict[Scalar, Any]) -> list[Any]:
        """Arguments for `make_fusion()`'s fusion from computed tensors and bound scalars."""
        args = []
        for v in self.fusion_inputs:
            if v in values:
                args.append(values[v])
            elif isinstance(v, Scalar):
                args.append(v.evaluate(env))
            else:
                raise ExecutionError(f"segment {self.name}: input {v.short_name} is not computed yet")
        return args

    def summary(self) -> str:
        """nvFuser's one-line group form: `g{1, 2, 5}` (expr numbers)."""
        return "g{" + ", ".join(str(n) for n in sorted(e.name for e in self.exprs)) + "}"

    def details(self) -> str:
        """The seed-003 listing: `g{(resize)`, `group id: 3`, inputs, outputs, exprs."""
        lines = [f"g{{({self.scheduler})", f"group id: {self.id}", "inputs:"]
        lines += [f"  {v} {v.dtype.cuda_name}" for v in _tv_names([*self.inputs, *self.scalar_inputs])]
        lines.append("outputs:")
        lines += [f"  {v} {v.dtype.cuda_name}" for v in _tv_names(self.outputs)]
        body = "".join(f"{e.to_string()}({e.name})\n" for e in self.exprs)
        return "\n".join(lines) + "\n\n\n" + body + "}\n"

    def __str__(self) -> str:
        return self.details()

    def __repr__(self) -> str:
        return f"<SegmentedGroup {self.name} {self.scheduler} {self.summary()}>"


@dataclass(eq=False)
class SegmentedEdge:
    """`val` passes from `producer` to `consumer` through global memory."""

    producer: SegmentedGroup
    consumer: SegmentedGroup
    val: TensorView
    bytes: int

    def __str__(self) -> str:
        # nvFuser's operator<< for an edge prints each group with its trailing newline.
        return f"e{{ {self.producer.summary()}\n -> {self.consumer.summary()}\n({self.val}) }}\n"


@dataclass(eq=False)
class SegmentedFusion:
    """Groups in run order, the edges between them, and the complete fusion."""

    fusion: Fusion
    groups: list[SegmentedGroup]
    edges: list[SegmentedEdge]
    sizes: Sizes
    options: Options
    trace: Trace | None = None

    @property
    def segments(self) -> list[SegmentedGroup]:
        return self.groups

    def run_order(self) -> list[SegmentedGroup]:
        return list(self.groups)

    def group(self, gid: int) -> SegmentedGroup:
        return self.groups[gid]

    def group_of(self, expr: Expr) -> list[SegmentedGroup]:
        """Groups computing `expr` (several for a forwarded expr)."""
        return [g for g in self.groups if any(e is expr for e in g.exprs)]

    def producers_of(self, group: SegmentedGroup) -> list[SegmentedEdge]:
        return [e for e in self.edges if e.consumer is group]

    def consumers_of(self, group: SegmentedGroup) -> list[SegmentedEdge]:
        return [e for e in self.edges if e.producer is group]

    def boundary_bytes(self) -> int:
        """Bytes written by one segment and read by another (once per tensor)."""
        seen: dict[TensorView, int] = {}
        for e in self.edges:
            seen[e.val] = e.bytes
        return sum(seen.values())

    # ---- printing ------------------------------------------------------------------------
    def __str__(self) -> str:
        """nvFuser's `Segmented_Fusion{ groups: ... edges: ... group details: ... }` dump."""
        out = ["Segmented_Fusion Dump: -- fusion segments:\n", "Segmented_Fusion{ \n", "groups: \n"]
        out += [g.summary() + "\n\n" for g in self.groups]
        out.append("edges: \n")
        order = {id(g): k for k, g in enumerate(self.groups)}
        for e in sorted(self.edges, key=lambda e: order[id(e.producer)]):
            out.append(str(e) + "\n")
        out.append("\ngroup details:\n")
        out += [g.details() + "\n" for g in self.groups]
        out.append("} //Segmented_Fusion\n")
        return "".join(out)

    # ---- graph -----------------------------------------------------------------------------
    def to_networkx(self) -> nx.DiGraph:
        """Nodes are group ids (attributes: scheduler, exprs, inputs, outputs, ops); an edge
        carries the tensors passed and their bytes at the example sizes."""
        import networkx as nx

        g = nx.DiGraph()
        for s in self.groups:
            g.add_node(
                s.id, name=s.name, scheduler=s.scheduler, ops=len(s.exprs),
                exprs=[e.name for e in s.exprs], inputs=[v.short_name for v in s.inputs],
                outputs=[v.short_name for v in s.outputs],
                forwarded=[e.name for e in s.forwarded_exprs],
            )
        for e in self.edges:
            a, b = e.producer.id, e.consumer.id
            if g.has_edge(a, b):
                g.edges[a, b]["tensors"].append(e.val.short_name)
                g.edges[a, b]["bytes"] += e.bytes
            else:
                g.add_edge(a, b, tensors=[e.val.short_name], bytes=e.bytes)
        return g

    # ---- evaluation ------------------------------------------------------------------------
    def run_reference(self, inputs: Sequence[Any]) -> list[Any]:
        """The fusion's outputs computed group by group: each group's own Fusion
        (make_fusion) evaluated by the reference evaluator, fed with the tensors earlier
        groups produced. Tests compare this with evaluating the complete fusion."""
        ctx = Context(run_device("reference", inputs))
        values: dict[Val, Any] = {}
        for k, (val, x) in enumerate(zip(self.fusion.inputs, inputs, strict=True)):
            values[val] = bind_input(k, val, x, ctx)
        for g in self.groups:
            sub, vmap = g.make_fusion()
            raw = {vmap[v] for v in g.inputs if isinstance(v.definition, PreprocessGroupedMatmulInputSf)}
            outs = _evaluate_segment(sub, g.input_values(values, ctx.env), ctx.device, raw)
            for v, t in zip(g.outputs, outs):
                values[v] = t
        result = []
        for v in self.fusion.outputs:
            if v in values:
                result.append(finish_output(v, values[v]))
            elif isinstance(v, Scalar):
                result.append(v.evaluate(ctx.env))
            else:
                raise ExecutionError(f"output {v.short_name} was computed by no segment")
        return result


def _evaluate_segment(sub: Fusion, args: Sequence[Any], device: torch.device, raw: set[Val]) -> list[Any]:
    """The reference evaluator's loop for one segment, except that a layout-op output
    passed between segments stays the raw buffer the op wrote (allocation-sized: padded,
    swizzled rows), which only the grouped matmul reads; binding checks it against its
    logical sizes, so it is passed as is (seed 000: allocated by the allocation domain)."""
    ctx = Context(device)
    values: dict[Val, Any] = {}
    for k, (val, x) in enumerate(zip(sub.inputs, args, strict=True)):
        values[val] = x.to(device) if val in raw else bind_input(k, val, x, ctx)
    for expr in sub.exprs():
        ins = []
        for v in expr.inputs:
            if v in values:
                ins.append(values[v])
            elif isinstance(v, Scalar):
                ins.append(ctx.scalar(v))
            else:
                raise ExecutionError(f"{getattr(v, 'short_name', v)} is used before it is computed")
        handler = HANDLERS.get(type(expr))
        if handler is None:
            raise ExecutionError(f"the reference evaluator has no rule for {type(expr).__name__}")
        try:
            outs = handler(expr, ins, ctx)
        except ExecutionError:
            raise
        except Exception as e:
            names = ", ".join(getattr(o, "short_name", "?") for o in expr.outputs)
            raise ExecutionError(f"{type(expr).__name__} producing {names} failed: {e}") from e
        values.update(zip(expr.outputs, outs))
    return [values[v] for v in sub.outputs]


def mark_global(tvs: Iterable[TensorView]) -> None:
    """Segment inputs and outputs live in global memory (nvFuser sets this on the complete
    fusion, which is why boundary tensors print as `T3_g_...`)."""
    for tv in tvs:
        tv.memory_type = MemoryType.Global
