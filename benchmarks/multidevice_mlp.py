"""GPT-3-style MLP block (linear 4h -> gelu -> linear h, bf16) on several GPUs: the engine's
tensor-parallel (TP) and sequence-parallel (SP) fusions, SP with its Allgather overlapped in
stream chunks, against PyTorch DTensor tensor parallelism (torch.distributed.tensor.parallel)
and hand-written torch.distributed code, all in the same run.

    torchrun --nproc-per-node 2 benchmarks/multidevice_mlp.py [--out results.json]

Times are per forward (CUDA events over `--iters` calls after warm-up, the slowest rank's),
the median of `--rounds` timings of each form taken in interleaved rounds.
The SP forms' per-rank timelines (CUDA events per step and per stream chunk) give the
Allgather time the unoverlapped form exposes and what the overlapped forms still expose;
the same is measured on the kernels (torch.profiler) as a check.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys

import torch
import torch.distributed as dist
import torch.nn.functional as F  # noqa: N812 - torch's usual name

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import engine.multidevice as md  # noqa: E402
from engine import DataType, FusionDefinition, ParallelType  # noqa: E402

TIMELINE_RUNS = 5  # timed runs of each SP form, each started on both ranks together


def mlp_fusion(d: int, h: int, sp: bool, chunks: int = 1, ring: bool = False) -> tuple[FusionDefinition, list]:
    """The MLP block; `sp`: tokens sharded in and out; `chunks`: the Allgather in that many
    stream chunks (collective-based); `ring`: nvFuser's ring-based spelling (the gathered
    copy of the tokens split by the devices on a stream axis)."""
    mesh = md.DeviceMesh(torch.arange(d))
    with FusionDefinition() as fd:
        x = fd.define_tensor([-1, h], dtype=DataType.BFloat16, contiguity=True)
        w1 = fd.define_tensor([4 * h, h], dtype=DataType.BFloat16, contiguity=True)
        b1 = fd.define_tensor([4 * h], dtype=DataType.BFloat16, contiguity=True)
        w2 = fd.define_tensor([h, 4 * h], dtype=DataType.BFloat16, contiguity=True)
        b2 = fd.define_tensor([h], dtype=DataType.BFloat16, contiguity=True)
        xs = fd.ops.set(x) if ring else x
        y = fd.ops.linear(xs, w1, b1)
        y = fd.ops.cast(fd.ops.gelu(fd.ops.cast(y, DataType.Float)), DataType.BFloat16)
        z = fd.ops.linear(y, w2, b2)
        fd.add_output(z)
        for tv in (x, w1, b1, w2, b2):
            tv.set_device_mesh(mesh)
        for tv, axis in ((w1, 0), (b1, 0), (w2, 1)):
            tv.outer_split(axis, d)
            tv.axis(axis).parallelize(ParallelType.mesh_x)
        if sp:
            z.set_device_mesh(mesh)
            for tv in (x, z):
                tv.outer_split(0, d)
                tv.axis(0).parallelize(ParallelType.mesh_x)
            if chunks > 1:
                x.outer_split(1, chunks)
                x.axis(1).parallelize(ParallelType.stream)
            if ring:
                xs.set_device_mesh(mesh)
                xs.outer_split(0, d)
                xs.axis(0).parallelize(ParallelType.stream)
    return fd, [x, w1, b1, w2, b2, z]


def timed(fn, iters: int, warmup: int = 3) -> float:
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    dist.barrier()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(iters):
        fn()
    end.record()
    torch.cuda.synchronize()
    ms = torch.tensor([start.elapsed_time(end) / iters], device="cuda")
    dist.all_reduce(ms, op=dist.ReduceOp.MAX)
    return float(ms)


def waited(y: torch.Tensor) -> torch.Tensor:
    """DTensor's row-wise output is an AsyncCollectiveTensor whose collective runs until a
    consumer waits for it: wait, as the next layer would, so that its time is counted."""
    wait = getattr(y, "wait", None)
    return wait() if callable(wait) else y


def case(h: int, t: int, iters: int, chunks: list[int], rounds: int) -> dict:
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor import Shard
    from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module

    d, rank = dist.get_world_size(), dist.get_rank()
    torch.manual_seed(0)
    dev = torch.device("cuda", torch.cuda.current_device())
    bf = torch.bfloat16
    x = torch.randn(t, h, device=dev, dtype=bf)
    w1, b1 = torch.randn(4 * h, h, device=dev, dtype=bf) / h ** 0.5, torch.randn(4 * h, device=dev, dtype=bf)
    w2, b2 = torch.randn(h, 4 * h, device=dev, dtype=bf) / (4 * h) ** 0.5, torch.randn(h, device=dev, dtype=bf)
    full = [x, w1, b1, w2, b2]
    out: dict = {"h": h, "tokens": t, "ranks": d, "dtype": "bf16", "rounds": rounds, "iters": iters}
    forms: dict = {}  # name -> one forward, timed below in interleaved rounds
    with torch.no_grad():
        expect = F.linear(F.gelu(F.linear(x, w1, b1).float()).to(bf), w2, b2)

        # The engine: TP, SP, SP overlapped (collective-based in each chunk count; ring-based).
        results = {}
        engine = [("engine_tp", False, 1), ("engine_sp", True, 1)]
        engine += [(f"engine_sp_overlap{ch}", True, ch) for ch in chunks] + [("engine_sp_ring", True, 0)]
        for name, sp, ch in engine:
            fd, tvs = mlp_fusion(d, h, sp, ch, ring=ch == 0)
            ins = [md.shard_tensor(a, tv) for a, tv in zip(full, tvs)]
            (res,) = fd.execute(ins)
            want = md.shard_tensor(expect, md.program_of(fd).outputs[0]) if sp else expect
            results[name] = float((res.float() - want.float()).abs().max())
            forms[name] = lambda f=fd, i=ins: f.execute(i)
            if sp:
                runs = []
                for _ in range(TIMELINE_RUNS):
                    torch.cuda.synchronize()
                    dist.barrier()  # both ranks start together: a late peer's wait is not the gather's time
                    tl: list = []
                    md.execute(fd, ins, timeline=tl)
                    runs.append([(s.step, s.kind, s.stream, round(s.start * 1e3, 3), round(s.end * 1e3, 3))
                                 for s in tl])
                out[name + "_timelines"] = runs
                out[name + "_timeline"] = runs[-1]
                out[name + "_kernels"] = kernel_overlap(forms[name], ring=d if ch == 0 else 0)
        out["max_abs_err"] = results
        # Hand-written torch.distributed.
        k = rank
        w1l, b1l = w1.chunk(d, 0)[k].contiguous(), b1.chunk(d, 0)[k].contiguous()
        w2l = w2.chunk(d, 1)[k].contiguous()
        xl = x.chunk(d, 0)[k].contiguous()

        def torch_tp() -> torch.Tensor:
            y = F.gelu(F.linear(x, w1l, b1l).float()).to(bf)
            z = F.linear(y, w2l)
            dist.all_reduce(z)
            return z + b2

        def torch_sp() -> torch.Tensor:
            xf = xl.new_empty(t, h)
            dist.all_gather_into_tensor(xf, xl)
            y = F.gelu(F.linear(xf, w1l, b1l).float()).to(bf)
            z = F.linear(y, w2l)
            zl = z.new_empty(t // d, h)
            dist.reduce_scatter_tensor(zl, z)
            return zl + b2

        forms["torch_tp"], forms["torch_sp"] = torch_tp, torch_sp

        # DTensor tensor parallelism.
        mesh = init_device_mesh("cuda", (d,))
        for name, plan, inp in (
            ("dtensor_tp", {"0": ColwiseParallel(), "2": RowwiseParallel()}, x),
            ("dtensor_sp", {"0": ColwiseParallel(input_layouts=Shard(0)),
                            "2": RowwiseParallel(output_layouts=Shard(0))}, xl),
        ):
            model = torch.nn.Sequential(torch.nn.Linear(h, 4 * h), torch.nn.GELU(), torch.nn.Linear(4 * h, h))
            model = model.to(device=dev, dtype=bf)
            with torch.no_grad():
                model[0].weight.copy_(w1)
                model[0].bias.copy_(b1)
                model[2].weight.copy_(w2)
                model[2].bias.copy_(b2)
            model = parallelize_module(model, mesh, plan)
            forms[name] = lambda m=model, i=inp: waited(m(i))

        # Every form timed once a round, the order reversed every other round, so that a drift
        # of the GPUs' clocks over the run (the GEMMs are 90% of the time) falls on all alike.
        times: dict[str, list[float]] = {name: [] for name in forms}
        for r in range(rounds):
            for name in (list(forms) if r % 2 == 0 else reversed(list(forms))):
                times[name].append(timed(forms[name], iters))
        for name, ts in times.items():
            out[name + "_ms"] = statistics.median(ts)
            out[name + "_rounds_ms"] = [round(v, 4) for v in ts]
    pairs = [("engine_tp", "dtensor_tp"), ("engine_sp", "dtensor_sp"), ("engine_tp", "torch_tp"),
             ("engine_sp", "torch_sp"), ("engine_sp", "dtensor_tp")]
    pairs += [(f"engine_sp_{form}", b) for form in overlapped(chunks) for b in ("dtensor_sp", "engine_sp")]
    for a, b in pairs:
        out[f"{a}/{b}"] = round(out[a + "_ms"] / out[b + "_ms"], 3)
    return out


def _union(iv: list[tuple[float, float]]) -> list[list[float]]:
    out: list[list[float]] = []
    for a, b in sorted(iv):
        if out and a <= out[-1][1]:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return out


def exposed(comm: list[tuple[float, float]], compute: list[tuple[float, float]]) -> float:
    """The time within the `comm` intervals that no `compute` interval covers."""
    cover = _union(compute)
    return sum((b - a) - sum(max(0.0, min(b, y) - max(a, x)) for x, y in cover) for a, b in _union(comm))


def overlapped(chunks: list[int]) -> list[str]:
    """The overlapped SP forms: collective-based in each chunk count, and ring-based."""
    return [f"overlap{ch}" for ch in chunks] + ["ring"]


def hidden_fraction(r: dict, form: str) -> float | None:
    """Share of the Allgather time the unoverlapped SP form exposes that an overlapped `form`
    hides, from the per-rank timelines (medians of TIMELINE_RUNS runs): the Allgather step of
    the first, the Allgather chunks (ring steps) of the second less the time they overlap the
    chunks' compute."""
    plain, over = r.get("engine_sp_timelines"), r.get(f"engine_sp_{form}_timelines")
    if not plain or not over:
        return None
    gather = statistics.median(sum(b - a for _, kind, _, a, b in tl if kind == "Allgather") for tl in plain)
    left = statistics.median(exposed([(a, b) for _, kind, _, a, b in tl if kind == "Allgather"],
                                     [(a, b) for _, kind, _, a, b in tl if kind == "compute"]) for tl in over)
    return round(1 - left / gather, 3) if gather > 0 else None


def kernel_overlap(fn, n: int = 3, ring: int = 0) -> dict:
    """The Allgather kernels' time, and what of it no compute kernel overlaps, per call (this
    rank's CUDA kernels under torch.profiler): the timeline's figure measured on the kernels.
    `ring`: the team size of a ring-based form, whose calls each run ring - 1 SendRecv
    kernels for the gather, then as many for the scatter."""
    from torch.profiler import ProfilerActivity, profile

    fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(n):
            fn()
        torch.cuda.synchronize()
    ks = [(e.name, e.time_range.start, e.time_range.end) for e in prof.events()
          if e.device_type == torch.autograd.DeviceType.CUDA and e.time_range.elapsed_us() > 0]
    gathers = [(a, b) for name, a, b in ks if "AllGather" in name]
    if ring:
        shifts = sorted((a, b) for name, a, b in ks if "SendRecv" in name)
        gathers = [iv for k, iv in enumerate(shifts) if k % (2 * (ring - 1)) < ring - 1]
    compute = [(a, b) for name, a, b in ks if "nccl" not in name.lower() and not name.startswith(("Memset", "Memcpy"))]
    total = sum(b - a for a, b in _union(gathers))
    return {"allgather_us": round(total / n, 1), "exposed_us": round(exposed(gathers, compute) / n, 1)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=None)
    ap.add_argument("--iters", type=int, default=20, help="calls of one timing")
    ap.add_argument("--rounds", type=int, default=5, help="timings of each form, interleaved; the median is kept")
    ap.add_argument("--chunks", default="2,4", help="stream chunk counts of the overlapped SP form")
    ap.add_argument("--sizes", default="4096x8192,8192x16384,12288x8192")
    args = ap.parse_args()
    comm = md.Communicator.instance()
    rows = []
    for spec in args.sizes.split(","):
        h, t = (int(v) for v in spec.split("x"))
        chunks = [int(c) for c in args.chunks.split(",")]
        r = case(h, t, args.iters, chunks, args.rounds)
        plain = r["engine_sp_kernels"]["exposed_us"]
        for form in overlapped(chunks):
            r[f"sp_{form}_allgather_hidden"] = hidden_fraction(r, form)
            over = r[f"engine_sp_{form}_kernels"]["exposed_us"]
            r[f"sp_{form}_allgather_hidden_kernels"] = round(1 - over / plain, 3) if plain > 0 else None
        rows.append(r)
        if comm.rank() == 0:
            print(json.dumps(r), flush=True)
    if comm.rank() == 0 and args.out:
        with open(args.out, "w") as f:
            json.dump({"gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "cases": rows}, f, indent=1)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
