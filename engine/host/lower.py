"""Lowering a compiled, segmented fusion into a host program.

Segments become statements in run order: a kernel segment one LaunchKernel (the launch
allocates the kernel's outputs), an expr_eval segment, or a user-scheduled one with a Stream
axis, its fusion exprs (the evaluator runs them through torch; the Stream-parallel pass then
turns the Stream-parallel ones into stream loops), and anything else a PostOnStream of a
HostUnit. A tensor passed between segments is deallocated after the last segment that reads
it.
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any

from engine.host.hir import Deallocate, HostIrContainer, HostUnit, LaunchKernel, PostOnStream
from engine.host.stream import has_stream_axis, stream_parallel_pass
from engine.ir.base import Expr, Val
from engine.ir.iterdomain import ParallelType
from engine.ir.scalar import Scalar
from engine.ir.tensorview import MemoryType, TensorView
from engine.trace import Trace

if TYPE_CHECKING:
    from engine.compiled_fusion import CompiledFusion
    from engine.ir.fusion import Fusion


def exprs_between(inputs: list[Val], outputs: list[Val]) -> list[Expr] | None:
    """The exprs computing `outputs` from `inputs`, in topological order; None when some
    tensor on the way is neither computed nor among `inputs`."""
    stop = {id(v) for v in inputs}
    order: list[Expr] = []
    seen: set[int] = set()
    # Iterative post-order (long chains would hit Python's recursion limit).
    for out in outputs:
        stack: list[tuple[Any, int]] = []
        if id(out) in stop:
            continue
        if out.definition is None:
            if isinstance(out, TensorView):
                return None
            continue
        if id(out.definition) not in seen:
            seen.add(id(out.definition))
            stack.append((out.definition, 0))
        while stack:
            e, k = stack.pop()
            if k == len(e.inputs):
                order.append(e)
                continue
            stack.append((e, k + 1))
            v = e.inputs[k]
            if id(v) in stop:
                continue
            if v.definition is None:
                if isinstance(v, TensorView):
                    return None
                continue
            if id(v.definition) not in seen:
                seen.add(id(v.definition))
                stack.append((v.definition, 0))
    return order


def _reads(s: Any) -> list[Val]:
    if isinstance(s, (LaunchKernel, PostOnStream)):
        return list(s.inputs)
    if isinstance(s, Expr):
        return list(s.inputs)
    return []


def _insert_deallocations(top: list[Any], keep: set[int]) -> list[Any]:
    """Deallocate each tensor a statement produced after the last statement reading it."""
    produced: set[int] = set()
    last: dict[int, int] = {}
    tvs: dict[int, TensorView] = {}
    for k, s in enumerate(top):
        for v in _reads(s):
            if isinstance(v, TensorView) and id(v) in produced:
                last[id(v)] = k
        for v in getattr(s, "outputs", []):
            if isinstance(v, TensorView) and id(v) not in keep:
                produced.add(id(v))
                tvs[id(v)] = v
    after: dict[int, list[TensorView]] = {}
    for key, k in last.items():
        after.setdefault(k, []).append(tvs[key])
    out: list[Any] = []
    for k, s in enumerate(top):
        out.append(s)
        out.extend(Deallocate(tv) for tv in sorted(after.get(k, []), key=lambda t: t.name))
    return out


def _shareable_domains(fusion: Fusion) -> list[Any]:
    """The domains (and their ids) that the host program's copy of `fusion` may share with
    it: all of them when nothing in the host program edits or binds them, i.e. no tensor has
    a Stream axis (the Stream-parallel pass makes new tensors from them) and no extent or
    scalar is a free symbol (the host binds symbols by the copy's objects)."""
    out: dict[int, Any] = {}
    for v in fusion.all_vals:
        if isinstance(v, Scalar):
            if v.value is None:
                return []
            continue
        if not isinstance(v, TensorView):
            return []
        d = v.domain
        ids = (*d.maybe_root, *d.logical, *d.loop, *(d.allocation or ()))
        for i in ids:
            if (i.extent.value is None or (i.expanded_extent is not None and i.expanded_extent.value is None)
                    or i.parallel_type == ParallelType.stream):
                return []
        out[id(d)] = d
        out.update((id(i), i) for i in ids)
    return list(out.values())


def lower_to_host(cf: CompiledFusion, trace: Trace | None = None) -> HostIrContainer:
    """The host program of `cf` (its segments compiled), Stream-parallel exprs lowered."""
    memo: dict[int, Any] = {id(d): d for d in _shareable_domains(cf.fusion)}
    fusion = copy.deepcopy(cf.fusion, memo)

    def host(v: Val) -> Val:
        # deepcopy with the clone's memo maps a val of cf.fusion to its counterpart, and copies
        # a scalar that the fusion does not hold (a segment's derived extent) onto the clone's
        # symbols.
        return copy.deepcopy(v, memo)

    container = HostIrContainer(fusion, [host(v) for v in cf.fusion.inputs], [host(v) for v in cf.fusion.outputs],
                                cf.options.num_streams)
    top: list[Any] = []
    for seg in cf.segments:
        ins, outs = [host(v) for v in seg.input_vals], [host(v) for v in seg.output_vals]
        streamed = has_stream_axis(ins) or has_stream_axis(outs) or any(
            has_stream_axis(e.outputs) for e in exprs_between(ins, outs) or [])
        exprs = exprs_between(ins, outs) if (streamed or not seg.is_kernel) else None
        if seg.is_kernel and not streamed:
            top.append(LaunchKernel(seg, ins, outs))
        elif exprs is not None and (streamed or (seg.scheduler == "expr_eval" and not seg.raw_inputs)):
            # (A raw-buffer input, seed 000's layout-op output, is read through seg.run's
            # own binding rules: that segment stays a HostUnit.)
            # Host ops hand whole tensors to one another through global memory.
            for e in exprs:
                for v in [*e.inputs, *e.outputs]:
                    if isinstance(v, TensorView):
                        v.memory_type = MemoryType.Global
                container.segment_of[id(e)] = f"segment {seg.id} ({seg.scheduler})"
            top.extend(exprs)
        else:
            top.append(PostOnStream(HostUnit(seg), ins, outs))
    keep = {id(v) for v in container.outputs} | {id(v) for v in container.inputs}
    top = _insert_deallocations(top, keep) if len(cf.segments) > 1 else top
    container.top_level = stream_parallel_pass(container, top, trace)
    if trace is not None:
        trace.stage("host_ir", str(container))
    return container
