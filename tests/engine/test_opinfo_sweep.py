"""A differential sweep of the frontend's ops against torch, modelled on nvFuser's op tests
(tests/python/opinfo: opinfos.py, opinfo_input_generators.py).

The frontend's unary and binary ops (`fd.ops.*`) are defined over the dtypes nvFuser tests
them with, on the edge-case inputs of nvFuser's generators: small values (signed zeros,
values around e), large ones (up to 1e20, half's range for half), NaN and infinities,
integer extremes, and python scalars of every kind on either side. (Not swept yet: ternary
ops, casts, reductions, shape and indexing ops; zero-size, 0-dim, broadcast and
non-contiguous inputs.) Each case is compiled
with compile_fusion, run on the emulator (the generated CUDA compiled with g++) and compared
with engine.reference AND with the plain torch function: the reference is the engine's truth,
but it can be wrong too. Integers and bools compare exactly, floats NaN-aware within
torch.testing's default tolerance for their dtype.

Many cases share one fusion (one output each), so the whole sweep costs a few dozen
compiles; every input of a batch must be read together with the others by some case (or
the pointwise scheduler finds no reference tensor and each output becomes a kernel of its
own). A failing batch is taken apart case by case to name the culprit.

Where nvFuser deliberately differs from torch the expected function says so (integer `div`
truncates; gelu uses nvFuser's erf formula at the infinities; pow with a scalar exponent is
C's pow, not torch's sqrt/rsqrt shortcuts); values where both are
undefined (integer division by zero, float -> int of NaN or out of range) are left out, as
nvFuser's generators leave them out.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Callable, Sequence
from typing import Any

import pytest
import torch

from engine import DataType, FusionDefinition
from engine.compile import compile_fusion
from engine.dtypes import from_torch
from engine.errors import FusionDefinitionError
from engine.reference import evaluate
from tests.emulation import needs_gxx

pytestmark = needs_gxx

F32, F64, F16, BF16 = torch.float32, torch.float64, torch.float16, torch.bfloat16
I32, I64, BOOL = torch.int32, torch.int64, torch.bool
FLOATS = (F32, F64, F16, BF16)
INTS = (I32, I64)
ALL = (*FLOATS, *INTS, BOOL)


def _name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


# ---- edge-case values (nvFuser's _small_values, _large_values, _extremal_values, and a few
# more: halves for round-half-even, small integers for pow/fmod/shifts) -----------------------

_E = math.e
SMALL_FLOATS = (0.0, -0.0, -1e-3, 1e-3, -0.25, 0.25, -1.0, 1.0, -_E / 2, _E / 2, -_E + 1e-5, _E - 1e-5,
                -_E, _E, -_E - 1e-5, _E + 1e-5)
MORE_FLOATS = (0.5, -0.5, 1.5, -1.5, 2.5, -2.5, 2.0, 3.0, -3.0)
LARGE_HALF = (-501.0, 501.0, -1001.2, 1001.2, -13437.7, 13437.7)
LARGE_FLOATS = (*LARGE_HALF, -4988429.2, 4988429.2, -1e20, 1e20)
EXTREMAL_FLOATS = (math.inf, -math.inf, math.nan)
SMALL_INTS = (0, -1, 1, -55, 55, -127, 127, -128)
MORE_INTS = (2, -2, 3, -3, 7, 31, 32, 63, 64)
LARGE_INTS = (-1113, 1113, -10701, 10701)


def int_limits(dtype: torch.dtype) -> tuple[int, int]:
    info = torch.iinfo(dtype)
    return info.min, info.max


def edge_values(dtype: torch.dtype, extremal: bool = True) -> list[Any]:
    """Every edge value of `dtype` (nvFuser's small, large and extremal sets)."""
    if dtype == BOOL:
        return [False, True]
    if dtype in INTS:
        return [*SMALL_INTS, *MORE_INTS, *LARGE_INTS, *(int_limits(dtype) if extremal else ())]
    large = LARGE_HALF if dtype == F16 else LARGE_FLOATS
    return [*SMALL_FLOATS, *MORE_FLOATS, *large, *(EXTREMAL_FLOATS if extremal else ())]


def values(dtype: torch.dtype, extremal: bool = True) -> torch.Tensor:
    return torch.tensor(edge_values(dtype, extremal), dtype=dtype)


def pairs(dtype: torch.dtype, extremal: bool = True) -> tuple[torch.Tensor, torch.Tensor]:
    """Every (lhs, rhs) pair of edge values, as two 1-D tensors."""
    vals = edge_values(dtype, extremal)
    lhs, rhs = zip(*itertools.product(vals, vals))
    return torch.tensor(lhs, dtype=dtype), torch.tensor(rhs, dtype=dtype)


def nonzero(x: torch.Tensor) -> torch.Tensor:
    """`x` with its zeros replaced by ones: a divisor the same size as `x`. Every input of a
    batch has one size, so that the batch is one pointwise kernel (inputs of two sizes are
    two iteration spaces: the segmenter then gives each output a kernel of its own, and a
    cold compile cache pays a g++ run for each)."""
    return torch.where(x == 0, torch.ones_like(x), x)


# ---- comparison -------------------------------------------------------------------------------

# torch.testing's default (rtol, atol) per dtype.
TOLERANCE = {F64: (1e-7, 1e-7), F32: (1.3e-6, 1e-5), F16: (1e-3, 1e-5), BF16: (1.6e-2, 1e-5)}


def mismatch(got: Any, want: Any) -> str | None:
    """Why `got` differs from `want` (None when they agree): dtype and shape exactly,
    integers and bools exactly, floats NaN-aware within the dtype's tolerance."""
    if not isinstance(want, torch.Tensor) or not isinstance(got, torch.Tensor):
        return None if got == want else f"{got!r} != {want!r}"
    if got.dtype != want.dtype or got.shape != want.shape:
        return f"{got.dtype} {tuple(got.shape)} != {want.dtype} {tuple(want.shape)}"
    if got.dtype not in TOLERANCE:
        if got.dtype.is_floating_point:  # fp8: as the bytes the cast rules give
            bad = got.view(torch.uint8) != want.view(torch.uint8)
        else:
            bad = got != want
    else:
        rtol, atol = TOLERANCE[got.dtype]
        bad = ~torch.isclose(got.double(), want.double(), rtol=rtol, atol=atol, equal_nan=True)
    if not bad.any():
        return None
    k = bad.flatten().nonzero()[:4].flatten().tolist()
    g, w = got.flatten(), want.flatten()
    return f"{int(bad.sum())} of {bad.numel()} differ, e.g. " + ", ".join(
        f"[{i}] {g[i].item()} != {w[i].item()}" for i in k)


# ---- cases and batches ------------------------------------------------------------------------


@dataclasses.dataclass
class Case:
    """One op on some of the batch's inputs: `build` defines it in the fusion (from the
    input tensors' TensorViews), `expect` computes it in plain torch (from the input
    tensors), and `where` says which inputs it reads (by position) and their values, for
    the report."""

    name: str
    build: Callable[..., Any]
    expect: Callable[..., Any]
    args: tuple[int, ...] = (0,)


def define_input(fd: FusionDefinition, x: torch.Tensor) -> Any:
    """The input as nvFuser's frontend takes a tensor: size-1 axes are broadcasts, strides
    give the contiguity and order."""
    return fd.define_tensor(sizes=list(x.shape), strides=list(x.stride()), dtype=from_torch(x.dtype))


def _define(inputs: Sequence[torch.Tensor], cases: Sequence[Case]) -> FusionDefinition:
    with FusionDefinition() as fd:
        tvs = [define_input(fd, x) for x in inputs]
        for c in cases:
            fd.add_output(c.build(fd, *(tvs[k] for k in c.args)))
    return fd


def _describe(c: Case, inputs: Sequence[torch.Tensor]) -> str:
    shapes = ", ".join(f"{_name(inputs[k].dtype)}{list(inputs[k].shape)}" for k in c.args)
    return f"{c.name} ({shapes})"


def run_batch(inputs: Sequence[torch.Tensor], cases: Sequence[Case]) -> list[str]:
    """Failures of `cases` compiled as one fusion over `inputs`: the emulated kernels against
    the reference, and the reference against plain torch."""
    inputs = list(inputs)
    try:
        fd = _define(inputs, cases)
        outs = compile_fusion(fd, inputs).run(inputs, backend="emulate")
        refs = evaluate(fd.fusion, inputs)
    except Exception:  # noqa: BLE001 - taken apart below to name the case at fault
        if len(cases) == 1:
            raise
        return [f for c in cases for f in _run_alone(inputs, c)]
    failures = []
    for c, out, ref in zip(cases, outs, refs):
        want = c.expect(*(inputs[k] for k in c.args))
        for who, why in (("engine vs reference", mismatch(out, ref)), ("reference vs torch", mismatch(ref, want))):
            if why is not None:
                failures.append(f"{_describe(c, inputs)}: {who}: {why}")
    return failures


def _run_alone(inputs: list[torch.Tensor], c: Case) -> list[str]:
    try:
        return run_batch(inputs, [c])
    except Exception as e:  # noqa: BLE001 - a crash is a finding, reported by case
        return [f"{_describe(c, inputs)}: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"]


def check(inputs: Sequence[torch.Tensor], cases: Sequence[Case]) -> None:
    check_all([(inputs, cases)])


def check_all(batches: Sequence[tuple[Sequence[torch.Tensor], Sequence[Case]]]) -> None:
    """Every batch run (inputs, cases), the failures of all reported together."""
    failures = [f for inputs, cases in batches for f in run_batch(inputs, cases)]
    total = sum(len(cases) for _, cases in batches)
    assert not failures, f"{len(failures)} of {total} cases fail:\n" + "\n".join(failures)


# ---- unary ops --------------------------------------------------------------------------------


def _as_float(x: torch.Tensor) -> torch.Tensor:
    """nvFuser's float_op_config (and torch): integer and bool operands compute in float32."""
    return x if x.is_floating_point() else x.float()


def _gelu(x: torch.Tensor) -> torch.Tensor:
    # nvFuser's formula x * 0.5 * (1 + erf(x / sqrt 2)) is inf at +inf, where torch's CPU
    # gelu gives NaN; elsewhere the two agree.
    x = _as_float(x)
    return torch.where(x == math.inf, x, torch.nn.functional.gelu(x))


def _erfcinv(x: torch.Tensor) -> torch.Tensor:
    # nvFuser's reference: erfinv(1 - x), in double so that 1 - x loses no digits.
    x = _as_float(x)
    return torch.erfinv(1 - x.double()).to(x.dtype)


# The unary ops that compute in float (an integer or bool operand is cast to float32 first).
FLOAT_UNARY_TORCH: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    **{op: getattr(torch, op) for op in (
        "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sqrt", "rsqrt", "reciprocal", "sin", "cos",
        "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh", "sigmoid", "erf",
        "erfc", "erfinv", "lgamma", "digamma")},
    "silu": torch.nn.functional.silu,
}
# The unary ops that keep their operand's type (none of them is defined on bool but sign).
SAME_UNARY_TORCH = {op: getattr(torch, op) for op in (
    "neg", "abs", "relu", "ceil", "floor", "round", "trunc", "frac", "sign")}
PREDICATES_TORCH = {op: getattr(torch, op) for op in (
    "isfinite", "isinf", "isnan", "isneginf", "isposinf", "isreal", "signbit", "logical_not")}


def unary_case(op: str, fn: Callable[[torch.Tensor], torch.Tensor]) -> Case:
    return Case(op, lambda fd, x: getattr(fd.ops, op)(x), fn)


def unary_cases(dtype: torch.dtype) -> list[Case]:
    """Every unary op nvFuser (and torch) defines on `dtype`."""
    cases = [unary_case(op, lambda x, fn=fn: fn(_as_float(x))) for op, fn in FLOAT_UNARY_TORCH.items()]
    cases += [unary_case("gelu", _gelu), unary_case("erfcinv", _erfcinv)]
    cases += [unary_case(op, fn) for op, fn in PREDICATES_TORCH.items()]
    if dtype == BOOL:
        cases += [unary_case("sign", torch.sign)]
    else:
        cases += [unary_case(op, fn) for op, fn in SAME_UNARY_TORCH.items()
                  if dtype.is_floating_point or op != "frac"]
    if not dtype.is_floating_point:
        cases += [unary_case("bitwise_not", torch.bitwise_not)]
    return cases


@pytest.mark.parametrize("dtype", ALL, ids=_name)
def test_unary_ops_on_edge_values(dtype: torch.dtype) -> None:
    check([values(dtype)], unary_cases(dtype))


# ---- binary ops -------------------------------------------------------------------------------


def _trunc_div(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """nvFuser's integer div is C's: it truncates (opinfos' trunc_div). torch traps on
    MIN / -1 (SIGFPE), where the GPU and the kernels wrap: MIN / -1 is -MIN, that is MIN."""
    if a.is_floating_point():
        return torch.div(a, b)
    minus_one = b == -1
    return torch.where(minus_one, -a, torch.div(a, torch.where(minus_one, 1, b), rounding_mode="trunc"))


def _logical_right_shift(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """jax.lax.shift_right_logical, nvFuser's reference: the bits shifted as unsigned, 0 for a
    shift outside [0, width)."""
    bits = a.element_size() * 8

    def one(x: int, s: int) -> int:
        if not 0 <= s < bits:
            return 0
        u = (x % (1 << bits)) >> s
        return u - (1 << bits) if u >= 1 << (bits - 1) else u

    return torch.tensor([one(x, s) for x, s in zip(a.tolist(), b.tolist())], dtype=a.dtype).reshape(a.shape)


def _float_binary(fn: Callable[..., torch.Tensor]) -> Callable[..., torch.Tensor]:
    """An op that computes in float: integer and bool operands promote to float32."""
    return lambda a, b: fn(_as_float(a), _as_float(b))


BINARY_TORCH: dict[str, Callable[..., torch.Tensor]] = {
    "add": torch.add, "sub": torch.sub, "mul": torch.mul, "div": _trunc_div, "truediv": torch.true_divide,
    "mod": torch.fmod, "fmod": torch.fmod, "remainder": torch.remainder, "pow": torch.pow,
    "maximum": torch.maximum, "minimum": torch.minimum, "atan2": _float_binary(torch.atan2),
    "nextafter": torch.nextafter,
    "lt": torch.lt, "le": torch.le, "gt": torch.gt, "ge": torch.ge, "eq": torch.eq, "ne": torch.ne,
    "logical_and": torch.logical_and, "logical_or": torch.logical_or,
    "bitwise_and": torch.bitwise_and, "bitwise_or": torch.bitwise_or, "bitwise_xor": torch.bitwise_xor,
    "bitwise_left_shift": torch.bitwise_left_shift, "bitwise_right_shift": torch.bitwise_right_shift,
    "logical_right_shift": _logical_right_shift, "gcd": torch.gcd,
}
# Integer ops undefined for a zero divisor (torch raises, nvFuser's generators leave it out).
NONZERO_DIVISOR = ("div", "mod", "fmod", "remainder")
COMPARISONS = ("lt", "le", "gt", "ge", "eq", "ne", "logical_and", "logical_or")


def binary_ops(dtype: torch.dtype) -> list[str]:
    """The binary ops nvFuser (and torch) define on two `dtype` tensors (opinfos' dtypes)."""
    if dtype == BOOL:
        return ["add", "mul", "truediv", "maximum", "minimum", "atan2", *COMPARISONS,
                "bitwise_and", "bitwise_or", "bitwise_xor"]
    ops = ["add", "sub", "mul", "div", "truediv", "mod", "fmod", "remainder", "pow", "maximum", "minimum",
           "atan2", *COMPARISONS]
    if dtype in (F32, F64):
        ops.append("nextafter")
    if dtype in INTS:
        ops += ["bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_left_shift", "bitwise_right_shift",
                "logical_right_shift", "gcd"]
    return ops


def binary_case(op: str, lhs: int = 0, rhs: int = 1) -> Case:
    return Case(op, lambda fd, a, b: getattr(fd.ops, op)(a, b), BINARY_TORCH[op], (lhs, rhs))


@pytest.mark.parametrize("dtype", ALL, ids=_name)
def test_binary_ops_on_every_pair_of_edge_values(dtype: torch.dtype) -> None:
    """Inputs 0, 1: every pair of edge values; 0, 2: the same with 1 for a zero divisor, for
    the integer division ops."""
    a, b = pairs(dtype)
    cases = [binary_case(op, *((0, 2) if op in NONZERO_DIVISOR and not dtype.is_floating_point else (0, 1)))
             for op in binary_ops(dtype)]
    check([a, b, nonzero(b)], cases)


# ---- python scalars and mixed dtypes: type promotion ---------------------------------------

# Python scalars of every kind. Floats are exact in every float type: where a float's
# rounding matters nvFuser and torch differ on purpose (nvFuser computes a comparison with
# a double scalar in double, torch rounds the scalar to the tensor's type first).
SCALARS = (True, 3, -2, 2.5, -0.5, math.inf, math.nan)


def _div(a: Any, b: Any) -> torch.Tensor:
    """nvFuser's div: truncating where the promoted type is an integer."""
    if torch.result_type(a, b).is_floating_point:
        return torch.div(a, b)
    return torch.div(a, b, rounding_mode="trunc")


def _pow(x: torch.Tensor, s: Any) -> torch.Tensor:
    """nvFuser's pow with a scalar exponent is C's pow (its codegen only turns ** 1, 2 and 3
    into products); torch's turns ** 0.5 into sqrt and ** -0.5 into rsqrt, which differ from
    pow at -0.0 and -inf (rsqrt(-0.0) is -inf, pow(-0.0, -0.5) is inf). The engine follows
    nvFuser: the exponent as a 0-dim tensor of the result type gives torch's plain pow."""
    return torch.pow(x, torch.tensor(s, dtype=torch.result_type(x, s)))


# op -> torch with the tensor on the left, and with the scalar on the left.
SCALAR_TORCH: dict[str, tuple[Callable[[Any, Any], torch.Tensor], Callable[[Any, Any], torch.Tensor]]] = {
    "add": (torch.add, lambda s, x: s + x),
    "sub": (torch.sub, lambda s, x: s - x),
    "mul": (torch.mul, lambda s, x: s * x),
    "div": (_div, lambda s, x: _div(torch.tensor(s, dtype=torch.result_type(x, s)), x)),
    "truediv": (torch.true_divide, lambda s, x: s / x),
    "fmod": (torch.fmod, lambda s, x: torch.fmod(torch.tensor(s, dtype=torch.result_type(x, s)), x)),
    "remainder": (torch.remainder, torch.remainder),
    "pow": (_pow, torch.pow),
    "eq": (torch.eq, lambda s, x: torch.eq(x, s)),
    "lt": (torch.lt, lambda s, x: torch.gt(x, s)),
    "ge": (torch.ge, lambda s, x: torch.le(x, s)),
    "bitwise_and": (torch.bitwise_and, lambda s, x: torch.bitwise_and(x, s)),
    "bitwise_xor": (torch.bitwise_xor, lambda s, x: torch.bitwise_xor(x, s)),
}


@pytest.mark.parametrize("op", ["sub", "mod", "fmod", "remainder", "pow", "div"])
@pytest.mark.parametrize("rhs", ["tensor", "scalar"])
def test_ops_torch_refuses_are_refused_naming_the_op(op: str, rhs: str) -> None:
    """Arithmetic on bools that torch refuses (div: torch's is truediv, a float quotient,
    where the engine's would divide as integers) is refused at definition, naming the op."""
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Bool)
        other = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Bool) if rhs == "tensor" else True
        with pytest.raises(FusionDefinitionError, match=f"^{op}: "):
            getattr(fd.ops, op)(t0, other)


def _scalar_defined(dtype: torch.dtype, op: str, s: Any, scalar_lhs: bool) -> bool:
    """Whether torch and nvFuser define `op` between a `dtype` tensor and `s`."""
    integral = not dtype.is_floating_point and not isinstance(s, float)
    if op.startswith("bitwise"):
        return integral
    if op == "sub" and (dtype == BOOL or isinstance(s, bool)):
        return False  # torch refuses to subtract bools
    if dtype == BOOL and isinstance(s, bool) and op in ("div", "fmod", "remainder", "pow"):
        return False  # refused on bools (test_ops_torch_refuses_are_refused_naming_the_op)
    if dtype == BOOL and op == "pow" and scalar_lhs:
        return False  # torch has no pow with a bool exponent
    if integral and op in ("div", "fmod", "remainder"):
        divisor = s if not scalar_lhs else None
        return divisor is not None and divisor != 0  # a tensor divisor holds zeros
    if integral and op == "pow":
        return scalar_lhs or s >= 0  # torch refuses integers to negative scalar powers
    return True


def scalar_cases(dtype: torch.dtype) -> list[Case]:
    cases = []
    for op, (tensor_lhs, scalar_lhs) in SCALAR_TORCH.items():
        for s in SCALARS:
            if _scalar_defined(dtype, op, s, False):
                cases.append(Case(f"{op}(x, {s!r})", lambda fd, x, op=op, s=s: getattr(fd.ops, op)(x, s),
                                  lambda x, fn=tensor_lhs, s=s: fn(x, s)))
            if _scalar_defined(dtype, op, s, True):
                cases.append(Case(f"{op}({s!r}, x)", lambda fd, x, op=op, s=s: getattr(fd.ops, op)(s, x),
                                  lambda x, fn=scalar_lhs, s=s: fn(s, x), (1,)))
    return cases


@pytest.mark.parametrize("dtype", ALL, ids=_name)
def test_binary_ops_with_python_scalars_promote_as_torch(dtype: torch.dtype) -> None:
    """Two batches: the tensor on the left (every edge value), and the scalar on the left
    (the tensor may be a divisor: 1 for its zeros). One batch each, as a fusion whose
    outputs read two unconnected inputs has no reference tensor for the pointwise
    scheduler: it would be a kernel per output."""
    cases = scalar_cases(dtype)
    x = values(dtype)
    check_all([([x], [c for c in cases if c.args == (0,)]),
               ([nonzero(x)], [dataclasses.replace(c, args=(0,)) for c in cases if c.args == (1,)])])
