"""nvfp4 math in torch: fp4/fp8 conversions, block quantization, scale swizzles, the layout op,
and the grouped matmul; plus their reference-evaluator rules.

Representations (the torch side of fusions):
- fp4 (Float4_e2m1fn): `torch.float4_e2m1fn_x2`, two values per byte along the
  innermost memory axis (stride 1), the even-indexed value in the low nibble, as
  nvFuser and CUTLASS store it. A fusion's logical extent along that axis is twice
  the torch size. A code is sign (bit 3), exponent (bits 2-1), mantissa (bit 0):
  codes 0..7 are 0, 0.5, 1, 1.5, 2, 3, 4, 6. `unpack_fp4` / `fp4_to_float` read them.
- e4m3 (Float8_e4m3fn): `torch.float8_e4m3fn`.
- A tensor whose allocation domain is not a permutation of its logical domain (the
  swizzled block scales, the layout op's output) is returned as its allocation
  buffer: contiguous, 2-D [rows, cols] of the (padded) allocation, bytes in
  allocation order. This is what nvFuser hands back and what CUTLASS reads.

Casts follow CUDA's conversions used by generated code: round to nearest even,
saturating to the largest finite value (`__NV_SATFINITE`). An fp4 NaN input has no
encoding; like `cvt.rn.satfinite.e2m1x2.f32` we give it +6 (code 7).
"""

from __future__ import annotations

import torch

from engine.dtypes import DataType, to_torch
from engine.errors import ExecutionError
from engine.ir import quant_exprs as qx
from engine.reference.rules import CASTS, TO_FLOAT, handles

FP4_MAX = 6.0
E4M3_MAX = 448.0
E5M2_MAX = 57344.0
SCALE_MIN = 2.0**-6  # smallest normal e4m3: block scales are clamped up to it
BLOCK_SIZE = 16
E2M1_VALUES = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0)

# Rounding thresholds between consecutive e2m1 magnitudes. At a tie the even code
# wins: `>` where the lower neighbour has the even code, `>=` where the upper one has.
_FP4_STEPS = ((0.25, False), (0.75, True), (1.25, False), (1.75, True), (2.5, False), (3.5, True), (5.0, False))


# ---- fp4 ----------------------------------------------------------------------------------

def fp4_codes(x: torch.Tensor) -> torch.Tensor:
    """e2m1 codes (uint8, 0..15) of `x`: round to nearest even, saturate to +-6, NaN -> +6."""
    a = x.abs().to(torch.float32) if x.dtype != torch.float64 else x.abs()
    code = torch.zeros(x.shape, dtype=torch.uint8, device=x.device)
    for threshold, tie_up in _FP4_STEPS:
        code += (a >= threshold if tie_up else a > threshold).to(torch.uint8)
    code = torch.where(torch.isnan(a), torch.full_like(code, 7), code)
    sign = torch.signbit(x) & ~torch.isnan(x)
    return code | (sign.to(torch.uint8) << 3)


def fp4_code_values(codes: torch.Tensor) -> torch.Tensor:
    """float32 values of e2m1 codes."""
    table = torch.tensor(E2M1_VALUES + tuple(-v for v in E2M1_VALUES), dtype=torch.float32, device=codes.device)
    return table[codes.to(torch.long) & 0xF]


def pack_fp4(codes: torch.Tensor) -> torch.Tensor:
    """Pack codes along the last axis (even length) into `float4_e2m1fn_x2`."""
    if codes.shape[-1] % 2:
        raise ExecutionError(f"fp4 tensors pack two values per byte; last axis {codes.shape[-1]} is odd")
    c = codes.to(torch.uint8).contiguous()
    packed = c[..., 0::2] | (c[..., 1::2] << 4)
    return packed.contiguous().view(torch.float4_e2m1fn_x2)


def packed_dim(t: torch.Tensor) -> int:
    """The axis an fp4 tensor is packed along: its innermost memory axis (stride 1)."""
    for d in range(t.dim() - 1, -1, -1):
        if t.stride(d) == 1 and t.shape[d] != 1:
            return d
    return t.dim() - 1


def unpack_fp4(t: torch.Tensor, dim: int | None = None) -> torch.Tensor:
    """uint8 codes of a `float4_e2m1fn_x2` tensor; the packed axis (default: the one of
    stride 1, so a transposed view such as mat2 [G, K/2, N] unpacks along K) doubles."""
    if t.dtype != torch.float4_e2m1fn_x2:
        raise ExecutionError(f"expected a float4_e2m1fn_x2 tensor, got {t.dtype}")
    d = packed_dim(t) if dim is None else dim % t.dim()
    u = t.view(torch.uint8).movedim(d, -1)
    both = torch.stack([u & 0xF, u >> 4], dim=-1).flatten(-2)
    return both.movedim(-1, d)


def fp4_to_float(t: torch.Tensor, dim: int | None = None) -> torch.Tensor:
    """float32 values of a packed fp4 tensor (the packed axis doubled)."""
    return fp4_code_values(unpack_fp4(t, dim))


def float_to_fp4(x: torch.Tensor) -> torch.Tensor:
    """Cast to fp4 as CUDA's satfinite round-to-nearest-even conversion; packed on the last axis."""
    return pack_fp4(fp4_codes(_as_float(x)))


# ---- fp8 ----------------------------------------------------------------------------------

def _as_float(x: torch.Tensor) -> torch.Tensor:
    """Float values of any tensor, fp4 included (which torch cannot convert itself)."""
    if x.dtype == torch.float4_e2m1fn_x2:
        return fp4_to_float(x)
    return x if x.dtype in (torch.float32, torch.float64) else x.to(torch.float32)


def to_e4m3(x: torch.Tensor) -> torch.Tensor:
    """Round to nearest even e4m3, saturating to +-448 (NaN stays NaN)."""
    f = _as_float(x)
    return f.clamp(-E4M3_MAX, E4M3_MAX).to(torch.float8_e4m3fn)


def to_e5m2(x: torch.Tensor) -> torch.Tensor:
    """Round to nearest even e5m2, saturating to +-57344 (inf saturates too, as satfinite)."""
    f = _as_float(x)
    return f.clamp(-E5M2_MAX, E5M2_MAX).to(torch.float8_e5m2)


def _to_float_type(dtype: DataType):
    want = to_torch(dtype)

    def rule(x: torch.Tensor) -> torch.Tensor:
        # Only fp4 sources need help; every other source converts as torch does.
        return _as_float(x).to(want) if x.dtype == torch.float4_e2m1fn_x2 else x.to(want)

    return rule


CASTS[DataType.Float4_e2m1fn] = float_to_fp4
TO_FLOAT[torch.float4_e2m1fn_x2] = fp4_to_float
CASTS[DataType.Float8_e4m3fn] = to_e4m3
CASTS[DataType.Float8_e5m2] = to_e5m2
for _dt in (DataType.Float, DataType.Double, DataType.Half, DataType.BFloat16):
    CASTS[_dt] = _to_float_type(_dt)


# ---- block quantization --------------------------------------------------------------------

def block_quantize(
    x: torch.Tensor, global_scale: torch.Tensor | float | None = None, block_size: int = BLOCK_SIZE
) -> tuple[torch.Tensor, torch.Tensor]:
    """nvfp4 quantization of the last axis: (fp4 codes uint8 [.., K], e4m3 scales [.., K/16]).

    Per block: amax = max|x|; s = amax / 6, times the global scale when given;
    clamped to [2^-6, 448] and stored as e4m3. Values are x / (float(s_e4m3) / global
    scale), clamped to +-6, rounded to the nearest e2m1 value (ties to even).
    All arithmetic is fp32, as the generated kernel does it.
    """
    if x.shape[-1] % block_size:
        raise ExecutionError(f"block quantization: last axis {x.shape[-1]} is not a multiple of {block_size}")
    xf = x.to(torch.float32)
    blocks = xf.reshape(*xf.shape[:-1], xf.shape[-1] // block_size, block_size)
    amax = blocks.abs().amax(dim=-1)
    s = amax / FP4_MAX
    g = None
    if global_scale is not None:
        g = torch.as_tensor(global_scale, dtype=torch.float32, device=x.device)
        s = s * g
    scales = s.clamp(SCALE_MIN, E4M3_MAX).to(torch.float8_e4m3fn)
    denom = scales.to(torch.float32)
    if g is not None:
        denom = denom / g
    scaled = (blocks / denom.unsqueeze(-1)).clamp(-FP4_MAX, FP4_MAX)
    return fp4_codes(scaled).reshape(x.shape), scales


# ---- swizzles and the layout op ------------------------------------------------------------

def round_up(n: int, m: int) -> int:
    return -(-n // m) * m


def swizzle_offset(r: torch.Tensor, c: torch.Tensor, cols: int) -> torch.Tensor:
    """Flat offset of block scale (r, c) in the 128x4 swizzle of a [m, cols] matrix,
    allocation [m/128, k/4, 32, 4, 4] with k = cols rounded up to a multiple of 4."""
    k4 = round_up(cols, 4) // 4
    return (r // 128) * k4 * 512 + (c // 4) * 512 + (r % 32) * 16 + ((r % 128) // 32) * 4 + c % 4


def swizzle_scales(scales: torch.Tensor) -> torch.Tensor:
    """[m, cols] (m a multiple of 128, cols of 4) -> the same shape, bytes in swizzled order."""
    m, cols = scales.shape
    if m % 128 or cols % 4:
        raise ExecutionError(f"swizzled block scales need rows % 128 == 0 and columns % 4 == 0, got [{m}, {cols}]")
    r, c = _grid(m, cols, scales.device)
    flat = torch.zeros(m * cols, dtype=torch.uint8, device=scales.device)
    flat[swizzle_offset(r, c, cols).flatten()] = scales.view(torch.uint8).flatten()
    return flat.view(scales.dtype).reshape(m, cols)


def unswizzle_scales(buffer: torch.Tensor, m: int, cols: int) -> torch.Tensor:
    """Read an [m, cols] block-scale matrix out of a 128x4-swizzled buffer (any shape)."""
    r, c = _grid(m, cols, buffer.device)
    flat = buffer.reshape(-1).view(torch.uint8)
    offsets = swizzle_offset(r, c, cols)
    if m and cols and int(offsets.max()) >= flat.numel():
        raise ExecutionError(
            f"swizzled scales: a [{m}, {cols}] matrix needs {round_up(m, 128) * round_up(cols, 4)} "
            f"entries, the buffer has {flat.numel()}"
        )
    return flat[offsets].view(buffer.dtype)


def _grid(m: int, cols: int, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    r = torch.arange(m, device=device).unsqueeze(1).expand(m, cols)
    c = torch.arange(cols, device=device).unsqueeze(0).expand(m, cols)
    return r, c


def group_bounds(offsets: torch.Tensor, m: int) -> list[tuple[int, int]]:
    """[start, stop) rows of each group: group g runs to the next group's start (the last to m)."""
    starts = [int(v) for v in offsets.tolist()]
    stops = starts[1:] + [m]
    for g, (a, b) in enumerate(zip(starts, stops)):
        if not 0 <= a <= b <= m:
            raise ExecutionError(f"group {g} spans rows [{a}, {b}) outside [0, {m}] or out of order")
    return list(zip(starts, stops))


def layout_op_offset(lr: torch.Tensor, c: torch.Tensor, out_row: int, kp: int) -> torch.Tensor:
    """Flat offset of scale (row lr of a group, column c) in the layout op's buffer, for a
    group placed at output row `out_row` of a buffer with kp (= ceil(K/4)*4) columns."""
    return out_row * kp + (lr // 128) * 128 * kp + (c // 4) * 512 + (lr % 32) * 16 + ((lr % 128) // 32) * 4 + c % 4


def preprocess_grouped_matmul_input_sf(
    scales: torch.Tensor, input_offsets: torch.Tensor, output_offsets: torch.Tensor
) -> torch.Tensor:
    """The layout op: a [M + G*127, ceil(K/4)*4] buffer; padding is left zero (never written)."""
    m, k = scales.shape
    g = input_offsets.numel()
    if output_offsets.numel() != g:
        raise ExecutionError(f"layout op: {g} input offsets but {output_offsets.numel()} output offsets")
    kp = round_up(k, 4)
    rows = m + g * 127
    flat = torch.zeros(rows * kp, dtype=torch.uint8, device=scales.device)
    src = scales.view(torch.uint8)
    for (a, b), out_row in zip(group_bounds(input_offsets, m), output_offsets.tolist()):
        if b == a:
            continue
        lr, c = _grid(b - a, k, scales.device)
        dst = layout_op_offset(lr, c, int(out_row), kp)
        if int(dst.max()) >= flat.numel() or out_row < 0:
            raise ExecutionError(f"layout op: group at output row {out_row} overflows the buffer of {rows} rows")
        flat[dst.flatten()] = src[a:b].flatten()
    return flat.view(scales.dtype).reshape(rows, kp)


def read_layout_scales(buffer: torch.Tensor, rows: tuple[int, int], out_row: int, k: int) -> torch.Tensor:
    """The [b - a, k] scales of one group back out of a layout-op buffer."""
    a, b = rows
    kp = buffer.shape[-1]
    lr, c = _grid(b - a, k, buffer.device)
    flat = buffer.reshape(-1).view(torch.uint8)
    return flat[layout_op_offset(lr, c, out_row, kp)].view(buffer.dtype)


# ---- grouped matmul ------------------------------------------------------------------------

def nvfp4_grouped_mm(
    mat1: torch.Tensor,
    mat2: torch.Tensor,
    scale1: torch.Tensor,
    scale2: torch.Tensor,
    alpha: torch.Tensor,
    problem_sizes: torch.Tensor,
    expert_offsets: torch.Tensor,
    sf_offsets: torch.Tensor,
    out_dtype: torch.dtype = torch.bfloat16,
) -> torch.Tensor:
    """Dequantize (fp4 value * e4m3 block scale) to float and multiply group by group.

    mat1 [M, K/2] and mat2 [G, K/2, N] are packed fp4 (mat2 packed along K); scale1 is
    a layout-op buffer, scale2 [G, N, K/16] holds each group's [N, K/16] scales in the
    128x4 swizzle. Rows of group g start at expert_offsets[g] and number
    problem_sizes[g, 0]; its scales start at row sf_offsets[g] of scale1. Rows no
    group covers are zero.
    """
    a = fp4_to_float(mat1, dim=-1)
    b = fp4_to_float(mat2, dim=1)
    m, k = a.shape
    g_count, _, n = b.shape
    if k % BLOCK_SIZE:
        raise ExecutionError(f"grouped mm: K = {k} is not a multiple of {BLOCK_SIZE}")
    kc = k // BLOCK_SIZE
    sizes = problem_sizes.to(torch.long).tolist()
    out = torch.zeros(m, n, dtype=torch.float32, device=a.device)
    s2_groups = scale2.reshape(g_count, -1)
    for g in range(g_count):
        rows, n_g, k_g = sizes[g]
        start = int(expert_offsets[g])
        if (n_g, k_g) != (n, k) or not 0 <= start <= start + rows <= m:
            raise ExecutionError(f"grouped mm: problem size {sizes[g]} of group {g} does not fit [{m}, {n}, {k}]")
        if rows == 0:
            continue
        s1 = read_layout_scales(scale1, (start, start + rows), int(sf_offsets[g]), kc).to(torch.float32)
        s2 = unswizzle_scales(s2_groups[g], n, kc).to(torch.float32)
        a_g = a[start : start + rows] * s1.repeat_interleave(BLOCK_SIZE, dim=1)
        b_g = b[g] * s2.repeat_interleave(BLOCK_SIZE, dim=1).t()
        out[start : start + rows] = (a_g @ b_g) * alpha[g].to(torch.float32)
    return out.to(out_dtype)


# ---- reference-evaluator rules -------------------------------------------------------------

@handles(qx.BlockQuantizationOp)
def _block_quantize(expr, args, ctx):
    x = args[0]
    gs = args[1] if len(args) > 1 else None
    codes, scales = block_quantize(x, gs, expr.block_size)
    if expr.swizzle_scales:
        flat = scales.reshape(-1, scales.shape[-1])
        scales = swizzle_scales(flat).reshape(scales.shape)
    return [pack_fp4(codes), scales]


@handles(qx.PreprocessGroupedMatmulInputSf)
def _layout_op(expr, args, ctx):
    scales, input_offsets, output_offsets = args
    return [preprocess_grouped_matmul_input_sf(scales, input_offsets, output_offsets)]


@handles(qx.CutlassNvfp4GroupedMmaOp)
def _grouped_mm(expr, args, ctx):
    return [nvfp4_grouped_mm(*args, out_dtype=to_torch(expr.output.dtype))]
