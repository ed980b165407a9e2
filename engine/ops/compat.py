"""Frontend ops of nvFuser's python API that compose from the engine's own ops.

Repro scripts of several nvFuser versions call these: the size queries that feed
dynamic shapes (`tensor_sizes` in 2022-2023, `size`/`shape` later), the old `view`
name of reshape, `arange` (an iota of a computed length), `embedding_fwd` (an
index_select of weight rows), `addcmul`, `add_alpha`, `sub_alpha` and `threshold`
(pointwise compositions), `triu` (a mask from two iotas), `bmm` (a 3-D matmul), `at` (an
entry of a shape vector) and `stride_order` (a copy with a permuted allocation domain, which
Thunder's traces use to give an output torch's strides). Each builds the same IR as its
expansion would.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from engine.dtypes import DataType
from engine.errors import FusionDefinitionError
from engine.ir.scalar import Scalar, as_scalar, binary, ceil_div, smax
from engine.ir.tensorview import TensorView
from engine.ops.arith import add, ge, le, mul, sub, where
from engine.ops.common import check_tensor, no_reductions, norm_dim
from engine.ops.factory import iota
from engine.ops.indexing import index_select
from engine.ops.matmul import matmul
from engine.ops.shape import ShapeEntry, broadcast, reshape, set_

__all__ = ["add_alpha", "addcmul", "arange", "at", "bmm", "embedding_fwd", "shape", "size", "stride_order",
           "sub_alpha", "tensor_sizes", "threshold", "triu", "view"]


def _extent(tv: TensorView, d: int) -> Scalar:
    i = no_reductions(tv)[d]
    return i.expanded_extent if i.expanded_extent is not None else i.extent


def size(arg: TensorView, dim: int) -> Scalar:
    """The extent of axis `dim` (an Index scalar, symbolic for a symbolic axis)."""
    tv = check_tensor("size", arg)
    return _extent(tv, norm_dim("size", dim, len(no_reductions(tv)), tv))


def shape(arg: TensorView) -> list[Scalar]:
    """All extents, as the shape vector that reshape/broadcast_in_dim/expand take."""
    tv = check_tensor("shape", arg)
    return [_extent(tv, d) for d in range(len(no_reductions(tv)))]


def tensor_sizes(arg: TensorView) -> list[Scalar]:
    """The 2022-2023 frontend's name for shape()."""
    return shape(arg)


def view(arg: TensorView, original_shape: Sequence[ShapeEntry], new_shape: Sequence[ShapeEntry]) -> TensorView:
    """The 2022 frontend's name for reshape(arg, original_shape, new_shape)."""
    return reshape(arg, original_shape, new_shape)


def _is_int(x: object) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def _length(start: object, end: object, step: object) -> int | Scalar:
    """ceil((end - start) / step), at least 0."""
    if all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in (start, end, step)):
        if step == 0:
            raise FusionDefinitionError("arange: step must not be 0")
        return max(0, math.ceil((end - start) / step))  # type: ignore[operator]
    for x in (start, end, step):
        if not (_is_int(x) or isinstance(x, Scalar) and x.dtype.is_integer):
            raise FusionDefinitionError(f"arange: a scalar start/end/step must be an integer, got {x!r}")
    return smax(ceil_div(binary("sub", as_scalar(end), as_scalar(start)), as_scalar(step)), 0)  # type: ignore[arg-type]


def arange(start: int | float | Scalar, end: int | float | Scalar | None = None,
           step: int | float | Scalar | None = None, dtype: DataType = DataType.Int) -> TensorView:
    """[start, start + step, ...) below `end`, as torch.arange; arange(end) counts from 0."""
    if end is None:
        start, end = 0, start
    step = 1 if step is None else step
    return iota(_length(start, end, step), start, step, dtype)


def embedding_fwd(input: TensorView, weight: TensorView, padding_idx: object = None,  # noqa: A002
                  max_norm: object = None, norm_type: object = None, scale_grad_by_freq: object = None,
                  sparse: object = None) -> TensorView:
    """torch.nn.functional.embedding's forward: weight rows picked by `input`. padding_idx,
    scale_grad_by_freq and sparse shape only the backward; max_norm (which renormalizes
    weight rows in place) is refused."""
    if max_norm is not None:
        raise FusionDefinitionError("embedding_fwd: max_norm is not supported")
    idx = check_tensor("embedding_fwd", input, "input")
    w = check_tensor("embedding_fwd", weight, "weight")
    if len(no_reductions(w)) != 2:
        raise FusionDefinitionError(f"embedding_fwd: weight {w.short_name} must be 2-D")
    dims = shape(idx)
    if not dims:
        raise FusionDefinitionError(f"embedding_fwd: input {idx.short_name} must have at least one axis")
    flat = idx if len(dims) == 1 else reshape(idx, [_product(dims)])
    rows = index_select(w, flat, 0)
    return rows if len(dims) == 1 else reshape(rows, [*dims, _extent(w, 1)])


def _product(xs: list[Scalar]) -> Scalar:
    out = xs[0]
    for x in xs[1:]:
        out = binary("mul", out, x)
    return out


def addcmul(arg: object, tensor1: object, tensor2: object, value: object = 1.0) -> object:
    """arg + value * tensor1 * tensor2 (nvFuser's addcmul)."""
    return add(arg, mul(value, mul(tensor1, tensor2)))


def threshold(arg: object, threshold: object, value: object) -> object:  # noqa: A002
    """value where arg <= threshold, else arg (torch.nn.functional.threshold)."""
    return where(le(arg, threshold), value, arg)


def stride_order(arg: TensorView, stride_order: Sequence[int]) -> TensorView:
    """A copy of `arg` laid out so that `stride_order[i]` is the rank of dim i's stride (0:
    innermost), as define_tensor's stride_order: its allocation domain is the permuted
    logical domain."""
    tv = check_tensor("stride_order", arg)
    ids = no_reductions(tv)
    rank = len(ids)
    so = list(stride_order)
    if len(so) != rank or sorted(so) != list(range(rank)):
        raise FusionDefinitionError(f"stride_order: {so} must be a permutation of 0..{rank - 1}")
    out = set_(tv)
    logical = no_reductions(out)
    order = [0] * rank
    for d, r in enumerate(so):
        order[rank - 1 - r] = d
    if order != list(range(rank)):
        out.set_allocation_domain([logical[d] for d in order], True)
    return out


def add_alpha(arg1: object, arg2: object, alpha: object) -> object:
    """arg1 + alpha * arg2 (torch.add's alpha)."""
    return add(arg1, mul(arg2, alpha))


def sub_alpha(arg1: object, arg2: object, alpha: object) -> object:
    """arg1 - alpha * arg2 (torch.sub's alpha)."""
    return sub(arg1, mul(arg2, alpha))


def triu(input: TensorView, diagonal: int | Scalar = 0) -> TensorView:  # noqa: A002
    """torch.triu over the last two axes: elements with col - row < diagonal become 0. As
    nvFuser builds it: a mask from a row and a column iota, then a where."""
    tv = check_tensor("triu", input)
    rank = len(no_reductions(tv))
    if rank < 2:
        raise FusionDefinitionError(f"triu: {tv.short_name} must have at least 2 axes, got {rank}")
    if isinstance(diagonal, bool) or not (_is_int(diagonal) or isinstance(diagonal, Scalar)
                                          and diagonal.dtype.is_integer):
        raise FusionDefinitionError(f"triu: diagonal must be an integer, got {diagonal!r}")
    rows = broadcast(iota(_extent(tv, rank - 2)), [False, True])
    cols = broadcast(iota(_extent(tv, rank - 1)), [True, False])
    mask = ge(sub(cols, rows), diagonal)
    zero = Scalar(tv.dtype, False if tv.dtype.is_bool else 0 if not tv.dtype.is_float else 0.0)
    return where(mask, tv, zero)  # type: ignore[return-value]


def bmm(mat1: TensorView, mat2: TensorView) -> TensorView:
    """torch.bmm: batched matmul of [b, m, k] and [b, k, n]."""
    for name, t in (("mat1", mat1), ("mat2", mat2)):
        tv = check_tensor("bmm", t, name)
        if len(no_reductions(tv)) != 3:
            raise FusionDefinitionError(f"bmm: {name} {tv.short_name} must be 3-D, got rank "
                                        f"{len(no_reductions(tv))}")
    return matmul(mat1, mat2)


def at(arg: Sequence[int | Scalar], index: int) -> Scalar:
    """Entry `index` of a shape vector (what fd.ops.shape or define_vector returned)."""
    if not isinstance(arg, (list, tuple)):
        raise FusionDefinitionError(f"at: expected a vector (a list of sizes), got {arg!r}")
    if isinstance(index, bool) or not isinstance(index, int) or not -len(arg) <= index < len(arg):
        raise FusionDefinitionError(f"at: index {index!r} is out of range for a vector of {len(arg)}")
    entry = arg[index]
    if isinstance(entry, bool) or not isinstance(entry, (int, Scalar)):
        raise FusionDefinitionError(f"at: entry {index} of the vector is {entry!r}, not a size")
    return as_scalar(entry)
