"""The torch calls that make an inputs entry: torch.randn, rand, randint, ones, zeros, full,
tensor, empty, empty_strided, arange, normal, torch.testing.make_tensor and the *_like of
those, read into an InputSpec.
"""

from __future__ import annotations

import ast
import math
from typing import Any

import torch

from engine.frontend.input_spec import InputSpec, storage_size
from engine.frontend.pyfile.spec_ops import affine_scale, affine_shift
from engine.frontend.pyfile.syntax import excerpt
from engine.frontend.pyfile.vocab import MEMORY_FORMATS, TorchConst, ints, is_int, is_number


def _is_data(v: Any) -> bool:
    if isinstance(v, (bool, int, float)):
        return True
    if isinstance(v, (list, tuple)):
        return all(_is_data(x) for x in v)
    return False


class Makers:
    """The loader's reading of the torch call an inputs entry starts from (a part of Loader)."""

    def spec_base(self, node: ast.expr) -> InputSpec:
        if not isinstance(node, ast.Call):
            raise self.error(node, f"an inputs entry must be a torch call or a number: {excerpt(node)}")
        kind = self.torch_function(node.func)
        if kind is None:
            raise self.error(node, f"unsupported inputs entry {excerpt(node)} (use torch.testing.make_tensor, "
                                   "torch.randn, rand, randint, ones, zeros, full, tensor, empty, empty_strided, "
                                   "arange, normal or a *_like of those)")
        if any(k.arg is None for k in node.keywords):
            raise self.error(node, "** arguments are not allowed")
        if kind.endswith("_like"):
            return self.like(node, kind)
        known = {"dtype", "device", "requires_grad", "layout", "pin_memory", "memory_format",
                 "low", "high", "noncontiguous", "exclude_zero"}
        for k in node.keywords:
            if k.arg not in known | {"size", "fill_value", "data", "stride", "start", "end", "step", "mean", "std"}:
                raise self.error(node, f"{kind}: unknown keyword {k.arg!r}")
        kw = {k.arg: self.plain(k.value, allow_names=False) for k in node.keywords}
        pos = [self.plain(a, allow_names=False) for a in node.args]
        fmt = kw.get("memory_format")
        if "layout" in kw and kw["layout"] != TorchConst("strided"):
            got = f"torch.{kw['layout'].name}" if isinstance(kw["layout"], TorchConst) else repr(kw["layout"])
            raise self.error(node, f"{kind}: layout={got} is not supported, only torch.strided")
        if fmt is not None and (not isinstance(fmt, TorchConst) or fmt.name not in MEMORY_FORMATS
                                or kind in ("tensor", "arange", "empty_strided")):
            got = f"torch.{fmt.name}" if isinstance(fmt, TorchConst) else repr(fmt)
            raise self.error(node, f"{kind}: memory_format={got} is not supported here")
        dtype = kw.get("dtype")
        if dtype is not None and not isinstance(dtype, torch.dtype):
            raise self.error(node, f"{kind}: dtype must be a torch dtype, got {dtype!r}")
        device = kw.get("device")
        if device is not None and not isinstance(device, str):
            raise self.error(node, f"{kind}: device must be a string or torch.device, got {device!r}")
        spec = InputSpec(kind=kind, dtype=dtype or torch.float32, device=device)
        if kind == "tensor":
            data = pos[0] if pos else kw.get("data")
            if len(pos) > 1 or not _is_data(data):
                raise self.error(node, "torch.tensor(data, ...) takes numbers or nested lists of numbers")
            spec.data = data
            try:
                made = torch.tensor(data, dtype=dtype)
            except (ValueError, RuntimeError, TypeError, OverflowError) as e:  # ragged, or out of range
                raise self.error(node, f"torch.tensor: {str(e).splitlines()[0]}") from None
            spec.dtype, spec.shape = made.dtype, tuple(made.shape)
            return spec
        if kind == "randint":
            # randint(high, size), randint(low, high, size); low=, high=, size= by name too
            size = kw.pop("size") if "size" in kw else (pos.pop() if pos else None)
            if len(pos) == 2:
                low, high = pos
            elif len(pos) == 1:
                low, high = (pos[0], kw["high"]) if "high" in kw else (kw.get("low", 0), pos[0])
            elif not pos and "high" in kw:
                low, high = kw.get("low", 0), kw["high"]
            else:
                raise self.error(node, "torch.randint(low, high, size, ...) needs a high and a size")
            if size is None:
                raise self.error(node, "torch.randint(low, high, size, ...) needs a size")
            if not all(isinstance(x, int) and not isinstance(x, bool) for x in (low, high)) or low >= high:
                raise self.error(node, f"torch.randint: bad range [{low}, {high})")
            spec.low, spec.high = low, high
            spec.dtype = dtype or torch.int64
            spec.shape = ints(self, node, size)
            return spec
        if kind == "full":
            if "size" in kw:
                pos = [kw.pop("size"), *pos]
            if "fill_value" in kw:
                pos = [*pos, kw.pop("fill_value")]
            if len(pos) != 2 or not isinstance(pos[1], (bool, int, float)):
                raise self.error(node, "torch.full(size, fill_value, ...) needs a size and a number")
            spec.shape, spec.fill_value = ints(self, node, pos[0]), pos[1]
            if dtype is None:
                spec.dtype = torch.full((), pos[1]).dtype  # pos[1] is within int64: no overflow
        elif kind == "arange":
            self.arange(node, spec, pos, kw, dtype)
        elif kind == "normal":
            # torch.normal(mean, std, size): numbers and a size (tensor means are not inputs lists' form)
            names = ("mean", "std", "size")
            args = dict(zip(names, pos)) | {k: v for k, v in kw.items() if k in names}
            if len(pos) > 3 or "size" not in args or not all(is_number(args.get(k, 0)) for k in names[:2]):
                raise self.error(node, "torch.normal(mean, std, size, ...) takes two numbers and a size")
            spec.kind, spec.shape = "randn", ints(self, node, args["size"])
            spec.scale, spec.shift = affine_scale(args.get("std", 1)), affine_shift(args.get("mean", 0))
            if spec.scale is not None or spec.shift is not None:
                spec.fill_dtype = spec.dtype
        elif kind == "empty_strided":
            size = kw.pop("size") if "size" in kw else (pos.pop(0) if pos else None)
            stride = kw.pop("stride") if "stride" in kw else (pos.pop(0) if pos else None)
            if size is None or stride is None or pos:
                raise self.error(node, "torch.empty_strided(size, stride, ...) needs a size and a stride")
            shape, strides = ints(self, node, size), ints(self, node, stride)
            if len(shape) != len(strides):
                raise self.error(node, f"torch.empty_strided: size {shape} and stride {strides} do not match")
            spec.kind, spec.shape, spec.strides = "empty", shape, strides
            spec.base_shape = (storage_size(shape, strides),)
        else:
            if "size" in kw:
                pos = [*pos, kw.pop("size")]
            if len(pos) == 1 and isinstance(pos[0], (list, tuple)):
                spec.shape = ints(self, node, pos[0])
            else:
                spec.shape = ints(self, node, pos)
        if kind == "make_tensor":
            if dtype is None:
                raise self.error(node, "torch.testing.make_tensor needs dtype=")
            for key in ("low", "high"):
                v = kw.get(key)
                if v is not None and not (isinstance(v, (int, float)) and not isinstance(v, bool)):
                    raise self.error(node, f"make_tensor: {key} must be a number")
            spec.low, spec.high = kw.get("low"), kw.get("high")
            if kw.get("noncontiguous") and math.prod(spec.shape) > 1:
                # torch.testing: every other element, from the second, of a tensor twice as
                # long in its last axis
                *outer, last = spec.shape
                wide = torch.empty((*outer, 2 * last), device="meta")[..., 1::2]
                spec.base_shape, spec.strides, spec.offset = (*outer, 2 * last), tuple(wide.stride()), 1
        if fmt is not None and fmt.name != "contiguous_format":
            self.relayout(node, spec, fmt.name)
        return spec

    def arange(self, node: ast.Call, spec: InputSpec, pos: list[Any], kw: dict[str, Any],
               dtype: torch.dtype | None) -> None:
        """torch.arange(end), arange(start, end), arange(start, end, step): its values in order."""
        if len(pos) > 3:
            raise self.error(node, "torch.arange(start, end, step) takes at most three numbers")
        names = ("end",) if len(pos) == 1 and "end" not in kw else ("start", "end", "step")
        args = dict(zip(names, pos)) | {k: v for k, v in kw.items() if k in ("start", "end", "step")}
        start, end, step = args.get("start", 0), args.get("end"), args.get("step", 1)
        if not all(is_number(v) and not isinstance(v, (bool, complex)) for v in (start, end, step)):
            raise self.error(node, "torch.arange(start, end, step) takes numbers")
        try:
            made = torch.arange(start, end, step, dtype=dtype, device="meta")
        except (RuntimeError, ValueError, TypeError, OverflowError) as e:
            raise self.error(node, f"torch.arange: {str(e).splitlines()[0]}") from None
        spec.low, spec.high, spec.fill_value = start, end, step
        spec.shape, spec.dtype = tuple(made.shape), made.dtype

    def like(self, node: ast.Call, kind: str) -> InputSpec:
        """torch.randn_like(x), zeros_like(x), full_like(x, v), randint_like(x, low, high), ...:
        the sizes of x, its layout as torch keeps it (memory_format=torch.preserve_format)."""
        if not node.args or not self.is_spec_expr(node.args[0]):
            raise self.error(node, f"torch.{kind}(x, ...) needs an input tensor of the inputs list as x")
        src = self.tensor_expr(node.args[0])
        pos = [self.plain(a, allow_names=False) for a in node.args[1:]]
        kw = {k.arg: self.plain(k.value, allow_names=False) for k in node.keywords}
        base = kind.removesuffix("_like")
        for k in kw:
            if k not in ("dtype", "device", "requires_grad", "layout", "memory_format", "fill_value", "low", "high"):
                raise self.error(node, f"{kind}: unknown keyword {k!r}")
        dtype = kw.get("dtype", src.dtype)
        if not isinstance(dtype, torch.dtype):
            raise self.error(node, f"{kind}: dtype must be a torch dtype, got {dtype!r}")
        fmt = kw.get("memory_format", TorchConst("preserve_format"))
        if not isinstance(fmt, TorchConst) or fmt.name not in MEMORY_FORMATS:
            raise self.error(node, f"{kind}: memory_format must be one of "
                                   f"{', '.join('torch.' + f for f in MEMORY_FORMATS)}")
        device = kw.get("device", src.device)
        spec = InputSpec(kind=base, shape=src.meta().shape, dtype=dtype,
                         device=device if isinstance(device, str) else None)
        spec.shape = tuple(spec.shape)
        if base == "full":
            value = pos[0] if pos else kw.get("fill_value")
            if len(pos) > 1 or not isinstance(value, (bool, int, float)):
                raise self.error(node, "torch.full_like(x, fill_value) needs a number")
            spec.fill_value = value
        elif base == "randint":
            bounds = pos if pos else [v for v in (kw.get("low"), kw.get("high")) if v is not None]
            if len(bounds) == 1:
                bounds = [0, bounds[0]]
            if len(bounds) != 2 or not all(is_int(b) for b in bounds) or bounds[0] >= bounds[1]:
                raise self.error(node, "torch.randint_like(x, low, high) needs an integer range")
            spec.low, spec.high = bounds
        elif pos:
            raise self.error(node, f"torch.{kind}(x) takes no more positional arguments")
        t = src.meta()
        try:
            r = torch.empty_like(t, dtype=dtype, memory_format=getattr(torch, fmt.name))
        except RuntimeError as e:
            raise self.error(node, f"{kind}: {str(e).splitlines()[0]}") from None
        if not r.is_contiguous():
            spec.strides = tuple(r.stride())
            spec.base_shape = (storage_size(spec.shape, spec.strides),)
        return spec
