"""Variants of the layer_norm benchmark's generated kernel (fp32 [8192, 4096]), written for
benchmarks/sweep.py to time in one process against the generated kernel. Each changes one
thing about how a thread's 16 register-resident values become the row's mean and variance,
or when the weight and bias arrive:

    PYTHONPATH=. python3 benchmarks/probes/layer_norm_variants.py OUTDIR | bash

- twopass: the thread's serial Welford (a division per element) replaced by a sum, one
  division, then the sum of squared deviations from that mean (exact to rounding; the block
  Welford combine that follows is unchanged).
- fdiv: the serial Welford kept, its division by the count made __fdividef.
- hoistwb: the weight and bias loads moved before the reduction, so their latency overlaps it.
- twopass_hoistwb: both.
- wbinline: the weight and bias loaded inside the output loop, 4 values at a time, so 8 of
  their 32 values are live instead of all (48 registers, 5 blocks an SM, in the generated one).
- twopass_wbinline: both.
- lb6, lb8: __launch_bounds__(256, 6 or 8): the compiler held to 40 or 32 registers.
- reload: the output loop loads the row again from global memory (an L2 hit: the block read
  it moments before) instead of keeping its 16 values in registers across the block
  reduction, as torch.compile's layer_norm does; fewer registers, more blocks an SM.
- reload_hints: also the first read marked L2 evict_last, the second evict_first, and the
  weight and bias evict_last (inductor's eviction_policy hints, as PTX cache-hint policies).
- hints: the hints alone, the row kept in registers.
- reload_wbinline, reload_hints_wbinline, twopass_reload_wbinline: the reload with the weight
  and bias loaded in the output loop (nothing of the row held across the reduction).
- sums: no Welford at all: the row's sum through one float blockAllReduce, then the sum of
  squared deviations from that mean through another (exact two-pass, the row in registers),
  as inductor's persistent reductions compute a variance; far fewer instructions than the
  Welford combine tree (64-bit counts, a division per step). sums_wbinline: with wbinline.
Edits are string replacements that must match exactly once, so an engine change that moves
the code fails loudly here.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from benchmarks.probes.variants import once, write_variants  # noqa: E402

_SERIAL = re.compile(
    r"  for \(nvfuser_index_t (i\d+) = 0; \1 < 4; \+\+\1\) \{\n"
    r"    for \(nvfuser_index_t (i\d+) = 0; \2 < 4; \+\+\2\) \{\n"
    r"      fs_welford_update\((T\d+)_acc\[0\], (T\d+)_acc\[0\], (T\d+)_acc\[0\], (T\d+)\[\1 \* 4 \+ \2\]\);\n"
    r"    \}\n  \}\n")
_WB = re.compile(r"  for \(nvfuser_index_t (i\d+) = 0; \1 < 4; \+\+\1\) \{\n"
                 r"    alignas\(16\) float T\d+\[4\];\n"
                 r"    loadGeneric<float, 4>\(&T\d+\[0\], &T[12]\[.*?\n    \}\n  \}\n", re.S)


def _two_pass(m: re.Match) -> str:
    avg, m2, n, x = m.group(3, 4, 5, 6)
    return (f"  {{\n    float fs_s = 0.f;\n    #pragma unroll\n    for (int k = 0; k < 16; ++k) fs_s += {x}[k];\n"
            f"    const float fs_m = fs_s / 16.f;\n    float fs_q = 0.f;\n    #pragma unroll\n"
            f"    for (int k = 0; k < 16; ++k) {{ const float d = {x}[k] - fs_m; fs_q += d * d; }}\n"
            f"    {avg}_acc[0] = fs_m; {m2}_acc[0] = fs_q; {n}_acc[0] = 16;\n  }}\n")


def _hoist(src: str) -> str:
    blocks = [m.group(0) for m in _WB.finditer(src)]
    if len(blocks) != 2:
        raise SystemExit(f"expected the weight and bias load loops, found {len(blocks)}")
    for b in blocks:
        src = src.replace(b, "")
    serial = _SERIAL.search(src)
    at = serial.start() if serial is not None else src.index("  {\n    float fs_s")
    return src[:at] + "".join(blocks) + src[at:]


def _inline_wb(src: str) -> str:
    blocks = [m for m in _WB.finditer(src)]
    if len(blocks) != 2:
        raise SystemExit(f"expected the weight and bias load loops, found {len(blocks)}")
    loads = []
    for m in blocks:
        i = m.group(1)
        dst = re.search(r"      (T\d+)\[" + i, m.group(0)).group(1)
        table = re.search(r"&(T[12])\[\(" + i, m.group(0)).group(1)
        loads.append((dst, table))
        src = src.replace(m.group(0), "")
    out = re.search(r"  for \(nvfuser_index_t (i\d+) = 0; \1 < 4; \+\+\1\) \{\n    \{\n      alignas\(16\) float T\d+_vec", src)
    if out is None:
        raise SystemExit("no vectorized output loop in the generated kernel")
    i = out.group(1)
    head = f"  for (nvfuser_index_t {i} = 0; {i} < 4; ++{i}) {{\n"
    body = "".join(f"    loadGeneric<float, 4>(&{d}[{i} * 4], &{t}[({i} * 256 + threadIdx.x) * 4]);\n"
                   for d, t in loads)
    return src[:out.start()] + head + body + src[out.start() + len(head):]


_HINTED_LOAD = """
template <bool LAST>
__device__ __forceinline__ void fsLdHint4(float* dst, const float* src) {
  unsigned long long pol;
  if (LAST) {
    asm("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(pol));
  } else {
    asm("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(pol));
  }
  float4 v;
  asm("ld.global.L2::cache_hint.v4.f32 {%0, %1, %2, %3}, [%4], %5;"
      : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w) : "l"(src), "l"(pol));
  *reinterpret_cast<float4*>(dst) = v;
}
"""
_ROW_LOAD = re.compile(r"(?:loadGeneric|loadGlobalEvictLast)<float, 4>\(&(T\d+)\[0\], &T0\[(blockIdx\.x \* T0\.alloc_stride\[0\] \+ \()(i\d+)( \* 256 \+ threadIdx\.x\) \* 4)\]\);")
_OUT_LOOP = re.compile(r"  for \(nvfuser_index_t (i\d+) = 0; \1 < 4; \+\+\1\) \{\n    \{\n      alignas\(16\) float T\d+_vec\[4\];\n")


def _reload(src: str, hints: bool) -> str:
    """The output loop's row values loaded again (evict_first with `hints`; the other hints
    come from _hint_first)."""
    row = _ROW_LOAD.search(src)
    out = _OUT_LOOP.search(src)
    if row is None or out is None:
        raise SystemExit("no row load or no vectorized output loop in the generated kernel")
    buf = re.search(r"T12\[0\] = \((T\d+)\[(i\d+) \* 4 \+ (i\d+)\] - ", src)
    if buf is None or buf.group(2) != out.group(1):
        raise SystemExit("the output loop does not read the row buffer as expected")
    i = out.group(1)
    addr = f"&T0[{row.group(2)}{i}{row.group(4)}]"
    load = (f"fsLdHint4<false>(fs_x, {addr});" if hints else f"loadGeneric<float, 4>(fs_x, {addr});")
    src = src[:out.end()] + f"      alignas(16) float fs_x[4];\n      {load}\n" + src[out.end():]
    return once(src, buf.group(0), f"T12[0] = (fs_x[{buf.group(3)}] - ")


def _hint_first(src: str) -> str:
    row = _ROW_LOAD.search(src)
    src = src[:row.start()] + f"fsLdHint4<true>(&{row.group(1)}[0], &T0[{row.group(2)}{row.group(3)}{row.group(4)}]);" + src[row.end():]
    src = re.sub(r"loadGeneric<float, 4>\((&T\d+\[[^\]]*\]), &(T[12])\[", r"fsLdHint4<true>(\1, &\2[", src)
    at = src.index("__global__")
    head = src.rfind("\n", 0, at)
    return src[:head + 1] + _HINTED_LOAD + src[head + 1:]


_WELFORD = re.compile(
    r"  for \(nvfuser_index_t (i\d+) = 0; \1 < (\d+); \+\+\1\) \{\n"
    r"    for \(nvfuser_index_t (i\d+) = 0; \3 < 4; \+\+\3\) \{\n"
    r"      fs_welford_update\(T\d+_acc\[0\], T\d+_acc\[0\], T\d+_acc\[0\], (T\d+)\[\1 \* 4 \+ \3\]\);\n"
    r".*?blockWelford<true, false, false>\((T\d+)_acc\[0\], (T\d+)_acc\[0\], (T\d+)_acc\[0\], .*?\);\n", re.S)


def _sums(src: str) -> str:
    m = _WELFORD.search(src)
    if m is None:
        raise SystemExit("no serial Welford and blockWelford in the generated kernel")
    k = 4 * int(m.group(2))
    x, avg, m2, n = m.group(4, 5, 6, 7)
    add = "[](float a, float b) { return a + b; }"
    body = (f"  float fs_s = 0.f;\n  #pragma unroll\n  for (int k = 0; k < {k}; ++k) fs_s += {x}[k];\n"
            f"  fs_s = blockAllReduce<true, false, false>(fs_s, {add}, reinterpret_cast<float*>(red_smem));\n"
            f"  const float fs_m = fs_s / 4096.f;\n  float fs_q = 0.f;\n  #pragma unroll\n"
            f"  for (int k = 0; k < {k}; ++k) {{ const float d = {x}[k] - fs_m; fs_q += d * d; }}\n"
            f"  fs_q = blockAllReduce<true, false, false>(fs_q, {add}, reinterpret_cast<float*>(red_smem));\n"
            f"  {avg}_acc[0] = fs_m; {m2}_acc[0] = fs_q; {n}_acc[0] = 4096;\n")
    return src[:m.start()] + body + src[m.end():]


def variants(src: str) -> dict[str, str]:
    if len(_SERIAL.findall(src)) != 1:
        raise SystemExit("expected exactly one serial Welford loop in the generated kernel")
    two = _SERIAL.sub(_two_pass, src)
    return {
        "base": src,
        "twopass": two,
        "fdiv": once(src, "avg += delta / (T)n;", "avg += __fdividef(delta, (float)n);"),
        "hoistwb": _hoist(src),
        "twopass_hoistwb": _hoist(two),
        "wbinline": _inline_wb(src),
        "twopass_wbinline": _inline_wb(two),
        "lb6": once(src, "__launch_bounds__(256)", "__launch_bounds__(256, 6)"),
        "lb8": once(src, "__launch_bounds__(256)", "__launch_bounds__(256, 8)"),
        "sums": _sums(src),
        "sums_wbinline": _inline_wb(_sums(src)),
        "reload": _reload(src, hints=False),
        "reload_hints": _hint_first(_reload(src, hints=True)),
        "hints": _hint_first(src),
        "twopass_reload_hints": _hint_first(_reload(two, hints=True)),
        "reload_wbinline": _inline_wb(_reload(src, hints=False)),
        "reload_hints_wbinline": _hint_first(_inline_wb(_reload(src, hints=True))),
        "twopass_reload_wbinline": _inline_wb(_reload(two, hints=False)),
    }


if __name__ == "__main__":
    sys.exit(write_variants("layer_norm", variants, sys.argv))
