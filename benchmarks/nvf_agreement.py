"""The engine's RNG and attention ops against nvFuser's on the GPU: the same definitions
(mirrored call by call, as the benchmarks do), outputs compared element by element. RNG draws
with the same rng_seed/rng_offset should be identical (normal ones could differ in the last
bits of sinf/cosf/logf); attention (ours: torch math in float32; nvFuser's: ATen flash
attention) agrees to bf16 rounding. Run on the device after sourcing benchmarks/nvf_env.sh:

    source benchmarks/nvf_env.sh && PYTHONPATH=. python3 benchmarks/nvf_agreement.py
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.nvf import import_nvfuser, mirror  # noqa: E402
from benchmarks.timing import time_calls  # noqa: E402
from engine import DataType, FusionDefinition, compile_fusion  # noqa: E402


def definition(dist: str, dtype: DataType, shape: list[int]) -> FusionDefinition:
    with FusionDefinition() as fd:
        seed = fd.define_scalar(None, dtype=DataType.Int)
        offset = fd.define_scalar(None, dtype=DataType.Int)
        a = fd.define_scalar(0.0, dtype=DataType.Double)
        b = fd.define_scalar(1.0, dtype=DataType.Double)
        op = fd.ops.uniform if dist == "uniform" else fd.ops.normal
        fd.add_output(op(a, b, shape=shape, rng_seed=seed, rng_offset=offset, dtype=dtype))
    return fd


def attention(causal: bool) -> FusionDefinition:
    with FusionDefinition() as fd:
        q, k, v = (fd.define_tensor(shape=[-1, -1, -1, -1], contiguity=[True] * 4, dtype=DataType.BFloat16)
                   for _ in range(3))
        p = fd.define_scalar(0.0, dtype=DataType.Double)
        c = fd.define_scalar(causal, dtype=DataType.Bool)
        out, lse, seed, offset = fd.ops.sdpfa_fwd(q, k, v, dropout_p=p, is_causal=c, scale=None)
        g = fd.define_tensor(shape=[-1, -1, -1, -1], contiguity=[True] * 4, dtype=DataType.BFloat16)
        fd.add_output(out)
        fd.add_output(lse)
        for t in fd.ops.sdpfa_bwd(g, q, k, v, out, lse, p, c, seed, offset, None):
            fd.add_output(t)
    return fd


def dropout() -> FusionDefinition:
    """Thunder's dropout (keep 0.9) of a bf16 tensor, with runtime seed and offset."""
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.BFloat16)
        seed = fd.define_scalar(None, dtype=DataType.Int)
        offset = fd.define_scalar(None, dtype=DataType.Int)
        lo = fd.define_scalar(0.0, dtype=DataType.Double)
        hi = fd.define_scalar(1.0, dtype=DataType.Double)
        r = fd.ops.uniform(lo, hi, shape=[8192, 8192], rng_seed=seed, rng_offset=offset, dtype=DataType.Float)
        keep = fd.ops.lt(r, fd.define_scalar(0.9, dtype=DataType.Double))
        y = fd.ops.mul(fd.ops.mul(fd.ops.cast(x, DataType.Float), fd.ops.cast(keep, DataType.Float)),
                       fd.define_scalar(1 / 0.9, dtype=DataType.Double))
        fd.add_output(fd.ops.cast(y, DataType.BFloat16))
    return fd


def time_dropout(nvf: object) -> None:
    """Device time (us, median) of the dropout fusion: the engine, nvFuser and torch eager."""
    fd = dropout()
    xs = [torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16), 20261125, 8]
    cf, nfd = compile_fusion(fd, xs), mirror(fd, nvf)
    compare("dropout", cf.run(xs, backend="cuda"), nfd.execute(xs))
    runs = {"engine": lambda a: cf.run(a, backend="cuda"), "nvFuser": nfd.execute,
            "torch eager": lambda a: torch.nn.functional.dropout(a[0], 0.1)}
    for name, fn in runs.items():
        us = time_calls(fn, [xs], queue_full=True)["median_ms"] * 1e3
        print(f"dropout bf16 [8192, 8192] {name}: {us:.1f} us")


def compare(name: str, ours: list, theirs: list) -> None:
    for k, (a, b) in enumerate(zip(ours, theirs)):
        same = (a == b).float().mean().item()
        diff = (a.double() - b.double()).abs().max().item()
        scale = b.double().abs().max().item()
        print(f"{name} output {k}: {100 * same:.3f}% of elements identical, max |diff| {diff:.3g} "
              f"(max |value| {scale:.3g})")


def main() -> int:
    nvf, why = import_nvfuser()
    print(why)
    if nvf is None:
        return 1
    for dist in ("uniform", "normal"):
        for dtype in (DataType.Float, DataType.BFloat16, DataType.Double):
            fd = definition(dist, dtype, [257, 1031])
            xs = [20261125, 8]
            compare(f"{dist} {dtype.name}", compile_fusion(fd, xs).run(xs, backend="cuda"),
                    mirror(fd, nvf).execute(xs))
    for causal in (False, True):
        fd = attention(causal)
        xs = [torch.randn(2, 8, 512, 64, device="cuda", dtype=torch.bfloat16) for _ in range(4)]
        compare(f"sdpa causal={causal}", compile_fusion(fd, xs).run(xs, backend="cuda"),
                mirror(fd, nvf).execute(xs)[:5])
    time_dropout(nvf)
    return 0


if __name__ == "__main__":
    sys.exit(main())
