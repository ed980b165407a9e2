"""Variants of the outer sum's generated kernel (fp32 [32768, 4096]) that each change one
step of the grid reduction's tail, written for benchmarks/sweep.py to time in one process
against the generated kernel. See NOTES.md ("Outer sum: the tail, planned probe").

    PYTHONPATH=. python3 benchmarks/probes/outer_sum_tail.py OUTDIR | bash   # on the device: writes
                                    # OUTDIR/outer_sum_*.cu and pipes the sweep command to bash
Variants (each a hand edit of the generated source, applied by string replacement that must
match exactly once, so an engine change that moves the code fails loudly here):
- noreduce: the grid reduction replaced by `blockIdx.y == 0` (wrong results): the main loop alone.
- unroll8: the main loop unrolled 8 times instead of 4 (128 bytes in flight per thread).
- acqrel: the arrival without block-wide fences: thread 0's acq_rel atomic after a barrier
  (run 25: -0.55 us of 179.6, three pairs; the runtime's fsArriveLast does this since).
- batch16: the last block issues all 16 of its partial loads before summing.
- acqrel_batch16: both.
- l2pf: main-loop loads with a 256-byte L2 prefetch hint.
"""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

_ARRIVE_ACQREL = """FS_DEVICE bool fsArriveLast(nvfuser_index_t* flag, unsigned count) {
  __shared__ int fs_group_last;
  __syncthreads();  // the block's partials happen before thread 0's release
  if (threadIdx.x == 0 && threadIdx.y == 0 && threadIdx.z == 0) {
    unsigned long long old;
    asm volatile("atom.acq_rel.gpu.global.add.u64 %0, [%1], 1;" : "=l"(old) : "l"(flag) : "memory");
    const bool last = old + 1 == static_cast<unsigned long long>(count);
    if (last) {
      *flag = 0;
    }
    fs_group_last = last ? 1 : 0;
  }
  __syncthreads();
  const bool last = fs_group_last != 0;
  __syncthreads();
  return last;
}
"""


def _once(src: str, old: str, new: str) -> str:
    if src.count(old) != 1:
        raise SystemExit(f"expected exactly one {old[:60]!r} in the generated kernel")
    return src.replace(old, new)


def _function(src: str, head: str) -> str:
    start = src.index(head)
    return src[start:src.index("\n}\n", start) + 3]


def variants(src: str) -> dict[str, str]:
    call = src[src.index("T2_last = gridReduceGroup<"):]
    call = call[:call.index("\n")]  # the whole statement (its lambda has a ';' of its own)
    load = "loadGeneric<float, 4>(&T4[0], &T0["
    out = {
        "base": src,
        "noreduce": _once(src, call, "T2_last = blockIdx.y == 0;"),
        "unroll8": _once(src, "#pragma unroll 4\n  for (nvfuser_index_t i", "#pragma unroll 8\n  for (nvfuser_index_t i"),
        "acqrel": _once(src, _function(src, "FS_DEVICE bool fsArriveLast("), _ARRIVE_ACQREL),
        "batch16": _once(src, "kFsCombineBatch = 8;", "kFsCombineBatch = 16;"),
        "l2pf": _once(src, load, "loadGlobalPrefetchL2<float, 4, 256>(&T4[0], &T0["),
    }
    out["acqrel_batch16"] = _once(out["acqrel"], "kFsCombineBatch = 8;", "kFsCombineBatch = 16;")
    out["acqrel_batch16_l2pf"] = _once(out["acqrel_batch16"], load, "loadGlobalPrefetchL2<float, 4, 256>(&T4[0], &T0[")
    return out


def main() -> int:
    from benchmarks.fusions import benchmark_fusions
    from engine.compile import compile_fusion

    outdir = Path(sys.argv[1] if len(sys.argv) > 1 else ".probe")
    outdir.mkdir(parents=True, exist_ok=True)
    bf = next(b for b in benchmark_fusions("full") if b.name == "outer_sum")
    cf = compile_fusion(bf.build(), bf.make_inputs("cpu", 0))
    names = []
    for name, text in variants(cf.segments[0].cuda_source).items():
        (outdir / f"outer_sum_{name}.cu").write_text(text)
        names.append(name)
    runs = [f'{{"kernel_sources": {{"0": "{outdir}/outer_sum_{n}.cu"}}}}' for n in [*names, "base"]]
    print("python3 benchmarks/sweep.py outer_sum " + " ".join(shlex.quote(r) for r in runs) + " --repeat 300")
    return 0


if __name__ == "__main__":
    sys.exit(main())
