"""Values of literal expressions and names: numbers (within 64 bits), lists, tuples, dicts,
math on numbers, torch dtypes, devices and sizes, enum members, the names the module
binds, and inside a fusion body the names it bound (a nested call goes back to the body).
"""

from __future__ import annotations

import ast
import enum
from typing import Any

import torch

from engine.dtypes import DataType
from engine.errors import FusionFileError
from engine.frontend.input_spec import TORCH_DTYPES, InputSpec
from engine.frontend.pyfile import pure
from engine.frontend.pyfile.syntax import excerpt
from engine.frontend.pyfile.vocab import (
    MAX_ITEMS,
    MEMORY_FORMATS,
    TorchConst,
    copy_containers,
    ints,
    is_int,
    is_number,
)
from engine.ir.tensorview import TensorView

# Integers in a file are sizes, dims, factors and scalars: all 64-bit in the engine.
_INT_MIN, _INT_MAX = -(1 << 63), (1 << 63) - 1

# nvFuser's DataType members that this engine has no type for, with why: named in the refusal.
_UNSUPPORTED_DTYPES = {
    "UInt64": "nvFuser's unsigned 64-bit type is not supported by this engine (use DataType.Int)",
    "Float4_e2m1fn_x2": "packed fp4 pairs are not supported by this engine; DataType.Float4_e2m1fn is "
                        "(one fp4 value per element, as nv_block_quantize makes)",
}

ARITH = {
    ast.Add: lambda a, b: a + b,
    ast.Sub: lambda a, b: a - b,
    ast.Mult: lambda a, b: a * b,
    ast.FloorDiv: lambda a, b: a // b,
    ast.Div: lambda a, b: a / b,
    ast.Mod: lambda a, b: a % b,
}


def _enum_member(cls: type[enum.Enum], name: str) -> enum.Enum | None:
    if name in cls.__members__:
        return cls.__members__[name]
    # MemoryType.global is a Python keyword; nvFuser-style files write global_ or Global.
    alias = {"global_": "Global", "global": "Global"}.get(name)
    if alias and alias in cls.__members__:
        return cls.__members__[alias]
    # nvfuser_direct spells some members in lower case (LoadStoreOpType.set, CacheOp.streaming).
    folded = [m for k, m in cls.__members__.items() if k.lower() == name.lower()]
    return folded[0] if len(folded) == 1 else None


class Values:
    """The loader's reading of plain values (a part of Loader)."""

    def plain(self, node: ast.expr, env: dict[str, Any] | None = None, allow_names: bool = True,
              fd_names: tuple[str, ...] = (), attrs: dict[str, Any] | None = None,
              call: Any = None) -> Any:
        """The value of a literal argument. Names resolve in `env` (values bound by
        earlier lines of the fusion body; `fd_names` are the FusionDefinition's names
        there); inside a fusion body, `call` interprets a nested frontend call
        (`fd.ops.add(fd.ops.neg(a), b)`), a list method, a builtin of the few allowed, a
        comprehension; nothing else is looked up or called."""
        if isinstance(node, ast.Constant):
            if isinstance(node.value, (bool, int, float, str, complex)) or node.value is None:
                return self.int64(node, node.value)
            raise self.error(node, f"literal {node.value!r} is not allowed")
        if call is not None and isinstance(node, (ast.BinOp, ast.UnaryOp, ast.Compare, ast.ListComp,
                                                  ast.GeneratorExp)):
            # Inside a fusion body: operators may apply to tensors and scalars; comprehensions
            # run their element (frontend calls) per item.
            return call(node)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            v = self.plain(node.operand, env, allow_names, fd_names, attrs, call)
            if is_number(v):
                return -v if isinstance(node.op, ast.USub) else v
            raise self.error(node, f"unary minus on {v!r}")
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub, ast.Mult, ast.FloorDiv,
                                                                 ast.Div, ast.Mod)):
            # Plain arithmetic on numbers (`4096 * 2`), as users write sizes; never on values.
            a = self.plain(node.left, env, allow_names, fd_names, attrs, call)
            b = self.plain(node.right, env, allow_names, fd_names, attrs, call)
            if is_number(a) and is_number(b):
                return self.arith(node, a, b)
            joined = self.sequence_arith(node, a, b)
            if joined is None:
                raise self.error(node, f"arithmetic is only allowed on numbers: {excerpt(node)}")
            return joined
        if isinstance(node, ast.Subscript) and env is not None:
            # `tvs[0]`: an item of a list or tuple the body built, by an integer.
            seq = self.plain(node.value, env, allow_names, fd_names, attrs, call)
            k = self.plain(node.slice, env, allow_names, fd_names, attrs, call)
            if not isinstance(seq, (list, tuple)) or isinstance(k, bool) or not isinstance(k, int):
                raise self.error(node, f"only lists and tuples are indexed, by an integer: {excerpt(node)}")
            if not -len(seq) <= k < len(seq):
                raise self.error(node, f"index {k} is out of range: {excerpt(node)}")
            return seq[k]
        if isinstance(node, ast.NamedExpr) and env is not None:
            # `(axis := 0)`, as nvFuser's schedule tests name an argument: bound, then passed.
            value = self.plain(node.value, env, allow_names, fd_names, attrs, call)
            if node.target.id in fd_names:
                raise self.error(node, f"cannot rebind {node.target.id!r}")
            env[node.target.id] = value
            return value
        if isinstance(node, (ast.List, ast.Tuple)):
            items = []
            for e in node.elts:
                if isinstance(e, ast.Starred):
                    raise self.error(e, "* unpacking is not allowed")
                items.append(self.plain(e, env, allow_names, fd_names, attrs, call))
            return items if isinstance(node, ast.List) else tuple(items)
        if isinstance(node, ast.Dict):
            if any(k is None for k in node.keys):
                raise self.error(node, "** unpacking is not allowed")
            out = {}
            for k, v in zip(node.keys, node.values):
                key = self.plain(k, env, allow_names, fd_names, attrs, call)  # type: ignore[arg-type]
                if not isinstance(key, (bool, int, float, str)):
                    raise self.error(k, f"a dict key must be a number or a string: {excerpt(k)}")  # type: ignore[arg-type]
                out[key] = self.plain(v, env, allow_names, fd_names, attrs, call)
            return out
        if isinstance(node, ast.Name):
            if allow_names and env is not None and node.id in env:
                return env[node.id]
            if allow_names and env is not None and node.id in self.globals:
                example = self.example_input(node)
                if example is not None:
                    return example
            ref = self.globals.get(node.id)
            if ref is not None and ref.kind == "const" and (env is None or node.id not in env):
                return copy_containers(ref.value)  # `N = 1024` at the top level, read where a number goes
            if ref is not None and ref.kind == "opaque" and (env is None or node.id not in env):
                raise self.error(node, f"{node.id!r} is {ref.value}; the fusion cannot use it")
            if node.id in ("inf", "nan"):
                raise self.error(node, f"write float('{node.id}') for {node.id}")
            raise self.error(node, f"unknown name {node.id!r}{self.defined_later(node.id)}")
        if isinstance(node, ast.Attribute):
            return self.attribute(node, env, fd_names, attrs)
        if isinstance(node, ast.Call):
            # float('inf'), float('-inf'), float('nan'), float(1)
            if (isinstance(node.func, ast.Name) and node.func.id == "float" and node.func.id not in (env or {})
                    and len(node.args) == 1 and not node.keywords):
                v = self.plain(node.args[0], None, False)
                if isinstance(v, str) and v.strip().lower() in ("inf", "+inf", "-inf", "nan", "infinity",
                                                                "-infinity"):
                    return float(v)
                if isinstance(v, (int, float)) and not isinstance(v, bool):
                    return float(v)  # v is within int64: no OverflowError
                raise self.error(node, f"float({v!r}) is not allowed")
            if (isinstance(node.func, ast.Name) and node.func.id == "complex" and node.func.id not in (env or {})
                    and 1 <= len(node.args) <= 2 and not node.keywords):
                # complex(1.0, -2.0): how nvFuser's repros print a complex constant.
                parts = [self.plain(a, None, False) for a in node.args]
                if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in parts):
                    return complex(*parts)
                raise self.error(node, f"complex{tuple(parts)!r} takes numbers")
            path = self.torch_path(node.func) if env is None or not isinstance(node.func, ast.Name) else None
            if path in ("device", "Size"):
                return self.torch_value(node, path)
            math_fn = self.math_function(node.func, env)
            if math_fn is not None:
                if node.keywords or any(isinstance(a, ast.Starred) for a in node.args):
                    raise self.error(node, f"math.{math_fn} takes positional arguments only: {excerpt(node)}")
                args = [self.plain(a, env, allow_names, fd_names, attrs, call) for a in node.args]
                try:
                    return self.int64(node, pure.call(math_fn, args))
                except pure.MathError as e:
                    raise self.error(node, str(e)) from None
            if call is not None:
                return call(node)
            raise self.error(node, f"call not allowed here: {excerpt(node)}")
        raise self.error(node, f"{type(node).__name__} expression is not allowed: {excerpt(node)}")

    def math_function(self, func: ast.expr, env: dict[str, Any] | None) -> str | None:
        """`math.sqrt` (math imported) or `sqrt` (`from math import sqrt`): the function's name."""
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.attr in pure.FUNCTIONS:
            ref = self.globals.get(func.value.id) if func.value.id not in (env or {}) else None
            return func.attr if ref is not None and ref.kind == "module" and ref.value == "math" else None
        if isinstance(func, ast.Name) and func.id not in (env or {}):
            ref = self.globals.get(func.id)
            return ref.value if ref is not None and ref.kind == "math_fn" else None
        return None

    def torch_value(self, node: ast.Call, path: str) -> Any:
        """`torch.device('cuda', 0)` -> 'cuda:0' (a device string, as inputs entries take it);
        `torch.Size([2, 3])` -> (2, 3). Literal arguments only."""
        if any(k.arg is None for k in node.keywords):
            raise self.error(node, "** arguments are not allowed")
        pos = [self.plain(a, allow_names=False) for a in node.args]
        kw = {k.arg: self.plain(k.value, allow_names=False) for k in node.keywords}
        if path == "Size":
            if len(pos) > 1 or kw:
                raise self.error(node, f"torch.Size takes one list of sizes: {excerpt(node)}")
            return ints(self, node, pos[0] if pos else [])
        names = ("type", "index")
        if len(pos) > 2 or any(k not in names for k in kw):
            raise self.error(node, f"torch.device(type, index): unexpected arguments in {excerpt(node)}")
        args = dict(zip(names, pos)) | kw
        kind, index = args.get("type"), args.get("index")
        if not isinstance(kind, str) or not (index is None or is_int(index) and index >= 0):
            raise self.error(node, f"torch.device(type, index) takes a string and an index: {excerpt(node)}")
        try:
            return str(torch.device(kind) if index is None else torch.device(kind, index))
        except (RuntimeError, ValueError) as e:
            raise self.error(node, f"torch.device: {str(e).splitlines()[0]}") from None

    def arith(self, node: ast.BinOp, a: int | float, b: int | float) -> int | float:
        """`a op b` on two numbers, as Python computes it, within the engine's 64 bits."""
        try:
            return self.int64(node, ARITH[type(node.op)](a, b))
        except ZeroDivisionError:
            raise self.error(node, "division by zero") from None
        except OverflowError:
            raise self.error(node, f"{excerpt(node)} overflows") from None

    def sequence_arith(self, node: ast.BinOp, a: Any, b: Any) -> list[Any] | tuple[Any, ...] | None:
        """`[1, 2] + [3]` and `[-7, 2] * 64` (how example inputs and shapes get written) on
        lists or tuples, capped at MAX_ITEMS; None for any other operands."""
        if isinstance(node.op, ast.Add) and isinstance(a, (list, tuple)) and type(a) is type(b):
            out = a + b
        elif isinstance(node.op, ast.Mult) and (isinstance(a, (list, tuple)) and is_int(b)
                                                or isinstance(b, (list, tuple)) and is_int(a)):
            seq, n = (a, b) if isinstance(a, (list, tuple)) else (b, a)
            if len(seq) * max(n, 0) > MAX_ITEMS:
                raise self.error(node, f"{excerpt(node)}: more than {MAX_ITEMS} items")
            out = seq * n
        else:
            return None
        if len(out) > MAX_ITEMS:
            raise self.error(node, f"{excerpt(node)}: more than {MAX_ITEMS} items")
        return copy_containers(out)

    def int64(self, node: ast.AST, value: Any) -> Any:
        """`value`, refused when it is an integer outside the engine's 64 bits."""
        if isinstance(value, int) and not isinstance(value, bool) and not _INT_MIN <= value <= _INT_MAX:
            text = str(value) if abs(value) < 10**30 else f"a {len(str(abs(value)))}-digit integer"
            raise self.error(node, f"{text} does not fit in 64 bits")
        return value

    def attribute(self, node: ast.Attribute, env: dict[str, Any] | None, fd_names: tuple[str, ...],
                  attrs: dict[str, Any] | None) -> Any:
        if node.attr.startswith("_"):
            raise self.error(node, f"attribute {node.attr!r} is not allowed")
        base = node.value
        # self.t0 in a subclass method: a value stored by an earlier line.
        if isinstance(base, ast.Name) and base.id in fd_names and attrs is not None:
            if node.attr in attrs:
                return attrs[node.attr]
            raise self.error(node, f"unknown attribute {base.id}.{node.attr}")
        # nvFuser's Tensor.ndim: a number read off a tensor the body defined, nothing else.
        if node.attr == "ndim":
            tv = self.tensor_of(base, env, fd_names, attrs)
            if tv is not None:
                return tv.ndim
        enum_cls = self.enum_of(base, env)
        if enum_cls is not None:
            member = _enum_member(enum_cls, node.attr)
            if member is None:
                why = _UNSUPPORTED_DTYPES.get(node.attr) if enum_cls is DataType else None
                if why is not None:
                    raise self.error(node, f"DataType.{node.attr}: {why}")
                raise self.error(node, f"{enum_cls.__name__} has no member {node.attr!r}")
            return member
        if isinstance(base, ast.Name) and (env is None or base.id not in env):
            ref = self.globals.get(base.id)
            if ref is not None and ref.kind == "module" and ref.value == "math":
                if node.attr in pure.CONSTANTS:
                    return pure.CONSTANTS[node.attr]
                raise self.error(node, f"math.{node.attr} is not a constant (math.{', math.'.join(pure.CONSTANTS)})")
            if ref is not None and ref.kind == "opaque":
                raise self.error(base, f"{base.id!r} is {ref.value}; the fusion cannot use it")
            if ref is not None and ref.kind == "module" and ref.value == "torch":
                if node.attr in TORCH_DTYPES:
                    return TORCH_DTYPES[node.attr]
                if node.attr in ("strided", *MEMORY_FORMATS):
                    return TorchConst(node.attr)  # layout= / memory_format= of an inputs entry
                raise self.error(node, f"torch.{node.attr} is not a dtype this format knows")
        raise self.error(node, f"attribute not allowed here: {excerpt(node)}")

    def tensor_of(self, node: ast.expr, env: dict[str, Any] | None, fd_names: tuple[str, ...],
                  attrs: dict[str, Any] | None) -> TensorView | None:
        """The tensor a name (`T0`) or a subclass's stored attribute (`self.t0`) holds, if any."""
        v = self.bound(node, env, fd_names, attrs)
        return v if isinstance(v, TensorView) else None

    def bound(self, node: ast.expr, env: dict[str, Any] | None, fd_names: tuple[str, ...],
              attrs: dict[str, Any] | None) -> Any:
        """What a name (`tvs`) or a subclass's stored attribute (`self.tvs`) holds, read
        without evaluating anything; None when the node is neither."""
        if isinstance(node, ast.Name):
            return env.get(node.id) if env is not None else None
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in fd_names
                and attrs is not None and not node.attr.startswith("_")):
            return attrs.get(node.attr)
        return None

    def example_input(self, node: ast.Name) -> tuple[InputSpec, ...] | InputSpec | None:
        """The module's `inputs` list (or a tensor named at the top, `input1 = torch.ones(...)`)
        read inside a fusion body, for from_pytorch: its specs, as a tuple so that the body
        cannot change the list fd.execute(inputs) is given."""
        ref = self.globals[node.id]
        if ref.kind == "inputs" and self.specs is not None:
            return tuple(self.specs)
        if ref.kind == "spec":
            return ref.value
        return None

    def defined_later(self, name: str) -> str:
        """A hint for an unknown name that the module assigns below the fusion: the loader
        builds the fusion where the file creates it, so only names above it are known."""
        if self.tree is None or self.fd_line is None:
            return ""
        for stmt in self.tree.body:
            if (isinstance(stmt, ast.Assign) and stmt.lineno > self.fd_line
                    and any(isinstance(t, ast.Name) and t.id == name for t in stmt.targets)):
                return (f" (assigned at line {stmt.lineno}, after the fusion is built at line {self.fd_line}; "
                        "assign it above)")
        return ""

    def enum_of(self, node: ast.expr, env: dict[str, Any] | None) -> type[enum.Enum] | None:
        if isinstance(node, ast.Name) and (env is None or node.id not in env):
            ref = self.globals.get(node.id) or self.nvfuser_name(node.id)
            return ref.value if ref is not None and ref.kind == "enum" else None
        if isinstance(node, ast.Attribute) and not node.attr.startswith("_"):
            try:
                ref = self.resolve_global(node)
            except FusionFileError:
                return None
            return ref.value if ref.kind == "enum" else None
        return None
