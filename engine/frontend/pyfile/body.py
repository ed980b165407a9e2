"""The fusion body interpreter: the statements of a fusion function, a subclass's methods or
a with block, run one by one against a FusionDefinition (assignments, for loops, calls).
Its calls come from fdcalls (frontend calls and operators) and plainpy (list methods,
builtins, comprehensions).
"""

from __future__ import annotations

import ast
import itertools
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from engine.errors import FusionFileError
from engine.frontend.definition import FusionDefinition
from engine.frontend.pyfile import unread
from engine.frontend.pyfile.devices import DEVICE_TENSOR_METHODS, DeviceCalls, held_axis_call
from engine.frontend.pyfile.fdcalls import FrontendCalls, is_sched_method, to_datatype
from engine.frontend.pyfile.plainpy import (
    BUILTINS,
    ITERATORS,
    LIST_METHODS,
    TUPLE_METHODS,
    PlainPython,
    is_iterable,
)
from engine.frontend.pyfile.syntax import excerpt, is_docstring
from engine.frontend.pyfile.vocab import FD_METHODS, RUN_METHODS, TENSOR_METHODS
from engine.ir.iterdomain import IterDomain
from engine.ir.tensorview import TensorView

if TYPE_CHECKING:
    from engine.frontend.pyfile.loader import Loader


# Iterations of `for` loops and comprehensions, and calls made through map() and filter(), a
# fusion body may run in all (a file cannot make the loader spin).
_MAX_LOOP_STEPS = 10_000


class Body(FrontendCalls, PlainPython, DeviceCalls):
    """Interprets the statements of one fusion body against `fd`."""

    def __init__(self, loader: Loader, fd: FusionDefinition, fd_name: str, attrs: dict[str, Any],
                 alias: str | None = None) -> None:
        self.loader = loader
        self.fd = fd
        self.fd_name = fd_name
        # The names the FusionDefinition goes by: the body's parameter and, in a subclass, the
        # module-level name of its instance (see Loader.instantiate).
        self.fd_names = (fd_name,) if alias in (None, fd_name) else (fd_name, alias)
        self.attrs = attrs
        self.env: dict[str, Any] = {}
        self.loop_steps = 0

    def error(self, node: ast.AST, message: str) -> FusionFileError:
        return self.loader.error(node, message)

    def run(self, body: list[ast.stmt]) -> None:
        for stmt in body:
            self.statement(stmt)

    def statement(self, stmt: ast.stmt) -> None:
        self.loader.line = stmt.lineno
        if isinstance(stmt, ast.Pass) or is_docstring(stmt):
            return
        unread.check_opaque(self.loader, stmt, {**self.env, **dict.fromkeys(self.fd_names)})
        if isinstance(stmt, ast.Return) and stmt.value is None:
            return
        if isinstance(stmt, ast.Assign):
            if len(stmt.targets) != 1:
                raise self.error(stmt, "chained assignment is not allowed")
            # A call, an operator, or a plain value naming earlier ones (`tvs = [t0, t1]`,
            # `mean = self.mean`), bound for the lines below.
            value = self.value(stmt.value)
            self.bind(stmt.targets[0], value, stmt)
            return
        if isinstance(stmt, ast.For):
            self.for_loop(stmt)
            return
        if isinstance(stmt, ast.Expr):
            self.call(stmt.value)
            return
        raise self.error(stmt, f"{type(stmt).__name__} statement is not allowed in a fusion body: "
                               f"{excerpt(stmt)}")

    def for_loop(self, stmt: ast.For) -> None:
        """`for t in [a, b, c]:`, `for k in range(n):`, `for i, t in enumerate(tvs):` over
        frontend calls: the body runs once per item, over the live list as Python runs it (a
        body that appends to it sees the new items), bounded in all by _MAX_LOOP_STEPS."""
        if stmt.orelse or not isinstance(stmt.target, (ast.Name, ast.Tuple)):
            raise self.error(stmt, "only `for NAME in LIST:` loops (no else) are allowed in a fusion body")
        for item in self.loop_items(stmt.iter):
            self.step(stmt)
            self.bind(stmt.target, item, stmt)
            for inner in stmt.body:
                if isinstance(inner, (ast.Break, ast.Continue)):
                    raise self.error(inner, "break and continue are not allowed in a fusion body")
                self.statement(inner)

    def loop_items(self, node: ast.expr) -> Iterable[Any]:
        items = self.value(node)
        if not is_iterable(items):
            raise self.error(node, f"a loop runs over a list, a tuple or range(...), not {excerpt(node)}")
        return items

    def step(self, node: ast.AST) -> None:
        """Count one loop iteration (or one call made through map/filter) of this body."""
        self.loop_steps += 1
        if self.loop_steps > _MAX_LOOP_STEPS:
            raise self.error(node, f"loops run more than {_MAX_LOOP_STEPS} times in one fusion body")

    def bind(self, target: ast.expr, value: Any, stmt: ast.AST) -> None:
        if isinstance(target, ast.Name):
            if target.id in self.fd_names:
                raise self.error(stmt, f"cannot rebind {target.id!r}")
            self.env[target.id] = value
            if hasattr(value, "short_name"):  # a tensor's or scalar's name in the file, and its line
                self.fd.__dict__.setdefault("source_names", {}).setdefault(value, (target.id, stmt.lineno))
        elif (isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name)
              and target.value.id in self.fd_names and not target.attr.startswith("_")):
            if target.attr in ("ops", "sched", "fusion", "from_pytorch", *FD_METHODS, *RUN_METHODS):
                raise self.error(stmt, f"cannot assign to {target.value.id}.{target.attr}")
            self.attrs[target.attr] = value
        elif isinstance(target, (ast.Tuple, ast.List)):
            if isinstance(value, ITERATORS):  # `a, b = map(...)`: unpacking uses it up, as in Python
                value = list(itertools.islice(value, len(target.elts) + 1))
            if not isinstance(value, (tuple, list)):
                raise self.error(stmt, f"the call returns one value, not {len(target.elts)}")
            if len(value) != len(target.elts):
                raise self.error(stmt, f"the call returns {len(value)} values, not {len(target.elts)}")
            for t, v in zip(target.elts, value):
                if isinstance(t, (ast.Tuple, ast.List, ast.Starred)):
                    raise self.error(stmt, "nested or starred unpacking is not allowed")
                self.bind(t, v, stmt)
        else:
            raise self.error(stmt, f"cannot assign to {excerpt(target)}")

    def call(self, node: ast.expr) -> Any:
        """One call of the body: fd.define_tensor/define_scalar/from_pytorch/add_output, fd.ops.X,
        fd.sched.X, a tensor's size()/shape(), a list method or an allowed builtin; or an
        operator or comprehension met inside an expression."""
        if isinstance(node, (ast.BinOp, ast.UnaryOp, ast.Compare)):
            return self.operator(node)
        if isinstance(node, (ast.ListComp, ast.GeneratorExp)):
            return self.comprehension(node)
        if not isinstance(node, ast.Call):
            raise self.error(node, f"expected a call of {self.fd_name}.ops, {self.fd_name}.sched or "
                                   f"{self.fd_name}.define_*, got {excerpt(node)}")
        target, name = self.callee(node.func)
        if target == "vector":
            return self.define_vector(node)
        if target == "tensor":
            return self.tensor_method(node, name)
        if target == "list":
            return self.list_method(node, name)
        if target == "builtin":
            return self.builtin(node, name)
        if target == "from_pytorch":
            return self.from_pytorch(node)
        if target == "mesh":
            return self.device_mesh(node)
        if target == "device_tensor":
            return self.device_tensor_method(node, name)
        if target == "parallelize":
            return self.parallelize(node)
        if target is None:
            fd = self.fd_name
            raise self.error(node, f"call not allowed: {excerpt(node)} (only {fd}.ops.*, {fd}.sched.*, "
                                   f"{fd}.define_tensor/define_scalar/from_pytorch, {fd}.add_output, a "
                                   f"tensor's .size(dim) and .shape(), the list methods "
                                   f"{'/'.join(LIST_METHODS)} and the builtins {', '.join(BUILTINS)})")
        args, kwargs = self.arguments(node)
        return self.invoke(node, node.func, target, name, args, kwargs)

    def arguments(self, node: ast.Call) -> tuple[list[Any], dict[str, Any]]:
        args = []
        for a in node.args:
            if isinstance(a, ast.Starred):
                raise self.error(a, "* arguments are not allowed")
            args.append(self.value(a))
        kwargs = {}
        for k in node.keywords:
            if k.arg is None:
                raise self.error(node, "** arguments are not allowed")
            kwargs[k.arg] = self.value(k.value)
        return args, kwargs

    def is_fd(self, node: ast.expr) -> bool:
        return isinstance(node, ast.Name) and node.id in self.fd_names

    def is_builtin(self, name: str) -> bool:
        """A builtin of BUILTINS that no name of the body or the module shadows."""
        return name in BUILTINS and name not in self.env and name not in self.loader.globals

    def callee(self, func: ast.expr) -> tuple[str | None, str]:
        if isinstance(func, ast.Name):
            return ("builtin", func.id) if self.is_builtin(func.id) else (None, "")
        if not isinstance(func, ast.Attribute) or func.attr.startswith("_"):
            return None, ""
        if held_axis_call(func):
            return "parallelize", func.attr
        if func.attr == "DeviceMesh" and self.is_mesh_class(func):
            return "mesh", func.attr
        base = func.value
        if self.is_fd(base):
            if func.attr in ("define_vector", "from_pytorch"):
                return {"define_vector": "vector", "from_pytorch": "from_pytorch"}[func.attr], func.attr
            return ("fd", func.attr) if func.attr in FD_METHODS else (None, "")
        if isinstance(base, ast.Attribute) and self.is_fd(base.value) and base.attr in ("ops", "sched"):
            if base.attr == "sched" and not is_sched_method(func.attr):
                raise self.loader.error(func, f"unknown schedule operation {excerpt(func)}")
            return base.attr, func.attr
        held = self.loader.bound(base, self.env, self.fd_names, self.attrs)
        if isinstance(held, TensorView) and func.attr in TENSOR_METHODS:
            return "tensor", func.attr
        if isinstance(held, TensorView) and func.attr in DEVICE_TENSOR_METHODS:
            return "device_tensor", func.attr
        if isinstance(held, IterDomain) and func.attr == "parallelize":
            return "parallelize", func.attr
        if func.attr in (LIST_METHODS if isinstance(held, list) else
                         TUPLE_METHODS if isinstance(held, tuple) else ()):
            return "list", func.attr
        return None, ""

    def value(self, node: ast.expr) -> Any:
        v = self.loader.plain(node, self.env, True, self.fd_names, self.attrs, self.call)
        return to_datatype(v)
