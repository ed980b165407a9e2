"""Running a ring-based overlap.Pipeline on this rank: the Allgather as d - 1 circular shifts
of one block each, and the region on each block as it arrives.

Device k holds block k. Iteration 0 computes it with no communication (queued before any
transfer, so that the GPU starts on it at once); iteration i computes block (k - i) mod d,
received from the left neighbour (k - 1), which had it at iteration i - 1 (the block is
forwarded to the right neighbour at the same time). The region's outputs are
put together in block order (a ReduceScatter after it then runs as an ordinary step). Over
NCCL the shifts run on a side stream (Communicator.side_stream), all queued at once; over
gloo they run on the host, in turn.
"""

from __future__ import annotations

from contextlib import nullcontext
from typing import Any

import torch
import torch.distributed as dist

from engine.multidevice.overlap import Pipeline
from engine.multidevice.pipeline import RunRegion
from engine.multidevice.timeline import COMM, Clock


def _exchange(send: torch.Tensor, dst: int, recv: torch.Tensor, src: int, group: Any, nccl: bool) -> None:
    """Send `send` to global rank `dst` and receive `recv` from `src` (one batch: neither
    side waits for the other to post first). Over gloo CUDA tensors go through the host."""
    if nccl:
        ops = [dist.P2POp(dist.isend, send, dst, group), dist.P2POp(dist.irecv, recv, src, group)]
        for w in dist.batch_isend_irecv(ops):
            w.wait()
        return
    host = recv.cpu() if recv.is_cuda else recv
    works = [dist.isend(send.cpu().contiguous(), dst, group), dist.irecv(host, src, group)]
    for w in works:
        w.wait()
    if host is not recv:
        recv.copy_(host)


def run_ring(p: Pipeline, env: dict[int, Any], backend: str, run_region: RunRegion, group: Any,
             team: list[int], rank: int, keep_gathered: bool, side: Any, clock: Clock) -> None:
    """Run the ring pipeline `p` on this rank, filling `env` with the region's outputs
    (whole) and, with `keep_gathered`, the gathered tensor. `side`: the side stream over
    NCCL, None over gloo."""
    x = env[id(p.gather.input)].contiguous()
    d, k, n = len(team), team.index(rank), x.shape[0]
    nccl = side is not None
    main = torch.cuda.current_stream() if nccl else None
    right, left = team[(k + 1) % d], team[(k - 1) % d]
    blocks = [x] + [torch.empty_like(x) for _ in range(d - 1)]  # blocks[i]: block (k - i) mod d
    arrived: list[Any] = [None] * d
    names = (f"Communication {p.gather.number}", f"region {p.region.index}")

    ready = None  # the point of the compute stream where this rank's block is ready
    if nccl:
        ready = torch.cuda.Event()
        ready.record(main)

    def shift_blocks() -> None:
        """Queue the d - 1 shifts (after the own block's compute is queued: it needs none);
        the side stream waits for the block, not for that compute."""
        if nccl:
            side.wait_event(ready)
        for i in range(1, d):
            with torch.cuda.stream(side) if nccl else nullcontext():
                a = clock.mark(side)
                _exchange(blocks[i - 1], right, blocks[i], left, group, nccl)
                clock.add(f"{names[0]} ring step {i}", "Allgather", a, clock.mark(side), COMM)
                if nccl:
                    arrived[i] = torch.cuda.Event()
                    arrived[i].record(side)

    whole: list[torch.Tensor | None] = [None] * len(p.region.outputs)
    for i in range(d):
        b = (k - i) % d
        if i == 1:
            shift_blocks()
        if nccl and arrived[i] is not None:
            main.wait_event(arrived[i])
        a = clock.mark()
        args = [blocks[i] if v is p.gather.output else env[id(v)] for v in p.region.inputs]
        outs = run_region(p.region, args, backend)
        clock.add(f"{names[1]} block {b}", "compute", a, clock.mark())
        for j, o in enumerate(outs):
            if whole[j] is None:
                whole[j] = o.new_empty([d, *o.shape])
            whole[j][b] = o
    if nccl:
        main.wait_stream(side)
    if keep_gathered:
        gathered = x.new_empty([d, *x.shape])
        for i, blk in enumerate(blocks):
            gathered[(k - i) % d] = blk
        env[id(p.gather.output)] = gathered.view(d * n, *x.shape[1:])
    for v, w in zip(p.region.outputs, whole):
        env[id(v)] = w.view(-1, *w.shape[2:])
