"""Expressions that reshape, copy or resize a tensor: broadcast, squeeze, expand, view, set
(permute), slice, pad and cat."""

from __future__ import annotations

from collections.abc import Sequence

from engine.ir.base import Expr, Val
from engine.ir.expr_text import flags_str, ind, list_str, two_lines
from engine.ir.scalar import Scalar


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
