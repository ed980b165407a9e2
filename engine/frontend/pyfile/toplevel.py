"""Top-level statements before the run: imports, fusion functions and FusionDefinition
subclasses, the with block that builds the fusion (its body is read by
engine.frontend.pyfile.body), and top-level assignments (the fd, the inputs list, named
numbers, sizes, dtypes and devices).
"""

from __future__ import annotations

import ast
from typing import Any

import torch

from engine.errors import FusionFileError
from engine.frontend.definition import FusionDefinition, SkippedStatement
from engine.frontend.pyfile import imports, unread
from engine.frontend.pyfile.body import Body
from engine.frontend.pyfile.refs import Ref
from engine.frontend.pyfile.syntax import excerpt, extra_params, is_docstring, takes_fd
from engine.frontend.pyfile.vocab import TorchConst, is_number


class TopLevel:
    """The loader's reading of top-level statements (a part of Loader, whose state it reads)."""

    def top_statement(self, stmt: ast.stmt) -> None:
        if isinstance(stmt, ast.Import):
            self.import_(stmt)
        elif isinstance(stmt, ast.ImportFrom):
            self.import_from(stmt)
        elif isinstance(stmt, ast.FunctionDef):
            self.function_def(stmt)
        elif isinstance(stmt, ast.ClassDef):
            self.class_def(stmt)
        elif isinstance(stmt, ast.With):
            self.with_block(stmt)
        elif isinstance(stmt, ast.Assign):
            self.top_assign(stmt)
        elif isinstance(stmt, ast.Expr):
            self.top_expr(stmt)
        elif isinstance(stmt, ast.Pass):
            pass
        elif isinstance(stmt, ast.For):
            self.timing_loop(stmt)
        else:
            raise self.error(stmt, f"{type(stmt).__name__} statement is not allowed at the top level")

    def import_(self, stmt: ast.Import) -> None:
        imports.read_import(self, stmt)

    def import_from(self, stmt: ast.ImportFrom) -> None:
        imports.read_import_from(self, stmt)

    def nvfuser_name(self, name: str) -> Ref | None:
        if name == "FusionDefinition":
            return Ref("fd_class")
        if name == "Fusion":
            return Ref("fusion_class")  # the 2022 frontend: `fs = Fusion(); FusionDefinition(fs)`
        if name in self.enums:
            return Ref("enum", self.enums[name])
        if name == "multidevice":
            return Ref("module", "nvfuser")  # nvfuser_direct.multidevice: DeviceMesh's namespace
        if name == "DeviceMesh":
            return Ref("mesh_class")
        return None  # other nvfuser names bind nothing usable here

    def function_def(self, fn: ast.FunctionDef, method: bool = False) -> None:
        """A fusion function: its first parameter is the FusionDefinition; others (`eps`, `n`)
        are given by the call in the with block or by literal defaults. A function that
        does not take the FusionDefinition is a helper: never read, its name opaque."""
        if not method and not takes_fd(fn):
            unread.skip(self, fn, "a function that does not take the FusionDefinition", "read")
            self.globals[fn.name] = Ref("opaque", f"the function defined at line {fn.lineno}, which does not "
                                                   "take the FusionDefinition and is not read")
            return
        if fn.decorator_list and not method:
            # Read as written: a decorator (torch.no_grad(), a cache, a test mark) is not run.
            first, last = fn.decorator_list[0].lineno, fn.decorator_list[-1].end_lineno or fn.lineno
            self.skipped.append(SkippedStatement(first, last, f"skipped, not evaluated (the decorators of "
                                                              f"{fn.name}; its body is read)"))
        elif fn.decorator_list:
            raise self.error(fn.decorator_list[0], "decorators are not allowed")
        a = fn.args
        if not a.args or a.posonlyargs or a.vararg or a.kwarg or len(a.defaults) == len(a.args):
            raise self.error(fn, f"fusion function {fn.name!r} must take the FusionDefinition first, then "
                                 "named parameters (no *args, **kwargs or default for the first)")
        self.defaults(fn)  # literal defaults, read once here so that a bad one names its line
        self.functions[fn.name] = fn
        self.globals[fn.name] = Ref("function", fn)

    def defaults(self, fn: ast.FunctionDef) -> dict[str, Any]:
        """The literal defaults of a fusion function's parameters after the first."""
        a = fn.args
        out: dict[str, Any] = {}
        for p, d in zip(a.args[len(a.args) - len(a.defaults):], a.defaults):
            out[p.arg] = self.plain(d)
        for p, d in zip(a.kwonlyargs, a.kw_defaults):
            if d is not None:
                out[p.arg] = self.plain(d)
        return out

    def class_def(self, cls: ast.ClassDef) -> None:
        if cls.decorator_list:
            raise self.error(cls.decorator_list[0], "decorators are not allowed")
        if cls.keywords or len(cls.bases) != 1:
            raise self.error(cls, f"class {cls.name!r} must subclass FusionDefinition only")
        if self.resolve_global(cls.bases[0]).kind != "fd_class":
            raise self.error(cls.bases[0], f"class {cls.name!r} must subclass FusionDefinition")
        methods: dict[str, ast.FunctionDef] = {}
        for k, stmt in enumerate(cls.body):
            if k == 0 and is_docstring(stmt) or isinstance(stmt, ast.Pass):
                continue
            if not isinstance(stmt, ast.FunctionDef) or stmt.name not in ("definition", "schedule"):
                raise self.error(stmt, f"class {cls.name!r} may only define definition() and schedule()")
            if len(stmt.args.args) != 1 or stmt.args.kwonlyargs:
                raise self.error(stmt, f"{cls.name}.{stmt.name} must take exactly one argument (self)")
            self.function_def(stmt, method=True)
            methods[stmt.name] = stmt
        for name in methods:  # methods are not top-level fusion functions
            del self.functions[name], self.globals[name]
        self.classes[cls.name] = methods
        self.globals[cls.name] = Ref("class", cls.name)

    def resolve_global(self, node: ast.expr) -> Ref:
        """A top-level name or dotted name: FusionDefinition, nvfuser.DataType, a function, ..."""
        if isinstance(node, ast.Name):
            if node.id in self.globals:
                if self.globals[node.id].kind == "opaque":
                    raise self.error(node, f"{node.id!r} is {self.globals[node.id].value}; the fusion cannot use it")
                return self.globals[node.id]
            ref = self.nvfuser_name(node.id)
            if ref is not None:
                return ref
            raise self.error(node, f"unknown name {node.id!r}")
        if isinstance(node, ast.Attribute) and not node.attr.startswith("_"):
            base = self.resolve_global(node.value)
            if base.kind == "module" and base.value == "nvfuser":
                ref = self.nvfuser_name(node.attr)
                if ref is not None:
                    return ref
            raise self.error(node, f"unknown name {ast.unparse(node)!r}")
        raise self.error(node, f"{ast.unparse(node)!r} is not allowed here")

    def new_fd(self, node: ast.AST) -> FusionDefinition:
        if self.fd is not None:
            raise self.error(node, f"a second fusion; this file already defined one at line {self.fd_line}")
        self.fd = FusionDefinition()
        self.fd_line = getattr(node, "lineno", None)
        return self.fd

    def instantiate(self, class_name: str, node: ast.AST, alias: str | None = None) -> FusionDefinition:
        """nvFuser's subclass style: definition() then schedule(), `self` being the fd.

        `alias` is the module-level name the instance is assigned to (`fd = MyFusion()`):
        nvFuser runs the methods at fd.execute(), when that global is the instance, so
        nvFuser's tests write `fd.sched.split(...)` inside schedule(); it means `self`.
        """
        fd = self.new_fd(node)
        methods = self.classes[class_name]
        attrs: dict[str, Any] = {}  # `self.x = ...` shared between the two methods
        for name in ("definition", "schedule"):
            if name in methods:
                self.run_function(methods[name], fd, methods[name], attrs, alias)
        return fd

    def fusion_constructor(self, node: ast.expr, alias: str | None = None) -> FusionDefinition | None:
        """`FusionDefinition()` or `MySubclass()` -> a new fd; None for anything else.

        `FusionDefinition(fs)`, the 2022 form, takes a `fs = Fusion()` object; the fd it
        makes is then also what `fs` names, for the file's later `fs.execute(inputs)`.
        """
        if not isinstance(node, ast.Call) or node.keywords:
            return None
        try:
            ref = self.resolve_global(node.func)
        except FusionFileError:
            return None
        if ref.kind == "fd_class" and len(node.args) == 1:
            holder = node.args[0]
            held = self.globals.get(holder.id) if isinstance(holder, ast.Name) else None
            if held is None or held.kind != "fusion":
                raise self.error(node, f"FusionDefinition({excerpt(holder)}): the argument must be a "
                                       "Fusion() made earlier (`fs = Fusion()`)")
            if held.value is not None:
                raise self.error(node, f"a second FusionDefinition on {holder.id!r}")  # type: ignore[attr-defined]
            held.value = fd = self.new_fd(node)
            return fd
        if node.args:
            return None
        if ref.kind == "fd_class":
            return self.new_fd(node)
        if ref.kind == "class":
            return self.instantiate(ref.value, node, alias)
        return None

    def with_block(self, stmt: ast.With) -> None:
        if len(stmt.items) != 1:
            raise self.error(stmt, "a with statement must open one FusionDefinition")
        item = stmt.items[0]
        fd = self.fusion_constructor(item.context_expr)
        if fd is None and isinstance(item.context_expr, ast.Name):
            ref = self.globals.get(item.context_expr.id)
            fd = ref.value if ref is not None and ref.kind == "fd" else None
        if fd is None:
            raise self.error(stmt, "a with statement must open a FusionDefinition: "
                                   "`with FusionDefinition() as fd:`")
        if item.optional_vars is not None:
            if not isinstance(item.optional_vars, ast.Name):
                raise self.error(stmt, "bind the FusionDefinition to one name: `as fd`")
            self.globals[item.optional_vars.id] = Ref("fd", fd)
            fd_name = item.optional_vars.id
        elif isinstance(item.context_expr, ast.Name):
            fd_name = item.context_expr.id  # `fd = FusionDefinition()` then `with fd:`
        else:
            fd_name = None
        body = stmt.body
        # `nvfuser_fusion_id0(fd)`: the printed repro's form; `fusion_func(fd, 1e-5, n)` passes
        # the function's other parameters too.
        if (len(body) == 1 and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Call)
                and isinstance(body[0].value.func, ast.Name) and body[0].value.func.id in self.functions):
            call = body[0].value
            if (not call.args or not isinstance(call.args[0], ast.Name) or call.args[0].id != fd_name):
                raise self.error(call, f"call the fusion function with the FusionDefinition first: "
                                       f"{call.func.id}({fd_name or 'fd'})")  # type: ignore[attr-defined]
            fn = self.functions[call.func.id]  # type: ignore[attr-defined]
            self.run_function(fn, fd, call, args=self.call_values(fn, call))
            return
        if fd_name is None:
            raise self.error(stmt, "bind the FusionDefinition to a name: `as fd`")
        # The blocks of one fd share their names (`fd = FusionDefinition()`, then `with fd:`
        # blocks, and the legacy top-level body read as such blocks).
        held = self.bodies.get(id(fd))
        if held is None or held.fd_name != fd_name:
            held = self.bodies[id(fd)] = Body(self, fd, fd_name, {})
        with fd:
            held.run(body)

    def call_values(self, fn: ast.FunctionDef, call: ast.Call) -> dict[str, Any]:
        """The values of a fusion function's other parameters at `call`: numbers, sizes,
        dtypes and names of them (`fusion_func(fd, 1e-5, n=4)`), else its literal defaults."""
        params = [p.arg for p in extra_params(fn)]
        values = self.defaults(fn)
        if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
            raise self.error(call, "* and ** arguments are not allowed")
        if len(call.args) - 1 > len(fn.args.args) - 1:
            raise self.error(call, f"{fn.name} takes {len(fn.args.args)} positional arguments, got {len(call.args)}")
        for p, a in zip(params, call.args[1:]):
            values[p] = self.plain(a)
        for k in call.keywords:
            if k.arg not in params or k.arg in [p for p, _ in zip(params, call.args[1:])]:
                raise self.error(call, f"{fn.name}: unexpected or repeated argument {k.arg!r}")
            values[k.arg] = self.plain(k.value)
        missing = [p for p in params if p not in values]
        if missing:
            raise self.error(call, f"{fn.name}: no value for {', '.join(missing)}")
        return values

    def run_function(self, fn: ast.FunctionDef, fd: FusionDefinition, site: ast.AST,
                     attrs: dict[str, Any] | None = None, alias: str | None = None,
                     args: dict[str, Any] | None = None) -> None:
        param = fn.args.args[0].arg
        body = fn.body[1:] if fn.body and is_docstring(fn.body[0]) else fn.body
        reader = Body(self, fd, param, attrs if attrs is not None else {}, alias)
        reader.env.update(self.defaults(fn) if args is None else args)
        with fd:
            reader.run(body)

    def top_assign(self, stmt: ast.Assign) -> None:
        if (len(stmt.targets) == 1 and isinstance(stmt.targets[0], (ast.Tuple, ast.List))
                and all(isinstance(e, ast.Name) for e in stmt.targets[0].elts) and self.run_call(stmt.value)):
            # `out, = fd.execute(inputs)`, `(o1, o2) = fd.execute(inputs)`
            for e in stmt.targets[0].elts:
                self.globals[e.id] = Ref("outputs")  # type: ignore[attr-defined]
            return
        if (len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Tuple) and isinstance(stmt.value, ast.Tuple)
                and len(stmt.targets[0].elts) == len(stmt.value.elts)
                and all(isinstance(e, ast.Name) for e in stmt.targets[0].elts)):
            # `B, H = 6, 12`: numbers (sizes, dtypes, devices) named together
            consts = [self.constant(v, "") for v in stmt.value.elts]
            if all(c is not None for c in consts):
                for e, c in zip(stmt.targets[0].elts, consts):
                    self.globals[e.id] = Ref("const", c[0])  # type: ignore[attr-defined,index]
                return
        if len(stmt.targets) != 1 or not isinstance(stmt.targets[0], ast.Name):
            raise self.error(stmt, "only `inputs = [...]` and `fd = FusionDefinition()` may be assigned "
                                   "at the top level")
        name = stmt.targets[0].id
        if self.is_fusion_object(stmt.value):
            self.globals[name] = Ref("fusion")  # `fs = Fusion()`: bound to an fd by FusionDefinition(fs)
            return
        fd = self.fusion_constructor(stmt.value, alias=name)
        if fd is not None:
            self.globals[name] = Ref("fd", fd)
            return
        if self.run_call(stmt.value):
            # `outputs = fd.execute(inputs)`, `out = fd.execute(inputs)[0]`: the name may be
            # read by the checks that follow (print, assert_close), which are not run either.
            held = self.globals.get(name)
            if held is not None and held.kind not in ("outputs", "const"):
                raise self.error(stmt, f"the result of fd.{stmt.value.func.attr if isinstance(stmt.value, ast.Call) else 'execute'}"  # type: ignore[attr-defined]
                                       f"(...) may not rebind {name!r}, which the loader reads")
            self.globals[name] = Ref("outputs")
            return
        if self.outputs_read(stmt.value) and self.globals.get(name, Ref("outputs")).kind == "outputs":
            self.globals[name] = Ref("outputs")  # `out = outputs[0]`
            return
        if self.is_spec_expr(stmt.value):
            # `input1 = torch.ones(2, 1, 8, device='cuda')`, later named in an inputs list or
            # in `fd.execute([input1, input2])`.
            self.globals[name] = Ref("spec", self.spec(stmt.value))
            return
        const = self.constant(stmt.value, name)
        if const is not None:
            self.globals[name] = Ref("const", const[0])
            return
        if isinstance(stmt.value, (ast.List, ast.Tuple, ast.ListComp)):
            if self.specs is not None:
                raise self.error(stmt, f"a second inputs list ({name!r})")
            self.specs = self.spec_list(stmt.value)
            self.globals[name] = Ref("inputs")
            return
        raise self.error(stmt, f"assignment to {name!r} is not allowed (only an inputs list, its tensors, "
                               "a number, size, dtype or device, a FusionDefinition, or the result of fd.execute)")

    def constant(self, node: ast.expr, name: str) -> tuple[Any] | None:
        """`N = 1024`, `shape = (2, 3)`, `dtype = torch.bfloat16`, `device = torch.device('cuda')`
        before the inputs list: a value later lines read by name, in a 1-tuple; None for
        anything else. A list of numbers is an inputs list of scalars where it is named
        `inputs`, sizes elsewhere (a name fd.execute is given reads as inputs then too)."""
        if isinstance(node, ast.ListComp) or name == "inputs" and isinstance(node, (ast.List, ast.Tuple)):
            return None
        if isinstance(node, (ast.List, ast.Tuple)) and any(self.is_spec_expr(e) for e in node.elts):
            return None
        try:
            value = self.plain(node, allow_names=False)
        except FusionFileError:
            return None
        ok = (isinstance(value, (bool, int, float, complex, str, torch.dtype, TorchConst))
              or isinstance(value, (list, tuple)) and all(is_number(v) for v in value))
        return (value,) if ok else None
