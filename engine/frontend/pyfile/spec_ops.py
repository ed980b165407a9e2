"""What an inputs entry's views, copies, dtype changes, fills, arithmetic and comparisons do
to its InputSpec: sizes, strides, offsets and dtypes as torch works them out on the meta
device.
"""

from __future__ import annotations

import ast
import math
from collections.abc import Callable
from typing import Any

import torch

from engine.frontend.input_spec import DATA_KINDS, InputSpec, storage_size
from engine.frontend.pyfile.syntax import excerpt
from engine.frontend.pyfile.vocab import MEMORY_FORMATS, TorchConst, ints, is_int, is_number


def affine_scale(v: Any) -> Any:
    """A scale factor, None for 1 (no scaling)."""
    return None if v == 1 and not isinstance(v, complex) else v


def affine_shift(v: Any) -> Any:
    """A shift, None for 0 (no shift)."""
    return None if v == 0 and not isinstance(v, complex) else v


class SpecChanges:
    """Changes to an inputs entry's InputSpec (a part of Loader)."""

    def no_view_dtype(self, node: ast.AST, spec: InputSpec, what: str) -> None:
        if spec.view_dtype is not None:
            raise self.error(node, f"{what} after .view(dtype) is not supported")

    def as_strided(self, call: ast.Call, spec: InputSpec) -> None:
        """`.as_strided(size, stride, storage_offset)`: a view of the storage the call made
        (the storage offset defaults to the view's own, as torch's does)."""
        args = self.call_args(call, ("size", "stride", "storage_offset"))
        self.no_view_dtype(call, spec, ".as_strided(...)")
        if "size" not in args or "stride" not in args:
            raise self.error(call, "as_strided(size, stride) needs a size and a stride")
        shape, strides = ints(self, call, args["size"]), ints(self, call, args["stride"])
        offset = args.get("storage_offset")
        offset = spec.offset if offset is None else offset
        if len(shape) != len(strides) or any(s < 0 for s in (*shape, *strides)):
            raise self.error(call, f"as_strided: size {shape} and stride {strides} do not match")
        if not is_int(offset) or offset < 0:
            raise self.error(call, f"as_strided: storage_offset must be a non-negative integer, got {offset!r}")
        base = spec.storage_shape()
        if math.prod(base) < offset + storage_size(shape, strides):
            at = f" from offset {offset}" if offset else ""
            raise self.error(call, f"as_strided: size {shape} with stride {strides}{at} reaches past "
                                   f"the {math.prod(base)} elements of the tensor")
        spec.base_shape, spec.shape, spec.strides, spec.offset = base, shape, strides, offset

    def view(self, node: ast.AST, spec: InputSpec, what: str, fn: Callable[[torch.Tensor], torch.Tensor]) -> None:
        """Apply `fn` to the spec's tensor on the meta device, as torch does: a view keeps
        the storage (new sizes, strides and offset), a copy gets a fresh layout (copied)."""
        self.no_view_dtype(node, spec, what)
        t = spec.meta()
        try:
            r = fn(t)
        except (RuntimeError, IndexError, TypeError, ValueError) as e:
            raise self.error(node, f"{what}: {str(e).splitlines()[0]}") from None
        if not isinstance(r, torch.Tensor):
            raise self.error(node, f"{what} does not give a tensor")
        if r is t or r._is_view():
            base = spec.storage_shape()
            spec.shape, spec.strides, spec.offset = tuple(r.shape), tuple(r.stride()), r.storage_offset()
            spec.base_shape = base
            return
        self.copied(node, spec, t, r, what)

    def copied(self, node: ast.AST, spec: InputSpec, t: torch.Tensor, r: torch.Tensor, what: str) -> None:
        """`r`, a copy torch made of the spec's tensor `t` (arithmetic, .contiguous(), a
        reshape that cannot be a view): the same values, laid out as torch lays out `r`.
        Random values need no order, so a fresh storage in that layout stands for it; the
        data of torch.tensor / torch.arange would be read in the wrong order, so a copy into
        another layout of those is refused."""
        if tuple(r.shape) == tuple(t.shape) and tuple(r.stride()) == tuple(t.stride()):
            return  # a dense layout kept: the spec's storage still gives the same values
        if spec.kind in DATA_KINDS:
            raise self.error(node, f"a torch.{spec.kind}(...) input takes no layout change ({what}); write its "
                                   "data in the order wanted")
        spec.shape, spec.offset = tuple(r.shape), 0
        if r.is_contiguous():
            spec.strides = spec.base_shape = None
        else:
            spec.strides = tuple(r.stride())
            spec.base_shape = (storage_size(spec.shape, spec.strides),)

    def copy_method(self, call: ast.Call, attr: str, spec: InputSpec, pos: list[Any], kw: dict[str, Any]) -> None:
        """`.to(device, dtype, memory_format=...)`, `.type(dtype)`, `.contiguous(memory_format=...)`,
        `.clone(memory_format=...)`: a dtype change, a layout change (a copy) or nothing."""
        fmt = kw.pop("memory_format", None)
        dtype = kw.pop("dtype", None)
        kw.pop("device", None)
        kw.pop("non_blocking", None)
        if attr == "to":
            kw.pop("copy", None)
        for v in pos:
            if isinstance(v, torch.dtype) and dtype is None and attr in ("to", "type"):
                dtype = v
            elif not (isinstance(v, str) and attr == "to"):  # a device string
                raise self.error(call, f".{attr}({excerpt(call)}): unsupported argument {v!r}")
        if kw:
            raise self.error(call, f".{attr}: unknown keyword {next(iter(kw))!r}")
        if dtype is not None:
            if not isinstance(dtype, torch.dtype):
                raise self.error(call, f".{attr}: dtype must be a torch dtype, got {dtype!r}")
            self.no_view_dtype(call, spec, f".{attr}(...)")
            spec.dtype = dtype
        if fmt is None and attr == "contiguous":
            fmt = TorchConst("contiguous_format")
        if fmt is None and attr == "clone":
            fmt = TorchConst("preserve_format")
        if fmt is not None:
            if not isinstance(fmt, TorchConst) or fmt.name not in MEMORY_FORMATS:
                raise self.error(call, f".{attr}: memory_format must be one of "
                                       f"{', '.join('torch.' + f for f in MEMORY_FORMATS)}")
            self.relayout(call, spec, fmt.name)

    def relayout(self, node: ast.AST, spec: InputSpec, fmt: str) -> None:
        """A copy in memory format `fmt` (torch.preserve_format: clone's rule)."""
        memory_format = getattr(torch, fmt)
        what = f"memory_format=torch.{fmt}"
        self.no_view_dtype(node, spec, what)
        t = spec.meta()
        try:
            r = t.clone(memory_format=memory_format)
        except RuntimeError as e:
            raise self.error(node, f"{what}: {str(e).splitlines()[0]}") from None
        self.copied(node, spec, t, r, what)

    def fill_method(self, call: ast.Call, attr: str, spec: InputSpec, pos: list[Any], kw: dict[str, Any]) -> None:
        """`.uniform_(a, b)`, `.normal_(mean, std)`, `.random_(a, b)`, `.fill_(v)`, `.zero_()`:
        new values for the whole storage, in the spec's dtype."""
        names = {"uniform_": ("from", "to"), "normal_": ("mean", "std"), "random_": ("from", "to"),
                 "fill_": ("value",), "zero_": ()}[attr]
        if len(pos) > len(names) or any(k not in names for k in kw):
            raise self.error(call, f".{attr}({', '.join(names)}): unexpected arguments in {excerpt(call)}")
        args = dict(zip(names, pos)) | kw
        if not all(is_number(v) for v in args.values()):
            raise self.error(call, f".{attr} takes numbers: {excerpt(call)}")
        self.no_view_dtype(call, spec, f".{attr}(...)")
        dtype = spec.dtype or torch.float32
        if attr in ("uniform_", "normal_") and not dtype.is_floating_point:
            raise self.error(call, f".{attr}: needs a floating-point tensor, not {dtype}")
        base = spec.storage_shape()
        if spec.strides is not None:
            spec.base_shape = base
        elif spec.kind in DATA_KINDS:
            spec.shape = base
        spec.data = spec.fill_value = spec.low = spec.high = spec.scale = spec.shift = spec.compare = None
        spec.fill_dtype = None
        if attr == "uniform_":
            lo, hi = args.get("from", 0), args.get("to", 1)
            spec.kind, spec.scale, spec.shift = "rand", affine_scale(hi - lo), affine_shift(lo)
        elif attr == "normal_":
            spec.kind = "randn"
            spec.scale, spec.shift = affine_scale(args.get("std", 1)), affine_shift(args.get("mean", 0))
        elif attr == "random_":
            if "to" not in args and "from" not in args:
                raise self.error(call, ".random_() needs a range: .random_(low, high) or .random_(high)")
            lo, hi = (args.get("from", 0), args["to"]) if "to" in args else (0, args["from"])
            if not (is_int(lo) and is_int(hi)) or lo >= hi:
                raise self.error(call, f".random_: bad range [{lo}, {hi})")
            spec.kind, spec.low, spec.high = "randint", lo, hi
        elif attr == "fill_":
            if "value" not in args:
                raise self.error(call, ".fill_(value) needs a value")
            spec.kind, spec.fill_value = "full", args["value"]
        else:
            spec.kind = "zeros"
        if spec.scale is not None or spec.shift is not None:
            spec.fill_dtype = spec.dtype  # as `torch.rand(...) * (b - a) + a` reads back

    def arithmetic(self, node: ast.AST, spec: InputSpec, op: str, value: Any, reflected: bool = False) -> None:
        """`x * c`, `x + c`, `c - x`, `x / c`, `-x` on an inputs entry: its values scaled and
        shifted (dtype and layout as torch makes the result)."""
        what = f"{excerpt(node)}"
        self.no_view_dtype(node, spec, "arithmetic")
        if spec.compare is not None:
            raise self.error(node, f"{what}: arithmetic on a comparison's result is not supported in an inputs entry")
        if op != "neg" and not (isinstance(value, (int, float, complex))):
            raise self.error(node, f"{what}: an inputs entry takes arithmetic with a number only, not {value!r}")
        if op == "div" and value == 0:
            raise self.error(node, f"{what}: division by zero")
        t = spec.meta()
        try:
            r = {"neg": lambda: -t, "add": lambda: t + value, "mul": lambda: t * value, "div": lambda: t / value,
                 "sub": lambda: value - t if reflected else t - value}[op]()
        except (RuntimeError, TypeError, ValueError) as e:
            raise self.error(node, f"{what}: {str(e).splitlines()[0]}") from None
        self.copied(node, spec, t, r, what)
        scale = 1 if spec.scale is None else spec.scale
        shift = 0 if spec.shift is None else spec.shift
        if op == "neg" or op == "sub" and reflected:
            scale, shift = -scale, -shift
        if op in ("add", "sub"):
            shift = shift + value if op == "add" or reflected else shift - value
        elif op == "mul":
            scale, shift = scale * value, shift * value
        elif op == "div":
            scale, shift = scale / value, shift / value
        spec.scale, spec.shift = affine_scale(scale), affine_shift(shift)
        spec.fill_dtype = spec.fill_dtype or spec.dtype
        spec.dtype = r.dtype
        if spec.scale is None and spec.shift is None:
            spec.fill_dtype = None  # `x * 1.0`: a dtype change only; made in that dtype

    def comparison(self, node: ast.AST, spec: InputSpec, op: str, value: Any) -> None:
        """`x < 0.5` (`x.lt(0.5)`, ...): a bool tensor of the comparison of the values."""
        what = excerpt(node)
        self.no_view_dtype(node, spec, "a comparison")
        if spec.compare is not None:
            raise self.error(node, f"{what}: a second comparison is not supported in an inputs entry")
        if not (is_number(value) and not isinstance(value, complex)):
            raise self.error(node, f"{what}: an inputs entry is compared with a number only, not {value!r}")
        t = spec.meta()
        try:
            r = getattr(t, op)(value)
        except (RuntimeError, TypeError, ValueError) as e:
            raise self.error(node, f"{what}: {str(e).splitlines()[0]}") from None
        self.copied(node, spec, t, r, what)
        spec.compare = (op, value)
        spec.fill_dtype = spec.fill_dtype or spec.dtype
        spec.dtype = torch.bool
