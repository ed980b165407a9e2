# ruff: noqa: N806 - the definitions keep the samples' nvFuser-style names (T0, S6, ...)
"""The benchmark fusions of issue 8, as FusionDefinitions, plus inputs and hand-written torch twins.

Each builder repeats a bundled sample's definition line for line (tests/benchmarks checks
that a builder at the sample's dtype and sizes gives the sample's IR exactly); only the
dtype and the sizes baked into the definition (broadcast shapes, a mean's divisor, the
static shapes of the seeds) are parameters. Where a sample computes in its input dtype
(softmax, transpose: fp32 samples) and the benchmark is bf16, the builder adds a cast to
float at the start and back at the end, as the gelu and norm samples do.

`benchmark_fusions(scale)` gives the issue's list: scale "full" at the issue's sizes,
"small" at sizes a CPU evaluates in milliseconds (the unit tests').
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch

from engine import DataType, FusionDefinition

BF16, F32 = DataType.BFloat16, DataType.Float
TORCH = {DataType.BFloat16: torch.bfloat16, DataType.Float: torch.float32, DataType.Half: torch.float16}


# ---- definitions (the samples', parameterised) -------------------------------------------------

def gelu_bias(dtype: DataType, m: int, n: int) -> FusionDefinition:
    """sample_fusions/gelu_bias.py (fp16 [128, 384])."""
    with FusionDefinition() as fd:
        T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=dtype, is_cpu=False)
        T1 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=dtype, is_cpu=False)
        T2 = fd.ops.cast(T0, dtype=DataType.Float)
        T3 = fd.ops.cast(T1, dtype=DataType.Float)
        T4 = fd.ops.broadcast_in_dim(T3, shape=[m, n], broadcast_dims=[1])
        T5 = fd.ops.add(T2, T4)
        S6 = fd.define_scalar(0.7071067811865476, dtype=DataType.Double)
        T7 = fd.ops.mul(T5, S6)
        T8 = fd.ops.erf(T7)
        S9 = fd.define_scalar(1.0, dtype=DataType.Double)
        T10 = fd.ops.add(T8, S9)
        T11 = fd.ops.mul(T5, T10)
        S12 = fd.define_scalar(0.5, dtype=DataType.Double)
        T13 = fd.ops.mul(T11, S12)
        T14 = fd.ops.cast(T13, dtype=dtype)
        fd.add_output(T14)
    return fd


def rms_norm(dtype: DataType, m: int, n: int) -> FusionDefinition:
    """sample_fusions/rms_norm.py (bf16 [64, 512])."""
    with FusionDefinition() as fd:
        T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=dtype, is_cpu=False)
        T1 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=dtype, is_cpu=False)
        T2 = fd.ops.cast(T0, dtype=DataType.Float)
        T3 = fd.ops.mul(T2, T2)
        T4 = fd.ops.sum(T3, dims=[1], keepdim=False, dtype=DataType.Null)
        S5 = fd.define_scalar(float(n), dtype=DataType.Double)
        T6 = fd.ops.div(T4, S5)
        S7 = fd.define_scalar(1e-06, dtype=DataType.Double)
        T8 = fd.ops.add(T6, S7)
        T9 = fd.ops.rsqrt(T8)
        T10 = fd.ops.broadcast_in_dim(T9, shape=[m, n], broadcast_dims=[0])
        T11 = fd.ops.mul(T2, T10)
        T12 = fd.ops.cast(T1, dtype=DataType.Float)
        T13 = fd.ops.broadcast_in_dim(T12, shape=[m, n], broadcast_dims=[1])
        T14 = fd.ops.mul(T11, T13)
        T15 = fd.ops.cast(T14, dtype=dtype)
        fd.add_output(T15)
        fd.add_output(T9)
    return fd


def layer_norm(dtype: DataType, m: int, n: int) -> FusionDefinition:
    """sample_fusions/layer_norm.py (bf16 [32, 256]); at fp32 its casts are casts to the same type."""
    with FusionDefinition() as fd:
        T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=dtype, is_cpu=False)
        T1 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=dtype, is_cpu=False)
        T2 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=dtype, is_cpu=False)
        T3 = fd.ops.cast(T0, dtype=DataType.Float)
        T4, T5 = fd.ops.var_mean(T3, dims=[1], correction=0, keepdim=False)
        S6 = fd.define_scalar(1e-05, dtype=DataType.Double)
        T7 = fd.ops.add(T4, S6)
        T8 = fd.ops.rsqrt(T7)
        T9 = fd.ops.broadcast_in_dim(T5, shape=[m, n], broadcast_dims=[0])
        T10 = fd.ops.sub(T3, T9)
        T11 = fd.ops.broadcast_in_dim(T8, shape=[m, n], broadcast_dims=[0])
        T12 = fd.ops.mul(T10, T11)
        T13 = fd.ops.cast(T1, dtype=DataType.Float)
        T14 = fd.ops.broadcast_in_dim(T13, shape=[m, n], broadcast_dims=[1])
        T15 = fd.ops.mul(T12, T14)
        T16 = fd.ops.cast(T2, dtype=DataType.Float)
        T17 = fd.ops.broadcast_in_dim(T16, shape=[m, n], broadcast_dims=[1])
        T18 = fd.ops.add(T15, T17)
        T19 = fd.ops.cast(T18, dtype=dtype)
        fd.add_output(T19)
        fd.add_output(T5)
        fd.add_output(T8)
    return fd


def softmax(dtype: DataType, m: int, n: int) -> FusionDefinition:
    """sample_fusions/softmax.py (fp32 [16, 1000]); a narrower dtype is computed in float."""
    with FusionDefinition() as fd:
        T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=dtype, is_cpu=False)
        X = T0 if dtype == DataType.Float else fd.ops.cast(T0, dtype=DataType.Float)
        T1 = fd.ops.max(X, dims=[1], keepdim=False, dtype=DataType.Null)
        T2 = fd.ops.broadcast_in_dim(T1, shape=[m, n], broadcast_dims=[0])
        T3 = fd.ops.sub(X, T2)
        T4 = fd.ops.exp(T3)
        T5 = fd.ops.sum(T4, dims=[1], keepdim=False, dtype=DataType.Null)
        T6 = fd.ops.broadcast_in_dim(T5, shape=[m, n], broadcast_dims=[0])
        T7 = fd.ops.div(T4, T6)
        fd.add_output(T7 if dtype == DataType.Float else fd.ops.cast(T7, dtype=dtype))
    return fd


def inner_outer(n: int = 4096) -> FusionDefinition:
    """sample_fusions/seed001_inner_outer_alloc.py (fp32 [1, 4096, 4096], permuted allocation)."""
    with FusionDefinition() as fd:
        T0 = fd.define_tensor(shape=[1, n, n], contiguity=[True, None, True], dtype=DataType.Float, is_cpu=False,
                              stride_order=[1, 2, 0])
        T1 = fd.ops.squeeze(T0, dims=[0])
        T2 = fd.ops.sum(T1, dims=[1], keepdim=False, dtype=DataType.Null)
        T3 = fd.ops.broadcast(T2, is_broadcast_dim=[True, False, True])
        T4 = fd.ops.add(T0, T3)
        T5 = fd.ops.squeeze(T4, dims=[0])
        T6 = fd.ops.sum(T5, dims=[0], keepdim=False, dtype=DataType.Null)
        fd.add_output(T4)
        fd.add_output(T6)
    return fd


def outer_sum(dtype: DataType, m: int, n: int) -> FusionDefinition:
    """sample_fusions/outer_reduction.py (bf16 [1024, 64]); at fp32 its casts are casts to the same type."""
    del m, n  # symbolic: nothing size-specific in this definition
    with FusionDefinition() as fd:
        T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=dtype, is_cpu=False)
        T1 = fd.ops.cast(T0, dtype=DataType.Float)
        T2 = fd.ops.sum(T1, dims=[0], keepdim=False, dtype=DataType.Null)
        T3 = fd.ops.cast(T2, dtype=dtype)
        fd.add_output(T3)
    return fd


def rope_bwd(s: int = 8192, b: int = 1) -> FusionDefinition:
    """sample_fusions/seed003_rope_bwd.py (B = 1, S = 8192; seed003_rope_bwd_small.py: S = 16).

    With b > 1 the gradients get a real leading batch axis (contiguity True instead of the
    sample's broadcast None) and every shape written in the definition starts with b; cos
    and sin stay [1, S, 128], broadcast over the batch."""
    gb = None if b == 1 else True
    B = DataType.BFloat16
    F = DataType.Float
    with FusionDefinition() as fd:
        T0 = fd.define_tensor(shape=[1, s, 128], contiguity=[None, True, True], dtype=B, is_cpu=False)
        T1 = fd.define_tensor(shape=[b, 32, s, 128], contiguity=[gb, True, True, True], dtype=B, is_cpu=False)
        T2 = fd.define_tensor(shape=[b, 32, s, 128], contiguity=[gb, True, True, True], dtype=B, is_cpu=False)
        T3 = fd.define_tensor(shape=[1, s, 128], contiguity=[None, True, True], dtype=B, is_cpu=False)
        T4 = fd.ops.broadcast_in_dim(T0, shape=[b, 32, s, 128], broadcast_dims=[0, 2, 3])
        T5 = fd.ops.broadcast_in_dim(T3, shape=[b, 32, s, 128], broadcast_dims=[0, 2, 3])
        S6 = fd.define_scalar(0.0, dtype=DataType.Double)
        T7 = fd.ops.full(shape=[b, 32, s, 128], fill_value=S6, dtype=B)
        T8 = fd.ops.cast(T7, dtype=F)
        T9 = fd.ops.cast(T1, dtype=F)
        T10 = fd.ops.cast(T5, dtype=F)
        T11 = fd.ops.mul(T9, T10)
        T12 = fd.ops.cast(T11, dtype=B)
        T13 = fd.ops.slice(T12, start_indices=[0, 0, 0, 64], end_indices=[b, 32, s, 128], strides=[1, 1, 1, 1])
        T14 = fd.ops.pad(T13, [0, 64, 0, 0, 0, 0, 0, 0])
        T15 = fd.ops.slice(T12, start_indices=[0, 0, 0, 0], end_indices=[b, 32, s, 64], strides=[1, 1, 1, 1])
        T16 = fd.ops.cast(T15, dtype=F)
        T17 = fd.ops.neg(T16)
        T18 = fd.ops.cast(T17, dtype=B)
        T19 = fd.ops.pad(T18, [64, 0, 0, 0, 0, 0, 0, 0])
        T20 = fd.ops.cast(T14, dtype=F)
        T21 = fd.ops.cast(T19, dtype=F)
        T22 = fd.ops.add(T20, T21)
        T23 = fd.ops.cast(T4, dtype=F)
        T24 = fd.ops.mul(T9, T23)
        T25 = fd.ops.add(T24, T22)
        T26 = fd.ops.add(T8, T25)
        T27 = fd.ops.cast(T26, dtype=B)
        T28 = fd.ops.reshape(T27, new_shape=[b, 8, 4, s, 128])
        T29 = fd.ops.cast(T2, dtype=F)
        T30 = fd.ops.cast(T5, dtype=F)
        T31 = fd.ops.mul(T29, T30)
        T32 = fd.ops.cast(T31, dtype=B)
        T33 = fd.ops.slice(T32, start_indices=[0, 0, 0, 64], end_indices=[b, 32, s, 128], strides=[1, 1, 1, 1])
        T34 = fd.ops.pad(T33, [0, 64, 0, 0, 0, 0, 0, 0])
        T35 = fd.ops.slice(T32, start_indices=[0, 0, 0, 0], end_indices=[b, 32, s, 64], strides=[1, 1, 1, 1])
        T36 = fd.ops.cast(T35, dtype=F)
        T37 = fd.ops.neg(T36)
        T38 = fd.ops.cast(T37, dtype=B)
        T39 = fd.ops.pad(T38, [64, 0, 0, 0, 0, 0, 0, 0])
        T40 = fd.ops.cast(T34, dtype=F)
        T41 = fd.ops.cast(T39, dtype=F)
        T42 = fd.ops.add(T40, T41)
        T43 = fd.ops.cast(T4, dtype=F)
        T44 = fd.ops.mul(T29, T43)
        T45 = fd.ops.add(T44, T42)
        T46 = fd.ops.cast(T45, dtype=B)
        T47 = fd.ops.reshape(T46, new_shape=[b, 8, 4, s, 128])
        T48 = fd.ops.cast(T47, dtype=F)
        T49 = fd.ops.sum(T48, dims=[2], keepdim=False, dtype=DataType.Null)
        T50 = fd.ops.cast(T49, dtype=B)
        T51 = fd.ops.broadcast_in_dim(T50, shape=[b, 8, 1, s, 128], broadcast_dims=[0, 1, 3, 4])
        T52 = fd.ops.full(shape=[b, 32, s, 128], fill_value=S6, dtype=B)
        T53 = fd.ops.reshape(T52, new_shape=[b, 8, 4, s, 128])
        T54 = fd.ops.cast(T53, dtype=F)
        T55 = fd.ops.sum(T54, dims=[2], keepdim=False, dtype=DataType.Null)
        T56 = fd.ops.cast(T55, dtype=B)
        T57 = fd.ops.broadcast_in_dim(T56, shape=[b, 8, 1, s, 128], broadcast_dims=[0, 1, 3, 4])
        T58 = fd.ops.cat([T28, T51, T57], dim=2)
        T59 = fd.ops.permute(T58, dims=[0, 3, 1, 2, 4])
        T60 = fd.ops.reshape(T59, new_shape=[b, s, 6144])
        fd.add_output(T60)
    return fd


def nvfp4_quantize(dtype: DataType, m: int, n: int) -> FusionDefinition:
    """sample_fusions/seed004_nvfp4_quantize.py (bf16 [32, 128], global scale)."""
    del m, n
    with FusionDefinition() as fd:
        T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=dtype, is_cpu=False)
        T1 = fd.define_tensor(shape=[], contiguity=[], dtype=DataType.Float, is_cpu=False)
        T2, T3 = fd.ops.nv_block_quantize(T0, global_scale=T1, swizzle_scales=False, block_size=16,
                                          dtype=DataType.Float4_e2m1fn)
        fd.add_output(T2)
        fd.add_output(T3)
    return fd


def nvfp4_quantize_swizzled(dtype: DataType, m: int, n: int) -> FusionDefinition:
    """sample_fusions/seed004_nvfp4_quantize_swizzled.py (fp32 [256, 128], static, no global scale)."""
    with FusionDefinition() as fd:
        T0 = fd.define_tensor(shape=[m, n], contiguity=[True, True], dtype=dtype, is_cpu=False)
        T1, T2 = fd.ops.nv_block_quantize(T0, swizzle_scales=True, block_size=16, dtype=DataType.Float4_e2m1fn)
        fd.add_output(T1)
        fd.add_output(T2)
    return fd


def transpose(dtype: DataType, m: int, n: int) -> FusionDefinition:
    """sample_fusions/transpose.py (fp32 [64, 96] and [96, 64]); a narrower dtype is computed in float."""
    del m, n
    with FusionDefinition() as fd:
        T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=dtype, is_cpu=False)
        T1 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=dtype, is_cpu=False)
        narrow = dtype != DataType.Float
        X = fd.ops.cast(T0, dtype=DataType.Float) if narrow else T0
        Y = fd.ops.cast(T1, dtype=DataType.Float) if narrow else T1
        T2 = fd.ops.permute(X, dims=[1, 0])
        S3 = fd.define_scalar(2.0, dtype=DataType.Double)
        T4 = fd.ops.mul(T2, S3)
        T5 = fd.ops.add(T4, Y)
        fd.add_output(fd.ops.cast(T5, dtype=dtype) if narrow else T5)
    return fd


# ---- hand-written torch twins (torch eager; what torch.compile compiles) -------------------------

def torch_gelu_bias(x: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    y = x.float() + b.float()
    return (y * (torch.erf(y * 0.7071067811865476) + 1.0) * 0.5).to(x.dtype)


def torch_rms_norm(x: torch.Tensor, w: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    xf = x.float()
    rstd = torch.rsqrt((xf * xf).mean(dim=1) + 1e-6)
    return (xf * rstd[:, None] * w.float()).to(x.dtype), rstd


def torch_layer_norm(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> tuple[torch.Tensor, ...]:
    xf = x.float()
    var, mean = torch.var_mean(xf, dim=1, correction=0)
    rstd = torch.rsqrt(var + 1e-5)
    y = (xf - mean[:, None]) * rstd[:, None] * w.float() + b.float()
    return y.to(x.dtype), mean, rstd


def torch_softmax(x: torch.Tensor) -> torch.Tensor:
    xf = x.float()
    e = torch.exp(xf - xf.amax(dim=1, keepdim=True))
    return (e / e.sum(dim=1, keepdim=True)).to(x.dtype)


def torch_inner_outer(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    t4 = x + x[0].sum(dim=1)[None, :, None]
    return t4, t4[0].sum(dim=0)


def torch_outer_sum(x: torch.Tensor) -> torch.Tensor:
    return x.float().sum(dim=0).to(x.dtype)


def torch_rope_bwd(cos: torch.Tensor, gq: torch.Tensor, gk: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    b, s = gq.shape[0], gq.shape[2]
    c = cos.float()[:, None]
    sn = sin.float()[:, None]

    def grad(g: torch.Tensor) -> torch.Tensor:
        gf = g.float()
        t = (gf * sn).to(torch.bfloat16)
        rot = torch.cat([t[..., 64:], -t[..., :64]], dim=-1).float()
        return (gf * c + rot).to(torch.bfloat16)

    dq = grad(gq).view(b, 8, 4, s, 128)
    dk = grad(gk).view(b, 8, 4, s, 128).float().sum(dim=2, keepdim=True).to(torch.bfloat16)
    dv = torch.zeros_like(dk)
    return torch.cat([dq, dk, dv], dim=2).permute(0, 3, 1, 2, 4).reshape(b, s, 6144)


_FP4_STEPS = ((0.25, False), (0.75, True), (1.25, False), (1.75, True), (2.5, False), (3.5, True), (5.0, False))


def _nvfp4(x: torch.Tensor, g: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor]:
    m, k = x.shape
    blocks = x.float().view(m, k // 16, 16)
    s = blocks.abs().amax(dim=-1) / 6.0
    if g is not None:
        s = s * g
    scales = s.clamp(2.0**-6, 448.0).to(torch.float8_e4m3fn)
    denom = scales.float() if g is None else scales.float() / g
    v = (blocks / denom[..., None]).clamp(-6.0, 6.0)
    a = v.abs()
    code = torch.zeros_like(a, dtype=torch.uint8)
    for t, up in _FP4_STEPS:
        code = code + (a >= t if up else a > t).to(torch.uint8)
    code = code | (torch.signbit(v).to(torch.uint8) << 3)
    code = code.view(m, k // 2, 2)
    packed = code[..., 0] | (code[..., 1] << 4)
    return packed, scales


def torch_nvfp4_quantize(x: torch.Tensor, g: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """fp4 codes packed two a byte (uint8 [m, k/2]) and e4m3 scales [m, k/16]."""
    return _nvfp4(x, g)


def torch_nvfp4_quantize_swizzled(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """As above, the scales in the 128x4 swizzle [m/128, k/64, 32, 4, 4], returned as [m, k/16]."""
    packed, scales = _nvfp4(x, None)
    m, c = scales.shape
    sw = scales.view(m // 128, 4, 32, c // 4, 4).permute(0, 3, 2, 1, 4).contiguous().view(m, c)
    return packed, sw


def torch_transpose(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return (x.t().float() * 2.0 + y.float()).to(y.dtype)


# ---- inputs ---------------------------------------------------------------------------------------

def _randn(shape: tuple[int, ...], dtype: torch.dtype, device: str, gen: torch.Generator) -> torch.Tensor:
    """Fresh normal values: non-zero (a zero has probability ~0 and rounds away rarely)."""
    return torch.randn(shape, dtype=torch.float32, device=device, generator=gen).to(dtype)


def _generator(device: str, seed: int) -> torch.Generator:
    return torch.Generator(device=device).manual_seed(seed)


@dataclass
class BenchFusion:
    """One benchmark fusion: how to define it, make inputs, and compute it by hand in torch."""

    name: str
    shape: str  # for the table: dtype and sizes
    build: Callable[[], FusionDefinition]
    make_inputs: Callable[[str, int], list[Any]]  # (device, seed) -> inputs
    torch_fn: Callable[..., Any] | None
    sample: str  # the bundled sample the definition repeats
    notes: list[str] = field(default_factory=list)


def _inputs_2d(m: int, n: int, dtype: torch.dtype, vectors: int = 0, vec_dtype: torch.dtype | None = None):
    def make(device: str, seed: int) -> list[Any]:
        gen = _generator(device, seed)
        xs = [_randn((m, n), dtype, device, gen)]
        xs += [_randn((n,), vec_dtype or dtype, device, gen) for _ in range(vectors)]
        return xs
    return make


def _inputs_inner_outer(n: int):
    def make(device: str, seed: int) -> list[Any]:
        gen = _generator(device, seed)
        return [_randn((n * n,), torch.float32, device, gen).as_strided((1, n, n), (n, n, 1))]
    return make


def _inputs_rope(s: int, b: int):
    def make(device: str, seed: int) -> list[Any]:
        gen = _generator(device, seed)
        bf = torch.bfloat16
        return [_randn((1, s, 128), bf, device, gen), _randn((b, 32, s, 128), bf, device, gen),
                _randn((b, 32, s, 128), bf, device, gen), _randn((1, s, 128), bf, device, gen)]
    return make


def _inputs_nvfp4(m: int, n: int, dtype: torch.dtype, global_scale: bool):
    def make(device: str, seed: int) -> list[Any]:
        gen = _generator(device, seed)
        xs = [_randn((m, n), dtype, device, gen)]
        if global_scale:
            xs.append(torch.full((), 200.0, dtype=torch.float32, device=device))
        return xs
    return make


def _inputs_transpose(m: int, n: int, dtype: torch.dtype):
    def make(device: str, seed: int) -> list[Any]:
        gen = _generator(device, seed)
        return [_randn((m, n), dtype, device, gen), _randn((n, m), dtype, device, gen)]
    return make


FULL_SIZES = {
    "gelu_bias": (8192, 8192), "rms_norm": (16384, 4096), "layer_norm": (8192, 4096), "softmax": (16384, 4096),
    "inner_outer": (4096,), "outer_sum": (32768, 4096), "rope_bwd": (2, 8192), "nvfp4": (8192, 8192),
    "nvfp4_swizzled": (8192, 8192), "transpose": (8192, 8192),
}
SMALL_SIZES = {
    "gelu_bias": (64, 96), "rms_norm": (32, 256), "layer_norm": (32, 256), "softmax": (32, 200),
    "inner_outer": (64,), "outer_sum": (128, 64), "rope_bwd": (2, 16), "nvfp4": (128, 128),
    "nvfp4_swizzled": (256, 128), "transpose": (64, 96),
}


def benchmark_fusions(scale: str = "full") -> list[BenchFusion]:
    """The issue's benchmark fusions; scale "full" (the issue's sizes) or "small" (unit tests)."""
    z = FULL_SIZES if scale == "full" else SMALL_SIZES
    bf, f32 = torch.bfloat16, torch.float32

    def dims(name: str) -> str:
        return "[" + ", ".join(str(d) for d in z[name]) + "]"

    g, r, ln, sm = z["gelu_bias"], z["rms_norm"], z["layer_norm"], z["softmax"]
    (io,), os_, (rb, s), q, qs, t = z["inner_outer"], z["outer_sum"], z["rope_bwd"], z["nvfp4"], z["nvfp4_swizzled"], \
        z["transpose"]
    return [
        BenchFusion("gelu_bias", f"bf16 {dims('gelu_bias')}", lambda: gelu_bias(BF16, *g),
                    _inputs_2d(*g, bf, vectors=1), torch_gelu_bias, "gelu_bias.py"),
        BenchFusion("rms_norm", f"bf16 {dims('rms_norm')}", lambda: rms_norm(BF16, *r),
                    _inputs_2d(*r, bf, vectors=1), torch_rms_norm, "rms_norm.py"),
        BenchFusion("layer_norm", f"fp32 {dims('layer_norm')}", lambda: layer_norm(F32, *ln),
                    _inputs_2d(*ln, f32, vectors=2), torch_layer_norm, "layer_norm.py"),
        BenchFusion("softmax", f"bf16 {dims('softmax')}", lambda: softmax(BF16, *sm),
                    _inputs_2d(*sm, bf), torch_softmax, "softmax.py"),
        BenchFusion("inner_outer", f"fp32 [1, {io}, {io}]", lambda: inner_outer(io),
                    _inputs_inner_outer(io), torch_inner_outer, "seed001_inner_outer_alloc.py"),
        BenchFusion("outer_sum", f"fp32 {dims('outer_sum')}", lambda: outer_sum(F32, *os_),
                    _inputs_2d(*os_, f32), torch_outer_sum, "outer_reduction.py"),
        BenchFusion("rope_bwd", f"bf16 B={rb} S={s}", lambda: rope_bwd(s, rb),
                    _inputs_rope(s, rb), torch_rope_bwd, "seed003_rope_bwd.py (batch axis added)"),
        BenchFusion("nvfp4", f"bf16 {dims('nvfp4')}", lambda: nvfp4_quantize(BF16, *q),
                    _inputs_nvfp4(*q, bf, True), torch_nvfp4_quantize, "seed004_nvfp4_quantize.py"),
        BenchFusion("nvfp4_swizzled", f"bf16 {dims('nvfp4_swizzled')}",
                    lambda: nvfp4_quantize_swizzled(BF16, *qs), _inputs_nvfp4(*qs, bf, False),
                    torch_nvfp4_quantize_swizzled, "seed004_nvfp4_quantize_swizzled.py"),
        BenchFusion("transpose", f"bf16 {dims('transpose')}", lambda: transpose(BF16, *t),
                    _inputs_transpose(*t, bf), torch_transpose, "transpose.py"),
        # The sample itself (batch 1): the issue asks for B=2; this row is run last, if time is left.
        BenchFusion("rope_bwd_b1", f"bf16 B=1 S={s}", lambda: rope_bwd(s, 1),
                    _inputs_rope(s, 1), torch_rope_bwd, "seed003_rope_bwd.py"),
    ]
