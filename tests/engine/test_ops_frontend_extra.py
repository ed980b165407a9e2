"""nvFuser python-frontend ops that repro scripts call and that compose from, or extend, the
engine's pointwise table: erfcinv, isreal, real/imag, nextafter, gcd, logical_right_shift,
add_alpha/sub_alpha, triu, bmm, at; the keep_dim spelling, add_output(stride_order=), and
fusions without inputs. Values against torch and the reference, kernels through the emulator;
what the engine lacks is refused naming the op."""

from __future__ import annotations

import re

import pytest
import torch

from engine import DataType, FusionDefinition
from engine.compile import compile_fusion
from engine.errors import FusionDefinitionError, FusionFileError
from engine.frontend.pyread import loads_fusion
from engine.frontend.pywrite import dumps_fusion
from engine.reference import evaluate
from tests.emulation import needs_gxx


def _emulated(fd: FusionDefinition, xs: list) -> list[torch.Tensor]:
    """Outputs of the emulated kernels, checked against the reference evaluator."""
    outs = compile_fusion(fd, xs).run(xs, backend="emulate")
    refs = evaluate(fd.fusion, xs)
    for o, r in zip(outs, refs):
        assert o.dtype == r.dtype and o.shape == r.shape
        torch.testing.assert_close(o, r, rtol=1e-6, atol=1e-6, equal_nan=True)
    return outs


def _float_fusion() -> FusionDefinition:
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
        t1 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
        s = fd.define_scalar(0.5, dtype=DataType.Double)
        fd.add_output(fd.ops.erfcinv(t0))
        fd.add_output(fd.ops.isreal(t0))
        fd.add_output(fd.ops.real(t0))
        fd.add_output(fd.ops.nextafter(t0, t1))
        fd.add_output(fd.ops.add_alpha(t0, t1, s))
        fd.add_output(fd.ops.sub_alpha(t0, t1, s))
    return fd


@needs_gxx
def test_float_ops_match_torch_through_the_emulator():
    fd = _float_fusion()
    x = torch.rand(6, 33) * 1.98 + 0.01  # erfcinv's domain is (0, 2)
    y = torch.randn(6, 33)
    erfcinv, isreal, real, nxt, add_a, sub_a = _emulated(fd, [x, y])
    torch.testing.assert_close(erfcinv, torch.erfinv(1 - x.double()).float())
    assert isreal.dtype == torch.bool and isreal.all()
    assert torch.equal(real, x)
    assert torch.equal(nxt, torch.nextafter(x, y))
    torch.testing.assert_close(add_a, torch.add(x, y, alpha=0.5))
    torch.testing.assert_close(sub_a, torch.sub(x, y, alpha=0.5))


def test_printed_names():
    text = _float_fusion().fusion.print_math()
    assert "= erfcinvf(T0_g_float" in text
    assert "= isreal(T0_g_float" in text
    assert "= nextafterf(T0_g_float" in text


def _logical_right_shift(a: int, b: int, bits: int) -> int:
    if not 0 <= b < bits:
        return 0
    u = (a % (1 << bits)) >> b
    return u - (1 << bits) if u >= 1 << (bits - 1) else u


@needs_gxx
@pytest.mark.parametrize("dtype", [DataType.Int, DataType.Int32])
def test_integer_ops_match_through_the_emulator(dtype):
    bits = 64 if dtype == DataType.Int else 32
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=dtype)
        t1 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=dtype)
        fd.add_output(fd.ops.gcd(t0, t1))
        fd.add_output(fd.ops.logical_right_shift(t0, t1))
    tdt = torch.int64 if bits == 64 else torch.int32
    lo = -(1 << (bits - 1))
    a = [12, -18, 0, 7, lo, -1, -1, 1 << 20, -5, 100, lo, 3]
    b = [18, 12, 5, 0, 3, 1, bits - 1, 4, bits, -2, 0, 1]
    x, y = torch.tensor(a, dtype=tdt), torch.tensor(b, dtype=tdt)
    gcd, shr = _emulated(fd, [x, y])
    assert torch.equal(gcd, torch.gcd(x, y))
    assert shr.tolist() == [_logical_right_shift(p, q, bits) for p, q in zip(a, b)]


@needs_gxx
def test_triu_matches_torch():
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1, -1, -1], contiguity=[True, True, True], dtype=DataType.Half)
        fd.add_output(fd.ops.triu(t0))
        fd.add_output(fd.ops.triu(t0, diagonal=-1))
        fd.add_output(fd.ops.triu(t0, 2))
    x = torch.randn(3, 7, 5).half()
    o0, o1, o2 = _emulated(fd, [x])
    assert torch.equal(o0, torch.triu(x)) and torch.equal(o1, torch.triu(x, -1))
    assert torch.equal(o2, torch.triu(x, 2))


def test_triu_of_bool_and_int_on_the_reference():
    for dtype, tdt in ((DataType.Bool, torch.bool), (DataType.Int, torch.int64)):
        with FusionDefinition() as fd:
            t0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=dtype)
            fd.add_output(fd.ops.triu(t0, 1))
        x = torch.randint(0, 3, (4, 6)).to(tdt)
        (out,) = fd.execute([x])
        assert out.dtype == tdt and torch.equal(out, torch.triu(x, 1))


def test_bmm_matches_torch():
    with FusionDefinition() as fd:
        a = fd.define_tensor(shape=[-1, -1, -1], contiguity=[True, True, True], dtype=DataType.Float)
        b = fd.define_tensor(shape=[-1, -1, -1], contiguity=[True, True, True], dtype=DataType.Float)
        fd.add_output(fd.ops.bmm(a, b))
    x, y = torch.randn(2, 4, 6), torch.randn(2, 6, 5)
    (out,) = fd.execute([x, y])
    torch.testing.assert_close(out, torch.bmm(x, y))


def test_complex_real_and_imag_on_the_reference():
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.ComplexFloat)
        fd.add_output(fd.ops.real(t0))
        fd.add_output(fd.ops.imag(t0))
    z = torch.randn(5, dtype=torch.complex64)
    re, im = fd.execute([z])
    assert re.dtype == torch.float32 and torch.equal(re, z.real) and torch.equal(im, z.imag)


@pytest.mark.parametrize("build, message", [
    (lambda fd, f, i, h: fd.ops.imag(f), "imag: T0 is float, not complex"),
    (lambda fd, f, i, h: fd.ops.nextafter(h, h), "nextafter: operands must be float or double, got __half"),
    (lambda fd, f, i, h: fd.ops.nextafter(i, i), "nextafter: operands must be float or double, got int64_t"),
    (lambda fd, f, i, h: fd.ops.gcd(f, f), "gcd: operands must be integer, got float"),
    (lambda fd, f, i, h: fd.ops.gcd(fd.ops.isnan(f), fd.ops.isnan(f)), "gcd: operands must be integer, got bool"),
    (lambda fd, f, i, h: fd.ops.logical_right_shift(f, 1), "logical_right_shift: operands must be integer"),
    (lambda fd, f, i, h: fd.ops.triu(fd.ops.sum(f, dims=[1])), "triu: T3 must have at least 2 axes, got 1"),
    (lambda fd, f, i, h: fd.ops.triu(f, 0.5), "triu: diagonal must be an integer"),
    (lambda fd, f, i, h: fd.ops.bmm(f, f), "bmm: mat1 T0 must be 3-D, got rank 2"),
    (lambda fd, f, i, h: fd.ops.at(fd.ops.shape(f), 2), "at: index 2 is out of range for a vector of 2"),
    (lambda fd, f, i, h: fd.add_output(f, stride_order=[0, 0]), "add_output: stride_order [0, 0] must be a "
                                                                 "permutation of 0..1"),
])
def test_refusals_name_the_op(build, message):
    with FusionDefinition() as fd:
        f = fd.define_tensor(shape=[-1, -1], dtype=DataType.Float)
        i = fd.define_tensor(shape=[-1, -1], dtype=DataType.Int)
        h = fd.define_tensor(shape=[-1, -1], dtype=DataType.Half)
        with pytest.raises(FusionDefinitionError) as e:
            build(fd, f, i, h)
    assert message in str(e.value)


SCRIPT = """\
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float, is_cpu=False, stride_order=[1, 0])
    V1 = fd.ops.shape(T0)
    S2 = fd.ops.at(V1, index=1)
    T3 = fd.ops.sum(T0, dims=[0], keep_dim=True, dtype=DataType.Null)
    T4 = fd.ops.triu(T0, diagonal=1)
    T5 = fd.ops.gcd(fd.ops.cast(T0, dtype=DataType.Int), 6)
    T6 = fd.ops.reshape(T4, new_shape=[S2, -1])
    fd.add_output(T3)
    fd.add_output(T5)
    fd.add_output(T6, stride_order=[0, 1])


with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((4, 6), dtype=torch.float32, device='cuda:0'),
]
fd.execute(inputs)
"""


@needs_gxx
def test_repro_script_with_new_forms_emulates_and_round_trips():
    fd = loads_fusion(SCRIPT, "repro.py")
    xs = fd.example_inputs(seed=0)
    t3, t5, t6 = _emulated(fd, xs)
    (x,) = xs
    assert torch.allclose(t3, x.sum(0, keepdim=True))
    assert torch.equal(t5, torch.gcd(x.long(), torch.tensor(6)))
    assert torch.equal(t6, torch.triu(x, 1).reshape(6, -1)) and t6.stride() == (1, 6)
    again = loads_fusion(dumps_fusion(fd), "again.py")
    assert str(again.fusion) == str(fd.fusion)


def test_a_fusion_without_inputs_has_an_empty_input_list():
    text = SCRIPT.split("def ")[0] + (
        "def nvfuser_fusion_id0(fd : FusionDefinition) -> None :\n"
        "    T0 = fd.ops.iota(10, None, None, DataType.Int)\n"
        "    fd.add_output(T0)\n\n\n"
        "with FusionDefinition() as fd:\n    nvfuser_fusion_id0(fd)\n\ninputs = [\n]\nfd.execute(inputs)\n")
    fd = loads_fusion(text, "iota.py")
    assert fd.example_inputs() == []
    (out,) = compile_fusion(fd, []).run([], backend="reference")
    assert torch.equal(out, torch.arange(10))


@pytest.mark.parametrize("call, why", [
    ("fd.ops.rand(T0)", "not an nvFuser op; random tensors come from fd.ops.uniform"),
    ("fd.ops.index_add(T0, 0, T0, T0)", "not an nvFuser op; index_put_accumulate or scatter adds into a tensor"),
    ("fd.ops.embedding_bwd(T0, T0)", "not an nvFuser op; index_put_accumulate builds an embedding's gradient"),
    ("fd.ops.scaled_mm(T0, T0, T0, T0)", "nvFuser's block-scaled matmul (fp8/fp4 operands with block scales) "
                                         "is not supported by this engine"),
    ("fd.ops.complex(T0, T0)", "complex tensors are not supported by this engine's code generator"),
    ("fd.ops.grouped_mm(T0, T0, T0, T0, T0)", "grouped_mm: the scaled form (scale1, scale2, alpha, bias, beta, "
                                              "dtype, output block scales) is not supported"),
])
def test_unsupported_ops_are_refused_by_name(call, why):
    name = call.split("(")[0].split(".")[-1]
    text = (SCRIPT.split("    V1 =")[0] + f"    T1 = {call}\n    fd.add_output(T1)\n")
    with pytest.raises(FusionFileError) as e:
        loads_fusion(text, "bad.py")
    assert f"bad.py:7: fd.ops.{name}: {why}" in str(e.value)
    if name != "grouped_mm":  # the Python API names the same reason
        with FusionDefinition() as fd, pytest.raises(AttributeError, match=re.escape(f"fd.ops.{name}: {why}")):
            getattr(fd.ops, name)


OPERATORS = """\
from nvfuser import FusionDefinition, DataType

with FusionDefinition() as fd:
    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
    T1 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Int)
    S2 = T0.size(0) * T0.size(1)
    T3 = -T0 * 2.0 + T0 / 4
    T4 = fd.ops.where(T0 > 0.5, abs(T3) ** 2, abs(-1))
    T5 = (T1 & 6) | (T1 << 1) ^ ~T1
    T6 = fd.ops.reshape(T0, [S2])
    fd.add_output(T4)
    fd.add_output(T5)
    fd.add_output(T6)
"""


def test_python_operators_on_tensors_and_scalars_are_the_ops_they_stand_for():
    """nvFuser's Tensor and Scalar take Python operators (and abs(), their __abs__); a file
    using them loads as the fd.ops calls they stand for (`/` is div, as in nvFuser) and
    saves in that spelling. abs() of a plain number is Python's."""
    fd = loads_fusion(OPERATORS, "ops.py")
    x = torch.randn(3, 4)
    i = torch.randint(-8, 8, (3, 4))
    t4, t5, t6 = compile_fusion(fd, [x, i]).run([x, i], backend="reference")
    t3 = -x * 2.0 + x / 4
    assert torch.allclose(t4, torch.where(x > 0.5, t3.abs() ** 2, torch.ones(()))) and torch.equal(t6, x.reshape(12))
    assert torch.equal(t5, (i & 6) | (i << 1) ^ ~i)
    text = dumps_fusion(fd)
    for call in ("fd.ops.mul(", "fd.ops.neg(T0)", "fd.ops.div(T0, 4)", "fd.ops.gt(T0, 0.5)", "fd.ops.pow(",
                 "fd.ops.abs(T", "fd.ops.bitwise_not(T1)", "fd.ops.bitwise_left_shift(T1, 1)", "fd.ops.bitwise_xor("):
        assert call in text, call
    assert str(loads_fusion(text, "again.py").fusion) == str(fd.fusion)


@pytest.mark.parametrize("expr, why", [
    ("T0 // T0", "FloorDiv is not an nvFuser operator on tensors and scalars: T0 // T0"),
    ("T0 @ T0", "MatMult is not an nvFuser operator on tensors and scalars: T0 @ T0"),
    ("T0 < T0 < T0", "chained comparisons are not allowed: T0 < T0 < T0"),
    ("not T0", "`not` is not an nvFuser operator: not T0"),
    ("T0 + 'x'", "T0 + 'x' (fd.ops.add)"),
])
def test_operators_nvfuser_lacks_are_refused_by_line(expr, why):
    text = OPERATORS.split("    S2 =")[0] + f"    T2 = {expr}\n    fd.add_output(T2)\n"
    with pytest.raises(FusionFileError) as e:
        loads_fusion(text, "bad.py")
    assert f"bad.py:6: {why}" in str(e.value)


LOOPS = """\
from nvfuser import FusionDefinition, DataType, ParallelType, LoadStoreOpType, CacheOp

with FusionDefinition() as fd:
    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
    tvs = [fd.ops.neg(T0)]
    last = tvs[0] if False else fd.ops.exp(tvs[0])
    for k in range(2):
        last = fd.ops.add(last, k)
    fd.add_output(last)
    fd.sched.cache_after(T0, LoadStoreOpType.set, CacheOp.streaming)
    for tv in [last]:
        fd.sched.split(tv, 1, 4)
        fd.sched.parallelize(tv, axis := 0, ParallelType.grid_x)
"""


def test_loops_walrus_and_plain_bindings_in_a_fusion_body():
    """nvFuser's schedule tests loop over tensors, name arguments with `:=`, keep lists in
    variables and spell enum members in lower case: the loader reads those forms (loops over
    literal lists or range() only, bounded), still running no code of the file."""
    with pytest.raises(FusionFileError, match=r"IfExp expression is not allowed"):
        loads_fusion(LOOPS, "loops.py")
    fd = loads_fusion(LOOPS.replace("tvs[0] if False else ", ""), "loops.py")
    x = torch.randn(3, 8)
    (out,) = fd.execute([x])
    assert torch.allclose(out, (-x).exp() + 1)
    text = dumps_fusion(fd)
    assert text.count("fd.ops.add(") == 2 and "fd.sched.parallelize(" in text


@pytest.mark.parametrize("body, why", [
    ("    for k in range(20000):\n        fd.ops.neg(T0)\n", "range(20000) runs more than 10000 times"),
    ("    for k in T0:\n        fd.ops.neg(T0)\n", "a loop runs over a list, a tuple or range(...), not T0"),
    ("    for k in [1]:\n        break\n", "break and continue are not allowed in a fusion body"),
])
def test_loops_a_file_cannot_abuse_are_refused(body, why):
    text = LOOPS.split("    tvs =")[0] + body
    with pytest.raises(FusionFileError, match=re.escape(why)):
        loads_fusion(text, "bad.py")


def test_tensor_size_and_shape_methods_are_the_recorded_ops():
    """nvFuser's Tensor.size(dim) and Tensor.shape() in the Python API: fd.ops.size and
    fd.ops.shape of the open definition, so a saved file spells them as the ops."""
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
        s = fd.ops.sum(t0, dims=[1])
        b = fd.ops.broadcast_in_dim(s, shape=t0.shape(), broadcast_dims=[0])
        fd.add_output(fd.ops.sub(t0, b))
        fd.add_output(fd.ops.reshape(t0, [t0.size(1), t0.size(0)]))
    x = torch.randn(6, 5)
    out, flipped = fd.execute([x])
    torch.testing.assert_close(out, x - x.sum(1, keepdim=True))
    assert flipped.shape == (5, 6)
    text = dumps_fusion(fd, [x])
    assert "S2, S3 = fd.ops.shape(T0)" in text and "S6 = fd.ops.size(T0, 1)" in text
    with pytest.raises(FusionDefinitionError, match=r"T0.size\(\): only inside the `with FusionDefinition\(\)`"):
        t0.size(0)
