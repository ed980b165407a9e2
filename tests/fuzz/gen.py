"""Random fusions: DAGs of the engine's ops over random inputs.

`generate_fusion(chooser)` defines a fusion through the frontend (so it can be saved with
engine.dumps_fusion) and makes inputs for it. The generator tracks every tensor's concrete
extents, so each op it emits is one the definition accepts: operands that broadcast,
reshapes that keep the element count, slices inside the axis. Broadcast flags are read
back from the IR. Every decision comes from the chooser (see choices.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import torch

from engine import DataType, FusionDefinition
from engine.ir.tensorview import TensorView
from tests.fuzz.choices import Chooser, choice, flip, weighted
from tests.fuzz.inputs import make_tensor, random_dtype, random_layout

EXTENTS = [1, 2, 3, 5, 7, 8, 16, 17, 31, 64, 100, 129]
MAX_NUMEL = 4096
MAX_RANK = 4
MAX_OPS = 8
OP_WEIGHTS = {
    "unary": 4, "binary": 6, "where": 2, "cast": 2, "reduce": 3, "broadcast": 2, "reshape": 2,
    "permute": 2, "slice": 1, "pad": 1, "cat": 1, "segment_set": 1, "set": 1, "factory": 1, "iota": 1,
    "squeeze": 1, "clamp": 1, "lerp": 1, "rng": 1, "aten": 1,
}

FLOAT_UNARY = ["neg", "abs", "exp", "sin", "cos", "tanh", "sigmoid", "relu", "sqrt", "log", "ceil",
               "floor", "round", "trunc", "reciprocal", "rsqrt", "gelu", "silu", "erf", "expm1",
               "log1p", "atan", "sign", "frac", "isnan", "isfinite", "signbit"]
INT_UNARY = ["neg", "abs", "bitwise_not", "sign"]
BOOL_UNARY = ["logical_not", "bitwise_not"]
COMPARE = ["lt", "le", "gt", "ge", "eq", "ne"]
FLOAT_BINARY = ["add", "sub", "mul", "div", "maximum", "minimum", "atan2", "pow", "fmod", "remainder"]
INT_BINARY = ["add", "sub", "mul", "maximum", "minimum", "bitwise_and", "bitwise_or", "bitwise_xor"]
BOOL_BINARY = ["logical_and", "logical_or", "bitwise_xor"]
CAST_TARGETS = [DataType.Float, DataType.BFloat16, DataType.Half, DataType.Int32, DataType.Int,
                DataType.Bool, DataType.Double]


@dataclass
class Val:
    tv: TensorView
    shape: tuple[int, ...]

    @property
    def dtype(self) -> DataType:
        return self.tv.dtype

    @property
    def bcast(self) -> tuple[bool, ...]:
        return tuple(i.is_broadcast for i in self.tv.domain.logical if not i.is_reduction)

    @property
    def rank(self) -> int:
        return len(self.shape)


@dataclass
class FusionCase:
    fd: FusionDefinition
    inputs: list[Any]
    ops: list[str] = field(default_factory=list)  # the op kinds emitted, for statistics


def _kind(dtype: DataType) -> str:
    return "f" if dtype.is_float else ("b" if dtype.is_bool else "i")


def numel(shape: tuple[int, ...]) -> int:
    return math.prod(shape)


def broadcast_shape(a: Val, b: Val) -> tuple[int, ...] | None:
    """The numpy-style result extents of a op b, or None where an axis pair cannot broadcast
    (a size-1 axis broadcasts only when it is a broadcast axis in the IR)."""
    rank = max(a.rank, b.rank)
    sa = (1,) * (rank - a.rank) + a.shape
    sb = (1,) * (rank - b.rank) + b.shape
    ba = (True,) * (rank - a.rank) + a.bcast
    bb = (True,) * (rank - b.rank) + b.bcast
    out = []
    for x, y, bx, by in zip(sa, sb, ba, bb):
        if x == y:
            out.append(x)
        elif x == 1 and bx:
            out.append(y)
        elif y == 1 and by:
            out.append(x)
        else:
            return None
    return tuple(out)


class FusionGenerator:
    """Builds one random fusion inside `fd` (an open FusionDefinition context)."""

    def __init__(self, fd: FusionDefinition, ch: Chooser, gen: torch.Generator,
                 ops: tuple[str, ...] | None = None, max_numel: int = MAX_NUMEL) -> None:
        self.fd = fd
        self.table = [(k, w) for k, w in OP_WEIGHTS.items() if ops is None or k in ops]
        self.max_numel = max_numel
        self.ch = ch
        self.gen = gen
        self.pool: list[Val] = []
        self.inputs: list[Any] = []
        self.input_vals: list[Val] = []
        self.ops: list[str] = []

    # ---- picking ----------------------------------------------------------------------------
    def pick(self, pred=None) -> Val | None:
        """A pool value, the latest ones first (the simplest draw is the newest value)."""
        vals = [v for v in self.pool if pred is None or pred(v)]
        if not vals:
            return None
        return vals[len(vals) - 1 - self.ch.int(0, len(vals) - 1)]

    def scalar(self, dtype: DataType) -> Any:
        k = _kind(dtype)
        if k == "b":
            return flip(self.ch, 0.5)
        if k == "i":
            return choice(self.ch, [1, 2, -3, 7, 0])
        value = choice(self.ch, [0.5, -1.5, 2.0, 0.0, 3.25])
        if flip(self.ch, 0.2):
            return self.fd.define_scalar(value, dtype=DataType.Double)
        return value

    def add(self, tv: TensorView, shape: tuple[int, ...], op: str) -> Val:
        v = Val(tv, tuple(shape))
        self.pool.append(v)
        self.ops.append(op)
        return v

    # ---- inputs -----------------------------------------------------------------------------
    def base_shape(self) -> list[int]:
        rank = self.ch.int(1, 3)
        sizes = [choice(self.ch, EXTENTS) for _ in range(rank)]
        while numel(tuple(sizes)) > self.max_numel:
            sizes[sizes.index(max(sizes))] = choice(self.ch, EXTENTS[:6])
        return sizes

    def make_input(self, base: list[int]) -> None:
        sizes = list(base)
        if len(sizes) > 1 and flip(self.ch, 0.25):
            sizes = sizes[self.ch.int(1, len(sizes) - 1):]  # a lower-rank input (right-aligned)
        sizes = [1 if flip(self.ch, 0.15) else n for n in sizes]
        dtype = random_dtype(self.ch)
        layout = random_layout(self.ch, sizes)
        tv = self.fd.define_tensor(shape=layout.shape, contiguity=layout.contiguity, dtype=dtype,
                                   stride_order=layout.stride_order)
        self.inputs.append(make_tensor(layout, dtype, self.gen))
        self.input_vals.append(self.add(tv, tuple(sizes), "input"))

    def make_scalar_input(self) -> Any:
        s = self.fd.define_scalar(dtype=DataType.Double)
        self.inputs.append(choice(self.ch, [0.75, -2.0, 1.5]))
        return s

    # ---- one op -----------------------------------------------------------------------------
    def step(self) -> None:
        for _ in range(4):
            name = weighted(self.ch, self.table)
            if getattr(self, "op_" + name)() is not None:
                return

    def op_unary(self) -> Val | None:
        v = self.pick()
        names = {"f": FLOAT_UNARY, "i": INT_UNARY, "b": BOOL_UNARY}[_kind(v.dtype)]
        name = choice(self.ch, names)
        src = self.nan_free(v) if name == "signbit" else v.tv
        return self.add(getattr(self.fd.ops, name)(src), v.shape, name)

    def partner(self, a: Val) -> tuple[Any, tuple[int, ...]]:
        """A second operand for `a`: a number, a pool tensor that broadcasts with it, or a
        factory tensor of a's extents."""
        how = weighted(self.ch, [("tensor", 5), ("scalar", 3), ("full", 1), ("scalar_input", 1)])
        if how == "tensor":
            b = self.pick(lambda v: v is not a and broadcast_shape(a, v) is not None)
            if b is not None:
                shape = broadcast_shape(a, b)
                if numel(shape) <= self.max_numel:
                    return b.tv, shape
        if how == "full":
            dtype = choice(self.ch, [a.dtype, DataType.Float, DataType.Int32])
            t = self.fd.ops.full(list(a.shape), self.scalar(dtype) if _kind(dtype) != "f" else 1.25, dtype)
            self.ops.append("full")
            return t, a.shape
        if how == "scalar_input" and _kind(a.dtype) == "f":
            return self.make_scalar_input(), a.shape
        return self.scalar(a.dtype), a.shape

    def op_binary(self) -> Val | None:
        a = self.pick()
        b, shape = self.partner(a)
        bdtype = b.dtype if hasattr(b, "dtype") else None
        kinds = {_kind(a.dtype)} | ({_kind(bdtype)} if bdtype is not None else set())
        if isinstance(b, float):
            kinds.add("f")
        if "f" in kinds:
            names = FLOAT_BINARY + COMPARE
        elif "i" in kinds:
            names = INT_BINARY + COMPARE
        else:
            names = BOOL_BINARY + ["eq", "ne"]
        name = choice(self.ch, names)
        lhs, rhs = (a.tv, b) if flip(self.ch, 0.8) or not isinstance(b, TensorView) else (b, a.tv)
        return self.add(getattr(self.fd.ops, name)(lhs, rhs), shape, name)

    def op_where(self) -> Val | None:
        a = self.pick()
        cond = self.pick(lambda v: v.dtype.is_bool and broadcast_shape(a, v) == a.shape)
        if cond is None:
            cond_tv = self.fd.ops.gt(a.tv, self.scalar(a.dtype) if _kind(a.dtype) != "b" else False)
        else:
            cond_tv = cond.tv
        b, shape = self.partner(a)
        args = (a.tv, b) if flip(self.ch, 0.7) else (b, a.tv)
        if not isinstance(args[0], TensorView) and not isinstance(args[1], TensorView):
            return None
        return self.add(self.fd.ops.where(cond_tv, *args), shape, "where")

    def op_clamp(self) -> Val | None:
        a = self.pick(lambda v: not v.dtype.is_bool)
        if a is None:
            return None
        lo, hi = (-1.5, 2.0) if a.dtype.is_float else (-3, 4)
        return self.add(self.fd.ops.clamp(a.tv, lo, hi), a.shape, "clamp")

    def op_lerp(self) -> Val | None:
        a = self.pick(lambda v: v.dtype.is_float)
        if a is None:
            return None
        b, shape = self.partner(a)
        if not isinstance(b, TensorView) or not b.dtype.is_float:
            b, shape = a.tv, a.shape
        return self.add(self.fd.ops.lerp(a.tv, b, choice(self.ch, [0.25, 0.5, 2.0])), shape, "lerp")

    def sanitized(self, v: Val) -> TensorView:
        """Finite values in [-1000, 1000]: what a float may hold before a cast to an integer
        (an out-of-range or NaN float to int conversion is undefined in C++ and CUDA)."""
        finite = self.fd.ops.where(self.fd.ops.isfinite(v.tv), v.tv, 0.0)
        return self.fd.ops.clamp(finite, -1000.0, 1000.0)

    def nan_free(self, v: Val) -> TensorView:
        """NaN replaced by 0, for signbit: the sign of a NaN that an op makes is not specified
        (IEEE 754 leaves it open; x86 makes -nan, a GPU +nan, and torch's own vectorized and
        scalar CPU loops differ: pow of 124 negative halves gave +nan, of 16 gave -nan)."""
        return self.fd.ops.where(self.fd.ops.isnan(v.tv), 0.0, v.tv)

    def op_cast(self) -> Val | None:
        v = self.pick()
        target = choice(self.ch, CAST_TARGETS)
        src = self.sanitized(v) if v.dtype.is_float and target.is_integer else v.tv
        return self.add(self.fd.ops.cast(src, target), v.shape, "cast")

    def op_reduce(self) -> Val | None:
        v = self.pick(lambda x: x.rank > 0)
        if v is None:
            return None
        dims = [d for d in range(v.rank) if flip(self.ch, 0.5)] or [v.rank - 1 - self.ch.int(0, v.rank - 1)]
        names = ["sum", "max", "min"] + (["mean"] if v.dtype.is_float else [])
        name = choice(self.ch, names)
        keep = flip(self.ch, 0.3)
        tv = getattr(self.fd.ops, name)(v.tv, dims=dims, keepdim=keep)
        shape = tuple(1 if d in dims else n for d, n in enumerate(v.shape) if keep or d not in dims)
        return self.add(tv, shape, name)

    def op_broadcast(self) -> Val | None:
        v = self.pick(lambda x: x.rank < MAX_RANK)
        if v is None:
            return None
        out_rank = min(MAX_RANK, v.rank + self.ch.int(1, 2))
        slots = list(range(out_rank))
        keep = sorted(slots.pop(self.ch.int(0, len(slots) - 1)) for _ in range(v.rank))
        shape = [1] * out_rank
        for d, pos in enumerate(keep):
            n = v.shape[d]
            if n == 1 and v.bcast[d] and flip(self.ch, 0.3):
                n = choice(self.ch, EXTENTS[1:6])  # expand a broadcast axis
            shape[pos] = n
        for pos in range(out_rank):
            if pos not in keep and flip(self.ch, 0.5):
                shape[pos] = choice(self.ch, EXTENTS[1:6])  # a new expanded axis
        if numel(tuple(shape)) > self.max_numel:
            return None
        tv = self.fd.ops.broadcast_in_dim(v.tv, shape=shape, broadcast_dims=keep)
        return self.add(tv, tuple(shape), "broadcast_in_dim")

    def op_reshape(self) -> Val | None:
        v = self.pick(lambda x: x.rank > 0)
        if v is None:
            return None
        shape = list(v.shape)
        how = choice(self.ch, ["merge", "split", "flatten", "unsqueeze"])
        if how == "merge" and len(shape) > 1:
            k = self.ch.int(0, len(shape) - 2)
            shape[k:k + 2] = [shape[k] * shape[k + 1]]
        elif how == "split":
            k = self.ch.int(0, len(shape) - 1)
            divisors = [f for f in range(2, shape[k]) if shape[k] % f == 0]
            if not divisors or len(shape) >= MAX_RANK:
                return None
            f = choice(self.ch, divisors)
            shape[k:k + 1] = [shape[k] // f, f]
        elif how == "flatten":
            shape = [numel(tuple(shape))]
        elif len(shape) < MAX_RANK:
            shape.insert(self.ch.int(0, len(shape)), 1)
        else:
            return None
        given = list(shape)
        if flip(self.ch, 0.2) and given:
            given[self.ch.int(0, len(given) - 1)] = -1
        return self.add(self.fd.ops.reshape(v.tv, given), tuple(shape), "reshape")

    def op_permute(self) -> Val | None:
        v = self.pick(lambda x: x.rank > 1)
        if v is None:
            return None
        rest = list(range(v.rank))
        perm = [rest.pop(self.ch.int(0, len(rest) - 1)) for _ in range(v.rank)]
        return self.add(self.fd.ops.permute(v.tv, dims=perm), tuple(v.shape[d] for d in perm), "permute")

    def op_slice(self) -> Val | None:
        v = self.pick(lambda x: x.rank > 0)
        if v is None:
            return None
        starts, ends = [], []
        for n, b in zip(v.shape, v.bcast):
            lo, hi = 0, n
            if not b and n > 1 and flip(self.ch, 0.6):
                lo = self.ch.int(0, n - 1)
                hi = self.ch.int(lo + 1, n)
            starts.append(lo)
            ends.append(hi)
        tv = self.fd.ops.slice(v.tv, start_indices=starts, end_indices=ends)
        return self.add(tv, tuple(e - s for s, e in zip(starts, ends)), "slice")

    def op_pad(self) -> Val | None:
        v = self.pick(lambda x: x.rank > 0)
        if v is None:
            return None
        k = self.ch.int(1, v.rank)
        widths = [self.ch.int(0, 3) for _ in range(2 * k)]
        shape = list(v.shape)
        for p in range(k):
            shape[v.rank - 1 - p] += widths[2 * p] + widths[2 * p + 1]
        if numel(tuple(shape)) > self.max_numel:
            return None
        value = self.scalar(v.dtype) if flip(self.ch, 0.5) else None
        if value is not None and not isinstance(value, (bool, int, float)):
            value = None
        return self.add(self.fd.ops.pad(v.tv, widths, value), tuple(shape), "pad")

    def op_cat(self) -> Val | None:
        a = self.pick(lambda x: x.rank > 0)
        if a is None:
            return None
        dim = self.ch.int(0, a.rank - 1)
        if a.bcast[dim]:
            return None

        def fits(v: Val) -> bool:
            return (v is not a and v.rank == a.rank and v.dtype == a.dtype and all(
                (v.shape[d], v.bcast[d]) == (a.shape[d], a.bcast[d]) for d in range(a.rank) if d != dim)
                and not v.bcast[dim])

        b = self.pick(fits)
        if b is None:
            b = Val(self.fd.ops.neg(a.tv) if not a.dtype.is_bool else self.fd.ops.logical_not(a.tv), a.shape)
        shape = list(a.shape)
        shape[dim] += b.shape[dim]
        if numel(tuple(shape)) > self.max_numel:
            return None
        tensors = [a.tv, b.tv] if flip(self.ch, 0.7) else [b.tv, a.tv]
        return self.add(self.fd.ops.cat(tensors, dim=dim), tuple(shape), "cat")

    def op_segment_set(self) -> Val | None:
        v = self.pick()
        return self.add(self.fd.ops.segment_set(v.tv), v.shape, "segment_set")

    def op_set(self) -> Val | None:
        v = self.pick()
        return self.add(self.fd.ops.set(v.tv), v.shape, "set")

    def op_factory(self) -> Val | None:
        a = self.pick()
        name = choice(self.ch, ["zeros", "ones", "full"])
        dtype = choice(self.ch, [DataType.Float, a.dtype, DataType.Int])
        if name == "full":
            t = self.fd.ops.full(list(a.shape), 2 if not dtype.is_float else -0.5, dtype)
        else:
            t = getattr(self.fd.ops, name)(list(a.shape), dtype)
        op = "add" if not (a.dtype.is_bool and dtype.is_bool) else "logical_or"
        self.ops.append(name)
        return self.add(getattr(self.fd.ops, op)(a.tv, t), a.shape, op)

    def op_iota(self) -> Val | None:
        a = self.pick(lambda x: x.rank > 0 and not x.bcast[-1])
        if a is None:
            return None
        dtype = choice(self.ch, [DataType.Int, DataType.Float, DataType.Int32])
        start, step = (choice(self.ch, [0, 3, -2]), choice(self.ch, [1, 2, -1]))
        if dtype.is_float:
            start, step = float(start), float(step) / 4
        t = self.fd.ops.iota(a.shape[-1], start, step, dtype)
        b = self.fd.ops.broadcast_in_dim(t, shape=list(a.shape), broadcast_dims=[a.rank - 1])
        self.ops.append("iota")
        op = "mul" if not a.dtype.is_bool else "add"
        return self.add(getattr(self.fd.ops, op)(a.tv, b), a.shape, op)

    def op_rng(self) -> Val | None:
        """A Philox draw in a float tensor's shape: a dropout mask (where) or an added noise."""
        a = self.pick(lambda x: x.dtype.is_float and x.dtype.bits >= 16)
        if a is None:
            return None
        seed, offset = choice(self.ch, [(0, 0), (7, 3), (2**40 + 5, 12)])
        dtype = choice(self.ch, [DataType.Float, a.dtype])
        if flip(self.ch, 0.5):
            r = self.fd.ops.uniform(-1.0, 2.0, list(a.shape), rng_seed=seed, rng_offset=offset, dtype=dtype)
            self.ops.append("uniform")
            return self.add(self.fd.ops.where(self.fd.ops.lt(r, 0.5), a.tv, 0.0), a.shape, "where")
        r = self.fd.ops.normal(0.5, 2.0, list(a.shape), rng_seed=seed, rng_offset=offset, dtype=dtype)
        self.ops.append("normal")
        return self.add(self.fd.ops.add(a.tv, r), a.shape, "add")

    def op_aten(self) -> Val | None:
        """An op that torch evaluates in a segment of its own (scan, argsort, topk, scatter),
        between generated kernels."""
        v = self.pick(lambda x: x.rank > 0 and not x.dtype.is_bool)
        if v is None:
            return None
        d = self.ch.int(0, v.rank - 1)
        how = choice(self.ch, ["cumsum", "cummax", "argsort", "topk", "scatter"])
        self.ops.append(how)
        if how in ("cumsum", "cummax"):
            return self.add(getattr(self.fd.ops, how)(v.tv, dim=d), v.shape, how)
        if how == "argsort":
            return self.add(self.fd.ops.argsort(v.tv, dim=d, descending=flip(self.ch, 0.5)), v.shape, how)
        if how == "topk":
            k = self.ch.int(1, v.shape[d])
            values, indices = self.fd.ops.topk(v.tv, k, dim=d, largest=flip(self.ch, 0.5))
            shape = tuple(k if j == d else n for j, n in enumerate(v.shape))
            self.add(indices, shape, "topk")
            return self.add(values, shape, "topk")
        # scatter: argsort's indices are a permutation along d, so every index is in range.
        index = self.fd.ops.argsort(self.sanitized(v) if v.dtype.is_float else v.tv, dim=d)
        return self.add(self.fd.ops.scatter(v.tv, index, v.tv, d), v.shape, how)

    def op_squeeze(self) -> Val | None:
        v = self.pick(lambda x: any(b and n == 1 for n, b in zip(x.shape, x.bcast)))
        if v is None:
            return None
        dims = [d for d, (n, b) in enumerate(zip(v.shape, v.bcast)) if b and n == 1 and flip(self.ch, 0.7)]
        if not dims:
            return None
        shape = tuple(n for d, n in enumerate(v.shape) if d not in dims)
        return self.add(self.fd.ops.squeeze(v.tv, dims), shape, "squeeze")

    # ---- outputs ----------------------------------------------------------------------------
    def add_outputs(self) -> None:
        made = [v for v in self.pool if v not in self.input_vals]
        outs = [made[-1]] if made else [self.input_vals[-1]]
        for v in made[:-1]:
            if flip(self.ch, 0.2):
                outs.append(v)
        for v in outs:
            self.fd.add_output(v.tv)


def generate_fusion(ch: Chooser, max_ops: int = MAX_OPS, ops: tuple[str, ...] | None = None,
                    max_numel: int = MAX_NUMEL) -> FusionCase:
    """A random fusion and inputs for it; raises what the engine raises while defining it."""
    fd = FusionDefinition()
    gen = torch.Generator().manual_seed(ch.int(0, 2**31 - 1))
    with fd:
        g = FusionGenerator(fd, ch, gen, ops, max_numel)
        base = g.base_shape()
        for _ in range(ch.int(1, 3)):
            g.make_input(base)
        for _ in range(ch.int(1, max_ops)):
            g.step()
        g.add_outputs()
    return FusionCase(fd, g.inputs, g.ops)
