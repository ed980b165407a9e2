"""Collective-based overlap of an Allgather with the region that consumes it (nvFuser's
stream-parallel decomposition of an allgather feeding a matmul).

The user asks for it with a stream split of the gathered tensor's sharded axis:

    x.outer_split(0, d); x.axis(0).parallelize(ParallelType.mesh_x)
    x.outer_split(1, s); x.axis(1).parallelize(ParallelType.stream)

Each device's part is then gathered in `s` chunks, all posted at once (NCCL runs them in
order on its own stream); the region runs once per chunk on the rows gathered so far, each
run waiting only for its own chunk, so that the gather of chunk j+1 overlaps the compute of
chunk j. The region must be row-wise along the gathered axis (every op maps it to its
output without reducing it, and no other input has it), so that a chunk's rows give the
same rows of its outputs; otherwise the Allgather runs whole.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch
import torch.distributed as dist

from engine.ir.iterdomain import IterDomain, ParallelType, Split
from engine.ir.tensorview import TensorView
from engine.multidevice.axis_map import device_map
from engine.multidevice.sharding import sharded_dims

if TYPE_CHECKING:
    from engine.multidevice.program import Communication, Region


def stream_axis(tv: TensorView) -> IterDomain | None:
    """The stream-parallel loop axis of `tv`, if any."""
    return next((i for i in tv.domain.loop if i.parallel_type == ParallelType.stream), None)


def stream_chunks(tv: TensorView) -> int:
    """The factor of a stream-parallel outer split in `tv`'s loop domain (1 when none)."""
    for i in tv.domain.loop:
        t = i.definition
        if i.parallel_type == ParallelType.stream and isinstance(t, Split) and t.outer is i and not t.inner_split:
            v = t.factor.value if t.factor.is_const else None
            return int(v) if v is not None else 1
    return 1


def row_wise(region: Region, gathered: TensorView) -> bool:
    """Whether every output of `region` has the gathered tensor's first axis as its first
    axis, and nothing reduces it or brings it in from another input."""
    tracked: set[IterDomain] = {_first(gathered)}
    for e in region.exprs:
        ins = [v for v in e.inputs if isinstance(v, TensorView)]
        for o in [v for v in e.outputs if isinstance(v, TensorView)]:
            maps = [(p, device_map(p, o)) for p in ins]
            for _, m in maps:
                for pi, oi in m.items():
                    if pi in tracked:
                        if oi.is_reduction:
                            return False
                        tracked.add(oi)
            for _, m in maps:
                if any(oi in tracked and pi not in tracked for pi, oi in m.items()):
                    return False
    return all(_first(o) in tracked for o in region.outputs if isinstance(o, TensorView))


def _first(tv: TensorView) -> IterDomain | None:
    dims = [i for i in tv.domain.logical if not i.is_reduction]
    return dims[0] if dims else None


def overlappable(gather: Communication, region: Region) -> int:
    """The number of chunks to overlap `gather` with `region` in (0: run them apart)."""
    if gather.kind != "Allgather" or gather.output not in region.inputs:
        return 0
    s = stream_chunks(gather.input)
    if s <= 1:
        return 0
    dims = [dim for dim, sh in sharded_dims(gather.input) if sh.pt == gather.resharding.pt]
    if dims != [0] or not row_wise(region, gather.output):
        return 0
    return s


def run_overlapped(gather: Communication, region: Region, env: dict[int, Any], chunks: int, backend: str,
                   run_region: Any, group: Any, team: list[int], keep_gathered: bool, nccl: bool) -> None:
    """Gather in `chunks` pieces, running `region` on each as it arrives; fills `env` with
    the region's outputs (whole) and the gathered tensor."""
    x = env[id(gather.input)].contiguous()
    rows = x.shape[0]
    if rows % chunks:
        raise ValueError(f"{gather.input.short_name}: {rows} rows do not split into {chunks} stream chunks")
    c, d = rows // chunks, len(team)
    posted = []
    for j in range(chunks):
        part = x[j * c:(j + 1) * c]
        if nccl:
            buf = part.new_empty([d * c, *part.shape[1:]])
            work = dist.all_gather_into_tensor(buf, part, group=group, async_op=True)
            posted.append((work, buf))
        else:
            # gloo gathers host memory: a CUDA part goes through the host.
            part = part.cpu() if part.is_cuda else part
            bufs = [torch.empty_like(part) for _ in team]
            work = dist.all_gather(bufs, part, group=group, async_op=True)
            posted.append((work, bufs))
    whole: list[torch.Tensor | None] = [None] * len(region.outputs)
    gathered = x.new_empty([d, chunks, c, *x.shape[1:]] if keep_gathered else [0])
    for j, (work, buf) in enumerate(posted):
        work.wait()
        if not nccl:
            order = sorted(team)
            buf = torch.cat([buf[order.index(r)] for r in team]).to(x.device)
        if keep_gathered:
            gathered[:, j] = buf.view(d, c, *x.shape[1:])
        args = [buf if v is gather.output else env[id(v)] for v in region.inputs]
        outs = run_region(region, args, backend)
        for k, o in enumerate(outs):
            if whole[k] is None:
                whole[k] = o.new_empty([d, chunks, c, *o.shape[1:]])
            whole[k][:, j] = o.view(d, c, *o.shape[1:])
    if keep_gathered:
        env[id(gather.output)] = gathered.view(d * chunks * c, *x.shape[1:])
    for v, w in zip(region.outputs, whole):
        env[id(v)] = w.view(d * chunks * c, *w.shape[3:])
