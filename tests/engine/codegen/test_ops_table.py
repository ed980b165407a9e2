"""ops_table: every pointwise op of engine/ops/arith.py, for every dtype the reference
accepts, spelled by ops_table, run under the emulator, compared with engine.reference.

Three kernels (unary, binary, ternary) each cover every (op, dtype) pair at once, so the
whole file costs three g++ compiles. Exact ops must match bit for bit (NaN = NaN);
transcendental ones (libm on the emulator vs torch's Sleef) within a few ulps.
"""

from __future__ import annotations

import math
import random

import pytest
import torch
from codegen_helpers import compile_all, describe, grid_stride_loop, mismatches

from engine import FusionDefinition
from engine.codegen import ops_table as ot
from engine.dtypes import DataType, to_torch
from engine.errors import CompileError
from engine.ops.arith import ARITH_BINARY, BITWISE_BINARY, BOOL_UNARY, COMPARE_BINARY, FLOAT_UNARY, SAME_UNARY
from engine.runtime.abi import LaunchConfig, TensorArg

D = DataType
DTYPES = [D.Float, D.Double, D.Half, D.BFloat16, D.Int, D.Int32, D.Bool]

# Ops whose result the emulator computes with libm where torch uses its own kernels (Sleef):
# compared with a tolerance. Everything else is exact.
INEXACT = {
    "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sin", "cos", "tan", "asin", "acos",
    "atan", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh", "sigmoid", "erf", "erfc", "erfinv",
    "erfcinv", "lgamma", "digamma", "gelu", "silu", "pow", "atan2",
    # torch's CPU sqrt is not correctly rounded (sqrt(2.0) in double is one ulp low)
    "sqrt",
}
# torch.maximum/minimum of +0 and -0 returns either, depending on its scalar/vector path.
ZERO_SIGN_FREE = {"maximum", "minimum", "clamp"}

FLOAT_SPECIALS = [
    math.nan, math.inf, -math.inf, 0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 1.5, -1.5, 2.5, -2.5, 3.0, -3.0,
    0.25, 0.75, -0.75, 1e-45, -1e-45, 1e-40, 1.17549435e-38, 3.4028235e38, -3.4028235e38, 65504.0,
    65520.0, -65520.0, 0.1, -0.1, 100.0, -100.0, 88.5, -88.5, 1e10, -1e10, 16777217.0, 0.9999,
    -0.9999, 0.7, -0.7, 10.0, -10.0, 1e-8, 2.0, -2.0, 7.0, -7.0, 1 / 3, 4.5, -5.5, 1e300, -1e-300,
]
I64_MIN, I64_MAX = -(2**63), 2**63 - 1
I32_MIN, I32_MAX = -(2**31), 2**31 - 1
INT_SPECIALS = [0, 1, -1, 2, -2, 3, -3, 7, -7, 8, 31, 32, 33, 63, 64, 65, -64, 100, -100, 12345,
                -12345, 2**31 - 1, -(2**31), 2**31, I64_MAX, I64_MIN, I64_MAX - 1, I64_MIN + 1, 3**20]


def _values(dtype: DataType, n: int, rng: random.Random) -> list:
    if dtype.is_bool:
        base = [False, True]
        return [base[i % 2] for i in range(n)]
    if dtype.is_integer:
        lo, hi = (I32_MIN, I32_MAX) if dtype == D.Int32 else (I64_MIN, I64_MAX)
        base = [v for v in INT_SPECIALS if lo <= v <= hi]
        base += [rng.randint(-1000, 1000) for _ in range(40)] + [rng.randint(lo, hi) for _ in range(20)]
        return base
    base = list(FLOAT_SPECIALS)
    base += [rng.gauss(0, 3) for _ in range(60)] + [rng.uniform(-1, 1) for _ in range(30)]
    base += [rng.uniform(-40, 40) for _ in range(30)]
    return base


def _tensor(dtype: DataType, values: list) -> torch.Tensor:
    if dtype.is_float and dtype != D.Double:
        # values beyond float's range become inf, as a float tensor would hold them
        return torch.tensor(values, dtype=torch.float64).to(torch.float32).to(to_torch(dtype))
    return torch.tensor(values, dtype=to_torch(dtype))


def _inputs(arity: int, n: int, seed: int) -> dict[DataType, list[torch.Tensor]]:
    """Per dtype, `arity` tensors of length n: for two or three operands, every pair of the
    specials is covered (cartesian product first), then random combinations."""
    rng = random.Random(seed)
    out = {}
    for dt in DTYPES:
        vals = _values(dt, n, rng)
        if arity == 1:
            cols = [[vals[i % len(vals)] for i in range(n)]]
        else:
            pairs = [(a, b) for a in vals for b in vals]
            rng.shuffle(pairs)
            pairs = pairs[:n]
            while len(pairs) < n:
                pairs.append((rng.choice(vals), rng.choice(vals)))
            cols = [[p[0] for p in pairs], [p[1] for p in pairs]]
            if arity == 3:
                cols.append([rng.choice(vals) for _ in range(n)])
        if dt.is_integer:
            # torch raises on an integer division by zero and traps on MIN / -1: keep the
            # second operand away from those (the kernel's choice there is documented).
            lo = I32_MIN if dt == D.Int32 else I64_MIN
            for i in range(n):
                if arity > 1 and cols[1][i] == 0:
                    cols[1][i] = 3
                if arity > 1 and cols[0][i] == lo and cols[1][i] == -1:
                    cols[1][i] = -2
        out[dt] = [_tensor(dt, c) for c in cols]
    return out


def _reference(kind: str, op: str, dtype: DataType, xs: list[torch.Tensor]):
    """(output dtype, reference output) or None when the reference rejects the op."""
    try:
        with FusionDefinition() as fd:
            ts = [fd.define_tensor(shape=[-1], contiguity=[True], dtype=dtype) for _ in xs]
            if kind == "ternary" and op == "where":
                cond = fd.ops.ne(ts[0], ts[1]) if dtype.is_bool else fd.ops.lt(ts[0], ts[1])
                ts = [cond, ts[1], ts[2]]
            fn = getattr(fd.ops, op)
            fd.add_output(fn(*ts))
        (out,) = fd.execute(xs)
        return fd.fusion.outputs[0].dtype, out
    except Exception:
        return None


def _expr(kind: str, op: str, dtype: DataType, out_dtype: DataType) -> str:
    """The kernel expression for one case, over in0.. (storage type `dtype`), through
    ops_table exactly as the code generator uses it."""
    names = ["in0", "in1", "in2"][: {"unary": 1, "binary": 2, "ternary": 3}[kind]]
    if kind == "ternary" and op == "where":
        cmp = "ne" if dtype.is_bool else "lt"
        ccd = ot.compute_dtype(cmp, [dtype, dtype])
        cond = ot.binary(cmp, ot.cast("in0", dtype, ccd), ot.cast("in1", dtype, ccd), ccd)
        cd = ot.compute_dtype("where", [D.Bool, dtype, dtype])
        e = ot.ternary("where", cond, ot.cast("in1", dtype, cd), ot.cast("in2", dtype, cd), cd)
        return ot.cast(e, cd, out_dtype)
    cd = ot.compute_dtype(op, [dtype] * len(names))
    args = [ot.cast(n, dtype, cd) for n in names]
    if kind == "unary":
        e = ot.unary(op, *args, cd)
    elif kind == "binary":
        e = ot.binary(op, *args, cd)
    else:
        e = ot.ternary(op, *args, cd)
    result = D.Bool if (op in BOOL_UNARY or op in COMPARE_BINARY) else cd
    return ot.cast(e, result, out_dtype)


OPS = {
    "unary": FLOAT_UNARY + SAME_UNARY + BOOL_UNARY,
    "binary": ARITH_BINARY + COMPARE_BINARY + BITWISE_BINARY,
    "ternary": ["where", "clamp", "lerp"],
}
N = {"unary": 256, "binary": 2048, "ternary": 1024}
# (op, dtype) pairs the reference accepts but the CUDA side refuses on purpose: none.
KNOWN_REFUSED: set[tuple[str, DataType]] = set()


def _build(kind: str):
    inputs = _inputs({"unary": 1, "binary": 2, "ternary": 3}[kind], N[kind], seed=len(kind))
    cases, refused = [], []
    for dt in DTYPES:
        for op in OPS[kind]:
            ref = _reference(kind, op, dt, inputs[dt])
            if ref is None:
                continue
            out_dtype, expected = ref
            try:
                expr = _expr(kind, op, dt, out_dtype)
            except CompileError as e:
                if (op, dt) not in KNOWN_REFUSED:
                    refused.append(f"{op}[{dt.cuda_name}]: {e}")
                continue
            cases.append((op, dt, out_dtype, expr, expected))
    specs, body, args = [], [], []
    for dt in DTYPES:
        for k, t in enumerate(inputs[dt]):
            specs.append(TensorArg(f"X{k}_{dt.name}", dt.cuda_name, 1, 1))
            args.append(t)
    lines = []
    for c, (op, dt, out_dtype, expr, expected) in enumerate(cases):
        specs.append(TensorArg(f"Y{c}", out_dtype.cuda_name, 1, 1))
        args.append(torch.empty_like(expected))
        loads = "".join(
            f"const {dt.cuda_name} in{k} = X{k}_{dt.name}[i]; " for k in range(len(inputs[dt]))
        )
        lines.append(f"    {{ {loads}Y{c}[i] = {expr}; }}  // {op} {dt.cuda_name}")
    params = ", ".join(f"{s.decl} {s.name}" for s in specs)
    body = (f'extern "C" __global__ void ops_{kind}({params}) {{\n'
            + grid_stride_loop(f"{N[kind]}", "\n".join(lines)) + "}\n")
    return body, f"ops_{kind}", specs, args, cases, inputs, refused


def run_all(compile_fn=compile_all) -> dict:
    """Build, compile (with `compile_fn`, the emulator's by default) and run the three
    kernels: per kind (cases, outputs, inputs, refused)."""
    built = {kind: _build(kind) for kind in OPS}
    kernels = compile_fn([(b[0], b[1], b[2]) for b in built.values()])
    out = {}
    for (kind, b), k in zip(built.items(), kernels):
        body, name, specs, args, cases, inputs, refused = b
        k.launch(args, LaunchConfig((2, 1, 1), (64, 1, 1)))
        n_in = sum(len(inputs[dt]) for dt in DTYPES)
        out[kind] = (cases, args[n_in:], inputs, refused)
    return out


@pytest.fixture(scope="module")
def results():
    return run_all()


def _ulps(actual: torch.Tensor, expected: torch.Tensor, dtype: DataType,
          scale: torch.Tensor | None = None) -> torch.Tensor:
    """|actual - expected| in units of the result type's epsilon, relative to |expected|
    or `scale` where larger (absolute near zero)."""
    eps = {D.Float: 2.0**-23, D.Double: 2.0**-52, D.Half: 2.0**-10, D.BFloat16: 2.0**-7}[dtype]
    tiny = {D.Float: 1e-37, D.Double: 1e-300, D.Half: 6e-5, D.BFloat16: 1e-37}[dtype]
    a, e = actual.double(), expected.double()
    ref = e.abs() if scale is None else torch.maximum(e.abs(), scale.double().abs())
    err = (a - e).abs() / (ref.clamp(min=tiny) * eps)
    same = (a == e) | (torch.isnan(a) & torch.isnan(e))
    return torch.where(same, torch.zeros_like(err), err)


@pytest.mark.parametrize("kind", list(OPS))
def test_every_op_matches_reference(results, kind):
    cases, outs, inputs, refused = results[kind]
    assert not refused, "ops_table refuses ops the reference runs:\n" + "\n".join(refused)
    failures = []
    for (op, dt, out_dtype, expr, expected), actual in zip(cases, outs):
        if op in INEXACT and out_dtype.is_float:
            # libm vs Sleef: a few ulps of float; in half/bf16 one rounding flip
            x = inputs[dt][0].double()
            # gelu's 1 + erf(x / sqrt 2) cancels for x << 0: errors scale with |x|, and torch's
            # own erf is less accurate there than libm's
            err = _ulps(actual, expected, out_dtype, x if op == "gelu" else None)
            limit = 4 if out_dtype in (D.Float, D.Double) else 1.01
            if op in ("lgamma", "digamma", "tan", "erfinv", "erfcinv", "pow", "acosh", "atanh", "erfc",
                      "asinh", "expm1", "log1p", "sinh", "cosh") and out_dtype in (D.Float, D.Double):
                limit = 64  # ill-conditioned near poles and zeros; still catches wrong formulas
            bad = (err > limit) & ~(torch.isinf(actual.double()) & torch.isinf(expected.double())
                                    & (actual.double() == expected.double()))
            bad |= torch.isnan(actual.double()) != torch.isnan(expected.double())
            if op == "gelu":
                # torch's float gelu(+inf) is NaN (an artifact of its vector kernel; its
                # double gelu gives inf, as the erf formula does): not a contract
                bad &= ~torch.isinf(x)
        else:
            bad = mismatches(actual, expected, zero_sign=op not in ZERO_SIGN_FREE)
            if op in ("mod", "fmod", "remainder") and dt.is_float and dt != D.Double:
                # torch's vectorized float fmod (Sleef) gives NaN where the quotient overflows
                # or the divisor is subnormal; C's fmod is exact there. Not a contract.
                a, b = inputs[dt][0].double(), inputs[dt][1].double()
                bad &= ((a / b).abs() < 1e38) & (b.abs() >= 1.1754943508222875e-38)
        if bad.any():
            failures.append(f"{op}[{dt.cuda_name} -> {out_dtype.cuda_name}] `{expr}`: "
                            + describe(bad, inputs[dt], actual, expected))
    assert not failures, "\n".join(failures)


def test_every_op_and_dtype_is_covered(results):
    """Each op runs for at least the dtypes it is defined on."""
    seen = {(op, dt) for kind in results for op, dt, *_ in results[kind][0]}
    for op in FLOAT_UNARY:
        for dt in (D.Float, D.Double, D.Half, D.BFloat16):
            assert (op, dt) in seen, op
    for op in ARITH_BINARY + COMPARE_BINARY:
        for dt in (D.Float, D.Double, D.Half, D.BFloat16, D.Int, D.Int32):
            if op == "atan2" and dt.is_integer:
                continue
            if op == "nextafter" and dt not in (D.Float, D.Double):
                continue  # refused: only exact in the type itself
            assert (op, dt) in seen, (op, dt)
    for op in BITWISE_BINARY:
        for dt in (D.Int, D.Int32):
            assert (op, dt) in seen, (op, dt)
    for op in ("where", "clamp", "lerp"):
        for dt in (D.Float, D.Double, D.Half, D.BFloat16, D.Int, D.Int32):
            assert (op, dt) in seen, (op, dt)


# ---- pure-Python parts of the table ----------------------------------------------------------

def test_unknown_ops_raise_compile_error_naming_them():
    for call in (lambda: ot.unary("cbrt", "x", D.Float), lambda: ot.binary("hypot", "a", "b", D.Float),
                 lambda: ot.ternary("fma", "a", "b", "c", D.Float),
                 lambda: ot.reduction_init("argmax", D.Float),
                 lambda: ot.reduction_combine("xor", "a", "b", D.Int)):
        with pytest.raises(CompileError) as e:
            call()
        assert any(name in str(e.value) for name in ("cbrt", "hypot", "fma", "argmax", "xor"))
    with pytest.raises(CompileError, match="bitwise_not"):
        ot.unary("bitwise_not", "x", D.Float)
    with pytest.raises(CompileError, match="storage type"):
        ot.unary("exp", "x", D.Half)
    with pytest.raises(CompileError, match="complex"):
        ot.binary("add", "a", "b", D.ComplexFloat)


def test_literals():
    assert ot.literal(1, D.Float) == "1.0f"
    assert ot.literal(0.1, D.Float) == "0.1f"
    assert ot.literal(-0.0, D.Float) == "(-0.0f)"
    assert ot.literal(-0.0, D.Double) == "(-0.0)"
    assert ot.literal(math.inf, D.Float) == "INFINITY"
    assert ot.literal(-math.inf, D.Float) == "(-INFINITY)"
    assert ot.literal(math.nan, D.Double) == "static_cast<double>(NAN)"
    assert ot.literal(1e300, D.Float) == "INFINITY"  # rounds beyond float, as torch.full
    assert ot.literal(3.4028235e38, D.Float) == "3.4028235e+38f"
    assert ot.literal(1e-45, D.Float) == "1e-45f"
    assert ot.literal(0.1, D.Double) == "0.1"
    assert ot.literal(2, D.Double) == "2.0"
    assert ot.literal(True, D.Bool) == "true"
    assert ot.literal(-(2**31), D.Int32) == "(-2147483647 - 1)"
    assert ot.literal(-5, D.Int32) == "(-5)"
    assert ot.literal(-(2**63), D.Int) == "static_cast<int64_t>((-9223372036854775807LL - 1))"
    assert ot.literal(7, D.Index) == "static_cast<nvfuser_index_t>(7LL)"
    assert ot.literal(1.5, D.BFloat16) == "__float2bfloat(1.5f)"
    with pytest.raises(CompileError):
        ot.literal(2**40, D.Int32)


def test_reduction_identities_match_reduction_ops():
    from engine.ops.reduction import _init_value

    for op in ot.REDUCTION_OPS:
        for dt in (D.Float, D.Double, D.Int, D.Int32, D.Bool):
            want = _init_value(op, dt)
            assert ot.reduction_init(op, dt) == ot.literal(want, dt), (op, dt)
    assert ot.reduction_init("max", D.Float) == "(-INFINITY)"
    assert ot.reduction_combine("max", "a", "b", D.Float) == "fsMax(a, b)"
    assert ot.reduction_combine("add", "a", "b", D.Bool) == "(a || b)"


def test_compute_dtype():
    assert ot.compute_dtype("exp", [D.Int]) == D.Float
    assert ot.compute_dtype("exp", [D.Half]) == D.Float
    assert ot.compute_dtype("neg", [D.Int32]) == D.Int32
    assert ot.compute_dtype("add", [D.Half, D.BFloat16]) == D.Float
    assert ot.compute_dtype("add", [D.Int32, D.Double]) == D.Double
    assert ot.compute_dtype("where", [D.Bool, D.Half, D.Half]) == D.Float
    assert ot.compute_dtype("atan2", [D.Int, D.Int]) == D.Float


def test_grid_reduce_buffer_sizes():
    assert ot.grid_reduce_buffer_sizes((7, 1, 1), (96, 3, 1), (True, False, False),
                                       (True, False, False)) == (7 * 3, 1)
    assert ot.grid_reduce_buffer_sizes((7, 2, 1), (32, 4, 1), (True, False, False),
                                       (False, True, False)) == (14 * 32, 2)
