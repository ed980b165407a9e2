"""Run a stream-parallel sample (seed 002) on the GPU's streams and print its host-program timeline.

    PYTHONPATH=. python benchmarks/stream_timeline.py [SAMPLE] [ROWS] [COLS]
"""

from __future__ import annotations

import sys

import torch

from engine import compile_fusion, load_fusion
from engine.reference import evaluate


def main(argv: list[str]) -> int:
    name = argv[0] if argv else "seed002_stream_two_sets"
    rows, cols = (int(argv[1]), int(argv[2])) if len(argv) > 2 else (8, 1 << 22)
    fd = load_fusion(f"sample_fusions/{name}.py")
    shapes = [tuple(x.shape) for x in fd.example_inputs()]
    xs = [torch.randn(rows, cols, device="cuda") if len(s) == 2 else torch.randn(s, device="cuda") for s in shapes]
    cf = compile_fusion(fd, xs)
    print(cf.host_ir)
    cf.run(xs, backend="cuda")  # warm-up: kernel loads, stream pool
    outs = cf.run(xs, backend="cuda", timeline=True)
    err = max((o.float() - r.float()).abs().max().item() for o, r in zip(outs, evaluate(fd.fusion, xs)))
    print(f"{name} [{rows}, {cols}] max error vs reference: {err:.1e}")
    print(f"{'op':34s} {'stream':10s} {'iter':>4s} {'start ms':>9s} {'end ms':>9s}")
    for e in cf.last_run.timeline:
        print(f"{e.op[:34]:34s} {e.stream:10s} {e.iteration if e.iteration is not None else '-':>4} "
              f"{e.start:9.3f} {e.end:9.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
