"""The runtime headers under the emulator and nvcc: conversions swept against torch bit for
bit, block and grid reductions and Welford over odd shapes against torch, nvfp4 block
quantization and the scale layouts byte for byte against engine/nvfp4.py, and `nvcc --ptx`
for sm_80 and sm_90. All kernels compile in parallel once per module."""

from __future__ import annotations

import math

import pytest
import torch
from codegen_helpers import compile_all, describe, grid_stride_loop, kernel_source, mismatches

from engine import nvfp4
from engine.codegen import ops_table as ot
from engine.dtypes import DataType as D
from engine.reference import cast_tensor
from engine.runtime.abi import LaunchConfig, ScalarArg, TensorArg
from engine.runtime.prelude import HEADERS, header_text, runtime_prelude

# ---- kernels -------------------------------------------------------------------------------

_STORAGE = [D.Half, D.BFloat16, D.Float8_e4m3fn, D.Float8_e5m2, D.Float8_e8m0fnu, D.Float4_e2m1fn]
_SOURCES = [D.Float, D.Double, D.Int, D.Int32]
_CONVERSIONS = [(s, d) for s in _SOURCES for d in _STORAGE] + [
    (D.Double, D.Float), (D.Int, D.Float), (D.Int, D.Double), (D.Float, D.Int), (D.Float, D.Int32),
    (D.Double, D.Int), (D.Float, D.Bool), (D.Double, D.Bool),
]


def _ctype(dt: D) -> str:
    return dt.cuda_name


def _conversion_kernel() -> tuple[str, list]:
    specs = [TensorArg(f"S_{s.name}", _ctype(s), 1, 1) for s in _SOURCES]
    specs += [TensorArg(f"U_{s.name}", _ctype(s), 1, 1) for s in _STORAGE]
    down = []
    for k, (s, d) in enumerate(_CONVERSIONS):
        specs.append(TensorArg(f"C{k}", _ctype(d), 1, 1))
        down.append(f"    C{k}[i] = {ot.cast(f'S_{s.name}[i]', s, d)};")
    up = []
    for s in _STORAGE:
        specs.append(TensorArg(f"W_{s.name}", "float", 1, 1))
        up.append(f"  for (nvfuser_index_t i = threadIdx.x; i < U_{s.name}.logical_size[0]; "
                  f"i += blockDim.x) {{ W_{s.name}[i] = {ot.cast(f'U_{s.name}[i]', s, D.Float)}; }}")
    params = ", ".join(f"{s.decl} {s.name}" for s in specs)
    body = (f'extern "C" __global__ void conversions({params}) {{\n'
            + grid_stride_loop("S_Float.logical_size[0]", "\n".join(down)) + "\n".join(up) + "\n}\n")
    return body, specs


# Every combination of reduced thread dims, selected at run time by `mode`.
_FLAGS = [(True, False, False), (False, True, False), (True, True, False), (False, False, True),
          (True, True, True), (False, True, True), (True, False, True)]


def _block_kernel() -> tuple[str, list]:
    specs = [TensorArg("X", "float", 1, 1), TensorArg("XI", "int64_t", 1, 1), ScalarArg("mode", "int"),
             TensorArg("SUM", "float", 1, 1), TensorArg("MAX", "float", 1, 1),
             TensorArg("ISUM", "int64_t", 1, 1), TensorArg("AVG", "float", 1, 1),
             TensorArg("M2", "float", 1, 1), TensorArg("N", "int64_t", 1, 1)]
    cases = []
    for m, (x, y, z) in enumerate(_FLAGS):
        f = f"{str(x).lower()}, {str(y).lower()}, {str(z).lower()}"
        cases.append(f"""    case {m}: {{
      // twice in a row through the same smem: it must be reusable right away
      SUM[t] = blockAllReduce<{f}>(v, {ot.reduction_lambda('add', D.Float)}, fsmem);
      MAX[t] = blockAllReduce<{f}>(v, {ot.reduction_lambda('max', D.Float)}, fsmem);
      ISUM[t] = blockAllReduce<{f}>(XI[t], {ot.reduction_lambda('add', D.Int)}, ismem);
      float avg = n ? v : 0.0f, m2 = 0.0f;
      blockWelford<{f}>(avg, m2, n, fsmem, fsmem + nt, ismem);
      AVG[t] = avg; M2[t] = m2; N[t] = n;
      break;
    }}""")
    params = ", ".join(f"{s.decl} {s.name}" for s in specs)
    body = f"""extern "C" __global__ void block_reduce({params}) {{
  FS_DYNAMIC_SHARED(smem);
  const unsigned nt = blockDim.x * blockDim.y * blockDim.z;
  float* fsmem = reinterpret_cast<float*>(smem);
  int64_t* ismem = reinterpret_cast<int64_t*>(smem + 8 * nt);
  const nvfuser_index_t t = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  const float v = X[t];
  nvfuser_index_t n = (t % 5 == 3) ? 0 : 1;  // some threads hold no element: Welford n = 0
  switch (mode) {{
{chr(10).join(cases)}
  }}
}}
"""
    return body, specs


def _welford_equal_kernel() -> tuple[str, list]:
    """blockWelford and blockWelfordFixedCounts over threadIdx.x, each thread holding the
    Welford of its own two values (the same count everywhere)."""
    specs = [TensorArg("X", "float", 1, 1), TensorArg("OUT", "float", 1, 1)]
    params = ", ".join(f"{s.decl} {s.name}" for s in specs)
    body = f"""extern "C" __global__ void welford_equal({params}) {{
  FS_DYNAMIC_SHARED(smem);
  const unsigned nt = blockDim.x;
  float* fsmem = reinterpret_cast<float*>(smem);
  nvfuser_index_t* ismem = reinterpret_cast<nvfuser_index_t*>(smem + 8 * nt);
  const float x0 = X[2 * threadIdx.x], x1 = X[2 * threadIdx.x + 1];
  float a = 0.5f * (x0 + x1), m = 0.5f * (x1 - x0) * (x1 - x0);
  nvfuser_index_t n = 2;
  float b = a, q = m;
  nvfuser_index_t k = n;
  blockWelford<true, false, false>(a, m, n, fsmem, fsmem + nt, ismem);
  blockWelfordFixedCounts<true, false, false>(b, q, k, fsmem, fsmem + nt, ismem);
  if (threadIdx.x == 0) {{
    OUT[0] = a; OUT[1] = m; OUT[2] = (float)n; OUT[3] = b; OUT[4] = q; OUT[5] = (float)k;
  }}
}}
"""
    return body, specs


def _grid_kernel() -> tuple[str, list]:
    """x[blockIdx.y][blockIdx.x][threadIdx.y][threadIdx.x]; mode 0 reduces blockIdx.x and
    threadIdx.x (a segment per (blockIdx.y, threadIdx.y)); mode 1 blockIdx.x only; mode 2 a
    gridWelford over blockIdx.x and threadIdx.x."""
    specs = [TensorArg("X", "float", 1, 1), ScalarArg("mode", "int"), TensorArg("OUT", "float", 1, 1),
             TensorArg("OUT_M2", "float", 1, 1), TensorArg("OUT_N", "int64_t", 1, 1),
             TensorArg("WORK", "float", 1, 1), TensorArg("WORK2", "float", 1, 1),
             TensorArg("WORK_N", "int64_t", 1, 1), TensorArg("FLAGS", "int64_t", 1, 1),
             TensorArg("LAST", "int64_t", 1, 1)]
    params = ", ".join(f"{s.decl} {s.name}" for s in specs)
    add = ot.reduction_lambda("add", D.Float)
    body = f"""extern "C" __global__ void grid_reduce({params}) {{
  FS_DYNAMIC_SHARED(smem);
  const unsigned nt = blockDim.x * blockDim.y * blockDim.z;
  float* fsmem = reinterpret_cast<float*>(smem);
  int64_t* ismem = reinterpret_cast<int64_t*>(smem + 8 * nt);
  const nvfuser_index_t bx = blockDim.x, by = blockDim.y;
  const nvfuser_index_t idx =
      ((blockIdx.y * (nvfuser_index_t)gridDim.x + blockIdx.x) * by + threadIdx.y) * bx + threadIdx.x;
  const float v = X[idx];
  bool last = false;
  if (mode == 0) {{
    float out = -1.0f;
    last = gridReduce<true, false, false, true, false, false>(out, v, {add}, 0.0f, WORK.data,
                                                              FLAGS.data, fsmem);
    if (last && threadIdx.x == 0) OUT[blockIdx.y * by + threadIdx.y] = out;
  }} else if (mode == 1) {{
    float out = -1.0f;
    last = gridReduce<true, false, false, false, false, false>(out, v, {add}, 0.0f, WORK.data,
                                                               FLAGS.data, fsmem);
    if (last) OUT[(blockIdx.y * by + threadIdx.y) * bx + threadIdx.x] = out;
  }} else {{
    float avg = 0.0f, m2 = 0.0f;
    nvfuser_index_t n = 0;
    last = gridWelford<true, false, false, true, false, false>(
        avg, m2, n, v, 0.0f, (nvfuser_index_t)1, WORK.data, WORK2.data, WORK_N.data, FLAGS.data,
        fsmem, fsmem + nt, ismem);
    if (last && threadIdx.x == 0) {{
      OUT[blockIdx.y * by + threadIdx.y] = avg;
      OUT_M2[blockIdx.y * by + threadIdx.y] = m2;
      OUT_N[blockIdx.y * by + threadIdx.y] = n;
    }}
  }}
  if (last && threadIdx.x == 0 && threadIdx.y == 0 && threadIdx.z == 0) atomicAdd(
      reinterpret_cast<unsigned long long*>(LAST.data), 1ull);
}}
"""
    return body, specs


def _nvfp4_kernel() -> tuple[str, list]:
    specs = [TensorArg("X", "float", 2, 2), ScalarArg("gscale", "float"), ScalarArg("has_g", "bool"),
             TensorArg("Q", "uint8_t", 2, 2), TensorArg("S", "__e4m3", 2, 2),
             TensorArg("SW", "int64_t", 1, 1), ScalarArg("sw_rows", "int64_t"),
             ScalarArg("sw_cols", "int64_t"), TensorArg("IN_OFF", "int", 1, 1),
             TensorArg("OUT_OFF", "int", 1, 1), ScalarArg("lm", "int64_t"), ScalarArg("lk", "int64_t"),
             TensorArg("LO", "int64_t", 1, 1)]
    params = ", ".join(f"{s.decl} {s.name}" for s in specs)
    body = f"""extern "C" __global__ void nvfp4({params}) {{
  const nvfuser_index_t rows = X.logical_size[0], k = X.logical_size[1];
  for (nvfuser_index_t b = threadIdx.x; b < rows * (k / 16); b += blockDim.x) {{
    const nvfuser_index_t r = b / (k / 16), c = b % (k / 16);
    Array<float, 16, 4> x;
    loadGlobalToLocal<float, 16>(&x[0], &X[r * k + c * 16]);
    Array<uint8_t, 8, 8> q;
    __e4m3 s;
    nvfp4QuantizeBlock(&x[0], &q[0], s, gscale, has_g);
    loadLocalToGlobal<uint8_t, 8>(&Q[r * (k / 2) + c * 8], &q[0]);
    S[r * (k / 16) + c] = s;
  }}
  for (nvfuser_index_t i = threadIdx.x; i < sw_rows * sw_cols; i += blockDim.x) {{
    SW[i] = nvfp4SwizzledScaleOffset(i / sw_cols, i % sw_cols, sw_cols);
  }}
  for (nvfuser_index_t i = threadIdx.x; i < lm * lk; i += blockDim.x) {{
    LO[i] = preprocessGroupedMatmulInputSfOffset(i / lk, i % lk, lk, (int)IN_OFF.logical_size[0],
                                                 IN_OFF.data, OUT_OFF.data);
  }}
}}
"""
    return body, specs


@pytest.fixture(scope="module")
def kernels():
    parts = {"conversions": _conversion_kernel(), "block_reduce": _block_kernel(),
             "welford_equal": _welford_equal_kernel(),
             "grid_reduce": _grid_kernel(), "nvfp4": _nvfp4_kernel()}
    built = compile_all([(body, name, specs) for name, (body, specs) in parts.items()])
    return dict(zip(parts, built))


# ---- conversions ---------------------------------------------------------------------------

def _f32(bits: torch.Tensor) -> torch.Tensor:
    return bits.to(torch.int32).view(torch.float32)


def _float_sweep() -> torch.Tensor:
    """Every half and bf16 value, the midpoints between neighbours of every target format
    and one float ulp either side (the rounding boundaries), specials, and random bits."""
    g = torch.Generator().manual_seed(0)
    halves = torch.arange(-(2**15), 2**15, dtype=torch.int32).to(torch.int16).view(torch.float16).float()
    bf16s = torch.arange(-(2**15), 2**15, dtype=torch.int32).to(torch.int16).view(torch.bfloat16).float()
    e4m3 = torch.arange(256, dtype=torch.int32).to(torch.uint8).view(torch.float8_e4m3fn).float()
    e5m2 = torch.arange(256, dtype=torch.int32).to(torch.uint8).view(torch.float8_e5m2).float()
    fp4 = torch.tensor(nvfp4.E2M1_VALUES + (8.0,))
    mids = []
    for vals in (halves, bf16s, e4m3, e5m2, fp4, -fp4):
        v = torch.unique(vals[torch.isfinite(vals)]).double()
        m = ((v[1:] + v[:-1]) / 2).float()
        mids += [m, torch.nextafter(m, torch.full_like(m, math.inf)),
                 torch.nextafter(m, torch.full_like(m, -math.inf))]
    pow2 = torch.tensor([2.0**e for e in range(-149, 128)])
    specials = torch.tensor([math.nan, -math.nan, math.inf, -math.inf, 0.0, -0.0, 448.0, 464.0, 480.0,
                             -464.0, 57344.0, 61440.0, 65504.0, 65520.0, 3.4028235e38, 1e-45])
    rand = _f32(torch.randint(-(2**31), 2**31, (1 << 18,), generator=g, dtype=torch.int64))
    return torch.cat([halves, bf16s, *mids, pow2, -pow2, pow2 * 1.5, specials, rand])


def _torch_cast(x: torch.Tensor, dst: D) -> torch.Tensor:
    if dst == D.Float4_e2m1fn:
        # the reference's rule (float_to_fp4) before packing: one code per element, as the
        # kernel's registers hold them
        return nvfp4.fp4_codes(nvfp4._as_float(x))
    return cast_tensor(x, dst)


def test_conversions_match_torch_bit_for_bit(kernels):
    f = _float_sweep()
    n = f.numel()
    g = torch.Generator().manual_seed(1)
    d = torch.cat([f.double(), torch.randn(n // 2, generator=g, dtype=torch.float64) * 1e3,
                   (f.double() * (1 + 2.0**-30))])[:n]  # doubles just off float values: double rounding
    d = d.clone()
    d[: 8] = torch.tensor([1 + 2.0**-11 + 2.0**-40, 0.25 + 2.0**-40, 448.00001, 1e300, -1e300,
                           math.nan, 2.0**-150, -(2.0**-149) * 0.75], dtype=torch.float64)
    i64 = torch.randint(-(2**63), 2**63 - 1, (n,), generator=g, dtype=torch.int64)
    i64[: n // 2] //= 2**38  # many in float's exact range, the rest round
    i64[:4] = torch.tensor([2**24 + 1, 65520, -(2**63), 2**63 - 1])
    i32 = torch.randint(-(2**31), 2**31 - 1, (n,), generator=g, dtype=torch.int32)
    sources = {D.Float: f, D.Double: d, D.Int: i64, D.Int32: i32}
    storage = {
        D.Half: torch.arange(-(2**15), 2**15, dtype=torch.int32).to(torch.int16).view(torch.float16),
        D.BFloat16: torch.arange(-(2**15), 2**15, dtype=torch.int32).to(torch.int16).view(torch.bfloat16),
        D.Float8_e4m3fn: torch.arange(256, dtype=torch.int32).to(torch.uint8).view(torch.float8_e4m3fn),
        D.Float8_e5m2: torch.arange(256, dtype=torch.int32).to(torch.uint8).view(torch.float8_e5m2),
        D.Float8_e8m0fnu: torch.arange(256, dtype=torch.int32).to(torch.uint8).view(torch.float8_e8m0fnu),
        D.Float4_e2m1fn: torch.arange(16, dtype=torch.uint8),
    }
    outs = []
    for _s, dst in _CONVERSIONS:
        like = torch.empty(n, dtype=torch.uint8) if dst == D.Float4_e2m1fn else None
        outs.append(like if like is not None else torch.empty(n, dtype=ot_torch(dst)))
    ups = [torch.empty(storage[s].numel()) for s in _STORAGE]
    args = [sources[s] for s in _SOURCES] + [storage[s] for s in _STORAGE] + outs + ups
    kernels["conversions"].launch(args, LaunchConfig((4, 1, 1), (64, 1, 1)))
    failures = []
    for (s, dst), got in zip(_CONVERSIONS, outs):
        x = sources[s]
        want = _torch_cast(x, dst)
        if dst.is_integer and s.is_float:
            # float -> int out of range (and NaN) is undefined in C and in torch
            lim = 2.0**31 if dst == D.Int32 else 2.0**63
            keep = x.double().abs() < lim
            got, want, x = got[keep], want[keep], x[keep]
        bad = mismatches(got, want)
        if bad.any():
            failures.append(f"{s.cuda_name} -> {dst.cuda_name}: " + describe(bad, [x], got, want))
    for s, got in zip(_STORAGE, ups):
        src = storage[s]
        want = nvfp4.fp4_code_values(src) if s == D.Float4_e2m1fn else src.float()
        bad = mismatches(got, want)
        if bad.any():
            failures.append(f"{s.cuda_name} -> float: " + describe(bad, [bits_of(src)], got, want))
    assert not failures, "\n".join(failures)


def ot_torch(dt: D) -> torch.dtype:
    from engine.dtypes import to_torch

    return to_torch(dt)


def bits_of(t: torch.Tensor) -> torch.Tensor:
    return t.view(torch.uint8).to(torch.int32) if t.element_size() == 1 else t.view(torch.int16)


# ---- block reductions ------------------------------------------------------------------------

@pytest.mark.parametrize("block", [(96, 3, 1), (7, 5, 3), (32, 4, 2), (32, 1, 1), (64, 2, 2), (100, 1, 1), (40, 1, 1),
                                   (33, 1, 1), (160, 2, 1), (484, 1, 1), (899, 1, 1)])
def test_block_all_reduce_and_welford(kernels, block):
    bx, by, bz = block
    nt = bx * by * bz
    g = torch.Generator().manual_seed(nt)
    x = torch.randn(nt, generator=g)
    x[nt // 3] = math.nan if nt > 64 else x[nt // 3]  # NaN must win max (and poison sums)
    xi = torch.randint(-(2**40), 2**40, (nt,), generator=g, dtype=torch.int64)
    t = torch.arange(nt)
    present = t % 5 != 3
    for mode, flags in enumerate(_FLAGS):
        outs = [torch.empty(nt), torch.empty(nt), torch.empty(nt, dtype=torch.int64), torch.empty(nt),
                torch.empty(nt), torch.empty(nt, dtype=torch.int64)]
        kernels["block_reduce"].launch([x, xi, mode, *outs],
                                       LaunchConfig((1, 1, 1), block, shared_mem_bytes=16 * nt))
        dims = [2 - k for k, f in enumerate(flags) if f]  # tensor view [z, y, x]

        def full(r: torch.Tensor, dims=dims) -> torch.Tensor:
            return r.expand(bz, by, bx).reshape(-1)

        v = x.view(bz, by, bx).double()
        want_sum = full(v.sum(dim=dims, keepdim=True)).float()
        want_max = full(torch.amax(x.view(bz, by, bx), dim=dims, keepdim=True))
        want_isum = full(xi.view(bz, by, bx).sum(dim=dims, keepdim=True))
        p = present.view(bz, by, bx)
        cnt = p.sum(dim=dims, keepdim=True)
        mean = (torch.where(p, v, 0.0)).sum(dim=dims, keepdim=True) / cnt.clamp(min=1)
        m2 = torch.where(p, (v - mean) ** 2, 0.0).sum(dim=dims, keepdim=True)
        ctx = f"block {block}, reduce {flags}"
        torch.testing.assert_close(outs[0], want_sum, rtol=1e-5, atol=1e-5, equal_nan=True, msg=ctx)
        assert not mismatches(outs[1], want_max).any(), ctx
        assert torch.equal(outs[2], want_isum), ctx
        torch.testing.assert_close(outs[3], full(mean).float(), rtol=1e-5, atol=1e-5, equal_nan=True,
                                   msg=ctx)
        # a lone NaN element has m2 = 0 (nothing to combine), where torch's formula says NaN
        finite = torch.isfinite(full(m2))
        torch.testing.assert_close(outs[4][finite], full(m2).float()[finite], rtol=1e-4, atol=1e-4,
                                   msg=ctx)
        assert torch.equal(outs[5], full(cnt)), ctx
        # all-reduce: every thread of a segment holds the very same bits
        for o in (outs[0], outs[3], outs[4]):
            seg = o.view(bz, by, bx)
            first = seg
            for d_ in dims:
                first = first.narrow(d_, 0, 1)
            assert not mismatches(seg, first.expand_as(seg).contiguous()).any(), ctx


def _tree_sum(v: torch.Tensor) -> torch.Tensor:
    """The float sum of a row of threads in the block reduction's documented order: each warp
    halves its own lanes (lane i < m takes lane i + m where that lane exists; on a whole warp,
    halving its 32 lanes), then the warps' partials fold the part above the largest power of
    two and halve."""
    partials = []
    for w in v.split(32):
        lanes = list(w)
        for m in (16, 8, 4, 2, 1):
            for i in range(m):
                if i + m < len(lanes):
                    lanes[i] = lanes[i] + lanes[i + m]
        partials.append(lanes[0])
    p = torch.stack(partials)
    np2 = 1 << (p.numel().bit_length() - 1)
    k = p.numel() - np2
    p = torch.cat([p[:k] + p[np2:], p[k:np2]])
    while p.numel() > 1:
        p = p[: p.numel() // 2] + p[p.numel() // 2:]
    return p


@pytest.mark.parametrize("warps", [2, 3, 5, 6, 7, 8, 16, 32])
def test_block_sum_keeps_the_tree_order_bit_for_bit(kernels, warps):
    """Values spread over many magnitudes make float addition order-sensitive: the block's sum
    equals the tree order's to the bit, whatever number of warps it combines."""
    nt = 32 * warps
    g = torch.Generator().manual_seed(40 + warps)  # a seed where every case is order-sensitive
    x = torch.randn(nt, generator=g) * torch.pow(10.0, torch.randint(-6, 7, (nt,), generator=g).float())
    x[::7] = 3e7 * torch.sign(torch.randn(x[::7].shape, generator=g))  # large terms that absorb small ones
    xi = torch.zeros(nt, dtype=torch.int64)
    outs = [torch.empty(nt), torch.empty(nt), torch.empty(nt, dtype=torch.int64), torch.empty(nt),
            torch.empty(nt), torch.empty(nt, dtype=torch.int64)]
    kernels["block_reduce"].launch([x, xi, 0, *outs], LaunchConfig((1, 1, 1), (nt, 1, 1), shared_mem_bytes=16 * nt))
    want = _tree_sum(x)
    assert torch.equal(outs[0], want.expand(nt)), (outs[0][0].item(), want.item())
    seq = torch.zeros(1)
    for v in x:  # left to right: another order, another float result, so the test can fail
        seq = seq + v
    assert not torch.equal(want, seq)


@pytest.mark.parametrize("threads", [17, 33, 100, 473, 899, 1006])
def test_block_sum_of_a_row_of_partial_warps_keeps_its_order_bit_for_bit(kernels, threads):
    """A one-row block whose threads are not whole warps (an odd-width row's 899 threads)
    reduces each warp with shuffles over the lanes it has: the sum equals that order's to the
    bit, and every thread holds it."""
    g = torch.Generator().manual_seed(threads)
    x = torch.randn(threads, generator=g) * torch.pow(10.0, torch.randint(-6, 7, (threads,), generator=g).float())
    x[::7] = 3e7 * torch.sign(torch.randn(x[::7].shape, generator=g))
    xi = torch.zeros(threads, dtype=torch.int64)
    outs = [torch.empty(threads), torch.empty(threads), torch.empty(threads, dtype=torch.int64),
            torch.empty(threads), torch.empty(threads), torch.empty(threads, dtype=torch.int64)]
    kernels["block_reduce"].launch([x, xi, 0, *outs],
                                   LaunchConfig((1, 1, 1), (threads, 1, 1), shared_mem_bytes=16 * threads))
    want = _tree_sum(x)
    assert torch.equal(outs[0], want.expand(threads)), (outs[0][0].item(), want.item())


@pytest.mark.parametrize("threads", [32, 64, 100, 256, 512, 683])
def test_fixed_count_block_welford_agrees_with_blockwelford(kernels, threads):
    g = torch.Generator().manual_seed(threads)
    x = torch.randn(2 * threads, generator=g) * 100 + 7
    out = torch.empty(6)
    kernels["welford_equal"].launch([x, out], LaunchConfig((1, 1, 1), (threads, 1, 1), shared_mem_bytes=16 * threads))
    assert out[2].item() == out[5].item() == 2 * threads
    torch.testing.assert_close(out[3], out[0], rtol=1e-6, atol=1e-4)
    torch.testing.assert_close(out[4], out[1], rtol=1e-5, atol=1e-2)
    torch.testing.assert_close(out[3].double(), x.double().mean(), rtol=1e-5, atol=1e-4)
    torch.testing.assert_close(out[4].double(), x.double().var(correction=0) * 2 * threads, rtol=1e-4, atol=1e-2)


# ---- grid reductions -------------------------------------------------------------------------

@pytest.mark.parametrize("block", [(32, 3, 1), (48, 3, 1)])
def test_grid_reduce_and_welford_over_seven_blocks(kernels, block):
    grid = (7, 2, 1)
    bx, by, _ = block
    gx, gy, _ = grid
    g = torch.Generator().manual_seed(bx)
    x = torch.randn(gy, gx, by, bx, generator=g)
    work_n, flags_n = ot.grid_reduce_buffer_sizes(grid, block, (True, False, False), (False, False, False))
    flags = torch.zeros(flags_n, dtype=torch.int64)
    smem = 16 * bx * by
    for mode in (0, 1, 2):
        for _launch in range(2):  # the second launch finds the flags reset by the first
            out = torch.full((gy * by * bx,), -7.0)
            out_m2 = torch.full((gy * by,), -7.0)
            out_n = torch.full((gy * by,), -7, dtype=torch.int64)
            work = torch.full((work_n,), math.nan)
            work2 = torch.full((work_n,), math.nan)
            work_cnt = torch.full((work_n,), -1, dtype=torch.int64)
            last = torch.zeros(1, dtype=torch.int64)
            kernels["grid_reduce"].launch(
                [x.reshape(-1), mode, out, out_m2, out_n, work, work2, work_cnt, flags, last],
                LaunchConfig(grid, block, shared_mem_bytes=smem))
            assert torch.count_nonzero(flags) == 0, "the last block resets its arrival counter"
            assert int(last) == gy, "one last block per block segment"
            xd = x.double()
            if mode == 0:
                torch.testing.assert_close(out[: gy * by], xd.sum(dim=(1, 3)).reshape(-1).float(),
                                           rtol=1e-5, atol=1e-5)
            elif mode == 1:
                torch.testing.assert_close(out, xd.sum(dim=1).reshape(-1).float(), rtol=1e-5, atol=1e-5)
            else:
                mean = xd.mean(dim=(1, 3))
                m2 = ((xd - mean[:, None, :, None]) ** 2).sum(dim=(1, 3))
                torch.testing.assert_close(out[: gy * by], mean.reshape(-1).float(), rtol=1e-5, atol=1e-6)
                torch.testing.assert_close(out_m2, m2.reshape(-1).float(), rtol=1e-5, atol=1e-4)
                assert torch.equal(out_n, torch.full((gy * by,), gx * bx, dtype=torch.int64))


# ---- nvfp4 -----------------------------------------------------------------------------------

def test_nvfp4_quantization_and_layouts_byte_for_byte(kernels):
    g = torch.Generator().manual_seed(4)
    rows, k = 24, 64
    x = torch.randn(rows, k, generator=g) * torch.logspace(-6, 4, rows).unsqueeze(1)
    x[0, :16] = 0.0
    x[1, 3] = math.nan
    x[2, 5] = math.inf
    x[3, :16] = torch.linspace(-6, 6, 16) * 0.5  # ties of the e2m1 grid after scaling
    x[4, :16] = 1e-9  # scale clamps up to 2^-6
    x[5, :16] = 1e6  # scale clamps down to 448
    x[6, 16:32] = -0.0
    # layout op: 3 groups (one empty) over m rows, offsets as nvFuser's (rounded up to 128)
    lm, lk = 300, 7
    in_off = torch.tensor([0, 130, 130, 200], dtype=torch.int32)
    sizes = [130, 0, 70, 100]
    out_off = torch.tensor([0, 256, 256, 384], dtype=torch.int32)
    assert [int(v) for v in out_off] == [sum(-(-s // 128) * 128 for s in sizes[:i]) for i in range(4)]
    sw_rows, sw_cols = 256, 6
    for gscale in (None, 0.37):
        q = torch.empty(rows, k // 2, dtype=torch.uint8)
        s = torch.empty(rows, k // 16, dtype=torch.float8_e4m3fn)
        sw = torch.empty(sw_rows * sw_cols, dtype=torch.int64)
        lo = torch.empty(lm * lk, dtype=torch.int64)
        kernels["nvfp4"].launch(
            [x, 1.0 if gscale is None else gscale, gscale is not None, q, s, sw, sw_rows, sw_cols, in_off,
             out_off, lm, lk, lo], LaunchConfig((1, 1, 1), (64, 1, 1)))
        codes, scales = nvfp4.block_quantize(x, gscale)
        assert torch.equal(s.view(torch.uint8), scales.view(torch.uint8)), f"scales, global {gscale}"
        assert torch.equal(q, nvfp4.pack_fp4(codes).view(torch.uint8)), f"values, global {gscale}"
    r, c = torch.meshgrid(torch.arange(sw_rows), torch.arange(sw_cols), indexing="ij")
    assert torch.equal(sw, nvfp4.swizzle_offset(r, c, sw_cols).reshape(-1))
    want = torch.empty(lm, lk, dtype=torch.int64)
    kp = nvfp4.round_up(lk, 4)
    for (a, b), orow in zip(nvfp4.group_bounds(in_off, lm), out_off.tolist()):
        if b > a:
            gr, gc = torch.meshgrid(torch.arange(b - a), torch.arange(lk), indexing="ij")
            want[a:b] = nvfp4.layout_op_offset(gr, gc, orow, kp)
    assert torch.equal(lo, want.reshape(-1))


# ---- nvcc ------------------------------------------------------------------------------------

_EVERYTHING = """
extern "C" __global__ void everything(Tensor<float, 2, 2> T0, Tensor<__half, 1, 1> T1,
                                      Tensor<__e2m1, 1, 1> T2, Tensor<double, 0, 0> T3,
                                      float* work, nvfuser_index_t* flags) {
  FS_DYNAMIC_SHARED(smem);
  float* fs = reinterpret_cast<float*>(smem);
  nvfuser_index_t* is = reinterpret_cast<nvfuser_index_t*>(smem);
  float v = T0[threadIdx.x];
  float r = blockAllReduce<true, false, false>(v, [](float a, float b) { return a + b; }, fs);
  float o = 0.0f;
  if (gridReduce<true, false, false, true, false, false>(
          o, r, [](float a, float b) { return fsMax(a, b); }, -INFINITY, work, flags, fs)) {
    T0[0] = o;
  }
  float a = v, m = 0.0f;
  nvfuser_index_t n = 1;
  blockWelford<true, true, false>(a, m, n, fs, fs, is);
  gridWelford<true, false, false, true, false, false>(a, m, n, a, m, n, work, work, flags, flags,
                                                      fs, fs, is);
  T1[0] = __float2half(fsDigamma(v) + fsErfinv(v) + fsLerp(v, r, o) + fsGelu(v) + fsSilu(v) +
                       fsSigmoid(v) + fsRsqrt(v) + fsFrac(v) + fsSign(v) + fsRelu(v));
  __e2m1 q[8];
  loadGlobalToLocal<__e2m1, 8>(q, T2.data);
  loadLocalToGlobal<__e2m1, 8>(T2.data, q);
  uint8_t p[8];
  __e4m3 s;
  nvfp4QuantizeBlock(&T0[0], p, s, 1.0f, true);
  Array<float, 4, 4> x4;
  loadGlobalToLocal<float, 4>(&x4[0], &T0[0]);
  Array<float, 8, 4> x8;
  loadGlobalToLocal<float, 8>(&x8[0], &T0[0]);
  Array<float, 4, 4> e4;  // 16, 8 and 4 bytes take the L2 hint, other shapes load plainly
  Array<float, 2, 2> e2;
  Array<__half, 2, 2> h2;
  float e3[3];
  loadGlobalEvictLast<float, 4>(&e4[0], &T0[0]);
  loadGlobalEvictLast<float, 2>(&e2[0], &T0[4]);
  loadGlobalEvictLast<__half, 2>(&h2[0], &T1[0]);
  loadGlobalEvictLast<float, 3>(e3, &T0[8]);
  T0[16] = e4[3] + e2[1] + __half2float(h2[1]) + e3[2];
  T3[0] = fsPow(2.0, 3.0) + fsRemainder(1.0, 2.0) + (double)fsPow((int64_t)2, (int64_t)3) +
          fsShiftLeft(3, 4) + fsShiftRight((int64_t)-8, (int64_t)1) + fsDiv(7, -2) + fsFmod(7, 3) +
          __bfloat2float(__float2bfloat(v)) + __e5m22float(__float2e5m2(v)) +
          __e8m02float(__float2e8m0(v)) + __e4m32float(__double2e4m3(T3[1])) +
          __e2m12float(__double2e2m1(T3[1])) + (double)nvfp4SwizzledScaleOffset(1, 2, 3) +
          (double)preprocessGroupedMatmulInputSfOffset(1, 2, 3, 1, (const int*)flags,
                                                       (const int*)flags) +
          (double)fsGridReduceWorkSize<true, false, false, true, false, false>(7, 1, 1, 32, 3, 1) +
          fsClamp(v, 0.0f, 1.0f) + (fsIsnan(v) ? 1.0 : 0.0) + ceilDiv(7, 2);
}
"""


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_headers_compile_with_nvcc_ptx(arch):
    nvcc = pytest.importorskip("engine.runtime.nvcc")
    if not nvcc.nvcc_available():
        pytest.skip("nvcc is not available")
    ptx = nvcc.ptx_check(kernel_source(_EVERYTHING), arch=arch)
    assert ".entry everything" in ptx
    if arch == "sm_90":
        assert "cvt.rn.bf16.f32" in ptx and "cvt.rn.f16.f32" in ptx  # the PTX conversions are used
    for width in ("v4.u32", "v2.u32", "u32"):
        assert f"ld.global.L2::cache_hint.{width}" in ptx
    assert "createpolicy.fractional.L2::evict_last.b64" in ptx


def test_prelude_is_the_headers_in_order():
    text = runtime_prelude()
    positions = [text.index(header_text(h)) for h in HEADERS]
    assert positions == sorted(positions)
    assert "#include" not in text.split("#if defined(FS_EMULATE)")[0]  # nothing before the guard

