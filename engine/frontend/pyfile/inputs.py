"""The inputs list: its entries as InputSpecs (`inputs = [...]`, a comprehension,
`inputs.append(...)`), read from the text and never run: tensor names, the methods and
views of an entry, indexing, and arithmetic and comparisons with a number.
"""

from __future__ import annotations

import ast
import dataclasses
from collections.abc import Iterator, Sequence
from typing import Any

import torch

from engine.errors import FusionFileError
from engine.frontend.input_spec import TORCH_MAKERS, InputSpec, check_spec
from engine.frontend.pyfile.imports import TORCH_MODULES
from engine.frontend.pyfile.refs import Ref
from engine.frontend.pyfile.syntax import excerpt
from engine.frontend.pyfile.vocab import MAX_ITEMS, is_int

# Methods an inputs entry may end with (besides as_strided and view(dtype)): layout views,
# a copy in another memory format, dtype conversions and moves that change nothing here.
_DTYPE_METHODS = {"half": torch.float16, "bfloat16": torch.bfloat16, "float": torch.float32,
                  "double": torch.float64, "int": torch.int32, "long": torch.int64, "bool": torch.bool,
                  "short": torch.int16, "char": torch.int8, "byte": torch.uint8, "cfloat": torch.complex64,
                  "cdouble": torch.complex128}

# Methods of an inputs entry that change nothing the fusion sees (where it lives, autograd).
_NO_OP_METHODS = ("cuda", "cpu", "requires_grad_", "detach", "detach_", "pin_memory", "share_memory_")

# Views of an inputs entry, worked out by torch on the meta device (exact strides and offset).
_VIEW_METHODS = frozenset({"transpose", "permute", "t", "expand", "narrow", "select", "unsqueeze", "squeeze",
                           "view", "reshape", "flatten", "unflatten", "movedim", "moveaxis", "swapaxes", "swapdims",
                           "broadcast_to", "diagonal", "unfold"})

_SIZE_METHODS = ("permute", "expand", "view", "reshape", "broadcast_to")  # sizes as one list or spread

_VIEW_ATTRS = ("T", "mT", "H", "mH")

_FILL_METHODS = ("uniform_", "normal_", "random_", "fill_", "zero_")

_ARITH_METHODS = {"add": "add", "add_": "add", "sub": "sub", "sub_": "sub", "mul": "mul", "mul_": "mul",
                  "div": "div", "div_": "div"}

_COMPARE_METHODS = ("lt", "le", "gt", "ge", "eq", "ne")

_SPEC_ARITH = {ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.Div: "div"}

_SPEC_COMPARE = {ast.Lt: "lt", ast.LtE: "le", ast.Gt: "gt", ast.GtE: "ge", ast.Eq: "eq", ast.NotEq: "ne"}

_FLIPPED = {"lt": "gt", "gt": "lt", "le": "ge", "ge": "le", "eq": "eq", "ne": "ne"}


class InputsReader:
    """The loader's reading of the inputs list and its entries (a part of Loader)."""

    def spec_list(self, node: ast.expr) -> list[InputSpec]:
        """The entries of an inputs list: `[a, b]`, `(a, b)`, a list comprehension over a
        range or a literal sequence (`[torch.randn(n) for n in (2, 3)]`), or a name bound to
        a list of numbers."""
        if isinstance(node, (ast.List, ast.Tuple)):
            for e in node.elts:
                if isinstance(e, ast.Starred):
                    raise self.error(e, "* unpacking is not allowed in an inputs list")
            return [self.spec(e) for e in node.elts]
        if isinstance(node, ast.ListComp):
            if len(node.generators) != 1 or node.generators[0].ifs or node.generators[0].is_async:
                raise self.error(node, "an inputs list comprehension takes one `for` and no `if`")
            gen = node.generators[0]
            specs: list[InputSpec] = []
            for _ in self.loop_values(gen.target, gen.iter):
                specs.append(self.spec(node.elt))
            return specs
        if isinstance(node, ast.Name) and getattr(self.globals.get(node.id), "kind", None) == "const":
            value = self.globals[node.id].value
            if isinstance(value, (list, tuple)):
                return [InputSpec(kind="scalar", shape=(), dtype=None, data=v) for v in value]
        raise self.error(node, f"an inputs list must be a list of entries: {excerpt(node)}")

    def loop_values(self, target: ast.expr, it: ast.expr) -> Iterator[Any]:
        """Bind a top-level loop's name (`for i in range(3)`, `for n in (2, 3)`) to each value
        in turn, as a constant the loop's body reads; the name is unbound afterwards."""
        if not isinstance(target, ast.Name):
            raise self.error(target, "a loop over inputs binds one name")
        if (isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "range"
                and "range" not in self.globals and not it.keywords and 1 <= len(it.args) <= 3):
            bounds = [self.plain(a, allow_names=False) for a in it.args]
            if not all(is_int(b) for b in bounds):
                raise self.error(it, f"range() takes integers: {excerpt(it)}")
            values: Sequence[Any] = range(*bounds)
        else:
            values = self.plain(it, allow_names=False)
            if not isinstance(values, (list, tuple)):
                raise self.error(it, f"a loop over inputs goes over range(...) or a literal list: {excerpt(it)}")
        if len(values) > MAX_ITEMS:
            raise self.error(it, f"a loop of more than {MAX_ITEMS} inputs")
        saved = self.globals.get(target.id)
        try:
            for v in values:
                self.globals[target.id] = Ref("const", v)
                yield v
        finally:
            if saved is None:
                self.globals.pop(target.id, None)
            else:
                self.globals[target.id] = saved

    def is_number_expr(self, node: ast.expr) -> bool:
        """A number written as an expression of literals: -2.5, 1.0 / 0.9, float("inf")."""
        try:
            return isinstance(self.plain(node, allow_names=False), (bool, int, float, complex))
        except FusionFileError:
            return False

    def inputs_append_form(self, node: ast.expr) -> bool:
        return (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr in ("append", "extend") and isinstance(node.func.value, ast.Name)
                and getattr(self.globals.get(node.func.value.id), "kind", None) == "inputs")

    def inputs_append(self, node: ast.expr) -> bool:
        """`inputs.append(torch.randn(4))`, `inputs.extend([...])` on the inputs list."""
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr in ("append", "extend") and isinstance(node.func.value, ast.Name)
                and getattr(self.globals.get(node.func.value.id), "kind", None) == "inputs"):
            return False
        if len(node.args) != 1 or node.keywords:
            raise self.error(node, f"{node.func.value.id}.{node.func.attr} takes one argument")
        assert self.specs is not None
        if self.run_seen:
            raise self.error(node, "the inputs list changes after the fusion ran")
        if node.func.attr == "append":
            self.specs.append(self.spec(node.args[0]))
        else:
            self.specs.extend(self.spec_list(node.args[0]))
        return True

    def spec(self, node: ast.expr) -> InputSpec:
        """One inputs entry, checked to be makeable (dtype holds the data, sizes fit)."""
        spec = self.read_spec(node)
        try:
            check_spec(spec)
        except ValueError as e:
            raise self.error(node, f"{excerpt(node)}: {e}") from None
        return spec

    def is_spec_expr(self, node: ast.expr) -> bool:
        """An expression that makes an input tensor: a torch call of TORCH_MAKERS or a name
        bound to one, with tensor methods, indexing, arithmetic or a comparison applied."""
        while True:
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and self.torch_function(node.func) is None and self.torch_path(node.func) is None):
                node = node.func.value
            elif isinstance(node, ast.Attribute) and node.attr in _VIEW_ATTRS:
                node = node.value
            elif isinstance(node, ast.Subscript):
                node = node.value
            elif isinstance(node, ast.UnaryOp):
                node = node.operand
            elif isinstance(node, ast.Compare) and len(node.comparators) == 1:
                return self.is_spec_expr(node.left) or self.is_spec_expr(node.comparators[0])
            elif isinstance(node, ast.BinOp):
                return self.is_spec_expr(node.left) or self.is_spec_expr(node.right)
            else:
                break
        if isinstance(node, ast.Call):
            return self.torch_function(node.func) is not None
        return isinstance(node, ast.Name) and getattr(self.globals.get(node.id), "kind", None) == "spec"

    def read_spec(self, node: ast.expr) -> InputSpec:
        if isinstance(node, ast.Name) and node.id in self.globals:
            ref = self.globals[node.id]
            if ref.kind == "spec":
                return dataclasses.replace(ref.value)
            if ref.kind == "const" and isinstance(ref.value, (bool, int, float, complex)):
                return InputSpec(kind="scalar", shape=(), dtype=None, data=ref.value)
            raise self.error(node, f"{node.id!r} is not an input tensor")
        scalar_call = (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                       and node.func.id in ("float", "complex"))
        if self.is_spec_expr(node) or isinstance(node, ast.Call) and not scalar_call:
            return self.tensor_expr(node)
        # A scalar input is written as a plain number: 3, -2.5, float("inf"), -float("inf").
        value = self.plain(node, allow_names=False)
        if isinstance(value, (bool, int, float, complex)):
            return InputSpec(kind="scalar", shape=(), dtype=None, data=value)
        raise self.error(node, f"an inputs entry must be a torch call or a number: {excerpt(node)}")

    def tensor_expr(self, node: ast.expr) -> InputSpec:
        """The spec of a tensor-making expression (see is_spec_expr), read inside out."""
        if isinstance(node, ast.Name):
            return self.read_spec(node)
        if isinstance(node, ast.Call):
            if (isinstance(node.func, ast.Attribute) and self.torch_function(node.func) is None
                    and self.torch_path(node.func) is None):
                spec = self.tensor_expr(node.func.value)
                self.tensor_method(node, node.func.attr, spec)
                return spec
            return self.spec_base(node)
        if isinstance(node, ast.Attribute) and node.attr in _VIEW_ATTRS:
            spec = self.tensor_expr(node.value)
            attr = node.attr
            self.view(node, spec, f".{attr}", lambda t: getattr(t, attr))
            return spec
        if isinstance(node, ast.Subscript):
            spec = self.tensor_expr(node.value)
            index = self.index(node.slice)
            self.view(node, spec, f"indexing [{excerpt(node.slice)}]", lambda t: t[index])
            return spec
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            spec = self.tensor_expr(node.operand)
            if isinstance(node.op, ast.USub):
                self.arithmetic(node, spec, "neg", None)
            return spec
        if isinstance(node, ast.BinOp) and type(node.op) in _SPEC_ARITH:
            left, right = self.is_spec_expr(node.left), self.is_spec_expr(node.right)
            if left and right:
                raise self.error(node, f"arithmetic between two tensors is not supported in an inputs entry: "
                                       f"{excerpt(node)} (only a tensor and a number)")
            op = _SPEC_ARITH[type(node.op)]
            spec = self.tensor_expr(node.left if left else node.right)
            value = self.plain(node.right if left else node.left, allow_names=False)
            if not left and op == "div":
                raise self.error(node, f"a number divided by a tensor is not supported in an inputs entry: "
                                       f"{excerpt(node)}")
            self.arithmetic(node, spec, op, value, reflected=not left)
            return spec
        if isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in _SPEC_COMPARE:
            op = _SPEC_COMPARE[type(node.ops[0])]
            left, right = self.is_spec_expr(node.left), self.is_spec_expr(node.comparators[0])
            if left and right:
                raise self.error(node, f"comparing two tensors is not supported in an inputs entry: "
                                       f"{excerpt(node)} (only a tensor and a number)")
            if not left:
                op = _FLIPPED[op]  # 0.5 > x is x < 0.5
            spec = self.tensor_expr(node.left if left else node.comparators[0])
            value = self.plain(node.comparators[0] if left else node.left, allow_names=False)
            self.comparison(node, spec, op, value)
            return spec
        raise self.error(node, f"not supported in an inputs entry: {excerpt(node)} (a torch call with "
                               "tensor methods, indexing, `* number`, `+ number` or a comparison to a number)")

    def tensor_method(self, call: ast.Call, attr: str, spec: InputSpec) -> None:
        """A method called on an inputs entry: a view (exact sizes, strides and offset), a
        copy (a fresh layout, as torch makes it), a dtype change, an in-place random fill,
        arithmetic with a number, or one that changes nothing the fusion sees (.cuda())."""
        if any(k.arg is None for k in call.keywords):
            raise self.error(call, "** arguments are not allowed")
        if attr in _NO_OP_METHODS:
            return  # where the tensor lives and autograd do not change the fusion's input
        if attr in _DTYPE_METHODS:
            if call.args or call.keywords:
                raise self.error(call, f".{attr}() takes no arguments")
            self.no_view_dtype(call, spec, f".{attr}(...)")
            spec.dtype = _DTYPE_METHODS[attr]
            return
        if attr == "as_strided":
            self.as_strided(call, spec)
            return
        if attr == "view" and len(call.args) == 1 and not call.keywords:
            v = self.plain(call.args[0], allow_names=False)
            if isinstance(v, torch.dtype):
                if spec.view_dtype is not None:
                    raise self.error(call, "view(...) takes one torch dtype, once")
                spec.view_dtype = v
                return
        if attr == "view" and any(k.arg == "dtype" for k in call.keywords):
            args = self.call_args(call, ("dtype",))
            if spec.view_dtype is not None or not isinstance(args.get("dtype"), torch.dtype):
                raise self.error(call, "view(...) takes one torch dtype")
            spec.view_dtype = args["dtype"]
            return
        pos = [self.plain(a, allow_names=False) for a in call.args]
        kw = {k.arg: self.plain(k.value, allow_names=False) for k in call.keywords}
        if attr in ("to", "contiguous", "type", "clone"):
            self.copy_method(call, attr, spec, pos, kw)
            return
        if attr in _FILL_METHODS:
            self.fill_method(call, attr, spec, pos, kw)
            return
        if attr in _ARITH_METHODS:
            if kw or len(pos) != 1:
                raise self.error(call, f".{attr} takes one number: {excerpt(call)}")
            self.arithmetic(call, spec, _ARITH_METHODS[attr], pos[0])
            return
        if attr in _COMPARE_METHODS:
            if kw or len(pos) != 1:
                raise self.error(call, f".{attr} takes one number: {excerpt(call)}")
            self.comparison(call, spec, attr, pos[0])
            return
        if attr not in _VIEW_METHODS:
            raise self.error(call, f".{attr}(...) is not supported on an inputs entry (views: "
                                   f"{', '.join(sorted(_VIEW_METHODS))}; .to, .contiguous, .clone, "
                                   "dtype methods, random fills, arithmetic with a number)")
        if len(pos) == 1 and isinstance(pos[0], (list, tuple)) and attr in _SIZE_METHODS:
            pos = list(pos[0])
        allowed_kw = {"dim", "dim0", "dim1", "start", "length", "index", "size", "sizes", "shape", "start_dim",
                      "end_dim", "source", "destination", "offset", "step", "dimension", "implicit"}
        for k in kw:
            if k not in allowed_kw:
                raise self.error(call, f".{attr}: unknown keyword {k!r}")
        for v in [*pos, *kw.values()]:
            ok = is_int(v) or isinstance(v, (list, tuple)) and all(is_int(x) for x in v)
            if not ok:
                raise self.error(call, f".{attr} takes integers: {excerpt(call)}")
        method = attr
        self.view(call, spec, f".{attr}", lambda t: getattr(t, method)(*pos, **kw))

    def index(self, node: ast.expr) -> Any:
        """`[:, :6]`, `[::2]`, `[0]`, `[None, ...]`: basic indexing with integers, slices,
        None and ..., as torch takes it (a tuple for several axes)."""
        if isinstance(node, ast.Tuple):
            return tuple(self.index_item(e) for e in node.elts)
        return self.index_item(node)

    def index_item(self, node: ast.expr) -> Any:
        if isinstance(node, ast.Slice):
            parts = [None if p is None else self.plain(p, allow_names=False) for p in (node.lower, node.upper, node.step)]
            if not all(p is None or is_int(p) for p in parts):
                raise self.error(node, f"a slice takes integers: {excerpt(node)}")
            return slice(*parts)
        if isinstance(node, ast.Constant) and (node.value is None or node.value is Ellipsis):
            return node.value
        advanced = isinstance(node, (ast.List, ast.Call)) or self.is_spec_expr(node)
        v = None if advanced else self.plain(node, allow_names=False)
        if is_int(v):
            return v
        raise self.error(node, f"an inputs entry is indexed by integers, slices, None and ... only "
                               f"(no advanced indexing): {excerpt(node)}")

    def torch_function(self, func: ast.expr) -> str | None:
        """`torch.randn` -> "randn", `torch.testing.make_tensor` -> "make_tensor"."""
        parts: list[str] = []
        while isinstance(func, ast.Attribute):
            parts.append(func.attr)
            func = func.value
        if not isinstance(func, ast.Name):
            return None
        ref = self.globals.get(func.id)
        if ref is not None and ref.kind == "torch_fn" and not parts:
            return ref.value
        if ref is None or ref.kind != "module" or ref.value not in TORCH_MODULES:
            return None
        dotted = ".".join([*ref.value.split(".")[1:], *reversed(parts)])
        return TORCH_MAKERS.get(dotted)

    def call_args(self, call: ast.Call, names: Sequence[str]) -> dict[str, Any]:
        if len(call.args) > len(names) or any(k.arg is None for k in call.keywords):
            raise self.error(call, f"{excerpt(call)}: too many arguments")
        out = {n: self.plain(a, allow_names=False) for n, a in zip(names, call.args)}
        for k in call.keywords:
            if k.arg not in names or k.arg in out:
                raise self.error(call, f"{excerpt(call)}: unexpected keyword {k.arg!r}")
            out[k.arg] = self.plain(k.value, allow_names=False)
        return out
