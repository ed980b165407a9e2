"""The reference evaluator: runs any Fusion with torch ops. The ground truth.

Each Expr class maps to a handler `fn(expr, inputs, ctx) -> list[outputs]`; inputs
are torch tensors for TensorViews and Python numbers for scalars. Low-precision
floats are computed in float and rounded to the output type, as nvFuser does.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import torch

from engine import philox
from engine.analysis.replay import transforms_between
from engine.dtypes import DataType, compute_dtype, from_torch, to_torch
from engine.errors import ExecutionError
from engine.ir import exprs as ex
from engine.ir.base import Expr, Val
from engine.ir.fusion import Fusion
from engine.ir.iterdomain import Merge, Split
from engine.ir.scalar import Scalar
from engine.ir.tensorview import TensorView
from engine.runtime.placement import run_device
from engine.shape_rules import expand_mismatch, pointwise_mismatch, reshape_mismatch

Handler = Callable[[Any, list[Any], "Context"], list[Any]]
HANDLERS: dict[type, Handler] = {}


def handles(*classes: type) -> Callable[[Handler], Handler]:
    """Register a handler for Expr classes (other modules add theirs this way)."""

    def deco(fn: Handler) -> Handler:
        for c in classes:
            HANDLERS[c] = fn
        return fn

    return deco


class Context:
    """Bindings of scalars (extents, scalar inputs) and the device to compute on."""

    def __init__(self, device: torch.device) -> None:
        self.device = device
        self.env: dict[Scalar, Any] = {}

    def scalar(self, s: Scalar) -> Any:
        try:
            return s.evaluate(self.env)
        except KeyError as e:
            raise ExecutionError(f"scalar {s.inline()} has no value: {e}") from None


def evaluate(fusion: Fusion, inputs: Sequence[Any], device: Any = None,
             after: Callable[[Expr, list[Any]], list[Any]] | None = None) -> list[Any]:
    """Outputs of `fusion` for `inputs` (torch tensors and numbers). `after(expr, outs)`,
    when given, sees each expression's outputs and returns what later ones read instead
    (the fuzz harness perturbs them to measure how rounding moves the results)."""
    if len(inputs) != len(fusion.inputs):
        raise ExecutionError(f"fusion takes {len(fusion.inputs)} inputs, got {len(inputs)}")
    ctx = Context(run_device("reference", inputs, device))
    values: dict[Val, Any] = {}
    for k, (val, x) in enumerate(zip(fusion.inputs, inputs)):
        values[val] = bind_input(k, val, x, ctx)
    check_extents(fusion, ctx.env)
    for expr in fusion.exprs():
        args = [_value(v, values, ctx) for v in expr.inputs]
        handler = HANDLERS.get(type(expr))
        if handler is None:
            raise ExecutionError(f"the reference evaluator has no rule for {type(expr).__name__}")
        try:
            outs = handler(expr, args, ctx)
        except ExecutionError:
            raise
        except Exception as e:  # name the op at fault, keep the cause
            raise ExecutionError(f"{type(expr).__name__} producing {_names(expr.outputs)} failed: {e}") from e
        if after is not None:
            outs = after(expr, outs)
        for v, t in zip(expr.outputs, outs):
            values[v] = t
    return [finish_output(v, _value(v, values, ctx)) for v in fusion.outputs]


def check_extents(fusion: Fusion, env: dict) -> None:
    """The sizes ops asked iteration axes to have (Fusion.extent_checks) against the bound ones."""
    for have, want, where in getattr(fusion, "extent_checks", ()):
        try:
            a, b = int(have.evaluate(env)), int(want.evaluate(env))
        except KeyError:
            continue  # a segment's fusion need not bind every symbol of the complete one
        if a != b:
            raise ExecutionError(
                f"{where} has {a} elements, not {b}, and is not a broadcast axis: its size is an input's, which "
                "nvFuser's expand keeps, binding it to the size asked for (define a size-1 input axis as a "
                "broadcast: shape 1 or contiguity None)")


def _names(vals: Sequence[Val]) -> str:
    return ", ".join(getattr(v, "short_name", "?") for v in vals)


def _value(v: Val, values: dict[Val, Any], ctx: Context) -> Any:
    if v in values:
        return values[v]
    if isinstance(v, Scalar):
        return ctx.scalar(v)
    raise ExecutionError(f"{getattr(v, 'short_name', v)} is used before it is computed")


def bind_input(k: int, val: Val, x: Any, ctx: Context) -> Any:
    """Check an input against its definition and bind its symbolic extents."""
    if isinstance(val, Scalar):
        if isinstance(x, torch.Tensor):
            if x.numel() != 1:
                raise ExecutionError(f"input {k} ({val.inline()}) is a scalar; got a tensor of shape {tuple(x.shape)}")
            x = x.item()
        if not isinstance(x, (int, float, bool, complex)):
            raise ExecutionError(f"input {k} ({val.inline()}) must be a number, got {type(x).__name__}")
        ctx.env[val] = x
        return x
    tv: TensorView = val  # type: ignore[assignment]
    if not isinstance(x, torch.Tensor):
        raise ExecutionError(f"input {k} ({tv.short_name}) must be a torch tensor, got {type(x).__name__}")
    logical = [i for i in tv.domain.logical if not i.is_reduction]
    if x.dim() != len(logical):
        raise ExecutionError(f"input {k} ({tv.short_name}) must have rank {len(logical)}, got shape {tuple(x.shape)}")
    want = to_torch(tv.dtype)
    if x.dtype != want:
        raise ExecutionError(
            f"input {k} ({tv.short_name}) must be {tv.dtype.cuda_name} ({want}), got {x.dtype}"
        )
    for d, (i, size) in enumerate(zip(logical, element_sizes(tv.dtype, x))):
        extent = i.expanded_extent if i.expanded_extent is not None else i.extent
        if i.is_broadcast and i.expanded_extent is None:
            if size != 1:
                raise ExecutionError(f"input {k} ({tv.short_name}) axis {d} is a broadcast of size 1, got {size}")
            continue
        _bind_extent(k, tv, d, extent, size, ctx)
    return x.to(ctx.device)


def check_input_layouts(fusion: Fusion, inputs: Sequence[Any]) -> None:
    """The user's input tensors against their definitions' contiguity and stride order
    (nvFuser's "Stride mismatch with contiguity info"): kernels may index a contiguous axis
    without its runtime stride and vectorize across contiguous axes, so a tensor laid out
    otherwise would be read wrongly. Only a fusion's own inputs: the tensors between
    segments are laid out by the engine and passed with their strides."""
    for k, (v, x) in enumerate(zip(fusion.inputs, inputs)):
        if isinstance(v, TensorView) and isinstance(x, torch.Tensor) and x.dim() == v.ndim:
            _check_layout(k, v, x)


def _check_layout(k: int, tv: TensorView, x: torch.Tensor) -> None:
    """nvFuser's rule, walking the allocation order from the innermost axis: a contiguous
    axis has the stride of the axes inside it, and every non-broadcast axis sets the stride
    the next one needs. More lenient on a contiguous axis of size 1, whose stride torch
    leaves free and no index ever multiplies: it is not checked and passes the expected
    stride on. Packed fp4 tensors and empty ones are not checked."""
    if tv.dtype == DataType.Float4_e2m1fn or x.numel() == 0:
        return
    dom = tv.domain
    pos = {i: d for d, i in enumerate(i for i in dom.logical if not i.is_reduction)}
    alloc = [(i, c) for i, c in zip(dom.maybe_allocation, dom.contiguity) if not i.is_reduction]
    if any(i not in pos for i, _ in alloc):
        return  # an allocation domain beyond a permutation of the logical one
    expected = 1
    for i, contiguous in reversed(alloc):
        d = pos[i]
        size, stride = x.shape[d], x.stride(d)
        if contiguous is None or (contiguous and size == 1):
            continue
        if contiguous and stride != expected:
            raise ExecutionError(
                f"input {k} ({tv.short_name}) axis {d} has stride {stride}, but its definition makes it "
                f"contiguous with the axes inside it (stride {expected}; strides {tuple(x.stride())}, "
                f"shape {tuple(x.shape)}): pass a tensor with that layout (.contiguous()), or define "
                "the input with its contiguity and stride_order"
            )
        expected = stride * size


def element_sizes(dtype: DataType, x: torch.Tensor) -> list[int]:
    """Sizes in elements: an fp4 tensor packs two values per byte on its stride-1 axis."""
    sizes = list(x.shape)
    if dtype == DataType.Float4_e2m1fn:
        from engine.nvfp4 import packed_dim

        sizes[packed_dim(x)] *= 2
    return sizes


def _bind_extent(k: int, tv: TensorView, d: int, extent: Scalar, size: int, ctx: Context) -> None:
    if extent.is_const:
        if extent.value != size:
            raise ExecutionError(f"input {k} ({tv.short_name}) axis {d} must have size {extent.value}, got {size}")
    elif extent.is_symbol:
        bound = ctx.env.setdefault(extent, size)
        if bound != size:
            raise ExecutionError(
                f"input {k} ({tv.short_name}) axis {d} has size {size} but {extent.inline()} is {bound}"
            )


def finish_output(v: Val, x: Any) -> Any:
    """Give an output the strides of its allocation domain; expanded broadcast axes stay
    expanded (stride 0), as nvFuser returns them."""
    if not isinstance(v, TensorView) or not isinstance(x, torch.Tensor):
        return x
    logical = [i for i in v.domain.logical if not i.is_reduction]
    expanded = [
        k for k, i in enumerate(logical)
        if i.expanded_extent is not None and k < x.dim() and x.stride(k) == 0 and x.shape[k] != 1
    ]
    if expanded:
        base = x
        for k in expanded:
            base = base.narrow(k, 0, 1)
        return _layout(v, base).expand(x.shape)
    return _layout(v, x)


def _layout(v: TensorView, x: torch.Tensor) -> torch.Tensor:
    dom = v.domain
    if dom.allocation is None:
        return x.contiguous() if not x.is_contiguous() else x
    logical = [i for i in dom.logical if not i.is_reduction]
    alloc = [i for i in dom.allocation if not i.is_reduction]
    try:
        perm = [logical.index(i) for i in alloc]
    except ValueError:
        return x.contiguous()  # an allocation domain transformed beyond a permutation
    out = x.permute(perm).contiguous().permute(_inverse(perm))
    return out


def _inverse(perm: list[int]) -> list[int]:
    inv = [0] * len(perm)
    for i, p in enumerate(perm):
        inv[p] = i
    return inv


# ---- helpers for handlers ----------------------------------------------------------------

def up(x: Any) -> Any:
    """Low-precision floats are computed in float."""
    if isinstance(x, torch.Tensor) and x.dtype == torch.float4_e2m1fn_x2:
        from engine.nvfp4 import fp4_to_float  # torch cannot convert fp4 itself

        return fp4_to_float(x)
    if isinstance(x, torch.Tensor) and x.is_floating_point() and x.dtype.itemsize < 4:
        return x.float()
    return x


def as_dtype(x: Any, dtype: DataType) -> Any:
    # Through the cast rules: fp4 and fp8 round as the generated code does.
    return cast_tensor(x, dtype) if isinstance(x, torch.Tensor) else x


def out_dtype(expr: Expr, k: int = 0) -> DataType:
    return expr.outputs[k].dtype


# ---- pointwise -------------------------------------------------------------------------------

def _gelu(x):
    # nvFuser's formula, which the kernels compute: at +inf it is inf, where torch's gelu
    # gives NaN (gelu of pow(0, negative), for one).
    return x * 0.5 * (1 + torch.erf(x * math.sqrt(0.5)))


def _erfcinv(x):
    # torch has no erfcinv; erfinv(1 - x) would lose a tiny x's digits, the normal quantile
    # keeps them: erfc(z) = 2 * Phi(-z * sqrt 2).
    out = x.dtype if x.is_floating_point() else torch.float32
    return (-torch.special.ndtri(x.double() / 2) * 0.7071067811865476).to(out)


_UNARY: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "neg": torch.neg, "abs": torch.abs, "exp": torch.exp, "exp2": torch.exp2, "expm1": torch.expm1,
    "log": torch.log, "log2": torch.log2, "log10": torch.log10, "log1p": torch.log1p,
    "sqrt": torch.sqrt, "rsqrt": torch.rsqrt, "reciprocal": torch.reciprocal,
    "sin": torch.sin, "cos": torch.cos, "tan": torch.tan, "asin": torch.asin, "acos": torch.acos,
    "atan": torch.atan, "sinh": torch.sinh, "cosh": torch.cosh, "tanh": torch.tanh,
    "asinh": torch.asinh, "acosh": torch.acosh, "atanh": torch.atanh,
    "sigmoid": torch.sigmoid, "erf": torch.erf, "erfc": torch.erfc, "erfinv": torch.erfinv,
    "lgamma": torch.lgamma, "digamma": torch.digamma, "relu": torch.relu, "gelu": _gelu,
    "silu": torch.nn.functional.silu, "ceil": torch.ceil, "floor": torch.floor,
    "round": torch.round, "trunc": torch.trunc, "frac": torch.frac, "sign": torch.sign,
    "bitwise_not": torch.bitwise_not, "logical_not": torch.logical_not,
    "isfinite": torch.isfinite, "isinf": torch.isinf, "isnan": torch.isnan,
    "isneginf": torch.isneginf, "isposinf": torch.isposinf, "signbit": torch.signbit,
    "isreal": torch.isreal, "real": torch.real, "imag": torch.imag, "erfcinv": _erfcinv,
}


def unary_fn(op: str) -> Callable[[torch.Tensor], torch.Tensor]:
    """The torch function of a pointwise unary op (scalar ops evaluate with it too)."""
    return _UNARY[op]


@handles(ex.UnaryOp)
def _unary(expr, args, ctx):
    (x,) = args
    dtype = out_dtype(expr)
    if expr.op == "cast":
        return [cast_tensor(x, dtype)]
    x = up(x)
    if expr.op in ("exp", "log", "sqrt", "rsqrt", "sin", "cos", "tanh", "sigmoid", "erf") and not x.is_floating_point():
        x = x.float()
    return [as_dtype(_UNARY[expr.op](x), dtype)]


def cast_tensor(x: torch.Tensor, dtype: DataType) -> torch.Tensor:
    """Casts as the generated code does them (other modules override fp4/fp8 rules)."""
    rule = CASTS.get(dtype)
    if rule is not None:
        return rule(x)
    return x.to(to_torch(dtype))


# Special cast rules by destination type (the nvfp4 module registers fp4 and fp8 rules).
CASTS: dict[DataType, Callable[[torch.Tensor], torch.Tensor]] = {}


def _int_div(a, b):
    """C's truncating division. torch's traps on MIN / -1 (SIGFPE: the whole process dies),
    so a -1 divisor negates instead: MIN wraps to MIN, as the kernels' fsDivInt gives."""
    minus_one = b == -1
    quotient = torch.div(a, torch.where(minus_one, torch.ones_like(b), b), rounding_mode="trunc")
    return torch.where(minus_one, torch.neg(a), quotient)


def _logical_right_shift(a, b):
    """Zero-filling right shift (torch has none): the arithmetic shift with the sign-filled
    top bits masked off; shifts outside [0, width) give 0, as the kernels do."""
    width = a.element_size() * 8
    s = b.clamp(1, width - 1)
    # (1 << (width - s)) - 1 wraps to the largest value for s == 1, the mask it should be.
    mask = torch.bitwise_left_shift(torch.ones_like(a), width - s) - 1
    shifted = torch.where(b == 0, a, torch.bitwise_right_shift(a, s) & mask)
    return torch.where((b < 0) | (b >= width), torch.zeros_like(a), shifted)


_BINARY: dict[str, Callable[[Any, Any], Any]] = {
    "add": torch.add, "sub": torch.sub, "mul": torch.mul, "div": torch.div,
    "mod": torch.fmod, "fmod": torch.fmod, "remainder": torch.remainder, "pow": torch.pow,
    "maximum": torch.maximum, "minimum": torch.minimum, "atan2": torch.atan2,
    "lt": torch.lt, "le": torch.le, "gt": torch.gt, "ge": torch.ge, "eq": torch.eq, "ne": torch.ne,
    "logical_and": torch.logical_and, "logical_or": torch.logical_or,
    "bitwise_and": torch.bitwise_and, "bitwise_or": torch.bitwise_or, "bitwise_xor": torch.bitwise_xor,
    "bitwise_left_shift": torch.bitwise_left_shift, "bitwise_right_shift": torch.bitwise_right_shift,
    "logical_right_shift": _logical_right_shift, "gcd": torch.gcd, "nextafter": torch.nextafter,
}


def binary_fn(op: str, dtype: DataType) -> Callable[[torch.Tensor, torch.Tensor], torch.Tensor]:
    """The torch function of a pointwise binary op computing in `dtype` (scalar ops
    evaluate with it too): integer division truncates, as C's does."""
    if op == "div" and not (dtype.is_float or dtype.is_complex):
        return _int_div
    return _BINARY[op]


def _tensorize(x: Any, like: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    if isinstance(x, torch.Tensor):
        return x
    return torch.tensor(x, dtype=dtype, device=like.device)


def check_pointwise_sizes(expr: Expr, args: Sequence[Any]) -> None:
    """Operands of a pointwise op agree axis by axis wherever neither axis is a broadcast
    (engine.shape_rules.pointwise_mismatch)."""
    why = pointwise_mismatch(expr, [tuple(x.shape) if isinstance(x, torch.Tensor) else None for x in args])
    if why is not None:
        raise ExecutionError(why)


@handles(ex.BinaryOp)
def _binary(expr, args, ctx):
    check_pointwise_sizes(expr, args)
    dtype = out_dtype(expr)
    # A bool result (comparisons, logical ops) computes in the operands' promoted type,
    # the rest in the result type; low-precision floats in float.
    work = to_torch(compute_dtype(expr.operand_dtype() if dtype.is_bool else dtype))
    tensor = next(a for a in args if isinstance(a, torch.Tensor))
    a, b = (_tensorize(x, tensor, work).to(work) for x in args)
    fn = binary_fn(expr.op, from_torch(work))
    if expr.op in ("maximum", "minimum") and a.dtype != b.dtype:
        b = b.to(a.dtype)
    return [as_dtype(fn(a, b), dtype)]


@handles(ex.TernaryOp)
def _ternary(expr, args, ctx):
    check_pointwise_sizes(expr, args)
    dtype = out_dtype(expr)
    work = to_torch(compute_dtype(dtype))
    tensor = next(a for a in args if isinstance(a, torch.Tensor))
    if expr.op == "where":
        c, a, b = args
        c = _tensorize(c, tensor, torch.bool)
        a, b = (_tensorize(x, tensor, work).to(work) for x in (a, b))
        return [as_dtype(torch.where(c, a, b), dtype)]
    a, b, c = (_tensorize(x, tensor, work).to(work) for x in args)
    if expr.op == "clamp":
        return [as_dtype(torch.minimum(torch.maximum(a, b), c), dtype)]
    if expr.op == "lerp":
        return [as_dtype(a + c * (b - a), dtype)]
    raise ExecutionError(f"unknown ternary op {expr.op}")


# ---- reductions ------------------------------------------------------------------------------

def reduction_dims(tv: TensorView) -> list[int]:
    return [k for k, i in enumerate(tv.domain.logical) if i.is_reduction]


def _reduce(x: torch.Tensor, op: str, dims: list[int]) -> torch.Tensor:
    if not dims:
        return x.clone()
    if op == "add":
        return torch.sum(x, dim=dims)
    if op == "max":
        return torch.amax(x, dim=dims)
    if op == "min":
        return torch.amin(x, dim=dims)
    if op == "mul":
        for d in sorted(dims, reverse=True):
            x = torch.prod(x, dim=d)
        return x
    raise ExecutionError(f"unknown reduction op {op}")


@handles(ex.ReductionOp)
def _reduction(expr, args, ctx):
    out = expr.output
    return [as_dtype(_reduce(up(args[0]), expr.op, reduction_dims(out)), out.dtype)]


@handles(ex.RFactorReductionOp)
def _rfactor_reduction(expr, args, ctx):
    out = expr.output
    x = view_as_logical(up(args[0]), out, expr.init, ctx)
    return [as_dtype(_reduce(x, expr.op, reduction_dims(out)), out.dtype)]


def _pad_to(x: torch.Tensor, dim: int, size: int, fill: Any) -> torch.Tensor:
    extra = size - x.shape[dim]
    if extra <= 0:
        return x
    shape = list(x.shape)
    shape[dim] = extra
    # The padding holds the reduction's initial value, so it changes no result.
    return torch.cat([x, torch.full(shape, fill, dtype=x.dtype, device=x.device)], dim=dim)


def view_as_logical(x: torch.Tensor, tv: TensorView, fill: Any, ctx: Context) -> torch.Tensor:
    """`x`, indexed by `tv`'s root ids, re-laid out by its root->logical splits and merges."""
    dom = tv.domain
    dims = list(dom.maybe_root)
    for t in transforms_between(dom.maybe_root, dom.logical):
        if isinstance(t, Split):
            d = dims.index(t.in_id)
            f = int(ctx.scalar(t.factor))
            rest = -(-x.shape[d] // f)
            x = _pad_to(x, d, rest * f, fill)
            outer, inner = (rest, f) if t.inner_split else (f, rest)
            x = x.reshape(*x.shape[:d], outer, inner, *x.shape[d + 1 :])
            dims[d : d + 1] = [t.outer, t.inner]
        elif isinstance(t, Merge):
            order = [k for k, i in enumerate(dims) if i is not t.outer and i is not t.inner]
            k = min(dims.index(t.outer), dims.index(t.inner))
            order[k:k] = [dims.index(t.outer), dims.index(t.inner)]
            x = x.permute(order)
            dims = [dims[j] for j in order]
            x = x.reshape(*x.shape[:k], x.shape[k] * x.shape[k + 1], *x.shape[k + 2 :])
            dims[k : k + 2] = [t.out]
        else:
            raise ExecutionError(f"{tv.short_name}: cannot evaluate {t.kind} in a root->logical view")
    return x.permute([dims.index(i) for i in dom.logical])


# ---- shape -----------------------------------------------------------------------------------

@handles(ex.BroadcastOp)
def _broadcast(expr, args, ctx):
    (x,) = args
    for k, f in enumerate(expr.flags):
        if f:
            x = x.unsqueeze(k)
    return [x]


@handles(ex.SqueezeOp)
def _squeeze(expr, args, ctx):
    (x,) = args
    dims = [k for k, f in enumerate(expr.flags) if f]
    for d in sorted(dims, reverse=True):
        x = x.select(d, 0) if x.shape[d] != 1 else x.squeeze(d)
    return [x]


@handles(ex.LoadStoreOp)
def _set(expr, args, ctx):
    (x,) = args
    out = expr.output
    if out.domain.has_root:
        root = [i for i in out.domain.root if not i.is_reduction]
        logical = [i for i in out.domain.logical if not i.is_reduction]
        perm = [root.index(i) for i in logical]
        return [x.permute(perm)]
    return [x.clone() if isinstance(x, torch.Tensor) else x]



def logical_sizes(tv: TensorView, ctx: Context) -> list[int]:
    """The sizes torch sees for a tensor: expanded broadcasts count their expanded extent."""
    return [
        int(ctx.scalar(i.expanded_extent if i.expanded_extent is not None else i.extent))
        for i in tv.domain.logical if not i.is_reduction
    ]


@handles(ex.ExpandOp)
def _expand(expr, args, ctx):
    (x,) = args
    logical = [i for i in expr.output.domain.logical if not i.is_reduction]
    sizes = [int(ctx.scalar(i.expanded_extent)) if i.expanded_extent is not None else -1 for i in logical]
    for k in expr.attributes.get("concretized", ()):
        # Expanded where the input has one element, kept where it has the size asked for.
        sizes[k] = int(ctx.scalar(expr.shape[k]))
        why = expand_mismatch(expr, k, x.shape[k], sizes[k])
        if why is not None:
            raise ExecutionError(why)
    # torch's expand makes stride-0 views, the same thing as nvFuser's expanded broadcast.
    return [x.expand(sizes)]


@handles(ex.ViewOp)
def _view(expr, args, ctx):
    (x,) = args
    asked = None if expr.new_shape is None else [int(ctx.scalar(s)) for s in expr.new_shape]
    # Symbolic input sizes: only now are the element counts known (nvFuser checks at
    # concretization: "Total element counts across view operation must match").
    why = reshape_mismatch(expr, list(x.shape), asked)
    if why is not None:
        raise ValueError(why)
    return [x.reshape(logical_sizes(expr.output, ctx))]


@handles(ex.SliceOp)
def _slice(expr, args, ctx):
    (x,) = args
    index = tuple(
        slice(int(ctx.scalar(a)), int(ctx.scalar(b)), int(ctx.scalar(c))) for a, b, c in expr.ranges
    )
    return [x[index]]


@handles(ex.PadOp)
def _pad(expr, args, ctx):
    x, value = args
    flat: list[int] = []
    # torch.nn.functional.pad takes (left, right) of the last axis first.
    for left, right in reversed(expr.widths):
        flat += [int(ctx.scalar(left)), int(ctx.scalar(right))]
    if isinstance(value, torch.Tensor):
        value = value.item()
    dtype = out_dtype(expr)
    work = up(x)
    out = torch.nn.functional.pad(work, flat, mode="constant", value=float(value) if work.is_floating_point() else value)
    return [cast_tensor(out, dtype) if out.dtype != to_torch(dtype) else out]


@handles(ex.CatOp)
def _cat(expr, args, ctx):
    d = expr.dim
    out = torch.empty(logical_sizes(expr.output, ctx), dtype=args[0].dtype, device=args[0].device)
    for (left, length), x in zip(expr.spans, args):
        # Each padded input owns the region its pad added around it.
        a, n = int(ctx.scalar(left)), int(ctx.scalar(length))
        out.narrow(d, a, n).copy_(x.narrow(d, a, n))
    return [out]


@handles(ex.FullOp)
def _full(expr, args, ctx):
    (fill,) = args
    dtype = out_dtype(expr)
    sizes = [int(ctx.scalar(s)) for s in expr.shape]
    if dtype.is_low_precision_float and dtype.bits < 16:
        # fp8/fp4 values go through the same cast rule as the generated code.
        return [cast_tensor(torch.full(sizes, float(fill), dtype=torch.float32, device=ctx.device), dtype)]
    return [torch.full(sizes, fill, dtype=to_torch(dtype), device=ctx.device)]


@handles(ex.IotaOp)
def _iota(expr, args, ctx):
    length, start, step = args
    dtype = out_dtype(expr)
    work = torch.float64 if dtype.is_float else torch.int64
    r = torch.arange(int(length), dtype=work, device=ctx.device) * step + start
    return [as_dtype(r, dtype)]


@handles(ex.RNGOp)
def _rng(expr, args, ctx):
    dtype = out_dtype(expr)
    sizes = [int(ctx.scalar(s)) for s in expr.shape]
    a, b = (float(_number(x)) for x in args[:2])
    seed, offset = (int(_number(x)) for x in args[2:4]) if len(args) > 2 else (0, expr.rng_id)
    narrow = dtype in (DataType.Half, DataType.BFloat16)
    raw = narrow and expr.dist == "uniform"
    values = philox.draw(expr.dist, math.prod(sizes), seed, offset, dtype == DataType.Double, a, b, raw)
    out = torch.from_numpy(values).reshape(sizes).to(ctx.device)
    if not narrow:
        return [out]
    out = out.to(to_torch(dtype))
    if raw:
        # nvFuser's half/bfloat16 uniform: a draw that rounds up to `b` becomes `a`.
        out = out.masked_fill(out == torch.tensor(b, dtype=torch.float32).to(out.dtype).item(), a)
    return [out]


def _number(x: Any) -> Any:
    """A scalar argument as a Python number (scalars may arrive as 0-d tensors)."""
    return x.item() if isinstance(x, torch.Tensor) else x


@handles(ex.SelectOp)
def _select(expr, args, ctx):
    x, index = args
    if isinstance(index, torch.Tensor):
        index = index.item()
    return [x.select(expr.dim, int(index))]


@handles(ex.IndexSelectOp)
def _index_select(expr, args, ctx):
    x, index = args
    return [torch.index_select(x, expr.dim, index.reshape(-1).long())]


@handles(ex.GatherOp)
def _gather(expr, args, ctx):
    x, index = args
    if expr.exact_sizes:
        return [torch.take_along_dim(x, index.long(), dim=expr.dim)]
    return [torch.gather(x, expr.dim, index.long())]


def _aten_gemm_ok(expr: Expr, ts: Sequence[torch.Tensor]) -> bool:
    """Whether a matmul or linear runs as ATen runs it for nvFuser: on CUDA, operands and
    output of one 16-bit float dtype, where cuBLAS accumulates in float and rounds once (the
    float upcast below gives the same values through a float GEMM at a fraction of the speed
    and four more kernels)."""
    dt = ts[0].dtype
    return (dt in (torch.float16, torch.bfloat16) and all(t.is_cuda and t.dtype == dt for t in ts)
            and to_torch(out_dtype(expr)) == dt)


@handles(ex.MatmulOp)
def _matmul(expr, args, ctx):
    a, b = args
    if _aten_gemm_ok(expr, args):
        return [torch.matmul(a, b)]
    return [as_dtype(torch.matmul(up(a), up(b)), out_dtype(expr))]


@handles(ex.LinearOp)
def _linear(expr, args, ctx):
    if _aten_gemm_ok(expr, args):
        return [torch.nn.functional.linear(*args)]
    a, w = up(args[0]), up(args[1])
    bias = up(args[2]) if len(args) == 3 else None
    return [as_dtype(torch.nn.functional.linear(a, w, bias), out_dtype(expr))]


def _attention_probs(q: torch.Tensor, k: torch.Tensor, lse: torch.Tensor | None, causal: bool,
                     scale: float, bias: torch.Tensor | None = None,
                     mask: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """(softmax probabilities, log-sum-exp) of scale * q k^T (+ bias) in float32; a causal
    mask keeps key j <= query i (top-left aligned, as torch's is_causal), a bool mask keeps
    its True scores. With `lse` given (the backward), the probabilities are recomputed from
    it, as flash attention does."""
    s = torch.matmul(q, k.transpose(-2, -1)) * scale
    if bias is not None:
        s = s + up(bias)
    if mask is not None:
        s = s.masked_fill(~mask.bool(), float("-inf"))
    if causal:
        keep = torch.ones(s.shape[-2], s.shape[-1], dtype=torch.bool, device=s.device).tril()
        s = s.masked_fill(~keep, float("-inf"))
    if lse is None:
        lse = torch.logsumexp(s, dim=-1)
    return torch.exp(s - lse[..., None]), lse


def _sdpa_flags(expr, args, n_tensors: int) -> tuple[bool, float]:
    """(is_causal, scale) of an attention op whose tensors are args[:n_tensors], followed by
    dropout_p, is_causal and, when the op has one, the scale last. Attention with dropout is
    refused (refuse_attention_dropout)."""
    dropout_p, causal = _number(args[n_tensors]), bool(_number(args[n_tensors + 1]))
    if float(dropout_p) != 0.0:
        raise ExecutionError(refuse_attention_dropout(expr, dropout_p))
    q = args[1] if isinstance(expr, ex.SdpaBwdOp) else args[0]
    scale = float(_number(args[-1])) if expr.scale is not None else 1.0 / math.sqrt(q.shape[-1])
    return causal, scale


def refuse_attention_dropout(expr: Expr, dropout_p: Any) -> str:
    """Why attention with dropout does not run: nvFuser runs it through ATen's flash attention,
    whose dropout mask comes from torch's CUDA generator (the philox_seed and philox_offset it
    returns); the reference cannot draw the same mask, so no result could be checked."""
    name = "sdpfa_bwd" if isinstance(expr, ex.SdpaBwdOp) else "sdpfa_fwd"
    return (f"{name} producing {_names(expr.outputs)}: dropout_p = {dropout_p}: attention with dropout is not "
            "run: flash attention draws its dropout mask from torch's CUDA generator, which the reference "
            "evaluator cannot reproduce, so its result could not be checked (the fusion still compiles: "
            "its IR, segments, schedules and kernels can be shown)")


def _flash_ok(*ts: torch.Tensor) -> bool:
    """Whether ATen's flash attention takes these (as nvFuser calls it): CUDA fp16/bf16 of one
    dtype on sm80 or newer, one head size, a multiple of 8 up to 256."""
    q = ts[0]
    if not all(t.is_cuda and t.dtype == q.dtype for t in ts) or q.dtype not in (torch.float16, torch.bfloat16):
        return False
    e = q.shape[-1]
    return (all(t.shape[-1] == e for t in ts) and e % 8 == 0 and e <= 256
            and torch.cuda.get_device_capability(q.device) >= (8, 0))


def _flash_fwd(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool,
               scale: float) -> tuple[torch.Tensor, torch.Tensor] | None:
    """(output, log-sum-exp) from ATen's flash attention, or None where it does not apply (the
    math path then runs: on the GPU it holds the whole score matrix in float32)."""
    if not _flash_ok(q, k, v):
        return None
    try:
        got = torch.ops.aten._scaled_dot_product_flash_attention(q, k, v, 0.0, causal, False, scale=scale)
    except RuntimeError:
        return None
    return got[0].contiguous(), got[1]


def _flash_bwd(g: torch.Tensor, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, o: torch.Tensor,
               lse: torch.Tensor, causal: bool, scale: float) -> tuple[torch.Tensor, ...] | None:
    if not _flash_ok(g, q, k, v, o) or lse.dtype != torch.float32:
        return None
    # Dense inputs have no cumulative sequence lengths (None, as the forward returns them);
    # without dropout the RNG state is not read.
    rng = torch.zeros(2, dtype=torch.uint64, device=q.device)
    try:
        got = torch.ops.aten._scaled_dot_product_flash_attention_backward(
            g, q, k, v, o, lse.contiguous(), None, None, q.shape[-2], k.shape[-2], 0.0, causal, rng,
            torch.zeros((), dtype=torch.uint64, device=q.device), scale=scale)
    except RuntimeError:
        return None
    return tuple(t.contiguous() for t in got[:3])


@handles(ex.SdpaFwdOp)
def _sdpa_fwd(expr, args, ctx):
    extra = dict(zip([n for n in ("scale", "bias", "mask") if expr.attributes[f"has_{n}"]], args[5:]))
    scale_arg = [extra["scale"]] if "scale" in extra else []
    causal, scale = _sdpa_flags(expr, [*args[:5], *scale_arg], 3)
    seed = torch.zeros(2, dtype=torch.int64, device=ctx.device)
    offset = torch.zeros((), dtype=torch.int64, device=ctx.device)
    flash = None if "bias" in extra or "mask" in extra else _flash_fwd(*args[:3], causal, scale)
    if flash is not None:
        return [flash[0], flash[1], seed, offset]
    q, k, v = (up(t) for t in args[:3])
    p, lse = _attention_probs(q, k, None, causal, scale, extra.get("bias"), extra.get("mask"))
    out = torch.matmul(p, v).to(to_torch(out_dtype(expr)))
    return [out, lse.float(), seed, offset]


@handles(ex.SdpaBwdOp)
def _sdpa_bwd(expr, args, ctx):
    causal, scale = _sdpa_flags(expr, [*args[:8], *args[10:]], 6)
    flash = _flash_bwd(*args[:6], causal, scale)
    if flash is not None:
        return list(flash)
    g, q, k, v, o, lse = (up(t) for t in args[:6])
    p, _ = _attention_probs(q, k, lse, causal, scale)
    grad_v = torch.matmul(p.transpose(-2, -1), g)
    grad_p = torch.matmul(g, v.transpose(-2, -1))
    grad_s = p * (grad_p - (g * o).sum(dim=-1, keepdim=True))
    grad_q = torch.matmul(grad_s, k) * scale
    grad_k = torch.matmul(grad_s.transpose(-2, -1), q) * scale
    return [t.to(to_torch(out_dtype(expr, n))) for n, t in enumerate((grad_q, grad_k, grad_v))]


@handles(ex.WelfordOp)
def _welford(expr, args, ctx):
    if len(args) == 3:
        return _welford_combine(expr, args)
    (x,) = args
    avg_tv, var_tv, n_tv = expr.outputs
    dims = reduction_dims(avg_tv)
    x = up(x)
    if dims:
        avg = x.mean(dim=dims)
        var_sum = ((x - x.mean(dim=dims, keepdim=True)) ** 2).sum(dim=dims)
        count = 1
        for d in dims:
            count *= x.shape[d]
    else:
        avg, var_sum, count = x.clone(), torch.zeros_like(x), 1
    n = torch.full(avg.shape, count, dtype=torch.int64, device=x.device)
    return [as_dtype(avg, avg_tv.dtype), as_dtype(var_sum, var_tv.dtype), n]


@handles(ex.RFactorWelfordOp)
def _rfactor_welford(expr, args, ctx):
    """Partial (avg, var_sum, count) over the rfactored axes of a reshaped view of the
    input. A split that does not divide pads the view; a mask of the real elements
    keeps the padding out of every partial (a partial of padding only is (0, 0, 0),
    Welford's initial value, which the combine ignores)."""
    (x,) = args
    avg_tv, var_tv, n_tv = expr.outputs
    x = up(x)
    dims = reduction_dims(avg_tv)
    view = view_as_logical(x, avg_tv, 0, ctx)
    valid = view_as_logical(torch.ones_like(x), avg_tv, 0, ctx)
    if not dims:
        return [as_dtype(view, avg_tv.dtype), as_dtype(torch.zeros_like(view), var_tv.dtype),
                valid.to(torch.int64)]
    count = valid.sum(dim=dims, keepdim=True)
    avg = (view * valid).sum(dim=dims, keepdim=True) / count.clamp(min=1)
    var_sum = (((view - avg) ** 2) * valid).sum(dim=dims)
    return [as_dtype(_drop_dims(avg, dims), avg_tv.dtype),
            as_dtype(var_sum, var_tv.dtype), _drop_dims(count, dims).to(torch.int64)]


def _drop_dims(x: torch.Tensor, dims: list[int]) -> torch.Tensor:
    for d in sorted(dims, reverse=True):
        x = x.squeeze(d)
    return x


def _welford_combine(expr, args):
    """Combine partial (avg, var_sum, count) over the reduced axes (Chan et al.):
    N = sum n, avg = sum(n avg) / N, var_sum = sum var_sum + sum n (avg_i - avg)^2."""
    avg_tv, var_tv, n_tv = expr.outputs
    a, m, n = up(args[0]), up(args[1]), args[2]
    dims = reduction_dims(avg_tv)
    if not dims:
        return [as_dtype(a.clone(), avg_tv.dtype), as_dtype(m.clone(), var_tv.dtype),
                n.to(torch.int64).clone()]
    nf = n.to(a.dtype)
    total = nf.sum(dim=dims, keepdim=True)
    avg = (nf * a).sum(dim=dims, keepdim=True) / total.clamp(min=1)
    var_sum = m.sum(dim=dims) + (nf * (a - avg) ** 2).sum(dim=dims)
    return [as_dtype(_drop_dims(avg, dims), avg_tv.dtype), as_dtype(var_sum, var_tv.dtype),
            n.to(torch.int64).sum(dim=dims)]


# engine.aten_eval registers the ATen-only ops; engine.nvfp4 the seed ops' rules and the fp4/fp8 cast rules.
from engine import aten_eval as _aten_eval  # noqa: E402,F401
from engine import nvfp4 as _nvfp4  # noqa: E402,F401
