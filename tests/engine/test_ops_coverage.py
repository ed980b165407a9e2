"""Python-frontend forms that real repro scripts use and the engine got wrong or refused
vaguely: float ops (sqrt, reciprocal, sigmoid, ...) on integer and bool tensors, abs() on
tensors, fd.define_vector(size=n), abs of complex tensors, and the clear refusals of what
the engine lacks (bool operands of ceil/relu/..., unsigned 64-bit and packed fp4 dtypes,
complex kernels). Values against torch and the reference, kernels through the emulator."""

from __future__ import annotations

import re
import textwrap

import pytest
import torch

from engine import DataType, FusionDefinition
from engine.compile import compile_fusion
from engine.errors import CompileError, FusionDefinitionError, FusionFileError
from engine.frontend.pyread import loads_fusion
from engine.frontend.pywrite import dumps_fusion
from engine.reference import evaluate
from tests.emulation import needs_gxx

_TORCH = {DataType.Int: torch.int64, DataType.Int32: torch.int32, DataType.Bool: torch.bool}
# nvFuser's float_op_config ops and what torch computes for them on a float tensor.
_FLOAT_OPS = {
    "sqrt": torch.sqrt, "rsqrt": torch.rsqrt, "reciprocal": torch.reciprocal, "exp": torch.exp,
    "exp2": torch.exp2, "log1p": torch.log1p, "sigmoid": torch.sigmoid, "tanh": torch.tanh,
    "erf": torch.erf, "lgamma": torch.lgamma, "sin": torch.sin, "atan": torch.atan,
}


def _int_input(dtype: DataType) -> torch.Tensor:
    if dtype == DataType.Bool:
        return torch.tensor([True, False, True, True, False, True, False, False, True, True])
    return torch.tensor([1, 2, 3, 7, 10, 25, 100, 1000, 4, 9], dtype=_TORCH[dtype])


@pytest.mark.parametrize("dtype", [DataType.Int, DataType.Int32, DataType.Bool])
def test_float_ops_cast_integer_and_bool_operands_to_float_first(dtype):
    """The IR holds nvFuser's cast before the op; the reference matches torch, which
    promotes these operands to the default float type too."""
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=dtype)
        for name in _FLOAT_OPS:
            fd.add_output(getattr(fd.ops, name)(t0))
    text = fd.fusion.print_math()
    assert f"= (float)(T0_g_{dtype.cuda_name}" in text
    assert all(o.dtype == DataType.Float for o in fd.fusion.outputs)
    x = _int_input(dtype)
    for out, (name, fn) in zip(evaluate(fd.fusion, [x]), _FLOAT_OPS.items()):
        expected = fn(x.float())
        assert out.dtype == torch.float32, name
        torch.testing.assert_close(out, expected, equal_nan=True, msg=name)


@needs_gxx
@pytest.mark.parametrize("dtype", [DataType.Int, DataType.Bool])
def test_float_ops_on_integer_and_bool_tensors_emulate_as_the_reference(dtype):
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=dtype)
        s = fd.ops.sum(t0, [0]) if dtype == DataType.Bool else t0  # a bool sum is int64
        fd.add_output(fd.ops.reciprocal(s))
        fd.add_output(fd.ops.sqrt(t0))
        fd.add_output(fd.ops.sigmoid(t0))
        fd.add_output(fd.ops.silu(t0))  # torch has no integer silu: the cast makes it one
    x = _int_input(dtype)
    outs = compile_fusion(fd, [x]).run([x], backend="emulate")
    for o, r in zip(outs, evaluate(fd.fusion, [x])):
        assert o.dtype == r.dtype == torch.float32
        torch.testing.assert_close(o, r, rtol=1e-6, atol=1e-6)
    torch.testing.assert_close(outs[2], torch.sigmoid(x.float()))
    torch.testing.assert_close(outs[3], torch.nn.functional.silu(x.float()))


@pytest.mark.parametrize("op", ["ceil", "floor", "round", "trunc", "relu", "abs", "neg", "frac"])
def test_ops_torch_lacks_on_bool_are_refused_naming_the_op(op):
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Bool)
        with pytest.raises(FusionDefinitionError, match=f"{op}: T0 is bool; cast it to a number type first"):
            getattr(fd.ops, op)(t0)


def test_frac_of_an_integer_is_refused_and_ceil_keeps_it():
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Int32)
        with pytest.raises(FusionDefinitionError, match="frac: T0 is int; cast it to a float type first"):
            fd.ops.frac(t0)
        fd.add_output(fd.ops.ceil(t0))
    x = torch.tensor([-3, 0, 5], dtype=torch.int32)
    (out,) = evaluate(fd.fusion, [x])
    assert torch.equal(out, torch.ceil(x))


@pytest.mark.parametrize("op", ["cumsum", "cumprod"])
def test_running_sums_of_bools_are_refused(op):
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Bool)
        with pytest.raises(FusionDefinitionError, match=f"{op}: T0 is bool; cast it to an integer type first"):
            getattr(fd.ops, op)(t0, 1)


def test_abs_of_a_complex_tensor_is_its_real_magnitude():
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.ComplexFloat)
        fd.add_output(fd.ops.abs(t0))
        fd.add_output(fd.ops.real(t0))
        fd.add_output(fd.ops.imag(t0))
    assert [o.dtype for o in fd.fusion.outputs] == [DataType.Float] * 3
    x = torch.tensor([3 + 4j, -1j, 2.5 + 0j], dtype=torch.complex64)
    mag, re, im = evaluate(fd.fusion, [x])
    assert torch.equal(mag, x.abs()) and torch.equal(re, x.real) and torch.equal(im, x.imag)
    # The kernels hold no complex values: refused naming the op, not as an unknown op.
    with pytest.raises(CompileError, match=r"(abs|real|imag): complex types \(std::complex<float>\) are not "
                                           "supported by the CUDA code generator"):
        compile_fusion(fd, [x])


def _loads(body: str, module: str = "nvfuser") -> FusionDefinition:
    text = (f"import torch\nfrom {module} import FusionDefinition, DataType\n\n"
            "def nvfuser_fusion(fd : FusionDefinition) -> None :\n" + textwrap.indent(textwrap.dedent(body), "    ")
            + "\nwith FusionDefinition() as fd:\n    nvfuser_fusion(fd)\n")
    return loads_fusion(text, "cov.py")


def test_abs_builtin_is_the_tensor_and_scalar_abs_op():
    fd = _loads("""\
        t0 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float)
        s0 = fd.define_scalar(None, dtype=DataType.Double)
        t1 = abs(t0) * abs(s0) + abs(-2)
        fd.add_output(t1)
    """)
    text = dumps_fusion(fd)
    assert "fd.ops.abs(T0)" in text and "fd.ops.abs(S1)" in text and "fd.ops.add(T4, 2)" in text
    x = torch.randn(7)
    (out,) = evaluate(fd.fusion, [x, -1.5])
    torch.testing.assert_close(out, x.abs() * 1.5 + 2)
    assert str(loads_fusion(text, "again.py").fusion) == str(fd.fusion)


def test_define_vector_of_size_n_defines_n_integer_inputs():
    fd = _loads("""\
        tv0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float, is_cpu=False)
        tv1_shape = fd.define_vector(size=3)
        tv1 = fd.ops.reshape(tv0, new_shape=tv1_shape)
        v2 = fd.define_vector(2)
        tv2 = fd.ops.reshape(tv1, v2)
        fd.add_output(tv1)
        fd.add_output(tv2)
    """, "nvfuser_direct")
    inputs = fd.fusion.inputs
    assert len(inputs) == 6 and all(v.dtype == DataType.Int for v in inputs[1:])
    x = torch.randn(4, 6)
    a, b = evaluate(fd.fusion, [x, 2, 3, 4, 12, 2])
    assert torch.equal(a, x.reshape(2, 3, 4)) and torch.equal(b, x.reshape(12, 2))
    again = loads_fusion(dumps_fusion(fd), "again.py")
    assert str(again.fusion) == str(fd.fusion)


@pytest.mark.parametrize("call, why", [
    ("fd.define_vector(size=-1)", "fd.define_vector: size must be in 0..10000, got -1"),
    ("fd.define_vector(size=2, dtype=DataType.Int)", "define_vector(size=n) takes no dtype"),
    ("fd.define_vector([2], size=2)", "define_vector(values, dtype=...) takes one list"),
    ("fd.define_vector(size=[2, 3])", "fd.define_vector: expected a list of sizes or size=n"),
])
def test_define_vector_misuse_is_refused_by_line(call, why):
    with pytest.raises(FusionFileError, match=r"cov\.py:6: .*" + re.escape(why)):
        _loads(f"t0 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float)\nv = {call}\n")


@pytest.mark.parametrize("member, why", [
    ("UInt64", "DataType.UInt64: nvFuser's unsigned 64-bit type is not supported by this engine"),
    ("Float4_e2m1fn_x2", "DataType.Float4_e2m1fn_x2: packed fp4 pairs are not supported by this engine"),
    ("UInt8", "DataType has no member 'UInt8'"),  # not nvFuser's either
])
def test_datatypes_the_engine_lacks_are_refused_by_name(member, why):
    with pytest.raises(FusionFileError, match=r"cov\.py:5: " + re.escape(why)):
        _loads(f"t0 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.{member})\n")


@needs_gxx
@pytest.mark.parametrize("index", [-1, -3, 0, 2])
def test_select_counts_a_negative_index_from_the_end(index):
    """torch's (and the reference's) select wraps a negative index; the kernel did not and
    read before the tensor. Constant and runtime indices alike."""
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
        s1 = fd.define_scalar(None, dtype=DataType.Int)
        fd.add_output(fd.ops.select(t0, s1, 1))
        fd.add_output(fd.ops.select(t0, index, 0))
    x = torch.randn(5, 7)
    by_scalar, by_const = compile_fusion(fd, [x, index]).run([x, index], backend="emulate")
    assert torch.equal(by_scalar, x[:, index]) and torch.equal(by_const, x[index])


def test_reducing_no_axis_is_refused_and_a_0_dim_tensor_reduces_to_a_copy():
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
        with pytest.raises(FusionDefinitionError, match=r"sum: no axis of T0 to reduce \(dims is empty\)"):
            fd.ops.sum(t0, [])
        t1 = fd.define_tensor(shape=[], contiguity=[], dtype=DataType.Half)
        fd.add_output(fd.ops.sum(t1))
        fd.add_output(fd.ops.max(t1, dims=[]))
        fd.add_output(fd.ops.sum(t1, dtype=DataType.Float))
        fd.add_output(fd.ops.mean(t1))
    x, y = torch.randn(2, 3), torch.tensor(1.5).half()
    outs = compile_fusion(fd, [x, y]).run([x, y], backend="reference")
    expected = [y.sum(), y.amax(), y.sum(dtype=torch.float32), y.mean()]
    for o, e in zip(outs, expected):
        assert o.dtype == e.dtype and o.shape == () and torch.equal(o, e)


def test_scalar_where_clamp_lerp_fold_constants_and_evaluate_symbols():
    from engine.ir.scalar import Scalar

    with FusionDefinition() as fd:
        b = fd.define_scalar(None, dtype=DataType.Bool)
        d = fd.define_scalar(None, dtype=DataType.Double)
        folded = [fd.ops.where(True, 2, 3.5), fd.ops.clamp(7, 0, 5), fd.ops.lerp(1.0, 3.0, 0.25),
                  fd.ops.threshold(0.25, 0.5, -1.0), fd.ops.addcmul(1.0, 2.0, 3.0, 0.5)]
        assert [(s.dtype, s.value) for s in folded] == [
            (DataType.Double, 2.0), (DataType.Int, 5), (DataType.Double, 1.5), (DataType.Double, -1.0),
            (DataType.Double, 4.0)]
        w, c = fd.ops.where(b, d, 1), fd.ops.clamp(d, 0.0, 1.0)
    assert isinstance(w, Scalar) and w.dtype == DataType.Double and w.inline() == "( where(b0, d1, 1) )"
    env = {b: True, d: 2.5}
    assert w.evaluate(env) == 2.5 and c.evaluate(env) == 1.0
    env = {b: False, d: float("nan")}
    assert w.evaluate(env) == 1.0 and c.evaluate(env) != c.evaluate(env)  # NaN propagates, as torch.clamp
    with FusionDefinition() as fd, pytest.raises(FusionDefinitionError, match="where: condition .* must be bool"):
        fd.ops.where(fd.define_scalar(None, dtype=DataType.Int), 1.0, 2.0)


@needs_gxx
@pytest.mark.parametrize("flag, value", [(True, 2.5), (False, -0.75), (True, float("nan"))])
def test_scalar_ternary_ops_run_in_the_kernel(flag, value):
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float)
        d = fd.define_scalar(None, dtype=DataType.Double)
        b = fd.define_scalar(None, dtype=DataType.Bool)
        s = fd.ops.add(fd.ops.where(b, d, 1.0), fd.ops.clamp(d, 0.0, 1.0))
        s = fd.ops.add(s, fd.ops.lerp(d, 3.0, 0.25))
        fd.add_output(fd.ops.mul(t0, s))
    x = torch.randn(9)
    cf = compile_fusion(fd, [x, value, flag])
    kernel = cf.segments[0].cuda_source
    assert "(b3 ? d2 : 1.0)" in kernel and "fsClamp(d2, 0.0, 1.0)" in kernel and "fsLerp(d2, 3.0, 0.25)" in kernel
    (out,) = cf.run([x, value, flag], backend="emulate")
    v = torch.tensor(value, dtype=torch.float64)
    expected = x * ((v if flag else 1.0) + v.clamp(0.0, 1.0) + (v + 0.25 * (3.0 - v))).float()
    torch.testing.assert_close(out, expected, equal_nan=True)
    (ref,) = evaluate(fd.fusion, [x, value, flag])
    torch.testing.assert_close(out, ref, equal_nan=True)
