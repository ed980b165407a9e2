"""Arithmetic on symbolic scalars, as Thunder's and nvFuser's repro scripts write it:
unary ops and casts of sizes and scalar inputs, binary ops mixing them, and the Tensor
method forms T.size(d), T.shape() and T.ndim. Each goes through the frontend (dtypes,
listing), the kernels (folded at compile time for sizes, rendered in CUDA for runtime
scalar inputs; emulated against the reference, compile-checked with nvcc) and a save/load
round trip."""

from __future__ import annotations

import math
import shutil

import pytest
import torch

from engine import DataType, FusionDefinition
from engine.compile import compile_fusion
from engine.errors import FusionDefinitionError, FusionFileError
from engine.frontend.pyread import loads_fusion
from engine.frontend.pywrite import dumps_fusion
from engine.ir.scalar import Scalar, same_scalar
from engine.reference import evaluate
from tests.emulation import needs_gxx

needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is needed to compile-check")

UNARY = ["neg", "reciprocal", "abs", "sqrt", "rsqrt", "exp", "log", "ceil", "floor"]


def _tensor_and_scalar(sdtype: DataType | None):
    """fd, T0 and a scalar: a runtime input of `sdtype`, or T0's size(1) when None."""
    fd = FusionDefinition()
    fd.__enter__()
    t0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
    s = fd.define_scalar(None, dtype=sdtype) if sdtype is not None else fd.ops.size(t0, dim=1)
    return fd, t0, s


# ---- frontend: dtypes and listing ---------------------------------------------------------

@pytest.mark.parametrize(("op", "src", "dst", "text"), [
    ("neg", DataType.Double, DataType.Double, "-d3"),
    ("reciprocal", DataType.Double, DataType.Double, "reciprocal(d3)"),
    ("abs", DataType.Float, DataType.Float, "abs(f3)"),
    ("sqrt", DataType.Float, DataType.Float, "sqrtf(f3)"),
    ("exp", DataType.Double, DataType.Double, "exp(d3)"),
    ("ceil", DataType.Double, DataType.Double, "ceil(d3)"),
    ("floor", DataType.Float, DataType.Float, "floorf(f3)"),
    # nvFuser's float_op_config: integer operands are cast to float first
    ("reciprocal", DataType.Int, DataType.Float, "reciprocal((float)(i3))"),
    ("rsqrt", DataType.Int, DataType.Float, "rsqrtf((float)(i3))"),
    ("log", DataType.Int, DataType.Float, "logf((float)(i3))"),
    ("neg", DataType.Int, DataType.Int, "-i3"),
    ("abs", DataType.Int, DataType.Int, "abs(i3)"),
    ("isnan", DataType.Double, DataType.Bool, "isnan(d3)"),
])
def test_unary_on_a_scalar_input_has_nvfusers_dtype_and_listing(op, src, dst, text) -> None:
    fd, _t0, s = _tensor_and_scalar(src)
    r = getattr(fd.ops, op)(s)
    fd.__exit__()
    assert isinstance(r, Scalar) and r.dtype == dst and r.inline() == text


def test_unary_and_cast_of_a_size() -> None:
    fd, _t0, n = _tensor_and_scalar(None)
    assert n.dtype == DataType.Index
    f = fd.ops.cast(n, dtype=DataType.Float)
    assert f.dtype == DataType.Float and f.inline() == "(float)(i2)"
    assert fd.ops.cast(n, dtype=DataType.Index) is n
    r = fd.ops.reciprocal(n)
    assert r.dtype == DataType.Float and r.inline() == "reciprocal((float)(i2))"
    assert fd.ops.neg(n).dtype == DataType.Index
    e = fd.ops.div(fd.ops.neg(fd.ops.reciprocal(fd.define_scalar(None, dtype=DataType.Double))), n)
    assert e.dtype == DataType.Double and e.inline() == "( -reciprocal(d3) / (double)(i2) )"
    fd.__exit__()


def test_scalar_binary_ops_promote() -> None:
    fd, _t0, n = _tensor_and_scalar(None)
    d = fd.define_scalar(None, dtype=DataType.Double)
    assert fd.ops.mul(n, d).dtype == DataType.Double  # the size first no longer decides
    assert fd.ops.mul(n, 2).dtype == DataType.Index
    assert fd.ops.div(n, 2).inline() == "( i2 / 2 )"
    assert fd.ops.maximum(d, 1.5).inline() == "( max(d3, 1.5) )"
    widened = fd.ops.mul(n, 1.0)  # the size is cast to double first; then x * 1 is x
    assert widened.dtype == DataType.Double and widened.inline() == "(double)(i2)"
    assert fd.ops.truediv(n, 4).dtype == DataType.Double
    fd.__exit__()


def test_constants_fold_and_unsupported_scalar_types_are_refused() -> None:
    fd, t0, _s = _tensor_and_scalar(DataType.Double)
    c = fd.ops.reciprocal(fd.define_scalar(4))
    assert c.is_const and c.dtype == DataType.Float and c.value == 0.25
    assert fd.ops.neg(fd.define_scalar(2.5)).value == -2.5
    assert fd.ops.cast(fd.define_scalar(2.7), dtype=DataType.Int).value == 2
    with pytest.raises(FusionDefinitionError, match="__half"):
        fd.ops.cast(fd.ops.size(t0, dim=0), dtype=DataType.Half)
    with pytest.raises(FusionDefinitionError, match="bitwise_not"):
        fd.ops.bitwise_not(fd.define_scalar(None, dtype=DataType.Double))
    fd.__exit__()


def test_same_scalar_tells_casts_to_different_types_apart() -> None:
    fd, _t0, n = _tensor_and_scalar(None)
    a, b = fd.ops.cast(n, dtype=DataType.Float), fd.ops.cast(n, dtype=DataType.Double)
    assert not same_scalar(a, b)
    assert same_scalar(a, fd.ops.cast(n, dtype=DataType.Float))
    assert same_scalar(fd.ops.neg(n), fd.ops.neg(n)) and not same_scalar(fd.ops.neg(n), fd.ops.abs(n))
    assert fd.ops.neg(n).free_symbols() == {n}
    fd.__exit__()


def test_evaluation_follows_the_generated_c() -> None:
    fd, _t0, _s = _tensor_and_scalar(None)
    i = fd.define_scalar(None, dtype=DataType.Int)
    d = fd.define_scalar(None, dtype=DataType.Double)
    f = fd.define_scalar(None, dtype=DataType.Float)
    fd.__exit__()
    # integer division and remainder truncate toward zero, as C's / and %
    assert fd.ops.div(i, 2).evaluate({i: -7}) == -3
    assert fd.ops.mod(i, 2).evaluate({i: -7}) == -1
    assert fd.ops.mod(d, 0.75).evaluate({d: -2.5}) == math.fmod(-2.5, 0.75)
    # IEEE results, not Python exceptions
    assert fd.ops.reciprocal(d).evaluate({d: 0.0}) == math.inf
    assert math.isnan(fd.ops.sqrt(d).evaluate({d: -1.0}))
    assert fd.ops.log(d).evaluate({d: 0.0}) == -math.inf
    assert fd.ops.div(d, 0.0).evaluate({d: -1.0}) == -math.inf
    # a float scalar rounds to single precision
    assert fd.ops.reciprocal(f).evaluate({f: 3.0}) == torch.tensor(1 / 3, dtype=torch.float32).item()
    assert fd.ops.ceil(d).evaluate({d: 2.1}) == 3.0
    assert fd.ops.cast(d, dtype=DataType.Int).evaluate({d: -2.7}) == -2


# ---- kernels: emulated against the reference ------------------------------------------------

def _scalar_fusion(op: str, sdtype: DataType | None):
    fd, t0, s = _tensor_and_scalar(sdtype)
    r = getattr(fd.ops, op)(s) if op != "cast" else fd.ops.cast(s, dtype=DataType.Float)
    t1 = fd.ops.mul(t0, r)
    fd.add_output(t1)
    fd.__exit__()
    return fd


_VALUES = {DataType.Double: 2.5, DataType.Float: 1.75, DataType.Int: 3}


def _check(fd, xs):
    cf = compile_fusion(fd, xs)
    outs = cf.run(xs, backend="emulate")
    refs = evaluate(fd.fusion, xs)
    assert len(outs) == len(refs)
    for o, r in zip(outs, refs):
        if isinstance(r, torch.Tensor):
            assert o.dtype == r.dtype and o.shape == r.shape
            torch.testing.assert_close(o, r, rtol=1e-6, atol=1e-6)
        else:
            assert o == pytest.approx(r)
    return cf


@needs_gxx
@pytest.mark.parametrize("op", [*UNARY, "cast"])
@pytest.mark.parametrize("sdtype", [DataType.Double, DataType.Float, DataType.Int])
def test_unary_of_a_runtime_scalar_is_computed_in_the_kernel(op: str, sdtype: DataType) -> None:
    fd = _scalar_fusion(op, sdtype)
    cf = _check(fd, [torch.randn(3, 5), _VALUES[sdtype]])
    (seg,) = cf.segments
    # The scalar input is a kernel argument and the op is rendered, not folded.
    name = {DataType.Double: "d3", DataType.Float: "f3", DataType.Int: "i3"}[sdtype]
    kernel = seg.cuda_source[seg.cuda_source.index("__global__"):]
    assert f"{sdtype.cuda_name} {name}" in kernel
    assert f"({name})" in kernel or f"{name})" in kernel


@needs_gxx
@pytest.mark.parametrize("op", [*UNARY, "cast"])
def test_unary_of_a_size_folds_at_compile_time(op: str) -> None:
    fd = _scalar_fusion(op, None)
    cf = _check(fd, [torch.randn(3, 5)])
    kernel = cf.segments[0].cuda_source
    kernel = kernel[kernel.index("__global__"):]
    assert "fsReciprocal" not in kernel and "sqrt" not in kernel


def _expression_fusion():
    """Thunder-style: a scalar input and sizes combined, used in two segments (a
    reduction and its normalisation) and returned."""
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
        s1 = fd.define_scalar(None, dtype=DataType.Double)
        n = fd.ops.size(t0, dim=1)
        inv = fd.ops.reciprocal(fd.ops.cast(n, dtype=DataType.Double))
        t1 = fd.ops.sum(t0, dims=[1])
        t2 = fd.ops.mul(fd.ops.mul(t1, inv), fd.ops.rsqrt(s1))
        t3 = fd.ops.broadcast_in_dim(t2, shape=fd.ops.shape(t0), broadcast_dims=[0])
        scale = fd.ops.exp(fd.ops.neg(fd.ops.abs(s1)))
        t4 = fd.ops.mul(fd.ops.sub(t0, t3), scale)
        t5 = fd.ops.add(t4, fd.ops.floor(fd.ops.mul(s1, fd.ops.cast(n, dtype=DataType.Float))))
        fd.add_output(t5)
        fd.add_output(t2)
        fd.add_output(fd.ops.ceil(s1))
    return fd


@needs_gxx
def test_scalar_expressions_across_segments_and_as_an_output() -> None:
    fd = _expression_fusion()
    cf = _check(fd, [torch.randn(4, 33), 0.7])
    assert "rsqrt(d3)" in str(fd.fusion) and "exp(-abs(d3))" in str(fd.fusion)
    assert cf.run([torch.randn(4, 33), 0.7], backend="emulate")[2] == 1.0


@needs_gxx
def test_integer_scalar_arithmetic_truncates_as_c() -> None:
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Int)
        s1 = fd.define_scalar(None, dtype=DataType.Int)
        a = fd.ops.div(fd.ops.neg(s1), 2)
        b = fd.ops.mod(fd.ops.neg(s1), 2)
        c = fd.ops.cast(fd.ops.sqrt(s1), dtype=DataType.Int)
        d = fd.ops.maximum(s1, fd.ops.size(t0, 0))
        fd.add_output(fd.ops.add(fd.ops.add(fd.ops.add(fd.ops.mul(t0, a), b), c), d))
    _check(fd, [torch.arange(7), 5])


@needs_gxx
def test_float_remainder_of_a_scalar_renders_fmod() -> None:
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float)
        s1 = fd.define_scalar(None, dtype=DataType.Double)
        fd.add_output(fd.ops.mul(t0, fd.ops.mod(s1, 0.75)))
    cf = _check(fd, [torch.randn(7), -2.5])
    assert "fmod(d2, 0.75)" in cf.segments[0].cuda_source


# Scalar-only binary ops beyond the extent arithmetic (Thunder's size and flag arithmetic):
# op, operand type, two runtime values, torch's result on them.
_SCALAR_BINARY = [
    ("lt", DataType.Double, 0.5, 1.0, True),
    ("ne", DataType.Int, 3, 3, False),
    ("ge", DataType.Int, -2, 5, False),
    ("fmod", DataType.Int, -7, 3, -1),
    ("remainder", DataType.Int, -7, 3, 2),
    ("remainder", DataType.Double, -2.5, 0.75, 0.5),
    ("pow", DataType.Double, 1.5, 3.0, 3.375),
    ("bitwise_and", DataType.Int, 13, 6, 4),
    ("bitwise_xor", DataType.Int, 13, 6, 11),
    ("bitwise_left_shift", DataType.Int, 3, 4, 48),
    ("logical_or", DataType.Bool, False, True, True),
    ("atan2", DataType.Double, 1.0, -1.0, math.atan2(1.0, -1.0)),
]


@pytest.mark.parametrize("op,sdtype,a,b,expected", _SCALAR_BINARY)
def test_scalar_only_binary_ops_fold_and_evaluate(op, sdtype, a, b, expected) -> None:
    fd = FusionDefinition()
    fd.__enter__()
    x = fd.define_scalar(None, dtype=sdtype)
    y = fd.define_scalar(None, dtype=sdtype)
    r = getattr(fd.ops, op)(x, y)
    folded = getattr(fd.ops, op)(fd.define_scalar(a, dtype=sdtype), fd.define_scalar(b, dtype=sdtype))
    fd.__exit__()
    assert r.inline() == f"( {op}({x.inline()}, {y.inline()}) )"
    assert r.evaluate({x: a, y: b}) == pytest.approx(expected)
    assert folded.is_const and folded.value == pytest.approx(expected)


@needs_gxx
@pytest.mark.parametrize("op,sdtype,a,b,expected", _SCALAR_BINARY)
def test_scalar_only_binary_of_runtime_scalars_is_computed_in_the_kernel(op, sdtype, a, b, expected) -> None:
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
        x = fd.define_scalar(None, dtype=sdtype)
        y = fd.define_scalar(None, dtype=sdtype)
        r = fd.ops.cast(getattr(fd.ops, op)(x, y), dtype=DataType.Float)
        fd.add_output(fd.ops.add(t0, r))
    t = torch.randn(3, 5)
    cf = _check(fd, [t, a, b])
    (out,) = cf.run([t, a, b], backend="emulate")
    torch.testing.assert_close(out, t + float(expected))


def test_reshape_takes_a_float_size_truncated_to_index() -> None:
    # nvFuser's reshape casts each new size to Index: 240 * reciprocal(12) is a float.
    text = """
from nvfuser import FusionDefinition, DataType
with FusionDefinition() as fd:
    S0 = fd.define_scalar(None, dtype=DataType.Int)
    T1 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
    S2 = fd.ops.mul(fd.define_scalar(240, dtype=DataType.Int), fd.ops.reciprocal(S0))
    T3 = fd.ops.reshape(T1, new_shape=[S0, S2])
    fd.add_output(T3)
"""
    fd = loads_fusion(text)
    xs = [12, torch.randn(8, 30)]
    (ref,) = evaluate(fd.fusion, xs)
    assert ref.shape == (12, 20)


@needs_nvcc
def test_scalar_expression_kernels_compile_with_nvcc() -> None:
    from engine.runtime.nvcc import ptx_check

    cfs = [compile_fusion(_expression_fusion(), [torch.randn(4, 33), 0.7])]
    for sdtype in (DataType.Double, DataType.Float, DataType.Int):
        for op in (*UNARY, "cast"):
            cfs.append(compile_fusion(_scalar_fusion(op, sdtype), [torch.randn(3, 5), _VALUES[sdtype]]))
    # One translation unit per kernel, all checked in one go would hide which failed.
    for cf in cfs:
        for seg in cf.segments:
            if seg.cuda_source:
                assert ".entry " + seg.kernel_name in ptx_check(seg.cuda_source, "sm_90")


# ---- the script loader and the saved format -------------------------------------------------

_SCRIPT = '''\
import torch
from nvfuser import FusionDefinition, DataType

def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float, is_cpu=False)
    S1 = fd.define_scalar(None, dtype=DataType.Double)
    S2 = T0.size(1)
    S3 = fd.ops.cast(S2, dtype=DataType.Float)
    S4 = fd.ops.reciprocal(S1)
    S5 = fd.ops.div(fd.ops.neg(S4), T0.size(dim=0))
    T6 = fd.ops.mul(T0, S5)
    T7 = fd.ops.div(T6, S3)
    V8 = T0.shape()
    T9 = fd.ops.sum(T7, dims=[T0.ndim - 1], keepdim=True)
    T10 = fd.ops.broadcast_in_dim(T9, shape=V8, broadcast_dims=[0, 1])
    T11 = fd.ops.add(T7, fd.ops.sqrt(S1))
    fd.add_output(T10)
    fd.add_output(T11)

with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.randn((3, 4), dtype=torch.float32, device='cuda:0'),
    2.5,
]
fd.execute(inputs)
'''


def test_tensor_method_forms_load_as_the_ops() -> None:
    fd = loads_fusion(_SCRIPT)
    names = [(c.name, c.kwargs) for c in fd.recorded_calls if c.name in ("size", "shape")]
    assert names == [("size", {"dim": 1}), ("size", {"dim": 0}), ("shape", {})]
    listing = str(fd.fusion)
    assert "( -reciprocal(d3) / (double)(i0) )" in listing and "(float)(i2)" in listing
    text = dumps_fusion(fd)
    assert "fd.ops.size(T0, dim=1)" in text and "T0.size" not in text
    assert "S3 = fd.ops.cast(S2, dtype=DataType.Float)" in text
    assert "S4 = fd.ops.reciprocal(S1)" in text and "S5 = fd.ops.neg(S4)" in text
    assert "fd.ops.sum(T9, dims=[1], keepdim=True)" in text  # T0.ndim - 1 is read as 1


def test_saved_scalar_arithmetic_round_trips() -> None:
    fd = loads_fusion(_SCRIPT)
    text = dumps_fusion(fd)
    fd2 = loads_fusion(text)
    assert str(fd2.fusion) == str(fd.fusion)
    assert dumps_fusion(fd2) == text
    xs = fd.example_inputs(seed=0)
    for a, b in zip(evaluate(fd.fusion, xs), evaluate(fd2.fusion, fd2.example_inputs(seed=0))):
        torch.testing.assert_close(a, b)


@needs_gxx
def test_loaded_script_emulates_like_the_reference() -> None:
    fd = loads_fusion(_SCRIPT)
    _check(fd, fd.example_inputs(seed=0))


_BODY = '''\
from nvfuser import FusionDefinition, DataType
def f(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
    S1 = fd.define_scalar(None, dtype=DataType.Double)
    {line}
    fd.add_output(T0)
with FusionDefinition() as fd:
    f(fd)
'''


@pytest.mark.parametrize(("line", "message"), [
    ("X = T0.__class__", "'__class__' is not allowed"),
    ("X = fd.ops.size(T0.__class__, 0)", "'__class__' is not allowed"),
    ("X = T0.size.__self__", "'__self__' is not allowed"),
    ("X = T0.__class__.size(T0, 1)", "'__class__' is not allowed"),
    ("X = T0.fusion", "attribute not allowed here: T0.fusion"),
    ("X = fd.ops.add(T0, T0.fusion)", "attribute not allowed here: T0.fusion"),
    ("X = fd.ops.add(T0, T0.size)", "attribute not allowed here: T0.size"),
    ("X = fd.ops.add(T0, S1.ndim)", "attribute not allowed here: S1.ndim"),
    ("X = T0.stride()", "call not allowed: T0.stride()"),
    ("X = S1.size(0)", "call not allowed: S1.size(0)"),
    ("X = torch.size(0)", "call not allowed: torch.size(0)"),
    ("X = T0.size(1).evaluate()", "call not allowed"),
    ("X = T0.size()", "T0.size() takes one dim"),
    ("X = T0.size(0, 1)", "T0.size() takes one dim"),
    ("X = T0.size(x=1)", "T0.size() takes one dim"),
    ("X = T0.size(*[1])", "* and ** arguments are not allowed"),
    ("X = T0.size(5)", "dim 5 is out of range"),
    ("X = T0.shape(1)", "T0.shape() takes no arguments"),
])
def test_tensor_methods_stay_within_the_loaders_rules(line: str, message: str) -> None:
    with pytest.raises(FusionFileError, match=r":5: ") as info:
        loads_fusion(_BODY.format(line=line))
    assert message in str(info.value)


def test_subclass_attributes_have_the_tensor_methods() -> None:
    fd = loads_fusion('''\
from nvfuser import FusionDefinition, DataType
class MyFusion(FusionDefinition):
    def definition(self):
        self.t0 = self.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
        S1 = self.t0.size(self.t0.ndim - 1)
        T2 = self.ops.mul(self.t0, self.ops.reciprocal(S1))
        self.add_output(T2)
''')
    assert "* reciprocal((float)(i2))" in str(fd.fusion)


@needs_gxx
def test_scalar_expression_is_computed_once_at_the_top_of_the_kernel() -> None:
    """A runtime scalar expression (pow, remainder, fmod of scalar inputs) is a loop invariant:
    it is defined once before the element loops and every element names it, rather than
    every unrolled element computing it again (64-bit integer division each time)."""
    fd = FusionDefinition()
    fd.__enter__()
    t0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
    d = fd.define_scalar(None, dtype=DataType.Double)
    i = fd.define_scalar(None, dtype=DataType.Int)
    sq = fd.ops.pow(d, fd.define_scalar(2.0, dtype=DataType.Double))
    rem = fd.ops.remainder(fd.define_scalar(-5, dtype=DataType.Int), i)
    t1 = fd.ops.add(fd.ops.mul(t0, sq), rem)
    fd.add_output(fd.ops.where(fd.ops.lt(d, fd.define_scalar(1.0, dtype=DataType.Double)), t1, t0))
    fd.__exit__()
    cf = _check(fd, [torch.randn(256, 512), 0.75, 7])
    (seg,) = cf.segments
    kernel = seg.cuda_source[seg.cuda_source.index("__global__"):]
    body = kernel[kernel.index("{"):]
    assert "#pragma unroll" in body  # vectorized: several elements a thread
    for call in ("fsPow(", "fsRemainder(", "< 1.0"):
        assert body.count(call) == 1, call
        # defined before the first element is read
        assert body.index(call) < body.index("&T0["), call
    first = next(ln.strip() for ln in body.splitlines() if "fsPow(" in ln)
    assert first.startswith("const double dh") and first.endswith(";")
