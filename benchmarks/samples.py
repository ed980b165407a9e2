"""Generated kernels against torch eager on the GPU, per bundled sample, in one process.

For each sample: compile at the file's example sizes (and, where the definition is
symbolic, at a size that fills the GPU), check against the reference, then time every
kernel segment with CUDA events (median) and the same fusion run op by op by torch
(the reference evaluator on CUDA: torch eager). Prints a table; figures are ratios
against torch eager measured in the same run.

    PYTHONPATH=. python benchmarks/samples.py [--large] [NAME ...]
"""

from __future__ import annotations

import argparse
import sys

import torch

from engine import load_fusion
from engine.compile import compile_fusion
from engine.reference import evaluate

SAMPLES = [
    "gelu_bias", "softmax", "layer_norm", "rms_norm", "outer_reduction", "transpose", "reshape_chain",
    "cross_entropy", "seed001_inner_outer_alloc", "seed003_rope_bwd",
]


def _time_ms(fn, warmup: int = 3, repeat: int = 20) -> float:
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    # GPU time per iteration: the queue is kept full (a sleep kernel first) so host-side
    # launch overhead, ours and torch's alike, stays out of the events.
    events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(repeat)]
    torch.cuda._sleep(100_000_000)
    for a, b in events:
        a.record()
        fn()
        b.record()
    torch.cuda.synchronize()
    times = [a.elapsed_time(b) for a, b in events]
    times.sort()
    return times[len(times) // 2]


def _grow(fd, xs: list, target: int) -> list:
    """Scale the outermost symbolic axis of every input up so the biggest input has ~target elements."""
    sym = [t for t, spec in zip(fd.fusion.inputs, xs) if isinstance(spec, torch.Tensor)]
    if not sym:
        return xs
    biggest = max(x.numel() for x in xs if isinstance(x, torch.Tensor))
    k = max(1, target // max(biggest, 1))
    try:
        grown = [x.repeat(k, *([1] * (x.dim() - 1))) if isinstance(x, torch.Tensor) and x.dim() >= 2 else x
                 for x in xs]
        evaluate(fd.fusion, [g[:2] if isinstance(g, torch.Tensor) and g.dim() >= 2 else g for g in grown])
        return grown
    except Exception:
        return xs


def bench(name: str, large: bool) -> str:
    fd = load_fusion(f"sample_fusions/{name}.py")
    xs = fd.example_inputs(device="cpu", seed=0)
    if large:
        xs = _grow(fd, xs, 1 << 24)
    cf = compile_fusion(fd, xs)
    gx = [x.cuda() if isinstance(x, torch.Tensor) else x for x in xs]
    outs = cf.run(gx, backend="cuda")
    refs = evaluate(fd.fusion, gx)
    err = max(((o.double() - r.double()).abs().max() / (r.double().abs().max() + 1e-30)).item()
              for o, r in zip(outs, refs) if o.dtype.is_floating_point and o.element_size() >= 2)
    profiles = cf.profile(gx, backend="cuda")
    kern_ms = sum(p.time_ms for p in profiles)
    whole_ms = _time_ms(lambda: cf.run(gx, backend="cuda"), repeat=5)
    eager_ms = _time_ms(lambda: evaluate(fd.fusion, gx))
    shape = "x".join(str(s) for s in next(x for x in xs if isinstance(x, torch.Tensor)).shape)
    rows = [f"{name:28s} {shape:>14s} segs={len(cf.segments):2d} err={err:.1e} kernels={kern_ms*1e3:9.1f}us "
            f"run={whole_ms*1e3:9.1f}us eager={eager_ms*1e3:9.1f}us eager/kernels={eager_ms/kern_ms if kern_ms else 0:6.2f}x"]
    for p in profiles:
        gbps = (p.bytes_read + p.bytes_written) / (p.time_ms * 1e-3) / 1e9 if p.bytes_read is not None else 0
        pct = 100 * gbps / p.peak_bandwidth_gbps if p.peak_bandwidth_gbps else 0
        rows.append(f"    {p.name:44s} {p.time_ms*1e3:9.1f}us {gbps:8.1f} GB/s {pct:5.1f}% peak "
                    f"regs={p.registers} smem={p.static_shared_bytes}+{p.launch.shared_mem_bytes} "
                    f"local={p.local_bytes} occ={p.occupancy}")
    return "\n".join(rows)


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("names", nargs="*")
    ap.add_argument("--large", action="store_true", help="also at a size that fills the GPU")
    args = ap.parse_args(argv)
    names = args.names or SAMPLES
    for large in ([False, True] if args.large else [False]):
        print(f"== {'large' if large else 'example'} sizes on {torch.cuda.get_device_name()}")
        for n in names:
            try:
                print(bench(n, large), flush=True)
            except Exception as e:  # keep going: one broken sample must not hide the others
                print(f"{n:28s} FAILED {type(e).__name__}: {str(e).splitlines()[0][:200]}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
