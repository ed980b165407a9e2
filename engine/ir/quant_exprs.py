"""Expressions of the nvfp4 recipe: block quantization, the scale layout op, the grouped matmul.

These are the three ops of seeds 000 and 004. Each prints itself as nvFuser's
`toString` does (the shapes of those listings differ from op to op in nvFuser,
and we keep each one's shape). Builders with checks live in
`engine.ops.quantize`, torch semantics in `engine.nvfp4`.

fp4 convention: a TensorView of dtype Float4_e2m1fn has logical extents counted
in fp4 values (a quantized [M, K] input gives an [M, K] fp4 tensor). At the torch
boundary it is a `torch.float4_e2m1fn_x2` tensor whose innermost memory axis holds
two values per byte, so that axis has half the logical extent (see engine.nvfp4).
"""

from __future__ import annotations

from engine.ir.base import Expr, Val
from engine.ir.exprs import ind
from engine.ir.scalar import Scalar

# nvFuser's BlockScalingFactorLayout; the only layout the layout op supports.
BLOCK_128x4 = "Block128x4"  # noqa: N816 - nvFuser's enum spelling


class BlockQuantizationOp(Expr):
    """nvfp4 block quantization of the last axis in blocks of `block_size` (16).

    outputs: [quantized values (Float4_e2m1fn, the input's shape),
              block scales (Float8_e4m3fn, last axis K / block_size)];
    inputs: [x] or [x, global_scale] (a 0-d fp32 tensor). With `swizzle_scales`
    the scales' allocation domain is the 128x4 swizzle [m/128, k/4, 32, 4, 4].
    """

    op_name = "block_quantize"

    def __init__(
        self,
        fusion,
        quantized: Val,
        scales: Val,
        inp: Val,
        global_scale: Val | None = None,
        *,
        block_size: int = 16,
        swizzle_scales: bool = False,
    ) -> None:
        inputs = [inp] + ([global_scale] if global_scale is not None else [])
        super().__init__(
            fusion, inputs, [quantized, scales], block_size=block_size, swizzle_scales=swizzle_scales
        )

    @property
    def quantized(self) -> Val:
        return self.outputs[0]

    @property
    def block_scales(self) -> Val:
        return self.outputs[1]

    @property
    def global_scale(self) -> Val | None:
        return self.inputs[1] if len(self.inputs) > 1 else None

    def to_string(self, indent: int = 0) -> str:
        # nvFuser indents only the first line of this op and prints scales first.
        return (
            f"{ind(indent)}({self.block_scales},\n {self.quantized})\n"
            f" = block_quantize({self.input})\n"
        )


class PreprocessGroupedMatmulInputSf(Expr):
    """The layout op: scatter per-group block scales into CUTLASS's 128x4 layout.

    inputs: [scales [M, K], input_offsets [G] int32, output_offsets [G] int32].
    output: logical [M, K] with the input's dtype. Its allocation domain is
    [M + G*127, ceil(K/4)*4]: two Resize transforms that pad the row axis on the
    right by G*127 (every group may be rounded up to a multiple of 128 rows) and
    the column axis by ceil(K/4)*4 - K. Within that buffer each group's rows land
    in 128x4 swizzled tiles at its output offset (engine.nvfp4.layout_op_offset);
    padding is never written. `k` and `g` are the extents K and G, as nvFuser
    keeps them on the op.
    """

    op_name = "preprocessGroupedMatmulInputSf"

    def __init__(
        self,
        fusion,
        out: Val,
        inp: Val,
        input_offsets: Val,
        output_offsets: Val,
        *,
        k: Scalar,
        g: Scalar,
        layout: str = BLOCK_128x4,
    ) -> None:
        super().__init__(fusion, [inp, input_offsets, output_offsets], [out], k=k, g=g, layout=layout)

    @property
    def input_offsets(self) -> Val:
        return self.inputs[1]

    @property
    def output_offsets(self) -> Val:
        return self.inputs[2]

    def to_string(self, indent: int = 0) -> str:
        i1, i2 = ind(indent + 1), ind(indent + 2)
        layout = self.layout if self.layout == BLOCK_128x4 else "Unknown"
        return (
            f"{ind(indent)}{self.output}\n"
            f"{i1} = preprocessGroupedMatmulInputSf(\n"
            f"{i2}input = {self.input},\n"
            f"{i2}input_offsets = {self.input_offsets},\n"
            f"{i2}output_offsets = {self.output_offsets},\n"
            f"{i2}layout = {layout}\n"
            f"{i1})\n"
        )


class CutlassNvfp4GroupedMmaOp(Expr):
    """Grouped nvfp4 matmul: out[rows of group g] = (mat1_g @ mat2[g]) * alpha[g].

    inputs, in nvFuser's order: mat1 [M, K] fp4, mat2 [G, K, N] fp4 (logical
    extents; packed along K in torch), scale1 (the layout op's output), scale2
    [G, N, K/16] e4m3 swizzled per group, alpha [G] fp32, problem_sizes [G, 3],
    expert_offsets [G], sf_offsets [G]. output: [M, N].
    """

    op_name = "CutlassNvfp4GroupedMmaOp"
    OPERANDS = (
        "mat1", "mat2", "scale1", "scale2", "alpha", "problem_sizes", "expert_offsets", "sf_offsets",
    )

    def __init__(self, fusion, out: Val, operands: list[Val]) -> None:
        if len(operands) != len(self.OPERANDS):
            raise ValueError(f"{self.op_name} takes {len(self.OPERANDS)} operands, got {len(operands)}")
        super().__init__(fusion, operands, [out])

    def operand(self, name: str) -> Val:
        return self.inputs[self.OPERANDS.index(name)]

    def role_of(self, val: Val) -> list[str]:
        """The operand names under which `val` is read (several when passed twice)."""
        return [n for n, v in zip(self.OPERANDS, self.inputs) if v is val]

    def to_string(self, indent: int = 0) -> str:
        # nvFuser prints this op on one line, operands as name=value.
        args = ", ".join(f"{n}={v}" for n, v in zip(self.OPERANDS, self.inputs))
        return f"{ind(indent)}{self.output} = {self.op_name}({args})\n"
