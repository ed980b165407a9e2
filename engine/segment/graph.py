"""The segmented fusion: groups of exprs (one kernel each), the tensors passed between them
through global memory, their run order, and nvFuser's printed form.

Groups hold exprs and TensorViews of the complete (original) fusion. `make_fusion` cuts a
standalone Fusion out of it for one group (engine.segment.cut), which is what the schedulers
are asked about while segmenting and what the compile pipeline schedules, lowers and runs.
Sizes at the example inputs are engine.segment.sizes'; both modules' names are importable
from here too.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import torch

from engine.errors import ExecutionError
from engine.ir.base import Expr, Val
from engine.ir.fusion import Fusion
from engine.ir.quant_exprs import PreprocessGroupedMatmulInputSf
from engine.ir.scalar import Scalar
from engine.ir.tensorview import MemoryType, TensorView
from engine.reference import HANDLERS, Context, bind_input, finish_output
from engine.runtime.placement import run_device
from engine.segment.cut import cut_fusion, referenced_symbols, shareable_domains, unshare
from engine.segment.sizes import Sizes

if TYPE_CHECKING:
    import networkx as nx

    from engine.config import Options
    from engine.schedule.base import SchedulerType, Verdict
    from engine.trace import Trace

__all__ = [
    "SegmentedEdge", "SegmentedFusion", "SegmentedGroup", "Sizes", "cut_fusion", "mark_global",
    "referenced_symbols", "shareable_domains", "unshare",
]


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
