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

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from benchmarks.probes.variants import once, write_variants  # noqa: E402

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


def _function(src: str, head: str) -> str:
    start = src.index(head)
    return src[start:src.index("\n}\n", start) + 3]


def variants(src: str) -> dict[str, str]:
    call = src[src.index("T2_last = gridReduceGroup<"):]
    call = call[:call.index("\n")]  # the whole statement (its lambda has a ';' of its own)
    load = "loadGeneric<float, 4>(&T4[0], &T0["
    out = {
        "base": src,
        "noreduce": once(src, call, "T2_last = blockIdx.y == 0;"),
        "unroll8": once(src, "#pragma unroll 4\n  for (nvfuser_index_t i", "#pragma unroll 8\n  for (nvfuser_index_t i"),
        "acqrel": once(src, _function(src, "FS_DEVICE bool fsArriveLast("), _ARRIVE_ACQREL),
        "batch16": once(src, "kFsCombineBatch = 8;", "kFsCombineBatch = 16;"),
        "l2pf": once(src, load, "loadGlobalPrefetchL2<float, 4, 256>(&T4[0], &T0["),
    }
    out["acqrel_batch16"] = once(out["acqrel"], "kFsCombineBatch = 8;", "kFsCombineBatch = 16;")
    out["acqrel_batch16_l2pf"] = once(out["acqrel_batch16"], load, "loadGlobalPrefetchL2<float, 4, 256>(&T4[0], &T0[")
    return out


if __name__ == "__main__":
    sys.exit(write_variants("outer_sum", variants, sys.argv))
