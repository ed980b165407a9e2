"""Frontend calls of a fusion body: fd.define_* and add_output, fd.ops.X (op names
checked), fd.sched.X, nvFuser's Tensor methods, Python operators on tensors and scalars
(the ops they stand for), fd.from_pytorch and fd.define_vector.
"""

from __future__ import annotations

import ast
import operator
from typing import Any

import torch

import engine.ops as ops
from engine.codegen import ops_table
from engine.dtypes import DataType, from_torch
from engine.errors import FusionDefinitionError, ScheduleError
from engine.frontend.input_spec import InputSpec
from engine.frontend.pyfile.plainpy import ITERATORS
from engine.frontend.pyfile.syntax import excerpt
from engine.frontend.pyfile.values import ARITH
from engine.frontend.pyfile.vocab import MAX_ITEMS, copy_containers, is_int, is_number
from engine.frontend.sched import SchedOperators
from engine.frontend.spellings import unknown_op_message

# Python operators on tensors and scalars -> the fd.ops they stand for (nvFuser's Tensor and
# Scalar bindings: `/` is div, `%` is mod).
_OPERATOR_OPS = {
    ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.Div: "div", ast.Mod: "mod", ast.Pow: "pow",
    ast.BitAnd: "bitwise_and", ast.BitOr: "bitwise_or", ast.BitXor: "bitwise_xor",
    ast.LShift: "bitwise_left_shift", ast.RShift: "bitwise_right_shift",
}

# Comparison -> (fd.ops name, Python's own on numbers); the names are the operator module's.
_COMPARE_OPS = {ast.Lt: "lt", ast.LtE: "le", ast.Gt: "gt", ast.GtE: "ge", ast.Eq: "eq", ast.NotEq: "ne"}


def _unpassable(v: Any) -> str | None:
    """Why a value the body holds may not reach a frontend call (None if it may): an iterator
    (the call would use it up, and a recorded call is written back with a list) or an
    example input (only from_pytorch reads one)."""
    if isinstance(v, ITERATORS):
        return "pass a list, not an iterator (wrap it in list(...))"
    if isinstance(v, InputSpec):
        return "an example input of the inputs list is only read by from_pytorch"
    if isinstance(v, (list, tuple)):
        return next((why for x in v if (why := _unpassable(x)) is not None), None)
    if isinstance(v, dict):
        return next((why for x in v.values() if (why := _unpassable(x)) is not None), None)
    return None


def _op_names() -> dict[str, tuple[str, ...]]:
    """The op names that fd.ops.unary/binary/ternary/reduce accept: those the code generator
    spells (engine/codegen/ops_table.py)."""
    return {
        "unary": (*ops_table.FLOAT_UNARY, *ops_table.SAME_UNARY, *ops_table.BOOL_UNARY),
        "binary": (*ops_table.ARITH_BINARY, *ops_table.COMPARE_BINARY, *ops_table.BITWISE_BINARY),
        "ternary": _TERNARY_OPS,
        "reduce": ops_table.REDUCTION_OPS,
    }


# engine.ops' ternary builders (where, clamp, lerp) by the names they pass to ternary().
_TERNARY_OPS = ("where", "clamp", "lerp")


def is_sched_method(name: str) -> bool:
    attr = getattr(SchedOperators, name, None)
    return not name.startswith("_") and callable(attr) and name != "calls"


def to_datatype(v: Any) -> Any:
    """torch.float32 written as an op argument means DataType.Float."""
    if isinstance(v, torch.dtype):
        try:
            return from_torch(v)
        except ValueError:
            return v
    if isinstance(v, (list, tuple)):
        items = [to_datatype(x) for x in v]
        if all(a is b for a, b in zip(items, v)):
            return v  # unchanged: the same list, so that two names bound to it share it, as in Python
        return items if isinstance(v, list) else tuple(items)
    return v


class FrontendCalls:
    """A fusion body's frontend calls (a part of Body, whose state it reads)."""

    def invoke(self, node: ast.AST, func: ast.expr, target: str, name: str, args: list[Any],
               kwargs: dict[str, Any]) -> Any:
        """Make one frontend call (fd.X, fd.ops.X, fd.sched.X) with values the body holds;
        errors name the line and the call as the file spells it (`func`)."""
        where = excerpt(func)
        for v in (*args, *kwargs.values()):
            why = _unpassable(v)
            if why is not None:
                raise self.error(node, f"{where}: {why}")
        # Copies, as nvFuser's bindings convert lists: the engine never holds a list of the
        # body, which a later `selected.append(...)` would change.
        args = [copy_containers(a) for a in args]
        kwargs = {k: copy_containers(v) for k, v in kwargs.items()}
        if target == "ops":
            if name not in ops.__all__:
                raise self.error(node, unknown_op_message(name))
            self.check_op_name(node, name, args, kwargs)
            fn = getattr(self.fd.ops, name)
        elif target == "sched":
            fn = getattr(self.fd.sched, name)
        else:
            fn = getattr(self.fd, name)
        try:
            return fn(*args, **kwargs)
        except (FusionDefinitionError, ScheduleError) as e:
            raise self.error(node, f"{where}: {e}") from e
        except TypeError as e:
            raise self.error(node, f"{where}: wrong arguments: {e}") from e
        except Exception as e:  # a builder failing on odd input still names the line
            raise self.error(node, f"{where}: {type(e).__name__}: {e}") from e

    def operator(self, node: ast.BinOp | ast.UnaryOp | ast.Compare) -> Any:
        """Python operators, as nvFuser's Tensor and Scalar define them: on numbers the
        number; on a tensor or scalar the op they stand for (`a / b` is fd.ops.div, as in
        nvFuser), recorded and written back as that fd.ops call."""
        if isinstance(node, ast.UnaryOp):
            v = self.value(node.operand)
            if isinstance(node.op, ast.UAdd):
                return v
            if isinstance(node.op, ast.Not):
                raise self.error(node, f"`not` is not an nvFuser operator: {excerpt(node)}")
            if is_number(v):
                if isinstance(node.op, ast.USub):
                    return -v
                if isinstance(v, int):
                    return ~v
                raise self.error(node, f"~ on {v!r}")
            return self.apply_op(node, "neg" if isinstance(node.op, ast.USub) else "bitwise_not", v)
        if isinstance(node, ast.Compare):
            if len(node.ops) != 1:
                raise self.error(node, f"chained comparisons are not allowed: {excerpt(node)}")
            a, b = self.value(node.left), self.value(node.comparators[0])
            name = _COMPARE_OPS.get(type(node.ops[0]))
            if name is None:
                raise self.error(node, f"{type(node.ops[0]).__name__} is not an nvFuser operator")
            if is_number(a) and is_number(b):
                return getattr(operator, name)(a, b)
            return self.apply_op(node, name, a, b)
        a, b = self.value(node.left), self.value(node.right)
        if is_number(a) and is_number(b) and type(node.op) in ARITH:
            return self.loader.arith(node, a, b)
        joined = self.loader.sequence_arith(node, a, b)
        if joined is not None:
            return joined
        name = _OPERATOR_OPS.get(type(node.op))
        if name is None:
            raise self.error(node, f"{type(node.op).__name__} is not an nvFuser operator on tensors and "
                                   f"scalars: {excerpt(node)}")
        return self.apply_op(node, name, a, b)

    def apply_op(self, node: ast.expr, name: str, *args: Any) -> Any:
        for v in args:
            why = _unpassable(v)
            if why is not None:
                raise self.error(node, f"{excerpt(node)} ({self.fd_name}.ops.{name}): {why}")
        try:
            return getattr(self.fd.ops, name)(*args)
        except (FusionDefinitionError, ScheduleError) as e:
            raise self.error(node, f"{excerpt(node)} ({self.fd_name}.ops.{name}): {e}") from e
        except Exception as e:  # odd operands still name the line
            raise self.error(node, f"{excerpt(node)} ({self.fd_name}.ops.{name}): {type(e).__name__}: {e}") from e

    def check_op_name(self, node: ast.AST, name: str, args: list[Any], kwargs: dict[str, Any]) -> None:
        """fd.ops.unary/binary/ternary/reduce take the op's name as a string: only known names,
        so that no text from the file reaches the IR (and later the generated code) as an op."""
        known = _op_names().get(name)
        if known is None:
            return
        op = args[0] if args else kwargs.get("op")
        if op not in known:
            shown = repr(op) if len(repr(op)) <= 40 else repr(op)[:37] + "..."
            raise self.error(node, f"fd.ops.{name}: unknown op {shown} (one of {', '.join(known)})")

    def tensor_method(self, node: ast.Call, name: str) -> Any:
        """nvFuser's Tensor methods `T.size(d)` and `T.shape()`: the ops fd.ops.size and
        fd.ops.shape, recorded (and written back) in that spelling."""
        func = node.func
        assert isinstance(func, ast.Attribute)
        tv = self.loader.tensor_of(func.value, self.env, self.fd_names, self.attrs)
        if any(isinstance(a, ast.Starred) for a in node.args) or any(k.arg is None for k in node.keywords):
            raise self.error(node, "* and ** arguments are not allowed")
        args = [self.value(a) for a in node.args]
        kwargs = {k.arg: self.value(k.value) for k in node.keywords}
        where = f"{excerpt(func)}()"
        if name == "size":
            if len(args) + len(kwargs) != 1 or (kwargs and "dim" not in kwargs):
                raise self.error(node, f"{where} takes one dim")
            kwargs = {"dim": args[0] if args else kwargs["dim"]}
        elif args or kwargs:
            raise self.error(node, f"{where} takes no arguments")
        try:
            return getattr(self.fd.ops, name)(tv, **kwargs)
        except FusionDefinitionError as e:
            raise self.error(node, f"{where}: {e}") from e
        except Exception as e:  # odd arguments (a string dim) still name the line
            raise self.error(node, f"{where}: {type(e).__name__}: {e}") from e

    def from_pytorch(self, node: ast.Call) -> Any:
        """nvFuser's fd.from_pytorch(tensor, static_sizes=False): an input with the example
        tensor's rank, dtype and strides (so contiguity and stride order), sizes symbolic
        unless static_sizes. nvFuser makes it with define_tensor(sizes=, strides=), and so
        does this (recorded and written back in that spelling). The example is an entry of
        the file's inputs list (`inputs[0]`), read from its spec, never made."""
        where = excerpt(node.func)
        args, kwargs = self.arguments(node)
        params = dict(zip(("tensor", "static_sizes"), args))
        if len(args) > 2 or any(k not in ("tensor", "static_sizes") or k in params for k in kwargs):
            raise self.error(node, f"{where}(tensor, static_sizes=False): wrong arguments: {excerpt(node)}")
        params.update(kwargs)
        spec, static = params.get("tensor"), params.get("static_sizes", False)
        if not isinstance(spec, InputSpec) or spec.kind == "scalar":
            raise self.error(node, f"{where}: takes an example tensor of the file's inputs list (such as "
                                   f"inputs[0]): {excerpt(node)}")
        if not isinstance(static, bool):
            raise self.error(node, f"{where}: static_sizes must be True or False")
        t = spec.meta()
        sizes, strides, dtype = list(t.shape), list(t.stride()), t.dtype
        device = spec.device or "cpu"  # torch's default device
        is_cpu = not device.startswith("cuda")
        if is_cpu and (sizes or device.split(":")[0] != "cpu"):  # nvFuser's own check
            raise self.error(node, f"{where}: found unsupported device {device}, only scalar CPU or CUDA "
                                   "tensors are supported")
        try:
            kw: dict[str, Any] = {"sizes": sizes, "strides": strides, "dtype": from_torch(dtype)}
        except ValueError as e:
            raise self.error(node, f"{where}: {e}") from None
        if static:
            kw["static_sizes"] = True
        if is_cpu:
            kw["is_cpu"] = True
        return self.invoke(node, node.func, "fd", "define_tensor", [], kw)

    def define_vector(self, node: ast.Call) -> list[Any]:
        """Older repros' `V = fd.define_vector([S0, 4], dtype=DataType.Int)`: a shape list.

        It is kept as the plain list it stands for, so the ops that take it see what the
        newer frontend passes inline (and a saved file writes the list inline).

        `fd.define_vector(size=2)` (or `define_vector(2)`), nvFuser's input form that
        nvfuser_direct's repro printer writes for a reshape to sizes given at run time,
        defines that many Int scalar inputs, as nvFuser does: the list of them. They are
        recorded (and saved) as the define_scalar calls they are.
        """
        keywords = {k.arg: k.value for k in node.keywords}
        if (len(node.args) + ("size" in keywords) + ("values" in keywords) != 1
                or any(k not in ("dtype", "size", "values") for k in keywords)):
            raise self.error(node, f"{self.fd_name}.define_vector(values, dtype=...) takes one list; "
                                   f"define_vector(size=n) defines n integer inputs")
        arg = keywords.get("values", keywords.get("size", node.args[0] if node.args else None))
        values = self.value(arg)
        if is_int(values):
            if "dtype" in keywords:
                raise self.error(node, f"{self.fd_name}.define_vector(size=n) takes no dtype: its inputs are "
                                       "integers")
            if not 0 <= values <= MAX_ITEMS:
                raise self.error(node, f"{self.fd_name}.define_vector: size must be in 0..{MAX_ITEMS}, "
                                       f"got {values}")
            return [self.invoke(node, node.func, "fd", "define_scalar", [], {"dtype": DataType.Int})
                    for _ in range(values)]
        if not isinstance(values, (list, tuple)) or "size" in keywords:
            raise self.error(node, f"{self.fd_name}.define_vector: expected a list of sizes or size=n, "
                                   f"got {values!r}")
        for k, v in keywords.items():
            if k != "values":
                self.value(v)  # checked as literals, not needed
        return list(values)
