"""Every bundled sample fusion loads, evaluates with the reference on CPU, and matches an
independent torch computation written here (nvfp4 results byte for byte against the
formulas of the issue, not against engine.nvfp4)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
import torch.nn.functional as F  # noqa: N812 - torch's own alias

from engine import DataType, FusionDefinition, ParallelType, dumps_fusion, load_fusion

SAMPLES = Path(__file__).resolve().parents[2] / "sample_fusions"


def run(name: str, seed: int = 0) -> tuple[FusionDefinition, list, list]:
    fd = load_fusion(SAMPLES / name)
    xs = fd.example_inputs(device="cpu", seed=seed)
    outs = fd.execute(xs)
    assert len(outs) == len(fd.fusion.outputs)
    return fd, xs, outs


def close_bf16(actual: torch.Tensor, expected: torch.Tensor) -> None:
    assert actual.dtype == expected.dtype
    torch.testing.assert_close(actual.float(), expected.float(), rtol=1.6e-2, atol=1e-2)


# ---- seed 001 ---------------------------------------------------------------------------


def test_seed001_inner_outer():
    fd, (x,), (t4, t6) = run("seed001_inner_outer_alloc.py")
    assert x.stride() == (4096, 4096, 1)
    xd = x.double()
    row = xd[0].sum(dim=1)  # T2: sum over the inner axis
    t4_ref = xd + row.view(1, 4096, 1)
    t6_ref = t4_ref[0].sum(dim=0)
    assert t4.shape == (1, 4096, 4096) and t6.shape == (4096,)
    torch.testing.assert_close(t4.double(), t4_ref, rtol=1e-5, atol=1e-3)
    torch.testing.assert_close(t6.double(), t6_ref, rtol=1e-5, atol=5e-2)


# ---- seed 002 ---------------------------------------------------------------------------


@pytest.mark.parametrize("name, stream_tvs", [
    ("seed002_stream_single_set.py", ["T1"]),
    ("seed002_stream_two_sets.py", ["T1", "T2"]),
    ("seed002_stream_three_sets_disjoint.py", ["T1", "T3"]),
])
def test_seed002_sets(name: str, stream_tvs: list[str]):
    fd, (x,), (y,) = run(name)
    assert torch.equal(y, x)
    # the stream parallelization of seed 002 is replayed on the same tensors
    streamed = sorted(t.short_name for t in fd.fusion.tensors()
                      if t.axis(0).parallel_type == ParallelType.stream)
    assert streamed == stream_tvs
    assert all(c.name == "parallelize" for c in fd.sched.calls)


def test_seed002_stream_names_as_in_seed():
    fd = load_fusion(SAMPLES / "seed002_stream_three_sets_disjoint.py")
    text = str(fd)
    assert "T1_l_float[iStreamIdx2{i0}, iS3{i2}]" in text
    assert "T3_g_float[iStreamIdx6{i0}, iS7{i2}]" in text


def test_seed002_reduction():
    fd, (x,), (y,) = run("seed002_stream_reduction.py")
    torch.testing.assert_close(y, x.sum(dim=2))
    out = fd.fusion.outputs[0]
    assert out.axis(0).parallel_type == ParallelType.stream


def test_seed002_matmul_m():
    fd, (a, b), (c,) = run("seed002_stream_matmul_m.py")
    torch.testing.assert_close(c, a @ b, rtol=1e-4, atol=1e-3)
    assert fd.fusion.outputs[0].axis(0).parallel_type == ParallelType.stream


# ---- seed 003 ---------------------------------------------------------------------------


def _litgpt_rope_backward(cos, gq, gk, sin):
    """qkv.grad of LitGPT's Llama-3 attention front (split, expand, RoPE), by autograd."""
    s = cos.shape[1]
    n_groups, q_per_kv, hs = 8, 4, 128
    qkv = torch.zeros(1, s, n_groups * (q_per_kv + 2) * hs, dtype=torch.float64, requires_grad=True)
    x = qkv.view(1, s, n_groups, q_per_kv + 2, hs).permute(0, 2, 3, 1, 4)
    q, k, v = x.split((q_per_kv, 1, 1), dim=2)
    k = k.expand(1, n_groups, q_per_kv, s, hs)
    q = q.reshape(1, -1, s, hs)
    k = k.reshape(1, -1, s, hs)
    c, sn = cos.double().unsqueeze(1), sin.double().unsqueeze(1)

    def rope(t):
        rotated = torch.cat((-t[..., hs // 2:], t[..., : hs // 2]), dim=-1)
        return t * c + rotated * sn

    torch.autograd.backward([rope(q), rope(k)], [gq.double(), gk.double()])
    return qkv.grad


def test_seed003_rope_bwd_small():
    fd, (cos, gq, gk, sin), (out,) = run("seed003_rope_bwd_small.py")
    assert cos.shape == (1, 16, 128) and gq.shape == (1, 32, 16, 128) and gq.dtype == torch.bfloat16
    assert out.shape == (1, 16, 6144) and out.dtype == torch.bfloat16
    ref = _litgpt_rope_backward(cos, gq, gk, sin)
    # the fusion rounds intermediates to bf16 as Thunder's trace does: bf16-level tolerance
    scale = float(ref.abs().max())
    torch.testing.assert_close(out.double(), ref, rtol=2e-2, atol=2e-2 * scale)
    # the v third of each group gets no gradient: exactly zero
    groups = out.view(1, 16, 8, 6, 128)
    assert bool((groups[:, :, :, 5] == 0).all())


def test_seed003_full_size_is_the_same_fusion():
    big = load_fusion(SAMPLES / "seed003_rope_bwd.py")
    small = load_fusion(SAMPLES / "seed003_rope_bwd_small.py")
    assert dumps_fusion(big).replace("8192", "16") == dumps_fusion(small)
    assert [i.shape for i in big.input_specs] == [(1, 8192, 128), (1, 32, 8192, 128), (1, 32, 8192, 128),
                                                  (1, 8192, 128)]
    text = str(big)
    assert text.count("= full({1, 32, 8192, 128}, __bfloat(0));") == 2
    assert "iS1{8192}" in text


# ---- common samples ----------------------------------------------------------------------


def test_layer_norm():
    _, (x, w, b), (y, mean, rstd) = run("layer_norm.py")
    xf = x.float()
    close_bf16(y, F.layer_norm(xf, (256,), w.float(), b.float(), eps=1e-5).to(torch.bfloat16))
    torch.testing.assert_close(mean, xf.mean(dim=1))
    torch.testing.assert_close(rstd, torch.rsqrt(xf.var(dim=1, unbiased=False) + 1e-5))


def test_rms_norm():
    _, (x, w), (y, r) = run("rms_norm.py")
    xf = x.float()
    rr = torch.rsqrt(xf.pow(2).mean(dim=1, keepdim=True) + 1e-6)
    close_bf16(y, (xf * rr * w.float()).to(torch.bfloat16))
    torch.testing.assert_close(r, rr.squeeze(1))


def test_softmax():
    _, (x,), (y,) = run("softmax.py")
    torch.testing.assert_close(y, torch.softmax(x, dim=1))


def test_gelu_bias():
    _, (x, b), (y,) = run("gelu_bias.py")
    ref = F.gelu(x.float() + b.float()).to(torch.float16)
    torch.testing.assert_close(y, ref, rtol=1e-3, atol=1e-3)


def test_cross_entropy():
    _, (logits, labels), (loss,) = run("cross_entropy.py")
    assert labels.dtype == torch.int64 and 0 <= int(labels.min()) and int(labels.max()) < 100
    assert loss.shape == ()
    torch.testing.assert_close(loss, F.cross_entropy(logits, labels))


def test_transpose():
    _, (x, y), (out,) = run("transpose.py")
    torch.testing.assert_close(out, x.t() * 2 + y)


def test_reshape_chain():
    _, (x, b), (out,) = run("reshape_chain.py")
    ref = (x.reshape(8, 2048) + b).reshape(8, 32, 64).permute(0, 2, 1).relu().reshape(16, 4, 256)
    torch.testing.assert_close(out, ref)


def test_outer_reduction():
    _, (x,), (y,) = run("outer_reduction.py")
    close_bf16(y, x.float().sum(dim=0).to(torch.bfloat16))


# ---- nvfp4: the formulas, written out here ----------------------------------------

E2M1 = torch.tensor([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0])


def e2m1_codes(v: torch.Tensor) -> torch.Tensor:
    """Nearest e2m1 value, ties to the even code; sign in bit 3."""
    d = (v.abs().unsqueeze(-1) - E2M1).abs()
    idx = torch.arange(8)
    cand = d == d.min(dim=-1, keepdim=True).values
    even = torch.where(cand & (idx % 2 == 0), idx, 99).min(dim=-1).values
    first = torch.where(cand, idx, 99).min(dim=-1).values
    code = torch.where(even < 99, even, first).to(torch.uint8)
    return code | (torch.signbit(v).to(torch.uint8) << 3)


def quantize_formula(x: torch.Tensor, gs: float | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """(codes uint8 [.., K], e4m3 scales [.., K/16]) per the issue's BlockQuantizationOp."""
    blocks = x.float().reshape(*x.shape[:-1], x.shape[-1] // 16, 16)
    s = blocks.abs().amax(dim=-1) / 6.0
    if gs is not None:
        s = s * gs
    scales = s.clamp(2.0**-6, 448.0).to(torch.float8_e4m3fn)
    denom = scales.float() if gs is None else scales.float() / gs
    scaled = (blocks / denom.unsqueeze(-1)).clamp(-6.0, 6.0)
    return e2m1_codes(scaled).reshape(x.shape), scales


def unpack(t: torch.Tensor) -> torch.Tensor:
    """Codes of a packed fp4 tensor along its last axis: even index in the low nibble."""
    b = t.view(torch.uint8)
    return torch.stack((b & 0xF, b >> 4), dim=-1).reshape(*b.shape[:-1], b.shape[-1] * 2)


def swizzled_offset(r: torch.Tensor, c: torch.Tensor, k: int) -> torch.Tensor:
    return (r // 128) * (k // 4) * 512 + (c // 4) * 512 + (r % 32) * 16 + ((r % 128) // 32) * 4 + c % 4


def test_seed004_nvfp4_quantize_global_scale():
    _, (x, gs), (q, s) = run("seed004_nvfp4_quantize.py")
    assert gs.shape == () and float(gs) == 200.0
    codes, scales = quantize_formula(x, float(gs))
    assert q.dtype == torch.float4_e2m1fn_x2 and q.shape == (32, 64)
    assert torch.equal(unpack(q), codes)
    assert s.dtype == torch.float8_e4m3fn and s.shape == (32, 8)
    assert torch.equal(s.view(torch.uint8), scales.view(torch.uint8))
    # the check bites: the global scale changes the bytes
    assert not torch.equal(quantize_formula(x)[1].view(torch.uint8), scales.view(torch.uint8))


def test_seed004_nvfp4_quantize_swizzled():
    _, (x,), (q, s) = run("seed004_nvfp4_quantize_swizzled.py")
    codes, scales = quantize_formula(x)
    assert torch.equal(unpack(q), codes)
    m, k = scales.shape  # 256 rows, 8 scale columns
    r = torch.arange(m).unsqueeze(1).expand(m, k)
    c = torch.arange(k).unsqueeze(0).expand(m, k)
    expect = torch.zeros(m * k, dtype=torch.uint8)
    expect[swizzled_offset(r, c, k).flatten()] = scales.view(torch.uint8).flatten()
    assert torch.equal(s.contiguous().view(torch.uint8).flatten(), expect)
    assert not torch.equal(expect, scales.view(torch.uint8).flatten())  # the layout really moves bytes


def layout_formula(scales: torch.Tensor, in_off: list[int], out_off: list[int]) -> torch.Tensor:
    m, k = scales.shape
    g = len(in_off)
    kp = -(-k // 4) * 4
    buf = torch.zeros((m + g * 127) * kp, dtype=torch.uint8)
    stops = in_off[1:] + [m]
    src = scales.view(torch.uint8)
    for a, b, o in zip(in_off, stops, out_off):
        for r in range(a, b):
            lr = r - a
            for c in range(k):
                at = o * kp + (lr // 128) * 128 * kp + (c // 4) * 512 + (lr % 32) * 16 + ((lr % 128) // 32) * 4 + c % 4
                buf[at] = src[r, c]
    return buf.reshape(m + g * 127, kp)


def test_layout_op_bytes():
    """The layout op of seed 000 as a fusion output, byte for byte."""
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.BFloat16)
        ins = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Int32)
        outs = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Int32)
        _, sc = fd.ops.nv_block_quantize(x)
        fd.add_output(sc)
        fd.add_output(fd.ops.preprocess_grouped_matmul_input_sf(sc, ins, outs))
    a = torch.randn(200, 96, generator=torch.Generator().manual_seed(1)).to(torch.bfloat16)
    in_off, out_off = [0, 3, 150], [0, 128, 256]
    scales, buf = fd.execute([a, torch.tensor(in_off, dtype=torch.int32), torch.tensor(out_off, dtype=torch.int32)])
    assert torch.equal(scales.view(torch.uint8), quantize_formula(a)[1].view(torch.uint8))
    expect = layout_formula(quantize_formula(a)[1], in_off, out_off)
    assert buf.shape == (200 + 3 * 127, 8)
    assert torch.equal(buf.contiguous().view(torch.uint8), expect)


def test_seed000_moe_grouped_mm():
    fd, xs, (out,) = run("seed000_moe_layout_op.py")
    a, mat2, scale2, alpha, sizes, in_off, sf_off = xs
    assert mat2.dtype == torch.float4_e2m1fn_x2 and mat2.shape == (2, 32, 128) and mat2.stride() == (4096, 1, 32)
    assert in_off.tolist() == [0, 5] and sf_off.tolist() == [0, 128]
    codes, s1 = quantize_formula(a)
    a_deq = E2M1[(codes & 7).long()] * torch.where((codes & 8) > 0, -1.0, 1.0)
    a_deq = a_deq * s1.float().repeat_interleave(16, dim=1)
    # mat2: [G, K/2, N] packed along K (element 2k in the low nibble)
    b = mat2.view(torch.uint8)
    bcodes = torch.stack((b & 0xF, b >> 4), dim=2).reshape(2, 64, 128)
    b_val = E2M1[(bcodes & 7).long()] * torch.where((bcodes & 8) > 0, -1.0, 1.0)
    expect = torch.zeros(16, 128)
    n, kc = 128, 4
    r = torch.arange(n).unsqueeze(1).expand(n, kc)
    c = torch.arange(kc).unsqueeze(0).expand(n, kc)
    bounds = [(0, 5), (5, 16)]
    for g, (lo, hi) in enumerate(bounds):
        s2 = scale2[g].reshape(-1).view(torch.uint8)[swizzled_offset(r, c, kc)].view(torch.float8_e4m3fn).float()
        b_g = b_val[g] * s2.repeat_interleave(16, dim=1).t()
        expect[lo:hi] = (a_deq[lo:hi] @ b_g) * alpha[g]
        assert sizes[g].tolist() == [hi - lo, 128, 64]
    assert out.dtype == torch.bfloat16 and out.shape == (16, 128)
    close_bf16(out, expect.to(torch.bfloat16))
