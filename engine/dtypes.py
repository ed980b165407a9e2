"""Data types with nvFuser's python names and CUDA spellings."""

from __future__ import annotations

import enum
from collections.abc import Sequence

import torch


class DataType(enum.Enum):
    # value: (cuda name, bits, kind) where kind is f(loat), i(nt), b(ool), c(omplex), x (index)
    Double = ("double", 64, "f")
    Float = ("float", 32, "f")
    Half = ("__half", 16, "f")
    BFloat16 = ("__bfloat", 16, "f")
    Float8_e4m3fn = ("__e4m3", 8, "f")
    Float8_e5m2 = ("__e5m2", 8, "f")
    Float8_e8m0fnu = ("__e8m0", 8, "f")
    Float4_e2m1fn = ("__e2m1", 4, "f")
    Int = ("int64_t", 64, "i")
    Int32 = ("int", 32, "i")
    Bool = ("bool", 8, "b")
    ComplexFloat = ("std::complex<float>", 64, "c")
    ComplexDouble = ("std::complex<double>", 128, "c")
    Index = ("nvfuser_index_t", 64, "x")
    # "no type given": nvFuser's python frontend default for optional dtypes
    Null = ("null", 0, "n")

    # The properties read `_value_`, the member's value itself: `.value` is a Python-level
    # descriptor in 3.11, and these are asked tens of thousands of times per compile.
    @property
    def cuda_name(self) -> str:
        return self._value_[0]

    @property
    def bits(self) -> int:
        return self._value_[1]

    @property
    def is_float(self) -> bool:
        return self._value_[2] == "f"

    @property
    def is_integer(self) -> bool:
        return self._value_[2] in ("i", "x")

    @property
    def is_bool(self) -> bool:
        return self._value_[2] == "b"

    @property
    def is_complex(self) -> bool:
        return self._value_[2] == "c"

    @property
    def is_low_precision_float(self) -> bool:
        """Types that nvFuser computes in float (bf16, fp16, fp8, fp4)."""
        return self.is_float and self.bits < 32

    def __str__(self) -> str:
        return self.cuda_name

    def __repr__(self) -> str:
        return f"DataType.{self.name}"


_CTYPE_BYTES = {dt.cuda_name: dt.bits // 8 for dt in DataType if dt.bits >= 8}


def ctype_bytes(cuda_name: str) -> int:
    """Bytes of one element of the CUDA type `cuda_name` (0: not a whole-byte type of ours)."""
    return _CTYPE_BYTES.get(cuda_name, 0)


_TORCH = {
    DataType.Double: torch.float64,
    DataType.Float: torch.float32,
    DataType.Half: torch.float16,
    DataType.BFloat16: torch.bfloat16,
    DataType.Float8_e4m3fn: torch.float8_e4m3fn,
    DataType.Float8_e5m2: torch.float8_e5m2,
    DataType.Float8_e8m0fnu: torch.float8_e8m0fnu,
    DataType.Float4_e2m1fn: torch.float4_e2m1fn_x2,
    DataType.Int: torch.int64,
    DataType.Int32: torch.int32,
    DataType.Bool: torch.bool,
    DataType.ComplexFloat: torch.complex64,
    DataType.ComplexDouble: torch.complex128,
    DataType.Index: torch.int64,
}
_FROM_TORCH = {v: k for k, v in _TORCH.items() if k is not DataType.Index}


def to_torch(dtype: DataType) -> torch.dtype:
    return _TORCH[dtype]


def from_torch(dtype: torch.dtype) -> DataType:
    try:
        return _FROM_TORCH[dtype]
    except KeyError:
        raise ValueError(f"torch dtype {dtype} has no engine DataType") from None


def compute_dtype(dtype: DataType) -> DataType:
    """The type arithmetic happens in: low-precision floats are computed in float."""
    return DataType.Float if dtype.is_low_precision_float else dtype


_PROMOTION_ORDER = [
    DataType.Bool,
    DataType.Int32,
    DataType.Int,
    DataType.Index,
    DataType.Float8_e4m3fn,
    DataType.Float8_e5m2,
    DataType.Float8_e8m0fnu,
    DataType.Float4_e2m1fn,
    DataType.BFloat16,
    DataType.Half,
    DataType.Float,
    DataType.Double,
    DataType.ComplexFloat,
    DataType.ComplexDouble,
]


def promote(a: DataType, b: DataType) -> DataType:
    """Type promotion between two tensor types, as PyTorch's for equal categories."""
    if a == b:
        return a
    # bf16 with fp16 (and with fp8 types) promotes to float, as in PyTorch.
    low = {a, b}
    if all(t.is_low_precision_float for t in low):
        return DataType.Float
    if {a, b} == {DataType.ComplexFloat, DataType.Double}:
        return DataType.ComplexDouble
    return max(a, b, key=_PROMOTION_ORDER.index)


def category(dtype: DataType) -> int:
    """Category rank for scalar/tensor promotion: bool < integer < float < complex."""
    if dtype.is_bool:
        return 0
    if dtype.is_integer:
        return 1
    if dtype.is_float:
        return 2
    return 3


def result_type(
    tensors: Sequence[DataType], zero_dim: Sequence[DataType] = (), scalars: Sequence[DataType] = ()
) -> DataType:
    """The type of an op over tensors with axes, 0-dim tensors and scalars, as torch's
    result_type (and nvFuser's computeTypes, which builds on it): each group promotes within
    itself; 0-dim tensors and then scalars decide only where they raise the category (bool <
    integer < float < complex) of the groups before them. A python float scalar counts as
    the default float type, float32: an integer tensor times 2.5 is float, a half tensor
    times 2.5 stays half, and a float tensor plus a 0-dim double tensor stays float."""
    wrapped = [_WRAPPED.get(d, d) for d in scalars]
    return _combine(_promote_all(tensors), _combine(_promote_all(zero_dim), _promote_all(wrapped)))


# A scalar's type as a wrapped number: floats and complexes take torch's default types, a
# size (Index) is an int64.
_WRAPPED = {DataType.Double: DataType.Float, DataType.Half: DataType.Float, DataType.BFloat16: DataType.Float,
            DataType.ComplexDouble: DataType.ComplexFloat, DataType.Index: DataType.Int}
_COMPLEX_OF = {DataType.Double: DataType.ComplexDouble}


def _promote_all(types: Sequence[DataType]) -> DataType | None:
    out = None
    for d in types:
        out = d if out is None else promote(out, d)
    return out


def _combine(higher: DataType | None, lower: DataType | None) -> DataType | None:
    """torch's combine_categories: `lower` (0-dim tensors, scalars) decides only where its
    category is above `higher`'s."""
    if higher is None or lower is None:
        return lower if higher is None else higher
    if higher.is_complex:
        return higher
    if lower.is_complex:
        return _COMPLEX_OF.get(higher, DataType.ComplexFloat) if higher.is_float else lower
    if higher.is_float:
        return higher
    if higher.is_bool or lower.is_float:
        return promote(higher, lower)
    return higher
