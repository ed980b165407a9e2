"""L2 eviction hints on a benchmark kernel's global loads, written for benchmarks/sweep.py to
time in one process against the generated kernel (torch.compile marks its loads
eviction_policy='evict_last' / 'evict_first'; PTX gives the same as ld.global.L2::cache_hint
with a createpolicy.fractional policy):

    PYTHONPATH=. python3 benchmarks/probes/cache_hints.py FUSION OUTDIR | bash

The kernel's loads from global tensors fall in two kinds: streamed (the index names blockIdx:
each element read by one block) and re-read (no blockIdx: a weight or bias every block reads).
Variants: streamed loads normal, evict_last (s_last) or evict_first (s_first), each with the
re-read loads normal or evict_last (r_last), where the kernel has re-read loads.
"""

from __future__ import annotations

import itertools
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from benchmarks.probes.variants import write_variants  # noqa: E402

_HELPER = """
// L2 eviction priority of one global load: POL 1 evict_last, 2 evict_first.
template <typename T, int V, int POL>
__device__ __forceinline__ void fsLdEvict(T* dst, const T* src) {
  constexpr int bytes = static_cast<int>(sizeof(T)) * V;
  unsigned long long pol;
  if (POL == 1) {
    asm("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(pol));
  } else {
    asm("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(pol));
  }
  if constexpr (bytes == 16) {
    Array<unsigned, 4, 4> r;
    asm("ld.global.L2::cache_hint.v4.u32 {%0,%1,%2,%3}, [%4], %5;"
        : "=r"(r.array[0]), "=r"(r.array[1]), "=r"(r.array[2]), "=r"(r.array[3]) : "l"(src), "l"(pol));
    *reinterpret_cast<Array<unsigned, 4, 4>*>(dst) = r;
  } else if constexpr (bytes == 8) {
    Array<unsigned, 2, 2> r;
    asm("ld.global.L2::cache_hint.v2.u32 {%0,%1}, [%2], %3;" : "=r"(r.array[0]), "=r"(r.array[1]) : "l"(src), "l"(pol));
    *reinterpret_cast<Array<unsigned, 2, 2>*>(dst) = r;
  } else if constexpr (bytes == 4) {
    unsigned r;
    asm("ld.global.L2::cache_hint.u32 %0, [%1], %2;" : "=r"(r) : "l"(src), "l"(pol));
    *reinterpret_cast<unsigned*>(dst) = r;
  } else {
    loadGeneric<T, V>(dst, src);
  }
}
"""
_LOAD = re.compile(r"loadGeneric<([\w:]+), (\d+)>\(([^;]*?), &(T\d+)\[([^;]*)\]\);")


def _params(src: str) -> set[str]:
    head = src[src.rindex("__global__"):]
    # \b: a workspace parameter (T9_work) is not the tensor T9, which may be a local buffer.
    return set(re.findall(r"Tensor<[^>]*> (T\d+)\b", head[:head.index("{")]))


def hinted(src: str, streamed: int, reread: int) -> str:
    params = _params(src)

    def rewrite(m: re.Match) -> str:
        ctype, v, dst, t, index = m.groups()
        if t not in params:
            return m.group(0)
        pol = streamed if "blockIdx" in index else reread
        return m.group(0) if pol == 0 else f"fsLdEvict<{ctype}, {v}, {pol}>({dst}, &{t}[{index}]);"

    out = _LOAD.sub(rewrite, src)
    at = out.rfind("\n", 0, out.rindex("__global__"))
    return out[:at + 1] + _HELPER + out[at + 1:]


def variants(src: str) -> dict[str, str]:
    params = _params(src)
    kinds = {"blockIdx" in m.group(5) for m in _LOAD.finditer(src) if m.group(4) in params}
    reread = [0, 1] if False in kinds else [0]
    out = {"base": src}
    for s, r in itertools.product([0, 1, 2], reread):
        if s or r:
            name = "_".join(x for x in (("", "s_last", "s_first")[s], ("", "r_last")[r]) if x)
            out[name] = hinted(src, s, r)
    return out


if __name__ == "__main__":
    if len(sys.argv) < 2:
        raise SystemExit(__doc__)
    sys.exit(write_variants(sys.argv[1], variants, [sys.argv[0], *sys.argv[2:]]))
