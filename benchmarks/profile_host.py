"""Where the engine's host time goes, on the GPU machine: cProfile of a warm compile_fusion and of
repeated CompiledFusion.run calls per benchmark fusion, and the fixed cost of one run of a tiny
fusion. A diagnostic beside benchmarks/run.py (whose table shows 'engine run' far above
'engine kernels' and compile times that grow with the data).

    PYTHONPATH=. python benchmarks/profile_host.py [--only NAME ...] [--out FILE]
    PYTHONPATH=. python benchmarks/profile_host.py --fake-launch [--out FILE]

--fake-launch measures on the CPU the Python cost of one cf.run per benchmark fusion (small
sizes): each kernel is a stand-in that packs its arguments as the CUDA launcher does (the
same abi.ArgBuffer) and skips only the driver call, so the figure is the host time a GPU run
adds before and around its cuLaunchKernel calls.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

from benchmarks.fusions import BF16, benchmark_fusions, gelu_bias  # noqa: E402
from engine.compile import compile_fusion  # noqa: E402


def top(prof: cProfile.Profile, key: str, n: int) -> str:
    s = io.StringIO()
    st = pstats.Stats(prof, stream=s)
    st.sort_stats(key).print_stats(n)
    lines = [ln for ln in s.getvalue().splitlines() if ln.strip()]
    # drop the banner; keep the summary line and the table
    keep = [ln for ln in lines if "function calls" in ln or ln.lstrip().startswith(("ncalls",)) or
            ln.lstrip()[:1].isdigit()]
    return "\n".join(keep).replace(str(ROOT) + "/", "")


DEV, BACKEND = "cuda", "cuda"


def sync() -> None:
    if DEV == "cuda":
        torch.cuda.synchronize()


def wall_ms(fn, reps: int) -> float:
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        sync()
        times.append((time.perf_counter() - t) * 1e3)
    return statistics.median(times)


class FakeKernel:
    """A kernel stand-in: the CUDA back end's argument handling without the GPU."""

    def __init__(self, specs: list, name: str) -> None:
        self.specs, self.name = list(specs), name

    def launch(self, args, launch, alloc_strides=None, **_) -> None:  # noqa: ANN001
        import ctypes

        from engine.runtime.abi import pack_args
        from engine.runtime.cuda import validate_args

        validate_args(self.name, self.specs, list(args), torch.device("cpu"))
        packed = pack_args(self.specs, list(args), alloc_strides)
        buffers = [(ctypes.c_char * len(b)).from_buffer_copy(b) for b in packed]
        (ctypes.c_void_p * max(1, len(buffers)))(*[ctypes.addressof(b) for b in buffers])

    def launcher(self, launch, layouts, *, sync: bool = False):  # noqa: ANN001, ANN201
        from engine.runtime.abi import ArgBuffer

        return ArgBuffer(self.specs, layouts).fill


def fake_launch_costs(runs: int, say) -> None:  # noqa: ANN001
    """Median wall time of cf.run (CPU tensors, kernels faked) per benchmark fusion."""
    say(f"{'fusion':16s} {'kernels':>7s} {'cf.run us':>10s}  (median of {runs}, CPU, fake launches)")
    for bf in benchmark_fusions("small"):
        xs = bf.make_inputs("cpu", 0)
        cf = compile_fusion(bf.build(), xs)
        for s in cf.segments:
            if s.is_kernel:
                s._kernels["emulate"] = FakeKernel(s.lowered.kernel.params, s.kernel_name)
        for _ in range(5):
            cf.run(xs, backend="emulate")
        times = []
        for _ in range(runs):
            t = time.perf_counter()
            cf.run(xs, backend="emulate")
            times.append((time.perf_counter() - t) * 1e6)
        nk = sum(1 for s in cf.segments if s.is_kernel)
        say(f"{bf.name:16s} {nk:7d} {statistics.median(times):10.1f}")


def issue_costs(names: list[str] | None, runs: int, say) -> None:  # noqa: ANN001
    """On the GPU: host microseconds per cf.run while the GPU is busy (calls issued back to back
    behind a sleep kernel, so none waits for the device), per benchmark fusion at full size."""
    say(f"{'fusion':16s} {'kernels':>7s} {'host us/run':>11s}  (median of 5 x {runs} calls issued behind a sleep)")
    for bf in benchmark_fusions("full"):
        if names and bf.name not in names:
            continue
        xs = bf.make_inputs("cuda", 0)
        cf = compile_fusion(bf.build(), xs)
        for _ in range(3):
            cf.run(xs, backend="cuda")
        sync()
        per = []
        for _ in range(5):
            torch.cuda._sleep(int(2e6 * runs * 0.2))  # ~0.2 ms a call at ~2 GHz: longer than the calls
            t = time.perf_counter()
            for _ in range(runs):
                cf.run(xs, backend="cuda")
            per.append((time.perf_counter() - t) * 1e6 / runs)
            sync()
        nk = sum(1 for s in cf.segments if s.is_kernel)
        say(f"{bf.name:16s} {nk:7d} {statistics.median(per):11.1f}")
        del cf, xs
        torch.cuda.empty_cache()


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", nargs="*", default=["gelu_bias", "outer_sum", "inner_outer", "rope_bwd"])
    ap.add_argument("--out", default=None)
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--smoke", action="store_true", help="CPU, small sizes, emulated kernels")
    ap.add_argument("--fake-launch", action="store_true",
                    help="CPU: the Python cost of cf.run per benchmark fusion, kernels faked")
    ap.add_argument("--issue", action="store_true",
                    help="GPU: host time per cf.run with the GPU busy (--only: fusions, default all)")
    args = ap.parse_args(argv)
    global DEV, BACKEND
    if args.smoke:
        DEV, BACKEND = "cpu", "emulate"
    out: list[str] = []

    def say(s: str = "") -> None:
        print(s, flush=True)
        out.append(s)

    if args.fake_launch or args.issue:
        if args.fake_launch:
            fake_launch_costs(max(args.runs, 200), say)
        else:
            issue_costs(args.only if "--only" in argv else None, args.runs, say)
        if args.out:
            Path(args.out).write_text("\n".join(out) + "\n")
        return 0

    # fixed cost: a tiny one-kernel fusion
    txs = [torch.randn(128, 384, device=DEV).bfloat16(), torch.randn(384, device=DEV).bfloat16()]
    tcf = compile_fusion(gelu_bias(BF16, 128, 384), txs)
    tcf.run(txs, backend=BACKEND)
    run = wall_ms(lambda: tcf.run(txs, backend=BACKEND), 50)
    kern = sum(p.time_ms for p in tcf.profile(txs, backend=BACKEND))
    say(f"tiny gelu_bias bf16 [128, 384]: cf.run wall {run * 1e3:.1f} us (median of 50, synchronized), "
        f"kernel {kern * 1e3:.1f} us")

    for bf in benchmark_fusions("small" if args.smoke else "full"):
        if bf.name not in args.only:
            continue
        xs = bf.make_inputs(DEV, 0)
        fd = bf.build()
        cf = compile_fusion(fd, xs)
        cf.run(xs, backend=BACKEND)
        sync()
        say(f"\n=== {bf.name} {bf.shape}: {len(cf.segments)} segments")
        prof = cProfile.Profile()
        t = time.perf_counter()
        prof.enable()
        cf2 = compile_fusion(bf.build(), xs)
        sync()
        prof.disable()
        say(f"--- warm compile_fusion: {(time.perf_counter() - t) * 1e3:.0f} ms (under cProfile)")
        say(top(prof, "tottime", 12))
        say(top(prof, "cumulative", 25))
        for s in cf2.segments:
            if s.is_kernel:
                s.kernel(BACKEND)
        cf2.run(xs, backend=BACKEND)
        sync()
        w = wall_ms(lambda cf2=cf2, xs=xs: cf2.run(xs, backend=BACKEND), args.runs)
        say(f"--- cf.run wall {w * 1e3:.1f} us median of {args.runs} (synchronized)")
        prof = cProfile.Profile()
        prof.enable()
        for _ in range(args.runs):
            cf2.run(xs, backend=BACKEND)
        sync()
        prof.disable()
        say(f"--- {args.runs} x cf.run under cProfile")
        say(top(prof, "tottime", 15))
        if DEV == "cuda":
            torch.cuda.empty_cache()
    if args.out:
        Path(args.out).write_text("\n".join(out) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
