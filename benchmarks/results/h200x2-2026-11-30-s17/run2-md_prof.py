"""Profile engine SP vs DTensor SP (MLP block) per kernel on rank 0: torchrun --nproc-per-node 2 .probe/md_prof.py H T"""
import os, sys, time
sys.path.insert(0, os.getcwd())
import torch, torch.distributed as dist
from torch.profiler import ProfilerActivity, profile
from benchmarks.multidevice_mlp import mlp_fusion, waited, timed
import engine.multidevice as md

h, t = int(sys.argv[1]), int(sys.argv[2])
comm = md.Communicator.instance()
d, rank = dist.get_world_size(), dist.get_rank()
torch.manual_seed(0)
dev = torch.device("cuda", torch.cuda.current_device())
bf = torch.bfloat16
x = torch.randn(t, h, device=dev, dtype=bf)
w1, b1 = torch.randn(4 * h, h, device=dev, dtype=bf) / h ** 0.5, torch.randn(4 * h, device=dev, dtype=bf)
w2, b2 = torch.randn(h, 4 * h, device=dev, dtype=bf) / (4 * h) ** 0.5, torch.randn(h, device=dev, dtype=bf)
full = [x, w1, b1, w2, b2]
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.tensor import Shard
from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module

def prof(name, fn, n=5):
    for _ in range(3): fn()
    torch.cuda.synchronize(); dist.barrier()
    t0 = time.perf_counter()
    for _ in range(n): fn()
    host = (time.perf_counter() - t0) / n * 1e3
    torch.cuda.synchronize(); dist.barrier()
    with profile(activities=[ProfilerActivity.CUDA, ProfilerActivity.CPU]) as p:
        for _ in range(n): fn()
        torch.cuda.synchronize()
    ks = [e for e in p.events() if e.device_type == torch.autograd.DeviceType.CUDA and e.time_range.elapsed_us() > 0]
    agg = {}
    for e in ks:
        k = e.name[:90]
        a = agg.setdefault(k, [0, 0.0, None])
        a[0] += 1; a[1] += e.time_range.elapsed_us()
    span = (max(e.time_range.end for e in ks) - min(e.time_range.start for e in ks)) / n
    if rank == 0:
        print(f"== {name}: host {host:.3f} ms/call (queue), GPU span {span/1e3:.3f} ms/call, kernels {len(ks)/n:.1f}/call")
        for k, (c, us, _) in sorted(agg.items(), key=lambda kv: -kv[1][1]):
            print(f"   {us/n:9.1f} us  x{c/n:.1f}  {k}")
    ms = timed(fn, 20)
    if rank == 0: print(f"   timed {ms:.3f} ms")

with torch.no_grad():
    for nm, sp, ch, ring in (("engine_tp", False, 1, False), ("engine_sp", True, 1, False), ("engine_sp_ring", True, 0, True)):
        fd, tvs = mlp_fusion(d, h, sp, ch, ring=ring)
        ins = [md.shard_tensor(a, tv) for a, tv in zip(full, tvs)]
        prof(nm, lambda f=fd, i=ins: f.execute(i))
    mesh = init_device_mesh("cuda", (d,))
    xl = x.chunk(d, 0)[rank].contiguous()
    for name, plan, inp in (("dtensor_tp", {"0": ColwiseParallel(), "2": RowwiseParallel()}, x),
                            ("dtensor_sp", {"0": ColwiseParallel(input_layouts=Shard(0)), "2": RowwiseParallel(output_layouts=Shard(0))}, xl)):
        model = torch.nn.Sequential(torch.nn.Linear(h, 4 * h), torch.nn.GELU(), torch.nn.Linear(4 * h, h)).to(device=dev, dtype=bf)
        model = parallelize_module(model, mesh, plan)
        prof(name, lambda m=model, i=inp: waited(m(i)))
dist.destroy_process_group()
