"""Running an overlap.Pipeline on this rank: an Allgather in stream chunks, the region on
each chunk as it arrives and, when planned, each chunk's ReduceScatter while the next chunk
computes.

Over NCCL the chunks' collectives are queued on a side stream (Communicator.side_stream):
every Allgather first, in order, then each ReduceScatter once its chunk's compute is done;
the compute stream waits only for its own chunk's gather. Over gloo (host memory) the
gathers are posted at once and waited for in turn, and a chunk's reduce-scatter is an
Allreduce of its rows keeping this device's part.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
import torch.distributed as dist

from engine.errors import ExecutionError
from engine.multidevice.communicator import REDUCE_OPS
from engine.multidevice.overlap import Pipeline
from engine.multidevice.timeline import COMM, Clock

RunRegion = Callable[[Any, list[Any], str], list[Any]]


class _Chunks:
    """The state of one pipelined run: the gathered input's chunks, the region's outputs."""

    def __init__(self, p: Pipeline, x: torch.Tensor, team: list[int], rank: int) -> None:
        self.p, self.x, self.team = p, x, team
        if x.shape[0] % p.chunks:
            raise ExecutionError(f"{p.gather.input.short_name}: its {x.shape[0]} rows on this device do not "
                                 f"split into {p.chunks} stream chunks (its stream split's factor)")
        self.c, self.d, self.k = x.shape[0] // p.chunks, len(team), team.index(rank)
        self.scattered = next(k for k, v in enumerate(p.region.outputs) if v is p.scatter.input) \
            if p.scatter is not None else -1
        self.whole: list[torch.Tensor | None] = [None] * len(p.region.outputs)
        self.local: torch.Tensor | None = None  # this device's rows of the scattered output

    def part(self, j: int) -> torch.Tensor:
        return self.x[j * self.c:(j + 1) * self.c]

    def args(self, env: dict[int, Any], buf: torch.Tensor) -> list[Any]:
        return [buf if v is self.p.gather.output else env[id(v)] for v in self.p.region.inputs]

    def place(self, j: int, outs: list[torch.Tensor]) -> None:
        """Chunk j's outputs (rows: c from each device in team order) into the whole ones."""
        for k, o in enumerate(outs):
            if k == self.scattered:
                continue
            if self.whole[k] is None:
                self.whole[k] = o.new_empty([self.d, self.p.chunks, self.c, *o.shape[1:]])
            self.whole[k][:, j] = o.view(self.d, self.c, *o.shape[1:])

    def local_rows(self, o: torch.Tensor) -> torch.Tensor:
        """This device's rows of the scattered output (made on first use, like chunk output
        `o`); chunk j's ReduceScatter writes rows j * c to (j + 1) * c of it."""
        if self.local is None:
            self.local = o.new_empty([self.p.chunks * self.c, *o.shape[1:]])
        return self.local

    def finish(self, env: dict[int, Any], gathered: torch.Tensor | None) -> None:
        p = self.p
        if gathered is not None:
            env[id(p.gather.output)] = gathered.view(-1, *self.x.shape[1:])
        for k, (v, w) in enumerate(zip(p.region.outputs, self.whole)):
            if k != self.scattered:
                env[id(v)] = w.view(self.d * p.chunks * self.c, *w.shape[3:])
        if p.scatter is not None:
            env[id(p.scatter.output)] = self.local


def run_pipeline(p: Pipeline, env: dict[int, Any], backend: str, run_region: RunRegion, group: Any,
                 team: list[int], rank: int, keep_gathered: bool, side: Any, clock: Clock) -> None:
    """Run `p` on this rank, filling `env` with the region's outputs (whole), the scattered
    output (this device's rows) and, with `keep_gathered`, the gathered tensor. `side`: the
    side stream for NCCL collectives, None over gloo."""
    st = _Chunks(p, env[id(p.gather.input)].contiguous(), team, rank)
    gathered = st.x.new_empty([st.d, p.chunks, st.c, *st.x.shape[1:]]) if keep_gathered else None
    if side is not None:
        _on_streams(st, env, backend, run_region, group, side, clock, gathered)
    else:
        _on_host(st, env, backend, run_region, group, clock, gathered)
    st.finish(env, gathered)


def _names(p: Pipeline, j: int) -> tuple[str, str, str]:
    scatter = f"Communication {p.scatter.number} chunk {j}" if p.scatter is not None else ""
    return f"Communication {p.gather.number} chunk {j}", f"region {p.region.index} chunk {j}", scatter


def _on_streams(st: _Chunks, env: dict[int, Any], backend: str, run_region: RunRegion, group: Any, side: Any,
                clock: Clock, gathered: torch.Tensor | None) -> None:
    p, main = st.p, torch.cuda.current_stream()
    side.wait_stream(main)
    bufs = [st.x.new_empty([st.d * st.c, *st.x.shape[1:]]) for _ in range(p.chunks)]
    arrived = []
    with torch.cuda.stream(side):
        for j, buf in enumerate(bufs):
            a = clock.mark(side)
            dist.all_gather_into_tensor(buf, st.part(j), group=group)
            clock.add(_names(p, j)[0], "Allgather", a, clock.mark(side), COMM)
            done = torch.cuda.Event()
            done.record(side)
            arrived.append(done)
    keep = []  # every chunk's outputs stay alive until the compute stream waits for the side one
    for j, buf in enumerate(bufs):
        main.wait_event(arrived[j])
        if gathered is not None:
            gathered[:, j] = buf.view(st.d, st.c, *st.x.shape[1:])
        a = clock.mark()
        outs = run_region(p.region, st.args(env, buf), backend)
        clock.add(_names(p, j)[1], "compute", a, clock.mark())
        st.place(j, outs)
        if p.scatter is not None:
            o = outs[st.scattered].contiguous()
            keep.append(o)
            dst = st.local_rows(o)[j * st.c:(j + 1) * st.c]
            side.wait_stream(main)
            with torch.cuda.stream(side):
                a = clock.mark(side)
                dist.reduce_scatter_tensor(dst, o, op=REDUCE_OPS[p.scatter.resharding.reduce_op], group=group)
                clock.add(_names(p, j)[2], "ReduceScatter", a, clock.mark(side), COMM)
    main.wait_stream(side)
    del keep


def _on_host(st: _Chunks, env: dict[int, Any], backend: str, run_region: RunRegion, group: Any, clock: Clock,
             gathered: torch.Tensor | None) -> None:
    p, x = st.p, st.x
    posted = []
    for j in range(p.chunks):
        part = st.part(j).cpu()  # gloo gathers host memory
        bufs = [torch.empty_like(part) for _ in st.team]
        posted.append((clock.mark(), dist.all_gather(bufs, part, group=group, async_op=True), bufs))
    order = sorted(st.team)
    for j, (a, work, bufs) in enumerate(posted):
        work.wait()
        clock.add(_names(p, j)[0], "Allgather", a, clock.mark(), COMM)
        buf = torch.cat([bufs[order.index(r)] for r in st.team]).to(x.device)
        if gathered is not None:
            gathered[:, j] = buf.view(st.d, st.c, *x.shape[1:])
        a = clock.mark()
        outs = run_region(p.region, st.args(env, buf), backend)
        clock.add(_names(p, j)[1], "compute", a, clock.mark())
        st.place(j, outs)
        if p.scatter is not None:
            o = outs[st.scattered]
            a = clock.mark()
            y = o.detach().cpu().contiguous().clone()
            dist.all_reduce(y, op=REDUCE_OPS[p.scatter.resharding.reduce_op], group=group)
            st.local_rows(o)[j * st.c:(j + 1) * st.c] = y[st.k * st.c:(st.k + 1) * st.c].to(o.device)
            clock.add(_names(p, j)[2], "ReduceScatter", a, clock.mark(), COMM)
