"""nvfp4 ops by nvFuser's python-frontend names: nv_block_quantize,
preprocess_grouped_matmul_input_sf (the layout op) and cutlass_nvfp4_grouped_mm.

Besides each builder's operand checks, this module installs a fusion-wide rule
(engine.ir.fusion.EXPR_CHECKS): the layout op's output may be read only by the
grouped matmul, as its scale1. The rule runs when any expr registers, so it holds
whatever module builds the would-be consumer (add, set, matmul, ...).
"""

from __future__ import annotations

from engine.dtypes import DataType
from engine.errors import FusionDefinitionError
from engine.ir.base import Expr
from engine.ir.fusion import EXPR_CHECKS
from engine.ir.iterdomain import IterDomain, Merge, Resize, Split
from engine.ir.quant_exprs import (
    BlockQuantizationOp,
    CutlassNvfp4GroupedMmaOp,
    PreprocessGroupedMatmulInputSf,
)
from engine.ir.scalar import binary, ceil_div
from engine.ir.tensorview import TensorView
from engine.ops.common import check_tensor, copy_id, new_tv, no_reductions

__all__ = [
    "block_quantize",
    "cutlass_nvfp4_grouped_mm",
    "nv_block_quantize",
    "nvfp4_grouped_mm",
    "preprocess_grouped_matmul_input_sf",
]

BLOCK_SIZE = 16
_QUANTIZE_INPUT_TYPES = (DataType.Float, DataType.BFloat16, DataType.Half)
_FP8_TYPES = (DataType.Float8_e4m3fn, DataType.Float8_e5m2, DataType.Float8_e8m0fnu)
_INDEX_TYPES = (DataType.Int32, DataType.Int, DataType.Index)


# ---- operand checks ------------------------------------------------------------------------

def _tensor(op: str, x: object, what: str, rank: int | None = None,
            dtypes: tuple[DataType, ...] | None = None) -> TensorView:
    tv = check_tensor(op, x, what)
    r = len(no_reductions(tv))
    if rank is not None and r != rank:
        raise FusionDefinitionError(f"{op}: {what} {tv.short_name} must have rank {rank}, got rank {r}")
    if dtypes is not None and tv.dtype not in dtypes:
        allowed = ", ".join(d.cuda_name for d in dtypes)
        raise FusionDefinitionError(
            f"{op}: {what} {tv.short_name} is {tv.dtype.cuda_name}; expected one of {allowed}"
        )
    return tv


def _const(i: IterDomain) -> int | None:
    return i.extent.value if i.extent.is_const else None


def _check_same(op: str, what: str, a: IterDomain, b: IterDomain, scale: int = 1) -> None:
    """When both extents are known, a == scale * b."""
    va, vb = _const(a), _const(b)
    if va is not None and vb is not None and va != scale * vb:
        factor = f"{scale} x " if scale != 1 else ""
        raise FusionDefinitionError(f"{op}: {what}: {va} != {factor}{vb}")


# ---- nv_block_quantize ---------------------------------------------------------------------

def nv_block_quantize(
    input: TensorView,  # noqa: A002 - nvFuser's keyword
    global_scale: TensorView | None = None,
    swizzle_scales: bool = False,
    block_size: int = BLOCK_SIZE,
    dtype: DataType = DataType.Float4_e2m1fn,
) -> tuple[TensorView, TensorView]:
    """nvfp4 block quantization of the last axis: (fp4 values [.., K], e4m3 scales [.., K/16]).

    global_scale: optional 0-d fp32 tensor. swizzle_scales: give the scales the
    128x4 swizzled allocation [m/128, k/4, 32, 4, 4] (m = product of leading axes).
    """
    op = "nv_block_quantize"
    x = _tensor(op, input, "input", dtypes=_QUANTIZE_INPUT_TYPES)
    if dtype not in (DataType.Float4_e2m1fn, DataType.Null):
        raise FusionDefinitionError(f"{op}: only nvfp4 (dtype Float4_e2m1fn) is supported, got {dtype!r}")
    if block_size != BLOCK_SIZE:
        raise FusionDefinitionError(f"{op}: nvfp4 blocks have {BLOCK_SIZE} elements, got block_size={block_size}")
    ids = no_reductions(x)
    if not ids:
        raise FusionDefinitionError(f"{op}: input {x.short_name} is 0-d; it needs a last axis to quantize")
    k_id = ids[-1]
    k = _const(k_id)
    if k is not None and k % BLOCK_SIZE:
        raise FusionDefinitionError(
            f"{op}: the last axis of input {x.short_name} ({k}) is not a multiple of {BLOCK_SIZE}"
        )
    gs = None
    if global_scale is not None:
        gs = _tensor(op, global_scale, "global_scale", rank=0, dtypes=(DataType.Float,))
    fusion = x.fusion
    quantized = new_tv(fusion, [copy_id(fusion, i) for i in ids], DataType.Float4_e2m1fn)
    scale_ids = [copy_id(fusion, i) for i in ids[:-1]]
    scale_ids.append(IterDomain(fusion, binary("div", k_id.extent, BLOCK_SIZE)))
    alloc = _swizzled_allocation(op, x, scale_ids) if swizzle_scales else None
    scales = new_tv(
        fusion, scale_ids, DataType.Float8_e4m3fn,
        allocation=alloc, contiguity=[True] * len(alloc) if alloc else None,
    )
    BlockQuantizationOp(fusion, quantized, scales, x, gs, block_size=block_size, swizzle_scales=bool(swizzle_scales))
    return quantized, scales


def _swizzled_allocation(op: str, x: TensorView, ids: list[IterDomain]) -> list[IterDomain]:
    """[m, k] -> split [m/128, 4, 32, k/4, 4] -> allocation [m/128, k/4, 32, 4, 4]."""
    if len(ids) < 2:
        raise FusionDefinitionError(f"{op}: swizzled scales need an input of rank >= 2, {x.short_name} has rank 1")
    rows = ids[0]
    for i in ids[1:-1]:
        rows = Merge(rows, i).out
    cols = ids[-1]
    m, kc = _const(rows), _const(cols)
    if (m is not None and m % 128) or (kc is not None and kc % 4):
        raise FusionDefinitionError(
            f"{op}: swizzled scales of {x.short_name} need rows % 128 == 0 and K/16 % 4 == 0, "
            f"got {m if m is not None else '?'} rows and {kc if kc is not None else '?'} scale columns"
        )
    tiles = Split(rows, 128)
    quads = Split(tiles.inner, 32)  # 128 rows -> 4 groups of 32
    col = Split(cols, 4)
    return [tiles.outer, col.outer, quads.inner, quads.outer, col.inner]


def block_quantize(*args, **kwargs) -> tuple[TensorView, TensorView]:
    """Alias of nv_block_quantize (nvFuser's C++ name)."""
    return nv_block_quantize(*args, **kwargs)


# ---- preprocess_grouped_matmul_input_sf (the layout op) ------------------------------------

def preprocess_grouped_matmul_input_sf(
    input: TensorView,  # noqa: A002 - nvFuser's keyword
    input_offsets: TensorView,
    output_offsets: TensorView,
) -> TensorView:
    """Lay block scales [M, K] out for the grouped matmul: logical [M, K], allocation
    [M + G*127, ceil(K/4)*4] (row axis padded by G*127, columns to a multiple of 4)."""
    op = "preprocess_grouped_matmul_input_sf"
    x = _tensor(op, input, "input", rank=2, dtypes=_FP8_TYPES)
    ins = _tensor(op, input_offsets, "input_offsets", rank=1, dtypes=(DataType.Int32,))
    outs = _tensor(op, output_offsets, "output_offsets", rank=1, dtypes=(DataType.Int32,))
    g_id = no_reductions(ins)[0]
    _check_same(op, f"input_offsets {ins.short_name} and output_offsets {outs.short_name} differ in length",
                g_id, no_reductions(outs)[0])
    fusion = x.fusion
    row, col = (copy_id(fusion, i) for i in no_reductions(x))
    g, k = g_id.extent, col.extent
    col_pad = binary("sub", binary("mul", ceil_div(k, 4), 4), k)
    padded_rows = Resize(row, 0, binary("mul", g, 127), is_rfactor=False).out
    padded_cols = Resize(col, 0, col_pad, is_rfactor=False).out
    out = new_tv(fusion, [row, col], x.dtype, allocation=[padded_rows, padded_cols], contiguity=[True, True])
    PreprocessGroupedMatmulInputSf(fusion, out, x, ins, outs, k=k, g=g)
    return out


# ---- cutlass_nvfp4_grouped_mm --------------------------------------------------------------

def cutlass_nvfp4_grouped_mm(
    mat1: TensorView,
    mat2: TensorView,
    scale1: TensorView,
    scale2: TensorView,
    alpha: TensorView,
    problem_sizes: TensorView,
    expert_offsets: TensorView,
    sf_offsets: TensorView,
    dtype: DataType = DataType.BFloat16,
) -> TensorView:
    """Grouped nvfp4 matmul: out [M, N]; group g's rows are (mat1_g @ mat2[g]) * alpha[g].

    Extents are logical (fp4 values): mat1 [M, K], mat2 [G, K, N]; in torch they are
    packed float4_e2m1fn_x2 [M, K/2] and [G, K/2, N]. scale1 is the layout op's
    output ([M, K/16] logical), scale2 [G, N, K/16] swizzled per group.
    """
    op = "cutlass_nvfp4_grouped_mm"
    fp4 = (DataType.Float4_e2m1fn,)
    e4m3 = (DataType.Float8_e4m3fn,)
    a = _tensor(op, mat1, "mat1", rank=2, dtypes=fp4)
    b = _tensor(op, mat2, "mat2", rank=3, dtypes=fp4)
    s1 = _tensor(op, scale1, "scale1", rank=2, dtypes=e4m3)
    s2 = _tensor(op, scale2, "scale2", rank=3, dtypes=e4m3)
    al = _tensor(op, alpha, "alpha", rank=1, dtypes=(DataType.Float,))
    ps = _tensor(op, problem_sizes, "problem_sizes", rank=2, dtypes=_INDEX_TYPES)
    eo = _tensor(op, expert_offsets, "expert_offsets", rank=1, dtypes=_INDEX_TYPES)
    so = _tensor(op, sf_offsets, "sf_offsets", rank=1, dtypes=_INDEX_TYPES)
    if dtype == DataType.Null:
        dtype = DataType.BFloat16
    if dtype not in (DataType.BFloat16, DataType.Half, DataType.Float):
        raise FusionDefinitionError(f"{op}: output dtype must be bf16, fp16 or fp32, got {dtype!r}")
    m, k = no_reductions(a)
    g, k2, n = no_reductions(b)
    kc = _const(k)
    if kc is not None and kc % BLOCK_SIZE:
        raise FusionDefinitionError(f"{op}: K of mat1 {a.short_name} ({kc}) is not a multiple of {BLOCK_SIZE}")
    _check_same(op, f"K of mat1 {a.short_name} and mat2 {b.short_name} differ", k, k2)
    s1_m, s1_k = no_reductions(s1)
    _check_same(op, f"rows of mat1 {a.short_name} and scale1 {s1.short_name} differ", m, s1_m)
    _check_same(op, f"K of mat1 {a.short_name} vs scale1 {s1.short_name} columns", k, s1_k, BLOCK_SIZE)
    s2_g, s2_n, s2_k = no_reductions(s2)
    _check_same(op, f"groups of mat2 {b.short_name} and scale2 {s2.short_name} differ", g, s2_g)
    _check_same(op, f"N of mat2 {b.short_name} and scale2 {s2.short_name} differ", n, s2_n)
    _check_same(op, f"K of mat2 {b.short_name} vs scale2 {s2.short_name} columns", k2, s2_k, BLOCK_SIZE)
    ps_g, ps_3 = no_reductions(ps)
    if _const(ps_3) not in (None, 3):
        raise FusionDefinitionError(f"{op}: problem_sizes {ps.short_name} must be [G, 3], got [.., {_const(ps_3)}]")
    for what, tv, i in (("alpha", al, no_reductions(al)[0]), ("problem_sizes", ps, ps_g),
                        ("expert_offsets", eo, no_reductions(eo)[0]), ("sf_offsets", so, no_reductions(so)[0])):
        _check_same(op, f"{what} {tv.short_name} has a different group count than mat2 {b.short_name}", i, g)
    fusion = a.fusion
    out = new_tv(fusion, [copy_id(fusion, m), copy_id(fusion, n)], dtype)
    CutlassNvfp4GroupedMmaOp(fusion, out, [a, b, s1, s2, al, ps, eo, so])
    return out


def nvfp4_grouped_mm(*args, **kwargs) -> TensorView:
    """Alias of cutlass_nvfp4_grouped_mm."""
    return cutlass_nvfp4_grouped_mm(*args, **kwargs)


# ---- who may read the layout op's output ---------------------------------------------------

def _describe_use(expr: Expr) -> str:
    kind = getattr(expr, "op_name", type(expr).__name__)
    sub = expr.attributes.get("op")
    outs = ", ".join(getattr(o, "short_name", "?") for o in expr.outputs)
    return f"{type(expr).__name__}" + (f" {sub}" if sub else f" ({kind})") + f" producing {outs}"


def check_layout_op_uses(expr: Expr) -> None:
    """Refuse any read of a PreprocessGroupedMatmulInputSf output other than as the grouped
    matmul's scale1: the buffer holds padded, swizzled, group-offset scales that no
    other op can index."""
    for v in dict.fromkeys(expr.inputs):  # each distinct input once
        if not isinstance(v.definition, PreprocessGroupedMatmulInputSf):
            continue
        if isinstance(expr, CutlassNvfp4GroupedMmaOp):
            bad = [r for r in expr.role_of(v) if r != "scale1"]
            if not bad:
                continue
            use = f"CutlassNvfp4GroupedMmaOp as {' and '.join(bad)}"
        else:
            use = _describe_use(expr)
        name = getattr(v, "short_name", "?")
        raise FusionDefinitionError(
            f"{name} is the output of preprocess_grouped_matmul_input_sf (PreprocessGroupedMatmulInputSf); "
            f"only cutlass_nvfp4_grouped_mm may read it, as scale1, but {use} reads it"
        )




if check_layout_op_uses not in EXPR_CHECKS:
    EXPR_CHECKS.append(check_layout_op_uses)
