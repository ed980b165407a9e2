"""Op expressions of the fusion IR and their nvFuser listing lines.

Each class holds what the op needs (operands as graph edges, the rest as
attributes) and prints itself as nvFuser's `Fusion::printMath` does. Shape and
dtype inference live in `engine.ops`; semantics in `engine.reference`.
"""

from __future__ import annotations

from collections.abc import Sequence

from engine.dtypes import DataType, result_type
from engine.ir.base import Expr, Val
from engine.ir.iterdomain import IterDomain
from engine.ir.scalar import Scalar, format_number


def ind(n: int) -> str:
    return "  " * n


def operand(v: Val) -> str:
    """A value as it appears inside an op line: tensors in full, constants typed."""
    if isinstance(v, Scalar):
        return scalar_str(v)
    return str(v)


def scalar_str(s: Scalar) -> str:
    if s.value is not None and s.dtype.is_float and not isinstance(s.value, bool):
        return f"{s.dtype.cuda_name}({format_number(s.value)})"
    return s.inline()


def typed_value(value: Scalar | float | int | bool, dtype: DataType) -> str:
    """`float(0)`, `__bfloat(0)`: a constant cast to a tensor's dtype."""
    if isinstance(value, Scalar):
        if value.value is None:
            return value.inline()
        value = value.value
    return f"{dtype.cuda_name}({format_number(value)})"


def flags_str(flags: Sequence[bool]) -> str:
    return "{" + ", ".join("true" if f else "false" for f in flags) + "}"


def list_str(items: Sequence[object]) -> str:
    return "{" + ", ".join(x.inline() if isinstance(x, Scalar) else str(x) for x in items) + "}"


def two_lines(out: Val, rhs: str, indent: int, end: str = "\n") -> str:
    """The common shape: the output on its own line, then ` = rhs` one level in."""
    return f"{ind(indent)}{out}\n{ind(indent + 1)} = {rhs}{end}"


# ---- pointwise ----------------------------------------------------------------

_UNARY_INLINE = {"neg": "-", "logical_not": "!", "bitwise_not": "~"}
# Ops whose CUDA function takes no `f` suffix for float (nvFuser's needFloatSuffix).
_UNARY_NO_SUFFIX = {
    "abs", "cast", "frac", "gelu", "silu", "neg", "relu", "reciprocal", "sigmoid",
    "isfinite", "isinf", "isnan", "signbit", "real", "imag", "bitcast",
}
_LOW_NAMES = {
    DataType.Float: "float",
    DataType.Double: "double",
    DataType.Half: "half",
    DataType.BFloat16: "bfloat",
    DataType.Float8_e4m3fn: "e4m3",
    DataType.Float8_e5m2: "e5m2",
    DataType.Float8_e8m0fnu: "e8m0",
    DataType.Float4_e2m1fn: "e2m1",
}


def cast_func(src: DataType, dst: DataType) -> str:
    """nvFuser's cast function names: `__bfloat2float`, `__float2half`, else `(int)`."""
    if src in _LOW_NAMES and dst in _LOW_NAMES and (
        src.is_low_precision_float or dst.is_low_precision_float
    ):
        return f"__{_LOW_NAMES[src]}2{_LOW_NAMES[dst]}"
    return f"({dst.cuda_name})"


def unary_text(op: str, x: str, src: DataType, dst: DataType) -> str:
    """nvFuser's printing of a unary op on `x` (a tensor's or a scalar's text)."""
    if op in _UNARY_INLINE:
        return f"{_UNARY_INLINE[op]}{x}"
    if op == "cast":
        fn = cast_func(src, dst)
    else:
        fn = op + ("f" if dst == DataType.Float and op not in _UNARY_NO_SUFFIX else "")
    return f"{fn}({x})"


class UnaryOp(Expr):
    op_name = "unary"

    def __init__(self, fusion, op: str, out: Val, inp: Val) -> None:
        super().__init__(fusion, [inp], [out], op=op)

    def to_string(self, indent: int = 0) -> str:
        inp, out = self.input, self.output
        return two_lines(out, unary_text(self.op, operand(inp), inp.dtype, out.dtype), indent, ";\n")


_BINARY_INLINE = {
    "add": "+", "sub": "-", "mul": "*", "div": "/", "mod": "%",
    "lt": "<", "le": "<=", "gt": ">", "ge": ">=", "eq": "==", "ne": "!=",
    "logical_and": "&&", "logical_or": "||",
    "bitwise_and": "&", "bitwise_or": "|", "bitwise_xor": "^",
    "bitwise_left_shift": "<<", "bitwise_right_shift": ">>",
}
_BINARY_FUNC = {"maximum": "fmax", "minimum": "fmin", "pow": "pow", "atan2": "atan2", "fmod": "fmod",
                "remainder": "remainder", "truediv": "truediv", "nextafter": "nextafter"}
_BINARY_SUFFIX = {"fmax", "fmin", "pow", "atan2", "fmod", "nextafter"}


class BinaryOp(Expr):
    op_name = "binary"

    def __init__(self, fusion, op: str, out: Val, lhs: Val, rhs: Val) -> None:
        super().__init__(fusion, [lhs, rhs], [out], op=op)

    @property
    def lhs(self) -> Val:
        return self.inputs[0]

    @property
    def rhs(self) -> Val:
        return self.inputs[1]

    def operand_dtype(self) -> DataType:
        """The type the operands meet in (a comparison's: its output is bool): torch's
        result_type, where a scalar operand only raises the tensors' category. A bool tensor
        equals 3 in int64 (never), a float tensor is compared with 0.1 rounded to float."""
        tensors = [v.dtype for v in self.inputs if not isinstance(v, Scalar)]
        scalars = [v.dtype for v in self.inputs if isinstance(v, Scalar)]
        return result_type(tensors, (), scalars)

    def to_string(self, indent: int = 0) -> str:
        out = self.output
        pad = ind(indent + 1)
        if self.op in _BINARY_INLINE:
            body = f"{operand(self.lhs)}\n{pad} {_BINARY_INLINE[self.op]} {operand(self.rhs)}"
        else:
            fn = _BINARY_FUNC.get(self.op, self.op)
            if fn in _BINARY_SUFFIX and out.dtype == DataType.Float:
                fn += "f"
            body = f"{fn}({operand(self.lhs)}\n{pad} , {operand(self.rhs)})"
        return two_lines(out, body, indent, ";\n")


class TernaryOp(Expr):
    """where, clamp, lerp, threshold: three operands."""

    op_name = "ternary"

    def __init__(self, fusion, op: str, out: Val, a: Val, b: Val, c: Val) -> None:
        super().__init__(fusion, [a, b, c], [out], op=op)

    def to_string(self, indent: int = 0) -> str:
        a, b, c = (operand(v) for v in self.inputs)
        pad = ind(indent + 1)
        return two_lines(self.output, f"{self.op}({a}\n{pad} , {b}\n{pad} , {c})", indent, ";\n")


# ---- reductions -----------------------------------------------------------------

class ReductionOp(Expr):
    """op is add, max, min or mul; `init` is the initial value (a number)."""

    op_name = "reduction"

    def __init__(self, fusion, op: str, out: Val, inp: Val, init: float | int | bool,
                 allreduce: bool = False) -> None:
        super().__init__(fusion, [inp], [out], op=op, init=init, allreduce=allreduce)

    def to_string(self, indent: int = 0) -> str:
        init = typed_value(self.init, self.output.dtype)
        rhs = (f"reduction( {self.input}, op = {self.op}, initial value = {init}, "
               f"allreduce = {'true' if self.allreduce else 'false'} )")
        return two_lines(self.output, rhs, indent)


class RFactorReductionOp(ReductionOp):
    """The first half of an rfactor'ed reduction: its output's logical domain is a
    transformed (split/merged) view of its root, which the reduction works on."""


class WelfordOp(Expr):
    """Outputs (avg, var_sum, count) of a Welford over the reduced axes.

    With one input it is nvFuser's single-value Welford of that input; with three
    (avg, var_sum, count partials, as an rfactor makes) it combines the partials.
    """

    op_name = "welford"

    def __init__(self, fusion, avg: Val, var_sum: Val, n: Val, inp: Val,
                 in_var_sum: Val | None = None, in_n: Val | None = None) -> None:
        ins = [inp] if in_var_sum is None else [inp, in_var_sum, in_n]
        super().__init__(fusion, ins, [avg, var_sum, n], allreduce=False)

    def to_string(self, indent: int = 0) -> str:
        avg, var, n = self.outputs
        i0, i1 = ind(indent), ind(indent + 1)
        if len(self.inputs) == 1:
            ins = f"{self.input}(Avg), "
        else:
            a, v, c = self.inputs
            ins = f"{a}(Avg)\n{i1}  {v}(Var)\n{i1}  {c}(Count)"
        return (f"{i0}{avg}(Avg),\n{i0}{var}(Var),\n{i0}{n}(Count)\n"
                f"{i1} = Welford ( {ins}\n"
                f"{i1}  allreduce = {'true' if self.allreduce else 'false'} )\n")


class RFactorWelfordOp(WelfordOp):
    """The first half of an rfactor'ed Welford: its outputs' logical domains are a
    transformed (split/merged) view of their roots, which the partial Welford works on."""


# ---- shape ------------------------------------------------------------------------

class BroadcastOp(Expr):
    op_name = "broadcast"

    def __init__(self, fusion, out: Val, inp: Val, flags: Sequence[bool]) -> None:
        super().__init__(fusion, [inp], [out], flags=list(flags))

    def to_string(self, indent: int = 0) -> str:
        return two_lines(self.output, f"broadcast( {self.input}, flags = {flags_str(self.flags)} )", indent)


class SqueezeOp(Expr):
    op_name = "squeeze"

    def __init__(self, fusion, out: Val, inp: Val, flags: Sequence[bool]) -> None:
        super().__init__(fusion, [inp], [out], flags=list(flags))

    def to_string(self, indent: int = 0) -> str:
        return two_lines(self.output, f"squeeze( {self.input}, flags = {flags_str(self.flags)} )", indent)


class ExpandOp(Expr):
    """Expands broadcast axes to `shape`; extents are scalars. `concretized`: positions of
    iteration axes whose expansion the bound sizes decide (an input extent of 1 expands,
    one equal to the size asked for is kept; engine.concretize)."""

    op_name = "expand"

    def __init__(self, fusion, out: Val, inp: Val, shape: Sequence[Scalar],
                 concretized: Sequence[int] = ()) -> None:
        super().__init__(fusion, [inp], [out], shape=list(shape), concretized=tuple(concretized))

    def to_string(self, indent: int = 0) -> str:
        return f"{ind(indent)}{self.output} = expand( {self.input}, {list_str(self.shape)} )\n"


class ViewOp(Expr):
    """reshape; the output's root->logical transforms describe it. new_shape: the sizes
    asked for (scalars), kept to check the element count at run time when the input's
    sizes are symbolic (the logical extents hold a split's ceilDiv remainder instead)."""

    op_name = "view"

    def __init__(self, fusion, out: Val, inp: Val, new_shape: Sequence[Scalar] | None = None) -> None:
        super().__init__(fusion, [inp], [out], new_shape=None if new_shape is None else list(new_shape))

    def to_string(self, indent: int = 0) -> str:
        return f"{ind(indent)}{self.output} = view( {self.input} )\n"


class LoadStoreOp(Expr):
    """set, segment_set and permute. kind: Set or SegmenterSet."""

    op_name = "set"

    def __init__(self, fusion, out: Val, inp: Val, kind: str = "Set",
                 cache_op: str = "Streaming") -> None:
        super().__init__(fusion, [inp], [out], kind=kind, cache_op=cache_op)

    @property
    def is_permute(self) -> bool:
        dom = getattr(self.output, "domain", None)
        return dom is not None and dom.has_root and self.kind == "Set"

    def to_string(self, indent: int = 0) -> str:
        kind = self.kind + (".Permute" if self.is_permute else "")
        cache = f", cache_op={self.cache_op}" if self.cache_op != "Unspecified" else ""
        return two_lines(self.output, f"{kind}( {self.input}{cache} )", indent)


class SliceOp(Expr):
    """ranges: one (start, stop, step) of scalars per logical axis of the input."""

    op_name = "slice"

    def __init__(self, fusion, out: Val, inp: Val, ranges: Sequence[tuple[Scalar, Scalar, Scalar]]) -> None:
        super().__init__(fusion, [inp], [out], ranges=[tuple(r) for r in ranges])

    def to_string(self, indent: int = 0) -> str:
        rs = " ".join("{" + ", ".join(x.inline() for x in r) + "}" for r in self.ranges)
        return two_lines(self.output, f"slice( {self.input}, {{ {rs} }} )", indent)


class PadOp(Expr):
    """widths: (left, right) scalars per logical axis, outermost axis first."""

    op_name = "pad"

    def __init__(self, fusion, out: Val, inp: Val, widths: Sequence[tuple[Scalar, Scalar]],
                 value: Val) -> None:
        super().__init__(fusion, [inp, value], [out], widths=[tuple(w) for w in widths])

    @property
    def value(self) -> Val:
        return self.inputs[1]

    def to_string(self, indent: int = 0) -> str:
        flat = [x for w in self.widths for x in w]
        return two_lines(self.output, f"pad( {self.input}, {list_str(flat)} )", indent)


class CatOp(Expr):
    """Picks each element along `dim` from the padded input whose region holds it. `spans`
    are those regions, (start, length) per input, taken from the inputs' pads when the cat
    is built: a segment that holds the cat but not the pads (their Resize is then cut away)
    still knows them."""

    op_name = "cat"

    def __init__(self, fusion, out: Val, inps: Sequence[Val], dim: int,
                 spans: Sequence[tuple[Scalar, Scalar]]) -> None:
        super().__init__(fusion, list(inps), [out], dim=dim, spans=[tuple(x) for x in spans])

    def to_string(self, indent: int = 0) -> str:
        ins = ", ".join(str(v) for v in self.inputs)
        return two_lines(self.output, f"cat( {ins}, {self.dim} )", indent)


# ---- factories ----------------------------------------------------------------------

class FullOp(Expr):
    op_name = "full"

    def __init__(self, fusion, out: Val, shape: Sequence[Scalar], fill: Val) -> None:
        super().__init__(fusion, [fill], [out], shape=list(shape))

    @property
    def fill(self) -> Val:
        return self.inputs[0]

    def to_string(self, indent: int = 0) -> str:
        fill = typed_value(self.fill, self.output.dtype)
        return two_lines(self.output, f"full({list_str(self.shape)}, {fill})", indent, ";\n")


class IotaOp(Expr):
    op_name = "iota"

    def __init__(self, fusion, out: Val, length: Scalar, start: Scalar, step: Scalar) -> None:
        super().__init__(fusion, [length, start, step], [out])

    def to_string(self, indent: int = 0) -> str:
        length, start, step = (scalar_str(s) for s in self.inputs)
        rhs = f"iota({length}, {start}, {step}, {self.output.dtype.cuda_name})"
        return two_lines(self.output, rhs, indent, ";\n")


class RNGOp(Expr):
    """Random numbers from a counter-based Philox4x32-10 stream, as nvFuser draws them: the
    element at linear (row-major, logical) index n takes word n % m of the block
    philox(seed, n // m, offset), m = 2 for double and 4 otherwise. `dist` is "uniform"
    (params low, high) or "normal" (params mean, std). Without rng_seed/rng_offset the
    stream is seed 0 and offset `rng_id` (the op's ordinal in its fusion), so every run
    draws the same numbers (nvFuser takes them from torch's CUDA generator instead)."""

    op_name = "rng"

    def __init__(self, fusion, out: Val, dist: str, shape: Sequence[Scalar], params: Sequence[Scalar],
                 seed: Scalar | None, offset: Scalar | None, rng_id: int) -> None:
        seeded = [] if seed is None else [seed, offset]
        super().__init__(fusion, [*params, *seeded], [out], dist=dist, shape=list(shape), rng_id=rng_id)

    @property
    def params(self) -> list[Val]:
        return self.inputs[:2]

    @property
    def seed(self) -> Val | None:
        return self.inputs[2] if len(self.inputs) > 2 else None

    @property
    def offset(self) -> Val | None:
        return self.inputs[3] if len(self.inputs) > 3 else None

    def to_string(self, indent: int = 0) -> str:
        args = [list_str(self.shape), self.output.dtype.cuda_name, *(scalar_str(p) for p in self.params)]
        if self.seed is not None:
            args += [f"rng_seed = {scalar_str(self.seed)}", f"rng_offset = {scalar_str(self.offset)}"]
        else:
            args.append(f"rng_id = {self.rng_id}")
        return two_lines(self.output, f"rng_{self.dist}({', '.join(args)})", indent, ";\n")


# ---- indexing -----------------------------------------------------------------------

class SelectOp(Expr):
    """Select one index of `dim`; the output drops that axis."""

    op_name = "select"

    def __init__(self, fusion, out: Val, inp: Val, dim: int, index: Val) -> None:
        super().__init__(fusion, [inp, index], [out], dim=dim)

    @property
    def index(self) -> Val:
        return self.inputs[1]

    @property
    def select_axis(self) -> IterDomain:
        return [i for i in self.input.domain.logical if not i.is_reduction][self.dim]

    def to_string(self, indent: int = 0) -> str:
        rhs = f"select( {self.input}, axis = {self.select_axis}, index = {operand(self.index)} )"
        return two_lines(self.output, rhs, indent)


class IndexSelectOp(Expr):
    op_name = "index_select"

    def __init__(self, fusion, out: Val, inp: Val, dim: int, index: Val) -> None:
        super().__init__(fusion, [inp, index], [out], dim=dim)

    def to_string(self, indent: int = 0) -> str:
        inp, index = self.inputs
        return two_lines(self.output, f"indexSelect( {inp}, dim = {self.dim}, {index} )", indent)


class GatherOp(Expr):
    """torch.gather along `dim` (take_along_axis when `exact_sizes`)."""

    op_name = "gather"

    def __init__(self, fusion, out: Val, inp: Val, dim: int, index: Val, exact_sizes: bool = False) -> None:
        super().__init__(fusion, [inp, index], [out], dim=dim, exact_sizes=exact_sizes)

    def to_string(self, indent: int = 0) -> str:
        inp, index = self.inputs
        if self.exact_sizes:
            return two_lines(self.output, f"takeAlongAxis( {inp}, {index}, dim = {self.dim} )", indent)
        return two_lines(self.output, f"torchGather( {inp}, dim = {self.dim}, {index} )", indent)


# ---- matmul -------------------------------------------------------------------------

class MatmulOp(Expr):
    op_name = "matmul"

    def __init__(self, fusion, out: Val, a: Val, b: Val) -> None:
        super().__init__(fusion, [a, b], [out])

    def to_string(self, indent: int = 0) -> str:
        i1 = ind(indent + 1)
        a, b = self.inputs
        return f"{ind(indent)}{self.output}\n{i1} = matmul({a},\n{i1}          {b})\n"


class SdpaFwdOp(Expr):
    """Scaled dot-product attention, forward (nvFuser's sdpfa_fwd; ATen's flash attention):
    outputs (output [N, H, L, Ev], log_sumexp [N, H, L] float, philox_seed, philox_offset)
    of inputs (query [N, H, L, E], key [N, H, S, E], value [N, H, S, Ev], dropout_p,
    is_causal, then those of scale, bias (added to the scores) and mask (bool: False drops
    a score) that are given; the attributes say which)."""

    op_name = "sdpa"

    def __init__(self, fusion, outs: Sequence[Val], q: Val, k: Val, v: Val, dropout_p: Val,
                 is_causal: Val, scale: Val | None, bias: Val | None = None, mask: Val | None = None) -> None:
        extra = [x for x in (scale, bias, mask) if x is not None]
        super().__init__(fusion, [q, k, v, dropout_p, is_causal, *extra], list(outs),
                         has_scale=scale is not None, has_bias=bias is not None, has_mask=mask is not None)

    def _optional(self, which: str) -> Val | None:
        order = [k for k in ("scale", "bias", "mask") if self.attributes[f"has_{k}"]]
        return self.inputs[5 + order.index(which)] if which in order else None

    @property
    def scale(self) -> Val | None:
        return self._optional("scale")

    @property
    def bias(self) -> Val | None:
        return self._optional("bias")

    @property
    def mask(self) -> Val | None:
        return self._optional("mask")

    def to_string(self, indent: int = 0) -> str:
        i0, i1 = ind(indent), ind(indent + 1)
        outs = ",\n".join(f"{i0}{o}" for o in self.outputs)
        q, k, v, p, causal = self.inputs[:5]
        s = f"{outs}\n{i1} = sdpa({q},\n{i1}          {k},\n{i1}          {v},\n"
        for name in ("bias", "mask"):
            if self._optional(name) is not None:
                s += f"{i1}          {name}={self._optional(name)},\n"
        s += f"{i1}          dropout_p = {p.inline()},\n{i1}          is_causal={causal.inline()},\n"
        if self.scale is not None:
            s += f"{i1}          scale={self.scale.inline()},\n"
        return s + f"{i1})\n"


class SdpaBwdOp(Expr):
    """Scaled dot-product attention, backward (nvFuser's sdpfa_bwd): outputs (grad_query,
    grad_key, grad_value) of inputs (grad_output, query, key, value, output, log_sumexp,
    dropout_p, is_causal, philox_seed, philox_offset[, scale])."""

    op_name = "sdpa_bwd"

    def __init__(self, fusion, outs: Sequence[Val], ins: Sequence[Val]) -> None:
        super().__init__(fusion, list(ins), list(outs))

    @property
    def scale(self) -> Val | None:
        return self.inputs[10] if len(self.inputs) > 10 else None

    def to_string(self, indent: int = 0) -> str:
        i0, i1 = ind(indent), ind(indent + 1)
        outs = ",\n".join(f"{i0}{o}" for o in self.outputs)
        g, q, k, v, o, lse, p, causal, seed, offset = self.inputs[:10]
        lines = [f" = sdpa_bwd({g}", f"          {q}", f"          {k}", f"          {v}", f"          {o}",
                 f"          logsum_exp = {lse}", f"          dropout_p = {p.inline()}",
                 f"          is_causal = {causal.inline()}", f"          philox_seed = {seed}",
                 f"          philox_offset = {offset}"]
        if self.scale is not None:
            lines.append(f"          scale = {self.scale.inline()}")
        return f"{outs}\n" + ",\n".join(f"{i1}{x}" for x in lines) + f"\n{i1})\n"


class LinearOp(Expr):
    """out = a @ b^T (+ bias), as torch.nn.functional.linear."""

    op_name = "linear"

    def __init__(self, fusion, out: Val, a: Val, b: Val, bias: Val | None = None) -> None:
        super().__init__(fusion, [a, b] + ([bias] if bias is not None else []), [out])

    @property
    def has_bias(self) -> bool:
        return len(self.inputs) == 3

    def to_string(self, indent: int = 0) -> str:
        i1 = ind(indent + 1)
        a, b = self.inputs[:2]
        s = f"{ind(indent)}{self.output}\n{i1} = linear({a},\n{i1}          {b}"
        if self.has_bias:
            s += f"{i1},\n          {self.inputs[2]}"
        return s + f"{i1})\n"
