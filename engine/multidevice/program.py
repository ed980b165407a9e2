"""A multi-device fusion as a host program: compute regions and communications in order.

`MultiDeviceProgram(fusion)` copies the user's fusion, propagates its shardings
(engine.multidevice.propagate), makes every expr local or a communication
(engine.multidevice.reshard), then cuts the copy at the communications into regions of
local exprs. Each region is a standalone fusion in its single-device form
(engine.multidevice.localize), compiled by the ordinary pipeline for each device's local
inputs; the communications run over torch.distributed (engine.multidevice.runtime).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from engine.host import hir
from engine.ir.base import Expr, Val
from engine.ir.fusion import Fusion
from engine.ir.scalar import Scalar
from engine.ir.tensorview import TensorView
from engine.multidevice.localize import localize
from engine.multidevice.mesh import DeviceMesh
from engine.multidevice.overlap import Pipeline, plan_pipeline
from engine.multidevice.propagate import propagate_shardings
from engine.multidevice.reshard import Resharding, decompose_reshardings
from engine.multidevice.sharding import MultiDeviceError, mesh_of, shardings
from engine.segment.cut import cut_fusion, referenced_symbols


@dataclass
class Region:
    """Local exprs run as one single-device fusion (`fusion`, already localized)."""

    index: int
    exprs: list[Expr]
    inputs: list[Val]
    outputs: list[Val]
    mesh: DeviceMesh | None
    fusion: Fusion
    # Scalar inputs of `fusion` after the tensors: each a symbol of the whole fusion (its
    # value from the fusion's inputs' whole sizes) and the number of parts it is cut in.
    symbols: list[tuple[Scalar, int]] = field(default_factory=list)
    compiled: dict[Any, Any] = field(default_factory=dict)


@dataclass
class Communication:
    """A resharding `set` run between devices; `number` names it in the host IR."""

    number: int
    resharding: Resharding

    @property
    def kind(self) -> str:
        return self.resharding.kind

    @property
    def input(self) -> TensorView:
        return self.resharding.input

    @property
    def output(self) -> TensorView:
        return self.resharding.output

    def team(self, device: int) -> list[int]:
        r = self.resharding
        if r.kind in ("Broadcast", "SendRecv"):
            return sorted({r.root, *mesh_of(r.output).devices})
        mesh = mesh_of(r.output)
        return mesh.team(device, r.pt)


Step = Region | Communication


def _is_tv(v: Val) -> bool:
    return isinstance(v, TensorView)


class MultiDeviceProgram:
    def __init__(self, fusion: Fusion) -> None:
        self.source = fusion
        for tv in fusion.vals():
            if isinstance(tv, TensorView):
                shardings(tv)  # a device axis without a mesh, strided or uneven: named here
        prepared, _ = fusion.clone()
        propagate_shardings(prepared)
        comms = decompose_reshardings(prepared)
        self.fusion = prepared
        self.steps: list[Step] = self._partition(prepared, comms)
        self._pipelines: dict[int, Pipeline | None] = {}

    @property
    def inputs(self) -> list[Val]:
        return list(self.fusion.inputs)

    @property
    def outputs(self) -> list[Val]:
        return list(self.fusion.outputs)

    @property
    def regions(self) -> list[Region]:
        return [s for s in self.steps if isinstance(s, Region)]

    @property
    def communications(self) -> list[Communication]:
        return [s for s in self.steps if isinstance(s, Communication)]

    def pipeline_at(self, k: int) -> Pipeline | None:
        """The stream-chunked pipeline that starts at step `k` (engine.multidevice.overlap),
        if any."""
        if k not in self._pipelines:
            self._pipelines[k] = plan_pipeline(self.steps, k, self.outputs)
        return self._pipelines[k]

    def only_reader(self, c: Communication) -> bool:
        """Whether `c` is the one step that reads its input (so it may reduce it in place):
        the input is no fusion input or output and no other step reads it."""
        v = c.input
        if any(v is x for x in [*self.fusion.inputs, *self.fusion.outputs]):
            return False
        readers = sum(1 for s in self.steps
                      if (s.input is v if isinstance(s, Communication) else any(v is x for x in s.inputs)))
        return readers == 1

    def _partition(self, fusion: Fusion, comms: dict[int, Resharding]) -> list[Step]:
        steps: list[Step] = []
        run: list[Expr] = []
        exprs = fusion.exprs()
        used_later: dict[int, int] = {}
        for k, e in enumerate(exprs):
            for v in e.inputs:
                used_later[id(v)] = k
        outputs = {id(v) for v in fusion.outputs}
        order = {id(e): k for k, e in enumerate(exprs)}

        def flush() -> None:
            if not run:
                return
            produced = {id(v) for e in run for v in e.outputs}
            last = max(order[id(e)] for e in run)
            ins: list[Val] = []
            for e in run:
                for v in e.inputs:
                    if id(v) not in produced and v not in ins and (_is_tv(v) or v in fusion.inputs):
                        ins.append(v)
            outs = [v for e in run for v in e.outputs
                    if _is_tv(v) and (id(v) in outputs or used_later.get(id(v), -1) > last)]
            meshes = {mesh_of(v) for e in run for v in e.outputs if _is_tv(v)} - {None}
            if len(meshes) > 1:
                names = ", ".join(str(m) for m in meshes)
                raise ValueError(f"one region of local ops spans several meshes ({names})")
            sub, vmap = cut_fusion(fusion, list(run), ins, outs)
            parts = localize(sub)
            back = {id(c): v for v, c in vmap.items()}
            symbols: list[tuple[Scalar, int]] = []
            for sym in referenced_symbols(sub.exprs(), [v for v in sub.inputs if _is_tv(v)]):
                whole, d = parts.get(sym, (sym, 1))
                orig = back.get(id(whole))
                if orig is None:
                    raise MultiDeviceError(f"region of {run[0].output}: {sym.inline()} has no value on this device")
                sub.add_input(sym)
                symbols.append((orig, d))
            steps.append(Region(len(self.regions_of(steps)), list(run), ins, outs,
                                next(iter(meshes), None), sub, symbols))
            run.clear()

        n = 0
        for e in exprs:
            r = comms.get(id(e))
            if r is None:
                run.append(e)
                continue
            flush()
            steps.append(Communication(n, r))
            n += 1
        flush()
        return steps

    @staticmethod
    def regions_of(steps: list[Step]) -> list[Region]:
        return [s for s in steps if isinstance(s, Region)]

    # ---- host IR ---------------------------------------------------------------------------
    def host_ir(self, device: int = 0, backend: str = "NCCL") -> hir.HostIrContainer:
        """The program as nvFuser's host IR, with the teams of `device`."""
        c = hir.HostIrContainer(self.fusion, self.inputs, self.outputs)
        steps = self.steps
        skip = 0
        for k, s in enumerate(steps):
            if k < skip:
                continue
            p = self.pipeline_at(k)
            if p is not None:
                c.top_level.append(self._stream_loop(c, p, device, backend))
                skip = k + p.length
                continue
            if isinstance(s, Region):
                c.top_level.extend(s.exprs)
                continue
            if s.kind == "ShardByDevice":
                c.top_level.append(hir.ShardByDevice(s.input, s.output, s.resharding.pt))
                continue
            node = hir.CommunicationNode(s.number, s.kind, s.team(device), s.input, s.output,
                                         backend, s.resharding.root)
            c.top_level.append(node)
            c.top_level.append(hir.Wait(node))
        return c

    @staticmethod
    def _stream_loop(c: hir.HostIrContainer, p: Pipeline, device: int, backend: str) -> hir.ForLoop:
        """A pipeline as nvFuser's stream-parallel loop: each iteration on a stream of the
        pool gathers its chunk (a ring: receives its block from the previous device), computes
        it and reduce-scatters its partial sums (a ring: sends them to the block's owner)."""
        g = p.gather
        kind = "SendRecv" if p.ring else g.kind  # a ring passes one block to the next device
        gather = hir.CommunicationNode(g.number, kind, g.team(device), g.input, g.output, backend)
        caller = c.new_stream()
        c.top_level.append(hir.GetCurrentStream(caller))
        loop = hir.ForLoop(c.stream_index, p.axis)
        loop.body = [hir.SetCurrentStream(c.pool_stream()), gather, hir.Wait(gather), *p.region.exprs]
        if p.scatter is not None:
            r = p.scatter
            kind = "SendRecv" if p.ring else r.kind
            scatter = hir.CommunicationNode(r.number, kind, r.team(device), r.input, r.output, backend)
            loop.body += [scatter, hir.Wait(scatter)]
        loop.body.append(hir.SetCurrentStream(caller))
        return loop
