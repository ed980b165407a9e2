"""RNG ops (uniform, normal, rand_like, randn_like): Philox4x32-10 against its published
known-answer vectors, the reference's numbers (range, moments, determinism), the generated
kernel under the emulator against the reference (uniform bit for bit in every float type),
definition errors, and a repro script read, written back and read again."""


import numpy as np
import pytest
import torch

from engine import DataType, FusionDefinition, compile_fusion, dumps_fusion, loads_fusion
from engine.errors import FusionDefinitionError
from engine.philox import draw, philox
from engine.reference import evaluate
from tests.emulation import needs_gxx


@pytest.mark.parametrize("counter, key, expected", [
    ([0, 0, 0, 0], [0, 0], [0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8]),
    ([0xFFFFFFFF] * 4, [0xFFFFFFFF] * 2, [0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD]),
    ([0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344], [0xA4093822, 0x299F31D0],
     [0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1]),
])
def test_philox_matches_the_random123_known_answers(counter, key, expected):
    seed = key[0] | key[1] << 32
    offset = counter[0] | counter[1] << 32
    sub = np.array([counter[2] | counter[3] << 32], dtype=np.uint64)
    assert [int(w[0]) for w in philox(seed, sub, offset)] == expected


@pytest.mark.parametrize("double", [False, True])
def test_element_n_takes_component_n_mod_m_of_block_n_div_m(double):
    """draw() computes each block once and interleaves its components; element by element
    that is word n % 4 of philox(seed, n // 4, offset) (double: the word pair n % 2 of block
    n // 2), across several of draw's chunks and a partial block at the end."""
    numel = 4 * 65536 * 2 + 7
    m = 2 if double else 4
    n = np.arange(numel, dtype=np.uint64)
    words = np.stack(philox(99, n // np.uint64(m), 5)).astype(np.uint64)  # [4, numel]
    comp = (n % np.uint64(m)).astype(np.int64)
    if double:
        lo = np.take_along_axis(words, (2 * comp)[None], 0)[0]
        hi = np.take_along_axis(words, (2 * comp + 1)[None], 0)[0]
        z = (lo ^ (hi << np.uint64(21))).astype(np.float64) * 2.0**-53 + 2.0**-54
        want = -1.0 + 3.0 * np.where(z == 1.0, 0.0, z)
    else:
        word = np.take_along_axis(words, comp[None], 0)[0]
        u = word.astype(np.float32) * np.float32(2.0**-32) + np.float32(2.0**-33)
        want = np.float32(-1.0) + np.float32(3.0) * np.where(u == np.float32(1.0), np.float32(0.0), u)
    got = draw("uniform", numel, 99, 5, double, -1.0, 2.0)
    assert got.dtype == want.dtype and np.array_equal(got, want)


def _fusion(dist: str, dtype: DataType, shape: list[int], seeded: bool = True) -> FusionDefinition:
    with FusionDefinition() as fd:
        seed = fd.define_scalar(None, dtype=DataType.Int) if seeded else None
        offset = fd.define_scalar(None, dtype=DataType.Int) if seeded else None
        op = fd.ops.uniform if dist == "uniform" else fd.ops.normal
        a, b = (-2.0, 3.0) if dist == "uniform" else (1.5, 0.5)
        t = op(a, b, shape=shape, rng_seed=seed, rng_offset=offset, dtype=dtype)
        fd.add_output(t)
    return fd


def test_uniform_draws_lie_in_the_range_with_the_right_moments():
    (u,) = evaluate(_fusion("uniform", DataType.Float, [256, 256]).fusion, [7, 0])
    assert u.min() >= -2.0 and u.max() < 3.0
    assert abs(u.mean().item() - 0.5) < 0.02 and abs(u.var().item() - 25 / 12) < 0.05


def test_normal_draws_have_the_right_moments():
    (z,) = evaluate(_fusion("normal", DataType.Double, [256, 256]).fusion, [7, 0])
    assert z.dtype == torch.float64
    assert abs(z.mean().item() - 1.5) < 0.01 and abs(z.std().item() - 0.5) < 0.01


def test_the_stream_is_fixed_by_seed_and_offset():
    fusion = _fusion("uniform", DataType.Float, [8, 32]).fusion
    (a,), (b,), (c,), (d,) = (evaluate(fusion, xs) for xs in ([1, 0], [1, 0], [1, 1], [2, 0]))
    assert torch.equal(a, b)
    assert not torch.equal(a, c) and not torch.equal(a, d)


def test_without_seed_each_op_of_a_fusion_has_its_own_stream():
    with FusionDefinition() as fd:
        t0 = fd.ops.uniform(0.0, 1.0, shape=[4, 16], dtype=DataType.Float)
        t1 = fd.ops.uniform(0.0, 1.0, shape=[4, 16], dtype=DataType.Float)
        fd.add_output(t0)
        fd.add_output(t1)
    a, b = evaluate(fd.fusion, [])
    assert not torch.equal(a, b)
    assert "rng_id = 1" in str(fd.fusion)


@needs_gxx
@pytest.mark.parametrize("dtype", [DataType.Float, DataType.Double, DataType.Half, DataType.BFloat16])
@pytest.mark.parametrize("dist", ["uniform", "normal"])
def test_kernel_draws_the_reference_numbers(dist, dtype):
    fd = _fusion(dist, dtype, [5, 37])  # 185 elements: a partial Philox block at the end
    xs = [12345, 3]
    (out,) = compile_fusion(fd, xs).run(xs, backend="emulate")
    (ref,) = evaluate(fd.fusion, xs)
    if dist == "uniform":
        assert torch.equal(out, ref)
    else:  # logf/sinf/cosf differ between libm and numpy in the last bits
        torch.testing.assert_close(out.double(), ref.double(), rtol=1e-5 if dtype.bits >= 32 else 1e-2, atol=1e-5)


def dropout_fusion() -> FusionDefinition:
    """Thunder's dropout: a bf16 input, runtime seed and offset, keep probability 0.9."""
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.BFloat16)
        seed = fd.define_scalar(None, dtype=DataType.Int)
        offset = fd.define_scalar(None, dtype=DataType.Int)
        r = fd.ops.rand_like(x, rng_seed=seed, rng_offset=offset, dtype=DataType.Float)
        keep = fd.ops.lt(r, 0.9)
        y = fd.ops.mul(fd.ops.where(keep, x, 0.0), 1.0 / 0.9)
        fd.add_output(fd.ops.cast(y, DataType.BFloat16))
        fd.add_output(keep)
    return fd


@needs_gxx
def test_dropout_mask_matches_the_reference_exactly():
    fd = dropout_fusion()
    xs = [torch.randn(64, 96).bfloat16(), 2024, 8]
    cf = compile_fusion(fd, xs)
    assert [s.scheduler for s in cf.segments] == ["pointwise"]
    outs = cf.run(xs, backend="emulate")
    refs = evaluate(fd.fusion, xs)
    assert all(torch.equal(o, r) for o, r in zip(outs, refs))
    assert 0.85 < refs[1].float().mean().item() < 0.95


@pytest.mark.parametrize("build, why", [
    (lambda fd, s: fd.ops.uniform(0.0, 1.0, shape=[2], rng_seed=s, dtype=DataType.Float),
     "rng_seed and rng_offset must be given together"),
    (lambda fd, s: fd.ops.uniform(0.0, 1.0, shape=[2], dtype=DataType.Int),
     "dtype must be float, double, half or bfloat16, got int64_t"),
    (lambda fd, s: fd.ops.normal(0.0, 1.0, shape=[2], rng_seed=1.5, rng_offset=0, dtype=DataType.Float),
     "rng_seed must be an int or an integer Scalar"),
    (lambda fd, s: fd.ops.rand_like(3.0), "rand_like: the argument must be a tensor"),
])
def test_bad_rng_definitions_name_the_problem(build, why):
    with pytest.raises(FusionDefinitionError, match=why), FusionDefinition() as fd:
        build(fd, fd.define_scalar(None, dtype=DataType.Int))


SCRIPT = '''import torch
from nvfuser import FusionDefinition, DataType

def nvfuser_fusion_id3(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float, is_cpu=False)
    S1 = fd.define_scalar(None, dtype=DataType.Int)
    S2 = fd.define_scalar(None, dtype=DataType.Int)
    T3 = fd.ops.randn_like(T0, rng_seed=S1, rng_offset=S2)
    T4 = fd.ops.normal(0.0, 2.0, shape=[4, 8], rng_seed=S1, rng_offset=S2, dtype=DataType.Float)
    T5 = fd.ops.add(T3, T4)
    fd.add_output(T5)

with FusionDefinition() as fd:
    nvfuser_fusion_id3(fd)

inputs = [
    torch.randn((4, 8), dtype=torch.float32, device='cuda:0'),
    11,
    4,
]
fd.execute(inputs)
'''


def test_rng_script_loads_and_round_trips():
    fd = loads_fusion(SCRIPT, "rng.py")
    again = loads_fusion(dumps_fusion(fd), "again.py")
    assert str(again.fusion) == str(fd.fusion)
    assert "rng_normal({i0, i2}, float, double(0), double(1), rng_seed = i3, rng_offset = i4)" in str(fd.fusion)
    xs = fd.example_inputs(seed=0)
    assert xs[1:] == [11, 4]
    (a,), (b,) = evaluate(fd.fusion, xs), evaluate(again.fusion, xs)
    assert torch.equal(a, b)


@needs_gxx
def test_a_size_one_draw_broadcast_by_its_consumer_is_one_number():
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float)
        r = fd.ops.normal(0.5, 2.0, [1], rng_seed=5, rng_offset=12, dtype=DataType.Float)
        fd.add_output(fd.ops.add(x, r))
    xs = [torch.zeros(17)]
    (out,) = compile_fusion(fd, xs).run(xs, backend="emulate")
    (ref,) = evaluate(fd.fusion, xs)
    torch.testing.assert_close(out, ref)
    assert torch.all(out == out[0])
