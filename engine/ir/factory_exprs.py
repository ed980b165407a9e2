"""Expressions that make a tensor from scalars alone: full, iota and random numbers."""

from __future__ import annotations

from collections.abc import Sequence

from engine.ir.base import Expr, Val
from engine.ir.expr_text import list_str, scalar_str, two_lines, typed_value
from engine.ir.scalar import Scalar


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
