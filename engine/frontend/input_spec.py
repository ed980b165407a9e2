"""Input specs of fusion files: the `inputs = [...]` list, how to make each input afresh."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch

# torch dtypes by attribute name (torch.<name>); a fixed table, never getattr(torch, user_name).
TORCH_DTYPES: dict[str, torch.dtype] = {
    name: getattr(torch, name)
    for name in (
        "float32", "float", "float64", "double", "float16", "half", "bfloat16",
        "int8", "uint8", "int16", "short", "int32", "int", "int64", "long", "bool",
        "complex64", "cfloat", "complex128", "cdouble",
        "float8_e4m3fn", "float8_e5m2", "float8_e8m0fnu", "float4_e2m1fn_x2",
    )
    if isinstance(getattr(torch, name, None), torch.dtype)
}
# Canonical spelling when writing: str(torch.float32) == "torch.float32".
TORCH_DTYPE_NAMES = {v: str(v).removeprefix("torch.") for v in TORCH_DTYPES.values()}

# torch calls an inputs list may use, by their path under `torch`, and the spec kind each makes.
TORCH_MAKERS = {
    "testing.make_tensor": "make_tensor",
    **{name: name for name in ("randn", "rand", "randint", "ones", "zeros", "full", "tensor", "empty",
                               "empty_strided", "arange", "normal")},
    # torch.*_like(x): the kind of the maker, the sizes (and layout) of x
    **{f"{name}_like": f"{name}_like" for name in ("randn", "rand", "randint", "ones", "zeros", "full",
                                                   "empty")},
}

SPEC_KINDS = ("make_tensor", "randn", "rand", "randint", "ones", "zeros", "full", "tensor", "empty", "arange",
              "scalar")
# Kinds whose values are given by the file (their order matters): a copy in another layout
# would read them in the wrong order.
DATA_KINDS = ("tensor", "arange")
# `x < 0.5`: comparisons an inputs entry may make of its values, by name.
COMPARISONS = {"lt": "<", "le": "<=", "gt": ">", "ge": ">=", "eq": "==", "ne": "!="}


@dataclass
class InputSpec:
    """One entry of a file's `inputs = [...]` list: how to make a fresh input.

    kind: the torch call (make_tensor, randn, rand, randint, ones, zeros, full, tensor,
    empty, arange) or "scalar" for a plain number. `base_shape` is the size given to that
    call (the storage); `shape`, `strides` and `offset` the view of it the file made
    (`.as_strided(...)`, slicing, `.t()`, `.view(2, 3)`, ...), exact to the element.
    `view_dtype` comes from a trailing `.view(dtype)`. Values: the call's, then
    `* scale + shift` (arithmetic on the entry: `torch.randn(4) * 10 + 1`), then the
    comparison `compare` (`torch.rand(4) < 0.5`: (op name, number)); `fill_dtype` is the
    dtype the call makes them in when arithmetic or a comparison then gives `dtype`
    (None: made in `dtype`). arange keeps its start, end and step in low, high and
    fill_value. `device` is what the file asked for; make() puts the tensor where its
    caller says.
    """

    kind: str
    shape: tuple[int, ...] = ()
    dtype: torch.dtype | None = torch.float32
    strides: tuple[int, ...] | None = None
    base_shape: tuple[int, ...] | None = None
    device: str | None = None
    low: int | float | None = None
    high: int | float | None = None
    fill_value: int | float | bool | None = None
    data: Any = None
    view_dtype: torch.dtype | None = None
    offset: int = 0
    scale: int | float | complex | None = None
    shift: int | float | complex | None = None
    compare: tuple[str, int | float] | None = None
    fill_dtype: torch.dtype | None = None

    @property
    def tensor_dtype(self) -> torch.dtype | None:
        """The dtype the fusion sees (after a `.view(dtype)` bitcast)."""
        return self.view_dtype or self.dtype

    def storage_shape(self) -> tuple[int, ...]:
        """The sizes of the tensor the call makes (before any view of it)."""
        if self.base_shape is not None:
            return self.base_shape
        if self.strides is not None:
            # Enough storage for the strides asked for (a padded layout needs more than numel).
            return (self.offset + storage_size(self.shape, self.strides),)
        return self.shape

    def meta(self) -> torch.Tensor:
        """The tensor this spec makes, on the meta device: its sizes, strides, storage
        offset and dtype (view(dtype)), without memory or data."""
        t = torch.empty(self.storage_shape(), dtype=self.dtype or torch.float32, device="meta")
        if self.strides is not None:
            t = t.as_strided(self.shape, self.strides, self.offset)
        if self.view_dtype is not None:
            t = t.view(self.view_dtype)
        return t

    def make(self, device: str | torch.device = "cpu", generator: torch.Generator | None = None) -> Any:
        """A fresh value: random where the file asks for random values. On the meta device,
        the same tensor without data (nothing is drawn or filled)."""
        if self.kind == "scalar":
            return self.data
        made = self.fill_dtype or self.dtype or torch.float32
        if self.kind == "tensor":
            t = torch.tensor(self.data, dtype=made)
        elif torch.device(device).type == "meta":
            t = torch.empty(self.storage_shape(), dtype=made, device="meta")
        else:
            t = self._fill(self.storage_shape(), made, generator)
        if self.scale is not None or self.shift is not None or self.compare is not None:
            work = torch.complex128 if t.is_complex() or isinstance(self.scale, complex) \
                or isinstance(self.shift, complex) else torch.float64
            w = t.to(work)
            if self.scale is not None:
                w = w * self.scale
            if self.shift is not None:
                w = w + self.shift
            if self.compare is not None:
                op, value = self.compare
                w = getattr(w, op)(value)
            t = w
        if self.dtype is not None and t.dtype != self.dtype:
            t = t.to(self.dtype)
        # The storage moves, then the view is taken there: `.to(device)` of a strided view
        # would give a dense copy (other strides, no offset).
        t = t.to(device)
        if self.strides is not None:
            t = t.as_strided(self.shape, self.strides, self.offset)
        if self.view_dtype is not None:
            t = t.view(self.view_dtype)
        return t

    def _fill(self, shape: tuple[int, ...], dtype: torch.dtype, gen: torch.Generator | None) -> torch.Tensor:
        if self.kind == "ones":
            return torch.ones(shape, dtype=dtype)
        if self.kind == "zeros":
            return torch.zeros(shape, dtype=dtype)
        if self.kind == "full":
            return torch.full(shape, self.fill_value, dtype=dtype)
        if self.kind == "arange":
            return torch.arange(self.low, self.high, self.fill_value, dtype=dtype)  # type: ignore[arg-type]
        if dtype == torch.bool:
            return torch.randint(0, 2, shape, generator=gen).bool()
        if dtype == torch.float4_e2m1fn_x2:
            # Two packed e2m1 values per byte: any byte is a valid pair.
            return torch.randint(0, 256, shape, dtype=torch.uint8, generator=gen).view(dtype)
        if not (dtype.is_floating_point or dtype.is_complex) or self.kind == "randint":
            lo, hi = self._int_range(dtype)
            return torch.randint(lo, hi, shape, dtype=torch.int64, generator=gen).to(dtype)
        # Low-precision floats (fp8 included) are drawn in float32 and rounded.
        work = torch.float32 if dtype.itemsize < 4 else dtype
        if self.kind in ("randn", "empty"):  # torch.empty's values are whatever: random ones
            t = torch.randn(shape, dtype=work, generator=gen)
        elif self.kind == "rand":
            t = torch.rand(shape, dtype=work, generator=gen)
        else:  # make_tensor: uniform in [low, high), torch.testing's default range
            lo = -9.0 if self.low is None else float(self.low)
            hi = 9.0 if self.high is None else float(self.high)
            t = torch.rand(shape, dtype=work, generator=gen) * (hi - lo) + lo
        return t.to(dtype)

    def _int_range(self, dtype: torch.dtype) -> tuple[int, int]:
        if self.kind == "randint":
            return int(self.low or 0), int(self.high)  # type: ignore[arg-type]
        unsigned = dtype == torch.uint8
        lo = (0 if unsigned else -9) if self.low is None else int(math.ceil(self.low))
        hi = 10 if self.high is None else int(math.ceil(self.high))
        return lo, max(hi, lo + 1)

    @classmethod
    def from_tensor(cls, t: Any) -> InputSpec:
        """A spec that makes tensors like `t` (shape, dtype, strides); numbers stay numbers."""
        if not isinstance(t, torch.Tensor):
            return cls(kind="scalar", shape=(), dtype=None, data=t)
        shape = tuple(t.shape)
        strides = tuple(t.stride())
        # nvFuser's repro convention: make_tensor when contiguous, randn(n).as_strided otherwise.
        if t.is_contiguous():
            return cls(kind="make_tensor", shape=shape, dtype=t.dtype, device="cuda:0")
        kind = "randn" if t.dtype.is_floating_point else "make_tensor"
        needed = storage_size(shape, strides)
        return cls(kind=kind, shape=shape, dtype=t.dtype, strides=strides, base_shape=(needed,),
                   device="cuda:0")


def storage_size(shape: Sequence[int], strides: Sequence[int]) -> int:
    if any(s == 0 for s in shape):
        return 0
    return 1 + sum((n - 1) * st for n, st in zip(shape, strides))



def check_spec(spec: InputSpec) -> None:
    """Raise ValueError when `spec` could not make its tensor: data or a fill value that its
    dtype cannot hold, a size past 64 bits, a `.view(dtype)` the last size does not divide.
    Checked on meta tensors (no memory) except `torch.tensor` data, which the file holds."""
    if spec.kind == "scalar":
        return
    dtype = spec.fill_dtype or spec.dtype or torch.float32
    try:
        if spec.kind == "tensor":
            torch.tensor(spec.data, dtype=dtype)
        if spec.kind == "full":
            torch.full((), spec.fill_value, dtype=dtype)  # type: ignore[arg-type]
        if spec.kind == "randint":
            torch.tensor([spec.low, spec.high - 1], dtype=dtype)  # type: ignore[operator]
        spec.meta()
    except (RuntimeError, ValueError, TypeError, OverflowError) as e:
        raise ValueError(str(e).splitlines()[0]) from None


def input_signature(xs: Sequence[Any]) -> tuple:
    """What a compiled fusion is specialised to: per tensor input its shape, strides, dtype
    and data alignment (kernels may use the vector accesses it allowed), per other input
    its type name."""
    sig = []
    for x in xs:
        if isinstance(x, torch.Tensor):
            ptr = x.data_ptr()
            align = 16
            while align > 1 and ptr % align:
                align //= 2
            sig.append((tuple(x.shape), tuple(x.stride()), str(x.dtype), align))
        else:
            sig.append(type(x).__name__)
    return tuple(sig)


def signature_mismatch(inputs: Sequence[Any], got: Sequence[Any], want: Sequence[Any]) -> str:
    """Which input differs between two input signatures (input_signature:
    per input (shape, strides, dtype, alignment) or a type name), as a sentence naming it;
    `inputs` are the fusion's input values (TensorView or Scalar)."""
    if len(got) != len(want):
        return f"the fusion was compiled for {len(want)} inputs, got {len(got)}"
    for k, (g, w) in enumerate(zip(got, want)):
        if g == w:
            continue
        val = inputs[k] if k < len(inputs) else None
        name = getattr(val, "short_name", None) or (val.inline() if val is not None else "?")
        if isinstance(g, tuple) and isinstance(w, tuple):
            parts = [f"{what} {gv} instead of {wv}" for what, gv, wv in
                     zip(("shape", "strides", "dtype", "pointer alignment"), g, w) if gv != wv]
            return f"input {k} ({name}) has {', '.join(parts)}"
        return f"input {k} ({name}) is a {_kind(g)}, compiled for a {_kind(w)}"
    return "the inputs match"


def _kind(sig: Any) -> str:
    return f"tensor {sig[2]}" if isinstance(sig, tuple) else sig
