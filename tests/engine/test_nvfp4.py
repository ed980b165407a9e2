"""nvfp4 seed ops: block quantization, the layout op, the grouped matmul, fp4/fp8 casts.

Every expected value here comes from formulas written in this file (slow per-element
Python on small shapes, fp32 rounding through `struct`), never from engine.nvfp4.
"""

from __future__ import annotations

import math
import struct

import pytest
import torch

from engine import DataType, FusionDefinition, FusionDefinitionError
from engine.ir.quant_exprs import CutlassNvfp4GroupedMmaOp

E2M1 = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0]


# ---- an independent model of the formats -----------------------------------------------

def f32(v: float) -> float:
    """Round a Python float to fp32 (exact for one +-*/ of fp32 operands done in double)."""
    return struct.unpack("<f", struct.pack("<f", v))[0]


def minifloat_table(ebits: int, mbits: int, bias: int, finite) -> list[tuple[float, int]]:
    """(value, code) of every finite non-negative code of a sign/exponent/mantissa format."""
    out = []
    for code in range(1 << (ebits + mbits)):
        e, m = code >> mbits, code & ((1 << mbits) - 1)
        if not finite(e, m):
            continue
        v = (m / (1 << mbits)) * 2.0 ** (1 - bias) if e == 0 else (1 + m / (1 << mbits)) * 2.0 ** (e - bias)
        out.append((v, code))
    return out


E4M3 = minifloat_table(4, 3, 7, lambda e, m: not (e == 15 and m == 7))
E5M2 = minifloat_table(5, 2, 15, lambda e, m: e != 31)


def encode(v: float, table: list[tuple[float, int]], sign_bit: int, nan_code: int) -> int:
    """Round to nearest, ties to the even code, saturating to the largest finite value."""
    if math.isnan(v):
        return nan_code
    sign = sign_bit if math.copysign(1.0, v) < 0 else 0
    a = min(abs(v), table[-1][0])
    best = min(table, key=lambda vc: (abs(vc[0] - a), vc[1] & 1))
    return best[1] | sign


def e4m3_code(v: float) -> int:
    return encode(v, E4M3, 0x80, 0x7F)


def e4m3_value(code: int) -> float:
    table = dict((c, v) for v, c in E4M3)
    v = table[code & 0x7F]
    return -v if code & 0x80 else v


def e2m1_code(v: float) -> int:
    if math.isnan(v):
        return 7
    return encode(v, [(x, c) for c, x in enumerate(E2M1)], 0x8, 7)


def e2m1_value(code: int) -> float:
    v = E2M1[code & 7]
    return -v if code & 8 else v


def nibbles(t: torch.Tensor) -> list[list[int]]:
    """fp4 codes of a packed 2-D tensor: low nibble is the even element."""
    rows = t.contiguous().view(torch.uint8).tolist()
    return [[n for byte in row for n in (byte & 0xF, byte >> 4)] for row in rows]


def pack_rows(codes: list[list[int]]) -> torch.Tensor:
    return torch.tensor(
        [[row[i] | (row[i + 1] << 4) for i in range(0, len(row), 2)] for row in codes], dtype=torch.uint8
    )


def quantize_model(x: torch.Tensor, gs: float | None) -> tuple[list[list[int]], list[list[int]]]:
    """Per element, the issue's formulas: (fp4 codes, e4m3 scale codes) of a 2-D input."""
    rows = x.to(torch.float32).tolist()
    codes, scales = [], []
    for row in rows:
        qrow, srow = [], []
        for b in range(0, len(row), 16):
            block = row[b : b + 16]
            amax = max(abs(v) for v in block)
            s = f32(amax / 6.0)
            if gs is not None:
                s = f32(s * gs)
            s = min(max(s, 2.0**-6), 448.0)
            sc = e4m3_code(s)
            srow.append(sc)
            denom = e4m3_value(sc) if gs is None else f32(e4m3_value(sc) / gs)
            for v in block:
                q = min(max(f32(v / denom), -6.0), 6.0)
                qrow.append(e2m1_code(q))
        codes.append(qrow)
        scales.append(srow)
    return codes, scales


def swizzle_pos(r: int, c: int, cols: int) -> int:
    return (r // 128) * (cols // 4) * 512 + (c // 4) * 512 + (r % 32) * 16 + ((r % 128) // 32) * 4 + c % 4


def sample_input(rows: int, k: int, dtype: torch.dtype, seed: int = 0) -> torch.Tensor:
    """Random blocks of very different magnitudes, plus a block of exact e2m1 ties."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(rows, k, generator=g)
    mags = torch.tensor([1e-6, 1e-3, 0.1, 1.0, 30.0, 5000.0])
    pick = torch.randint(0, len(mags), (rows, k // 16), generator=g)
    x = x * mags[pick].repeat_interleave(16, dim=1)
    x[0, :16] = 0.0  # amax 0: the scale clamps up to 2^-6
    # amax 6 gives scale 1 exactly, so these values are quantized as they are: every tie.
    x[1, :16] = torch.tensor([6.0, 0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0, -0.25, -5.0, 0.1, -0.0, 0.0, 4.0, 3.0, -6.0])
    return x.to(dtype)


def quantize_fusion(dtype: DataType, with_gs: bool, swizzle: bool) -> FusionDefinition:
    with FusionDefinition() as fd:
        x = fd.define_tensor([-1, -1], dtype=dtype)
        gs = fd.define_tensor([], dtype=DataType.Float) if with_gs else None
        q, s = fd.ops.nv_block_quantize(x, gs, swizzle, 16)
        fd.add_output(q)
        fd.add_output(s)
    return fd


# ---- block quantization -------------------------------------------------------------------

@pytest.mark.parametrize("torch_dtype,dtype", [
    (torch.float32, DataType.Float), (torch.bfloat16, DataType.BFloat16), (torch.float16, DataType.Half),
])
@pytest.mark.parametrize("gs", [None, 0.37])
def test_block_quantize_bytes_match_formulas(torch_dtype, dtype, gs):
    x = sample_input(6, 64, torch_dtype)
    fd = quantize_fusion(dtype, gs is not None, False)
    args = [x] + ([torch.tensor(gs, dtype=torch.float32)] if gs is not None else [])
    q, s = fd.execute(args)
    assert q.dtype == torch.float4_e2m1fn_x2 and q.shape == (6, 32)
    assert s.dtype == torch.float8_e4m3fn and s.shape == (6, 4)
    want_q, want_s = quantize_model(x, gs)
    assert s.view(torch.uint8).tolist() == want_s
    assert nibbles(q) == want_q


def test_block_quantize_ties_go_to_even():
    x = sample_input(2, 16, torch.float32)
    q, s = quantize_fusion(DataType.Float, False, False).execute([x])
    assert s.view(torch.uint8).tolist() == [[0x08], [0x38]]  # 2^-6 and 1.0 in e4m3
    # 6, .25->0, .75->1, 1.25->1, 1.75->2, 2.5->2, 3.5->4, 5->4, -.25->-0, -5->-4, .1->0, -0, 0, 4, 3, -6
    assert nibbles(q)[1] == [7, 0, 2, 2, 4, 4, 6, 6, 8, 14, 0, 8, 0, 6, 5, 15]


def f32_step(v: float, k: int) -> float:
    """The fp32 value k representable steps away from positive fp32 v."""
    bits = struct.unpack("<I", struct.pack("<f", v))[0]
    return struct.unpack("<f", struct.pack("<I", bits + k))[0]


def test_global_scale_divides_the_e4m3_scale_first():
    # x / (float(s) / gs) and (x * gs) / float(s) round differently next to e2m1 thresholds;
    # the issue asks for the first. Find such x for one block and check we follow it.
    gs = f32(0.37)
    amax = 10.0
    s = min(max(f32(f32(amax / 6.0) * gs), 2.0**-6), 448.0)
    sf = e4m3_value(e4m3_code(s))
    denom = f32(sf / gs)
    block = [amax]
    for t in (0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0):
        x0 = f32(t * denom)
        for k in sorted(range(-64, 65), key=abs):
            x = f32_step(x0, k)
            if e2m1_code(f32(x / denom)) != e2m1_code(f32(f32(x * gs) / sf)) and len(block) < 16:
                block.append(x)
                break
    assert len(block) > 1, "no value tells the two orders apart"
    block += [0.0] * (16 - len(block))
    x = torch.tensor([block], dtype=torch.float32)
    q, s_out = quantize_fusion(DataType.Float, True, False).execute([x, torch.tensor(gs)])
    want_q, want_s = quantize_model(x, gs)
    assert s_out.view(torch.uint8).tolist() == want_s
    assert nibbles(q) == want_q


@pytest.mark.parametrize("lead", [[256], [2, 128]])
def test_swizzled_scales_placement(lead):
    m, k = 256, 16 * 8
    x = sample_input(m, k, torch.float32, seed=3)
    q_plain, s_plain = quantize_fusion(DataType.Float, False, False).execute([x])
    with FusionDefinition() as fd:
        t = fd.define_tensor([-1] * (len(lead) + 1), dtype=DataType.Float)
        for out in fd.ops.nv_block_quantize(t, swizzle_scales=True):
            fd.add_output(out)
    q_sw, s_sw = fd.execute([x.reshape(*lead, k)])
    assert torch.equal(q_sw.view(torch.uint8).reshape(m, -1), q_plain.view(torch.uint8))
    assert s_sw.shape == (*lead, k // 16)
    flat = s_sw.contiguous().view(torch.uint8).flatten().tolist()
    plain = s_plain.view(torch.uint8).tolist()
    cols = k // 16
    for r in range(m):
        for c in range(cols):
            assert flat[swizzle_pos(r, c, cols)] == plain[r][c], (r, c)


def test_swizzled_scales_allocation_domain():
    with FusionDefinition() as fd:
        x = fd.define_tensor([256, 128], dtype=DataType.Float)
        _, s = fd.ops.nv_block_quantize(x, swizzle_scales=True)
    alloc = [i.extent.value for i in s.domain.allocation]
    assert alloc == [2, 2, 32, 4, 4]  # [m/128, k/4, 32, 4, 4] with k = 8 scale columns


# ---- the layout op -------------------------------------------------------------------------

def layout_fusion() -> FusionDefinition:
    with FusionDefinition() as fd:
        s = fd.define_tensor([-1, -1], dtype=DataType.Float8_e4m3fn)
        ins = fd.define_tensor([-1], dtype=DataType.Int32)
        outs = fd.define_tensor([-1], dtype=DataType.Int32)
        fd.add_output(fd.ops.preprocess_grouped_matmul_input_sf(s, ins, outs))
    return fd


@pytest.mark.parametrize("sizes,k", [([100, 50, 150], 6), ([128, 0, 1, 200], 8), ([5], 3)])
def test_layout_op_placement_and_padding(sizes, k):
    m, g = sum(sizes), len(sizes)
    starts = [sum(sizes[:i]) for i in range(g)]
    out_starts = [sum(-(-n // 128) * 128 for n in sizes[:i]) for i in range(g)]
    gen = torch.Generator().manual_seed(7)
    scales = torch.randint(1, 0x7F, (m, k), generator=gen, dtype=torch.uint8)  # nonzero, no NaN
    (buf,) = layout_fusion().execute([
        scales.view(torch.float8_e4m3fn),
        torch.tensor(starts, dtype=torch.int32),
        torch.tensor(out_starts, dtype=torch.int32),
    ])
    kp = -(-k // 4) * 4
    assert buf.dtype == torch.float8_e4m3fn and buf.shape == (m + g * 127, kp)
    flat = buf.contiguous().view(torch.uint8).flatten().tolist()
    src = scales.tolist()
    written = set()
    for grp in range(g):
        for r in range(starts[grp], starts[grp] + sizes[grp]):
            lr = r - starts[grp]
            for c in range(k):
                pos = (out_starts[grp] * kp + (lr // 128) * 128 * kp + (c // 4) * 512 + (lr % 32) * 16
                       + ((lr % 128) // 32) * 4 + c % 4)
                assert flat[pos] == src[r][c], (grp, r, c)
                written.add(pos)
    assert len(written) == m * k
    assert all(v == 0 for i, v in enumerate(flat) if i not in written)  # padding never written


def test_layout_op_allocation_domain():
    with FusionDefinition() as fd:
        s = fd.define_tensor([300, 6], dtype=DataType.Float8_e4m3fn)
        ins = fd.define_tensor([3], dtype=DataType.Int32)
        outs = fd.define_tensor([3], dtype=DataType.Int32)
        out = fd.ops.preprocess_grouped_matmul_input_sf(s, ins, outs)
    assert [i.extent.value for i in out.domain.logical] == [300, 6]
    assert [i.extent.value for i in out.domain.allocation] == [300 + 3 * 127, 8]


# ---- the grouped matmul --------------------------------------------------------------------

def test_grouped_mm_matches_dequantized_reference():
    sizes = [100, 0, 70, 86]
    m, n, k, g = sum(sizes), 128, 64, len(sizes)
    kc = k // 16
    starts = [sum(sizes[:i]) for i in range(g)]
    sf_starts = [sum(-(-v // 128) * 128 for v in sizes[:i]) for i in range(g)]
    gen = torch.Generator().manual_seed(11)
    x = torch.randn(m, k, generator=gen)
    # mat2: random fp4 codes [G, N, K] and positive e4m3 scales [G, N, K/16], stored as CUTLASS wants.
    b_codes = torch.randint(0, 16, (g, n, k), generator=gen).tolist()
    b_scales = torch.randint(0x20, 0x48, (g, n, kc), generator=gen).tolist()
    mat2 = torch.stack([pack_rows(b_codes[i]) for i in range(g)]).view(torch.float4_e2m1fn_x2).transpose(1, 2)
    sw = [[0] * (n * kc) for _ in range(g)]
    for i in range(g):
        for r in range(n):
            for c in range(kc):
                sw[i][swizzle_pos(r, c, kc)] = b_scales[i][r][c]
    scale2 = torch.tensor(sw, dtype=torch.uint8).reshape(g, n, kc).view(torch.float8_e4m3fn)
    alpha = torch.rand(g, generator=gen) + 0.5

    with FusionDefinition() as fd:
        a = fd.define_tensor([-1, -1], dtype=DataType.Float)
        w = fd.define_tensor([-1, -1, -1], dtype=DataType.Float4_e2m1fn, stride_order=[2, 0, 1])
        s2 = fd.define_tensor([-1, -1, -1], dtype=DataType.Float8_e4m3fn)
        al = fd.define_tensor([-1], dtype=DataType.Float)
        ps = fd.define_tensor([-1, 3], dtype=DataType.Int32)
        off = fd.define_tensor([-1], dtype=DataType.Int32)
        sfo = fd.define_tensor([-1], dtype=DataType.Int32)
        q, s = fd.ops.nv_block_quantize(a)
        lay = fd.ops.preprocess_grouped_matmul_input_sf(s, off, sfo)
        out = fd.ops.cutlass_nvfp4_grouped_mm(q, w, lay, s2, al, ps, off, sfo, DataType.BFloat16)
        fd.add_output(out)
        fd.add_output(q)
        fd.add_output(s)
    problem = torch.tensor([[v, n, k] for v in sizes], dtype=torch.int32)
    got, q_t, s_t = fd.execute([
        x, mat2, scale2, alpha, problem,
        torch.tensor(starts, dtype=torch.int32), torch.tensor(sf_starts, dtype=torch.int32),
    ])
    assert got.dtype == torch.bfloat16 and got.shape == (m, n)

    a_codes, a_scales = nibbles(q_t), s_t.view(torch.uint8).tolist()
    a_deq = torch.tensor([[e2m1_value(a_codes[r][j]) * e4m3_value(a_scales[r][j // 16]) for j in range(k)]
                          for r in range(m)], dtype=torch.float64)
    want = torch.zeros(m, n, dtype=torch.float64)
    for i in range(g):
        b_deq = torch.tensor([[e2m1_value(b_codes[i][c][j]) * e4m3_value(b_scales[i][c][j // 16])
                               for c in range(n)] for j in range(k)], dtype=torch.float64)
        rows = slice(starts[i], starts[i] + sizes[i])
        want[rows] = a_deq[rows] @ b_deq * float(alpha[i])
    torch.testing.assert_close(got.double(), want, rtol=1e-2, atol=1e-2)
    assert got.abs().sum() > 0


# ---- casts ------------------------------------------------------------------------------------

def cast_fusion(src: DataType, dst: DataType, shape: list[int]) -> FusionDefinition:
    with FusionDefinition() as fd:
        t = fd.define_tensor(shape, dtype=src)
        fd.add_output(fd.ops.cast(t, dst))
    return fd


SPECIAL = [0.0, -0.0, 0.25, 0.75, 1.25, 2.5, 5.0, 7.0, -100.0, float("inf"), float("-inf"), float("nan"),
           448.0, 464.0, 480.0, 1e6, 2.0**-9, 2.0**-10, 3 * 2.0**-10, 0.0191, 13.0, 17.0, 57344.0, 61440.0]


def test_cast_to_fp4_is_satfinite_round_to_nearest_even():
    vals = SPECIAL + torch.randn(40, generator=torch.Generator().manual_seed(2)).mul(4).tolist()
    x = torch.tensor([vals], dtype=torch.float32)
    (out,) = cast_fusion(DataType.Float, DataType.Float4_e2m1fn, [-1, -1]).execute([x])
    assert out.dtype == torch.float4_e2m1fn_x2 and out.shape == (1, len(vals) // 2)
    assert nibbles(out)[0] == [e2m1_code(f32(v)) for v in vals]


def test_cast_to_e4m3_saturates_and_rounds_to_even():
    vals = SPECIAL + torch.randn(200, generator=torch.Generator().manual_seed(4)).mul(50).tolist()
    (out,) = cast_fusion(DataType.Float, DataType.Float8_e4m3fn, [-1]).execute([torch.tensor(vals)])
    got = out.view(torch.uint8).tolist()
    for v, code in zip(vals, got):
        if math.isnan(v):
            assert code & 0x7F == 0x7F
        else:
            assert code == e4m3_code(f32(v)), v


def test_cast_to_e5m2_saturates_and_rounds_to_even():
    vals = [v for v in SPECIAL if not math.isnan(v)] + [70000.0, -1e9, 3.1, 0.3]
    (out,) = cast_fusion(DataType.Float, DataType.Float8_e5m2, [-1]).execute([torch.tensor(vals)])
    assert out.view(torch.uint8).tolist() == [encode(f32(v), E5M2, 0x80, 0x7F) for v in vals]


def test_cast_from_fp4_reads_packed_values():
    codes = [list(range(16)), list(range(15, -1, -1))]
    (out,) = cast_fusion(DataType.Float4_e2m1fn, DataType.Float, [-1, -1]).execute(
        [pack_rows(codes).view(torch.float4_e2m1fn_x2)]
    )
    assert out.shape == (2, 16)
    assert out.tolist() == [[e2m1_value(c) for c in row] for row in codes]


# ---- printing -------------------------------------------------------------------------------

def test_listing_lines():
    with FusionDefinition() as fd:
        x = fd.define_tensor([256, 64], dtype=DataType.Float)
        off = fd.define_tensor([2], dtype=DataType.Int32)
        sfo = fd.define_tensor([2], dtype=DataType.Int32)
        w = fd.define_tensor([2, 64, 128], dtype=DataType.Float4_e2m1fn)
        s2 = fd.define_tensor([2, 128, 4], dtype=DataType.Float8_e4m3fn)
        al = fd.define_tensor([2], dtype=DataType.Float)
        ps = fd.define_tensor([2, 3], dtype=DataType.Int32)
        q, s = fd.ops.nv_block_quantize(x)
        lay = fd.ops.preprocess_grouped_matmul_input_sf(s, off, sfo)
        fd.add_output(fd.ops.cutlass_nvfp4_grouped_mm(q, w, lay, s2, al, ps, off, sfo))
    text = fd.fusion.print_math()
    assert (
        "(T8_l___e4m3[iS15{256}, iS16{4}],\n"
        " T7_l___e2m1[iS13{256}, iS14{64}])\n"
        " = block_quantize(T0_g_float[iS0{256}, iS1{64}])\n"
    ) in text
    assert (
        "T9_l___e4m3[iS17{256}, iS18{4}]\n"
        "   = preprocessGroupedMatmulInputSf(\n"
        "    input = T8_l___e4m3[iS15{256}, iS16{4}],\n"
        "    input_offsets = T1_g_int[iS2{2}],\n"
        "    output_offsets = T2_g_int[iS3{2}],\n"
        "    layout = Block128x4\n"
        "  )\n"
    ) in text
    assert (
        "T10_g___bfloat[iS21{256}, iS22{128}] = CutlassNvfp4GroupedMmaOp(mat1=T7_l___e2m1[iS13{256}, "
        "iS14{64}], mat2=T3_g___e2m1[iS4{2}, iS5{64}, iS6{128}], scale1=T9_l___e4m3[iS17{256}, iS18{4}], "
        "scale2=T4_g___e4m3[iS7{2}, iS8{128}, iS9{4}], alpha=T5_g_float[iS10{2}], "
        "problem_sizes=T6_g_int[iS11{2}, iS12{3}], expert_offsets=T1_g_int[iS2{2}], "
        "sf_offsets=T2_g_int[iS3{2}])\n"
    ) in text


# ---- definition errors ----------------------------------------------------------------------

def test_block_quantize_rejects_bad_operands():
    with FusionDefinition() as fd:
        x = fd.define_tensor([4, 40], dtype=DataType.Float)
        with pytest.raises(FusionDefinitionError, match=r"nv_block_quantize: .*T0.*40.*multiple of 16"):
            fd.ops.nv_block_quantize(x)
        xi = fd.define_tensor([4, 32], dtype=DataType.Int32)
        with pytest.raises(FusionDefinitionError, match=r"nv_block_quantize: input T1 is int"):
            fd.ops.nv_block_quantize(xi)
        y = fd.define_tensor([4, 32], dtype=DataType.BFloat16)
        gs = fd.define_tensor([1], dtype=DataType.Float)
        with pytest.raises(FusionDefinitionError, match=r"nv_block_quantize: global_scale T3 must have rank 0"):
            fd.ops.nv_block_quantize(y, gs)
        with pytest.raises(FusionDefinitionError, match=r"nv_block_quantize: swizzled scales of T2"):
            fd.ops.nv_block_quantize(y, None, True)
        with pytest.raises(FusionDefinitionError, match=r"block_size"):
            fd.ops.nv_block_quantize(y, block_size=32)


def test_layout_op_rejects_bad_operands():
    with FusionDefinition() as fd:
        s = fd.define_tensor([-1, -1], dtype=DataType.Float8_e4m3fn)
        off64 = fd.define_tensor([-1], dtype=DataType.Int)
        off = fd.define_tensor([-1], dtype=DataType.Int32)
        with pytest.raises(FusionDefinitionError, match=r"preprocess_grouped_matmul_input_sf: input_offsets T1"):
            fd.ops.preprocess_grouped_matmul_input_sf(s, off64, off)
        f = fd.define_tensor([-1, -1], dtype=DataType.Float)
        with pytest.raises(FusionDefinitionError, match=r"preprocess_grouped_matmul_input_sf: input T3"):
            fd.ops.preprocess_grouped_matmul_input_sf(f, off, off)


def _layout_out(fd: FusionDefinition):
    s = fd.define_tensor([-1, -1], dtype=DataType.Float8_e4m3fn)
    off = fd.define_tensor([-1], dtype=DataType.Int32)
    sfo = fd.define_tensor([-1], dtype=DataType.Int32)
    return fd.ops.preprocess_grouped_matmul_input_sf(s, off, sfo), off, sfo


@pytest.mark.parametrize("use,named", [
    (lambda fd, t: fd.ops.add(t, t), r"BinaryOp add producing T4"),
    (lambda fd, t: fd.ops.cast(t, DataType.Float), r"UnaryOp cast producing T4"),
    (lambda fd, t: fd.ops.set(t), r"LoadStoreOp \(set\) producing T4"),
    (lambda fd, t: fd.ops.abs(t), r"UnaryOp abs producing T4"),
])
def test_layout_output_cannot_feed_other_ops(use, named):
    with FusionDefinition() as fd:
        lay, _, _ = _layout_out(fd)
        with pytest.raises(FusionDefinitionError, match=r"T3 is the output of preprocess_grouped_matmul_input_sf.*" + named):
            use(fd, lay)
        assert lay.uses == []  # the refused expr is not linked into the graph


def test_layout_output_only_as_scale1_of_grouped_mm():
    with FusionDefinition() as fd:
        lay, off, sfo = _layout_out(fd)
        a = fd.define_tensor([-1, -1], dtype=DataType.Float4_e2m1fn)
        w = fd.define_tensor([-1, -1, -1], dtype=DataType.Float4_e2m1fn)
        s2 = fd.define_tensor([-1, -1, -1], dtype=DataType.Float8_e4m3fn)
        al = fd.define_tensor([-1], dtype=DataType.Float)
        ps = fd.define_tensor([-1, 3], dtype=DataType.Int32)
        # As mat1 the builder refuses it by name and dtype.
        with pytest.raises(FusionDefinitionError, match=r"cutlass_nvfp4_grouped_mm: mat1 T3 is __e4m3"):
            fd.ops.cutlass_nvfp4_grouped_mm(lay, w, lay, s2, al, ps, off, sfo)
        # An op built without the builder still meets the fusion-wide rule.
        out = fd.define_tensor([-1, -1], dtype=DataType.BFloat16)
        fusion = fd.fusion
        with pytest.raises(FusionDefinitionError, match=r"CutlassNvfp4GroupedMmaOp as mat1"):
            CutlassNvfp4GroupedMmaOp(fusion, out, [lay, w, lay, s2, al, ps, off, sfo])
        # The one allowed use, and the layout output as a fusion output, are fine.
        good = fd.ops.cutlass_nvfp4_grouped_mm(a, w, lay, s2, al, ps, off, sfo)
        fd.add_output(good)
        fd.add_output(lay)
    assert [type(u).__name__ for u in lay.uses] == ["CutlassNvfp4GroupedMmaOp"]


def test_grouped_mm_rejects_shape_mismatch():
    with FusionDefinition() as fd:
        a = fd.define_tensor([256, 64], dtype=DataType.Float4_e2m1fn)
        w = fd.define_tensor([2, 32, 128], dtype=DataType.Float4_e2m1fn)
        s1 = fd.define_tensor([256, 4], dtype=DataType.Float8_e4m3fn)
        s2 = fd.define_tensor([2, 128, 4], dtype=DataType.Float8_e4m3fn)
        al = fd.define_tensor([2], dtype=DataType.Float)
        ps = fd.define_tensor([2, 3], dtype=DataType.Int32)
        off = fd.define_tensor([2], dtype=DataType.Int32)
        with pytest.raises(FusionDefinitionError, match=r"cutlass_nvfp4_grouped_mm: K of mat1 T0 and mat2 T1 differ"):
            fd.ops.cutlass_nvfp4_grouped_mm(a, w, s1, s2, al, ps, off, off)
