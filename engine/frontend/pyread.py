"""Reading fusion files: nvFuser's python-frontend repro format, interpreted with `ast`.

Reading never executes the file. The module is parsed with `ast` and brought to a
flat list of top-level statements (engine.frontend.pyfile.shape: a main guard's body,
the body of a test function that builds the fusion, `self.exec_nvfuser(...)` as the with
block and run it stands for, the legacy body without a with block as `with fd:` blocks).
Each statement is matched against the few shapes a repro may take (imports, the fusion
function or FusionDefinition subclass, the `with FusionDefinition() as fd:` block, the
`inputs = [...]` list, trailing `fd.execute(inputs)`); the calls inside the fusion body
are interpreted one by one against a fresh FusionDefinition. A fusion function may take
more parameters than the fd, given by its call in the with block (`fusion_func(fd,
1e-5, 4)`) or by literal defaults. The plain Python that nvFuser's schedule tests use
on their own values is interpreted too, by the loader on the values it holds: list
methods (`selected.extend(...)`), a few pure builtins (list, len, zip, filter, map,
...), Python's math on numbers (`math.sqrt(n)`, `math.pi`; engine.frontend.pyfile.pure),
comprehensions, and the module's `inputs` read by `fd.from_pytorch(inputs[0])`. Any
other call, name or attribute in what is read raises FusionFileError naming the line.

Before the run, a top-level statement is read only when the fusion needs it (engine.
frontend.pyfile.needs): when it mentions the fusion (the fd, a Fusion, FusionDefinition
or a subclass, a fusion function, the nvfuser module) or a name a later read statement
reads (the fusion body's `N`, the inputs list's `torch`, the run's `inputs`), or rebinds
a name the loader holds. Other statements are skipped without being evaluated: helper
functions that do not take the fd (`def clearL2Cache(): ...`), classes, timing code,
prints. Imports bind names and run nothing: torch, nvfuser and math are read; any other
module's names are opaque (the import is recorded as skipped, and a use of one in what
is read is refused naming the line and the name), as are the names a skipped statement
binds and a read test function's parameters. `from X import *` of another module is
refused (it could rebind any name).

The inputs list (or the literal list given to `fd.execute([...])`) becomes InputSpecs
(engine.frontend.input_spec), read from the text and never run. An entry is a number
(`3`, `-float("inf")`) or a tensor: a call of TORCH_MAKERS (torch.randn, rand, randint,
ones, zeros, full, tensor, empty, empty_strided, arange, normal, torch.testing.make_tensor,
the *_like of those) or a name bound to one earlier (`t0 = torch.randn(4)`), then any of:
views (`.as_strided`, `.t()`, `.transpose`, `.permute`, `.expand`, `.view(2, 3)`,
`.reshape`, `.unsqueeze`, `.narrow`, `.mT`, indexing `[:, :6]`, `[::2]`, `[0]`, `[None]`,
...), copies (`.contiguous()`, `.clone()`, `.to(memory_format=...)`), dtype and device
changes (`.half()`, `.to('cuda', torch.bfloat16)`, `.cuda()`), in-place fills
(`.uniform_(a, b)`, `.normal_()`, `.random_(a, b)`, `.fill_(v)`), arithmetic with a number
(`* 10 + 1`, `-x`, `/ 2`) and a comparison with one (`torch.rand(4) < 0.5`). Views,
copies and dtypes are worked out by torch on the meta device, so sizes, strides, storage
offsets and dtypes are torch's own. Before the list, `torch.manual_seed(0)` is recognised
and not run, and numbers, sizes, dtypes and devices may be named (`N = 4`, `B, H = 2, 8`,
`dtype = torch.bfloat16`, `device = torch.device('cuda', 0)`); the list may be a list
comprehension over a range or a literal sequence, or grow by `inputs.append(...)` /
`inputs.extend(...)`, in a `for` loop too. Anything else in an entry (other tensor
methods, arithmetic between tensors, advanced indexing, torch.linspace, ...) is refused
with FusionFileError naming the line and the construct.

After the run, the repro's own checking code is skipped unread. The run is the first
top-level statement holding a recognised run call (`fd.execute(...)`, `fd.validate(...)`,
`out, = fs.execute(inputs)`, a `for _ in range(n):` loop of them). Every later top-level
statement, of any kind (eager references, asserts, prints of anything, `import numpy as
np`, `with torch.no_grad():`, timing loops with torch.cuda.synchronize() ...), is skipped
without being evaluated or imported, unless it (a) names the fusion (the fd, a Fusion,
FusionDefinition or a subclass of it, a fusion function, the nvfuser module) other than
to call a read-only method on it (the run and report methods, _INSPECT_METHODS) or to
print it, (b) rebinds a name the loader holds (the fusion's, torch, an enum, `print`,
the inputs list, a name the run's arguments spell) or stores into the inputs (`inputs[0]
= ...`), or (c) runs the fusion on a literal list of inputs when none was given before.
Those statements are read as before any run (a second fusion, a second inputs list,
`fd.sched.*` or `fd.ops.*` at the top level are refused, naming the line and why the
statement was not skipped). The whole file is still parsed first, so a syntax error, a
dunder name (but the `__name__` of a main guard) or too deep nesting anywhere refuses it.
What was skipped, before or after the run, is recorded on the loaded FusionDefinition as
`skipped_statements`: a list of engine.frontend.definition.SkippedStatement (first_line,
last_line, reason), in line order.
"""

from __future__ import annotations

import ast
import contextlib
import dataclasses
import enum
import itertools
import math
import operator
import os
import stat
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from engine.dtypes import DataType, from_torch
from engine.errors import FusionDefinitionError, FusionFileError, ScheduleError
from engine.frontend.definition import FusionDefinition, SkippedStatement
from engine.frontend.input_spec import (
    DATA_KINDS,
    TORCH_DTYPES,
    TORCH_MAKERS,
    InputSpec,
    check_spec,
    storage_size,
)
from engine.frontend.pyfile import imports, pure, unread
from engine.frontend.pyfile.imports import TORCH_MODULES as _TORCH_MODULES
from engine.frontend.pyfile.needs import Plan, plan
from engine.frontend.pyfile.refs import Ref as _Ref
from engine.frontend.pyfile.shape import module_shape
from engine.frontend.pyfile.syntax import bound_names as _bound_names
from engine.frontend.pyfile.syntax import takes_fd
from engine.frontend.spellings import unknown_op_message
from engine.ir.iterdomain import ParallelType
from engine.ir.tensorview import MemoryType, TensorView

# Methods of a FusionDefinition that a fusion body may call.
_FD_METHODS = ("define_tensor", "define_scalar", "define_constant", "add_output")
# Trailing calls of a repro that run or check the fusion: recognised, not interpreted.
_RUN_METHODS = ("execute", "validate")
# FusionDefinition methods that report on the fusion (printed at the end of repros).
_REPORT_METHODS = ("last_cuda_code", "fusion_ir", "last_scheduled_fusion_ir", "print_ir", "last_kernel_ir",
                   "user_schedule_ir")
# What checking code after the run may call on the fusion (and skip unread): the run and
# report methods and nvFuser's other read-only ones (the 2022 frontend's too).
_INSPECT_METHODS = (*_RUN_METHODS, *_REPORT_METHODS, "cuda_code_for", "scheduled_fusion_ir_for",
                    "last_repro_script", "repro_script_for", "profile", "debug_output", "id", "print_kernel")
# What a name the loader holds may stand for that makes it the fusion (see _Ref.kind).
_FUSION_KINDS = ("fd", "fusion", "fd_class", "fusion_class", "class", "function")
# Methods of nvFuser's Tensor that a fusion body may call: T.size(d), T.shape().
_TENSOR_METHODS = ("size", "shape")

# A fusion file is a few KiB of text; anything far larger is refused before parsing.
MAX_FILE_BYTES = 16 << 20
# How deeply expressions may nest. Real repros nest a few levels; reading recurses per
# level, so a cap (with the line) replaces a RecursionError deep inside the reader.
MAX_DEPTH = 100
# Integers in a file are sizes, dims, factors and scalars: all 64-bit in the engine.
_INT_MIN, _INT_MAX = -(1 << 63), (1 << 63) - 1


def enum_namespaces() -> dict[str, type[enum.Enum]]:
    """Enum classes a file may name (DataType.Float, ParallelType.stream, ...).

    Besides the three of the public API, any public enum that the IR or the sched
    module defines (e.g. a cache-op or load/store type) becomes nameable, so new
    schedule arguments need no change here.
    """
    import engine.frontend.sched as sched_mod
    import engine.ir.exprs as exprs_mod
    import engine.ir.iterdomain as id_mod
    import engine.ir.tensorview as tv_mod

    found: dict[str, type[enum.Enum]] = {}
    for mod in (id_mod, tv_mod, exprs_mod, sched_mod):
        for name, obj in vars(mod).items():
            if isinstance(obj, type) and issubclass(obj, enum.Enum) and not name.startswith("_"):
                found.setdefault(name, obj)
    found.update(DataType=DataType, ParallelType=ParallelType, MemoryType=MemoryType)
    if "SchedulerType" in found:
        found.setdefault("SchedulerHeuristic", found["SchedulerType"])  # its name before 2024
    return found




def load_fusion(path: str | os.PathLike[str]) -> FusionDefinition:
    """Read a fusion file (nvFuser python-frontend format) without executing it."""
    path = os.fspath(path)
    try:
        # O_NONBLOCK: opening a FIFO must not wait for a writer before it is refused.
        with open(os.open(path, os.O_RDONLY | os.O_NONBLOCK), "rb") as f:
            if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
                raise FusionFileError("not a regular file", path=path)
            data = f.read(MAX_FILE_BYTES + 1)
    except OSError as e:
        raise FusionFileError(f"cannot read: {e.strerror}", path=path) from None
    if len(data) > MAX_FILE_BYTES:
        raise FusionFileError(f"larger than {MAX_FILE_BYTES >> 20} MiB; not a fusion file", path=path)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data[:e.start].count(b"\n") + 1
        raise FusionFileError(f"not UTF-8 text: {e.reason} (byte {e.start})", path=path, line=line) from None
    return loads_fusion(text, filename=path)


def loads_fusion(text: str, filename: str = "<string>") -> FusionDefinition:
    """Read fusion-file text without executing it; errors name `filename` and the line."""
    return _Loader(text, filename).load()


@dataclass(frozen=True)
class _TorchConst:
    """torch.strided / torch.contiguous_format as written in an inputs entry (a name only)."""

    name: str


class _Loader:
    def __init__(self, text: str, filename: str) -> None:
        self.text = text
        self.filename = filename
        self.enums = enum_namespaces()
        self.globals: dict[str, _Ref] = {}
        self.functions: dict[str, ast.FunctionDef] = {}
        self.classes: dict[str, dict[str, ast.FunctionDef]] = {}
        self.fd: FusionDefinition | None = None
        self.fd_line: int | None = None
        self.specs: list[InputSpec] | None = None
        self.line: int | None = None  # the top-level statement being read
        self.tree: ast.Module | None = None
        # The run: set by run_call; ran_line is the top-level statement that first ran the fusion,
        # run_names the names its arguments spell (the inputs). What follows it is skipped when it
        # is the repro's checking code (after_run).
        self.run_seen = False
        self.ran_line: int | None = None
        self.run_names: set[str] = set()
        self.skipped: list[SkippedStatement] = []
        self.plan: Plan = Plan([], frozenset(), [])  # the module's, made by load()
        # The reader of each FusionDefinition's with blocks, by id(fd): its names persist.
        self.bodies: dict[int, _Body] = {}

    # ---- errors ---------------------------------------------------------------------
    def error(self, node: ast.AST | None, message: str) -> FusionFileError:
        line = getattr(node, "lineno", None) if node is not None else None
        return FusionFileError(message, path=self.filename, line=line)

    # ---- driver -----------------------------------------------------------------------
    def load(self) -> FusionDefinition:
        tree = self._parse()
        shape = module_shape(tree)
        self._check_tree(tree, shape.main_guard_names)
        body = shape.body
        self.tree = ast.Module(body=body, type_ignores=[])
        self.skipped = list(shape.skipped)
        for name, why in shape.params.items():
            self.globals[name] = _Ref("opaque", why)
        self.plan = plan(body)
        try:
            for k, stmt in enumerate(body):
                self.line = stmt.lineno
                if self.ran_line is not None:
                    self.after_run(stmt)
                    continue
                if unread.skip_unneeded(self, k, stmt):
                    continue
                unread.check_opaque(self, stmt)
                self.top_statement(stmt)
                if self.run_seen:
                    self.ran_line = stmt.lineno
        except RecursionError:
            # A backstop: _check_tree caps nesting, so this needs a nearly exhausted stack.
            raise FusionFileError("expressions nest too deeply", path=self.filename, line=self.line) from None
        if self.fd is None:
            self._implicit_fusion()
        if self.fd is None:
            raise FusionFileError("no fusion defined (no FusionDefinition block, function or class)"
                                  + unread.note(self.skipped), path=self.filename)
        self.fd.skipped_statements = sorted(self.skipped, key=lambda s: (s.first_line, s.last_line))
        if self.specs is not None:
            self.fd.input_specs = self.specs
            # A `fd.sched.schedule(...)` in the file waited for sizes: the inputs list has them.
            if self.fd.sched.pending:
                try:
                    self.fd.sched.apply_pending()
                except (ScheduleError, FusionDefinitionError) as e:
                    raise FusionFileError(f"fd.sched.schedule: {e}", path=self.filename) from None
        return self.fd

    def _parse(self) -> ast.Module:
        if "\0" in self.text:
            line = self.text.count("\n", 0, self.text.index("\0")) + 1
            raise FusionFileError("not valid Python: a NUL byte", path=self.filename, line=line)
        try:
            return ast.parse(self.text, filename=self.filename)
        except SyntaxError as e:
            raise FusionFileError(f"not valid Python: {e.msg}", path=self.filename, line=e.lineno) from None
        except (ValueError, RecursionError, MemoryError) as e:  # absurd nesting or size
            raise FusionFileError(f"not valid Python: {type(e).__name__} (expressions nest too deeply "
                                  "or are too large)", path=self.filename,
                                  line=_failing_line(self.text)) from None

    def _check_tree(self, tree: ast.Module, main_guards: set[int]) -> None:
        """Before reading: refuse dunder names anywhere (the usual way out of a sandbox) but
        the `__name__` of `if __name__ == "__main__":`, nesting deeper than MAX_DEPTH, and
        calls in annotations."""
        todo: list[tuple[ast.AST, int, int]] = [(tree, 0, 1)]
        while todo:  # iterative: the tree may be deep
            node, depth, line = todo.pop()
            line = getattr(node, "lineno", line)
            if depth > MAX_DEPTH:
                raise self.error(node, f"expressions nest more than {MAX_DEPTH} levels deep")
            if id(node) in main_guards:
                continue
            for n in _names_of(node):
                if n.startswith("__") or ".__" in n:
                    raise self.error(node, f"name {n!r} is not allowed in a fusion file")
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                notes = [a.annotation for a in (*node.args.args, *node.args.kwonlyargs) if a.annotation]
                for note in [*notes, node.returns]:
                    if note is not None and not _inert_annotation(note):
                        raise self.error(note, f"annotation {_excerpt(note)} is not allowed (a name only)")
            todo.extend((child, depth + 1, line) for child in ast.iter_child_nodes(node))

    def _implicit_fusion(self) -> None:
        # A pasted fusion function (or subclass) with no block that uses it: build it.
        assert self.tree is not None
        if len(self.functions) == 1 and not self.classes:
            (name, fn), = self.functions.items()
            missing = [p.arg for p in _extra_params(fn) if p.arg not in self.defaults(fn)]
            if missing:
                raise self.error(fn, f"fusion function {name!r} takes {', '.join(missing)}: call it in "
                                     f"`with FusionDefinition() as fd: {name}(fd, ...)`")
            fd = self.new_fd(fn)
            self.run_function(fn, fd, fn)
        elif len(self.classes) == 1 and not self.functions:
            (name, methods), = self.classes.items()
            node = next(s for s in self.tree.body if isinstance(s, ast.ClassDef) and s.name == name)
            self.instantiate(name, node)

    # ---- top level ----------------------------------------------------------------------
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

    def nvfuser_name(self, name: str) -> _Ref | None:
        if name == "FusionDefinition":
            return _Ref("fd_class")
        if name == "Fusion":
            return _Ref("fusion_class")  # the 2022 frontend: `fs = Fusion(); FusionDefinition(fs)`
        if name in self.enums:
            return _Ref("enum", self.enums[name])
        return None  # other nvfuser names bind nothing usable here

    def function_def(self, fn: ast.FunctionDef, method: bool = False) -> None:
        """A fusion function: its first parameter is the FusionDefinition; others (`eps`, `n`)
        are given by the call in the with block or by literal defaults. A function that
        does not take the FusionDefinition is a helper: never read, its name opaque."""
        if not method and not takes_fd(fn):
            unread.skip(self, fn, "a function that does not take the FusionDefinition", "read")
            self.globals[fn.name] = _Ref("opaque", f"the function defined at line {fn.lineno}, which does not "
                                                   "take the FusionDefinition and is not read")
            return
        if fn.decorator_list:
            raise self.error(fn.decorator_list[0], "decorators are not allowed")
        a = fn.args
        if not a.args or a.posonlyargs or a.vararg or a.kwarg or len(a.defaults) == len(a.args):
            raise self.error(fn, f"fusion function {fn.name!r} must take the FusionDefinition first, then "
                                 "named parameters (no *args, **kwargs or default for the first)")
        self.defaults(fn)  # literal defaults, read once here so that a bad one names its line
        self.functions[fn.name] = fn
        self.globals[fn.name] = _Ref("function", fn)

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
            if k == 0 and _is_docstring(stmt) or isinstance(stmt, ast.Pass):
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
        self.globals[cls.name] = _Ref("class", cls.name)

    def resolve_global(self, node: ast.expr) -> _Ref:
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
                raise self.error(node, f"FusionDefinition({_excerpt(holder)}): the argument must be a "
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
            self.globals[item.optional_vars.id] = _Ref("fd", fd)
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
            held = self.bodies[id(fd)] = _Body(self, fd, fd_name, {})
        with fd:
            held.run(body)

    def call_values(self, fn: ast.FunctionDef, call: ast.Call) -> dict[str, Any]:
        """The values of a fusion function's other parameters at `call`: numbers, sizes,
        dtypes and names of them (`fusion_func(fd, 1e-5, n=4)`), else its literal defaults."""
        params = [p.arg for p in _extra_params(fn)]
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
        body = fn.body[1:] if fn.body and _is_docstring(fn.body[0]) else fn.body
        reader = _Body(self, fd, param, attrs if attrs is not None else {}, alias)
        reader.env.update(self.defaults(fn) if args is None else args)
        with fd:
            reader.run(body)

    def top_assign(self, stmt: ast.Assign) -> None:
        if (len(stmt.targets) == 1 and isinstance(stmt.targets[0], (ast.Tuple, ast.List))
                and all(isinstance(e, ast.Name) for e in stmt.targets[0].elts) and self.run_call(stmt.value)):
            # `out, = fd.execute(inputs)`, `(o1, o2) = fd.execute(inputs)`
            for e in stmt.targets[0].elts:
                self.globals[e.id] = _Ref("outputs")  # type: ignore[attr-defined]
            return
        if (len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Tuple) and isinstance(stmt.value, ast.Tuple)
                and len(stmt.targets[0].elts) == len(stmt.value.elts)
                and all(isinstance(e, ast.Name) for e in stmt.targets[0].elts)):
            # `B, H = 6, 12`: numbers (sizes, dtypes, devices) named together
            consts = [self.constant(v, "") for v in stmt.value.elts]
            if all(c is not None for c in consts):
                for e, c in zip(stmt.targets[0].elts, consts):
                    self.globals[e.id] = _Ref("const", c[0])  # type: ignore[attr-defined,index]
                return
        if len(stmt.targets) != 1 or not isinstance(stmt.targets[0], ast.Name):
            raise self.error(stmt, "only `inputs = [...]` and `fd = FusionDefinition()` may be assigned "
                                   "at the top level")
        name = stmt.targets[0].id
        if self.is_fusion_object(stmt.value):
            self.globals[name] = _Ref("fusion")  # `fs = Fusion()`: bound to an fd by FusionDefinition(fs)
            return
        fd = self.fusion_constructor(stmt.value, alias=name)
        if fd is not None:
            self.globals[name] = _Ref("fd", fd)
            return
        if self.run_call(stmt.value):
            # `outputs = fd.execute(inputs)`, `out = fd.execute(inputs)[0]`: the name may be
            # read by the checks that follow (print, assert_close), which are not run either.
            held = self.globals.get(name)
            if held is not None and held.kind not in ("outputs", "const"):
                raise self.error(stmt, f"the result of fd.{stmt.value.func.attr if isinstance(stmt.value, ast.Call) else 'execute'}"  # type: ignore[attr-defined]
                                       f"(...) may not rebind {name!r}, which the loader reads")
            self.globals[name] = _Ref("outputs")
            return
        if self.outputs_read(stmt.value) and self.globals.get(name, _Ref("outputs")).kind == "outputs":
            self.globals[name] = _Ref("outputs")  # `out = outputs[0]`
            return
        if self.is_spec_expr(stmt.value):
            # `input1 = torch.ones(2, 1, 8, device='cuda')`, later named in an inputs list or
            # in `fd.execute([input1, input2])`.
            self.globals[name] = _Ref("spec", self.spec(stmt.value))
            return
        const = self.constant(stmt.value, name)
        if const is not None:
            self.globals[name] = _Ref("const", const[0])
            return
        if isinstance(stmt.value, (ast.List, ast.Tuple, ast.ListComp)):
            if self.specs is not None:
                raise self.error(stmt, f"a second inputs list ({name!r})")
            self.specs = self.spec_list(stmt.value)
            self.globals[name] = _Ref("inputs")
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
        ok = (isinstance(value, (bool, int, float, complex, str, torch.dtype, _TorchConst))
              or isinstance(value, (list, tuple)) and all(_is_number(v) for v in value))
        return (value,) if ok else None

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
        raise self.error(node, f"an inputs list must be a list of entries: {_excerpt(node)}")

    def loop_values(self, target: ast.expr, it: ast.expr) -> Iterator[Any]:
        """Bind a top-level loop's name (`for i in range(3)`, `for n in (2, 3)`) to each value
        in turn, as a constant the loop's body reads; the name is unbound afterwards."""
        if not isinstance(target, ast.Name):
            raise self.error(target, "a loop over inputs binds one name")
        if (isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "range"
                and "range" not in self.globals and not it.keywords and 1 <= len(it.args) <= 3):
            bounds = [self.plain(a, allow_names=False) for a in it.args]
            if not all(_is_int(b) for b in bounds):
                raise self.error(it, f"range() takes integers: {_excerpt(it)}")
            values: Sequence[Any] = range(*bounds)
        else:
            values = self.plain(it, allow_names=False)
            if not isinstance(values, (list, tuple)):
                raise self.error(it, f"a loop over inputs goes over range(...) or a literal list: {_excerpt(it)}")
        if len(values) > _MAX_ITEMS:
            raise self.error(it, f"a loop of more than {_MAX_ITEMS} inputs")
        saved = self.globals.get(target.id)
        try:
            for v in values:
                self.globals[target.id] = _Ref("const", v)
                yield v
        finally:
            if saved is None:
                self.globals.pop(target.id, None)
            else:
                self.globals[target.id] = saved

    def is_fusion_object(self, node: ast.expr) -> bool:
        """`Fusion()`: the object the 2022 frontend's FusionDefinition filled in."""
        if not (isinstance(node, ast.Call) and not node.args and not node.keywords):
            return False
        try:
            return self.resolve_global(node.func).kind == "fusion_class"
        except FusionFileError:
            return False

    def timing_loop(self, stmt: ast.For) -> None:
        """`for _ in range(5): out = fs.execute(inputs)`: repros that time the fusion run it
        in a loop. Recognised as the run calls it holds; a loop doing anything else is refused."""
        if (not stmt.orelse and stmt.body and all(isinstance(b, ast.Expr) and self.inputs_append_form(b.value)
                                                  for b in stmt.body)):
            # `for i in range(3): inputs.append(torch.randn(4, i + 1))`
            for _ in self.loop_values(stmt.target, stmt.iter):
                for b in stmt.body:
                    self.inputs_append(b.value)  # type: ignore[attr-defined]
            return
        it = stmt.iter
        counted = (isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "range"
                   and not it.keywords and 1 <= len(it.args) <= 3
                   and all(isinstance(a, ast.Constant) and type(a.value) is int for a in it.args))
        if stmt.orelse or not isinstance(stmt.target, ast.Name) or not counted:
            raise self.error(stmt, "a top-level for loop may only repeat fd.execute(inputs): "
                                   "`for _ in range(5):`")
        for inner in stmt.body:
            value = inner.value if isinstance(inner, (ast.Expr, ast.Assign)) else None
            if isinstance(inner, ast.Assign) and not all(isinstance(t, (ast.Name, ast.Tuple)) for t in inner.targets):
                value = None
            if value is None or not (self.run_call(value) or isinstance(inner, ast.Expr) and self.print_call(value)):
                raise self.error(inner, f"a top-level for loop may only repeat fd.execute(inputs); "
                                        f"not {_excerpt(inner)}")

    def top_expr(self, stmt: ast.Expr) -> None:
        if _is_docstring(stmt):
            return
        if self.run_call(stmt.value) or self.check_call(stmt.value) or self.print_call(stmt.value):
            return
        if self.seed_call(stmt.value) or self.inputs_append(stmt.value):
            return
        v = stmt.value
        if (isinstance(v, ast.Call) and isinstance(v.func, ast.Name) and v.func.id in self.functions):
            raise self.error(stmt, f"call {v.func.id}(fd) inside `with FusionDefinition() as fd:`")
        raise self.error(stmt, f"statement is not allowed: {_excerpt(stmt)}")

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

    def seed_call(self, node: ast.expr) -> bool:
        """`torch.manual_seed(0)` before the inputs: recognised and not run (the debugger
        makes its example inputs from its own seed; sizes do not depend on it)."""
        return (isinstance(node, ast.Call) and self.torch_path(node.func) in _SEED_CALLS
                and all(_inert_literal(a) for a in [*node.args, *(k.value for k in node.keywords)]))

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

    def outputs_read(self, node: ast.expr) -> bool:
        """A read of what fd.execute returned or of the inputs: a name bound to one, an item
        by an integer, or a plain attribute of those (`out.shape`), never a call."""
        while True:
            if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant) \
                    and _is_int(node.slice.value):
                node = node.value
            elif isinstance(node, ast.Attribute) and not node.attr.startswith("_"):
                node = node.value
            else:
                break
        if not isinstance(node, ast.Name):
            return False
        ref = self.globals.get(node.id)
        return ref is not None and ref.kind in ("outputs", "inputs", "spec")

    def check_call(self, node: ast.expr) -> bool:
        """The checks and reports a pasted repro ends with, recognised and not run:
        `print(...)` of outputs, literals and the fd's reports (`fd.last_cuda_code()`,
        `fd.fusion_ir()`), and `torch.testing.assert_close(out, expected, rtol=..)` on
        outputs and inputs."""
        if not isinstance(node, ast.Call) or any(k.arg is None for k in node.keywords):
            return False
        args = [*node.args, *(k.value for k in node.keywords)]
        if isinstance(node.func, ast.Name) and node.func.id == "print" and "print" not in self.globals:
            return all(self.outputs_read(a) or self.report_call(a) or _inert_literal(a) for a in args)
        if self.report_call(node):
            return True
        if self.torch_path(node.func) == "testing.assert_close":
            return all(self.outputs_read(a) or _inert_literal(a) for a in args)
        return False

    def report_call(self, node: ast.expr) -> bool:
        """`fd.last_cuda_code()`, `fd.fusion_ir()`, ...: what a repro prints about its fusion."""
        return (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr in _REPORT_METHODS and isinstance(node.func.value, ast.Name)
                and getattr(self.globals.get(node.func.value.id), "kind", None) == "fd"
                and all(_inert_literal(a) for a in [*node.args, *(k.value for k in node.keywords)]))

    def torch_path(self, func: ast.expr) -> str | None:
        """`torch.testing.assert_close` -> "testing.assert_close" (torch imported as a module)."""
        parts: list[str] = []
        while isinstance(func, ast.Attribute):
            parts.append(func.attr)
            func = func.value
        if not isinstance(func, ast.Name):
            return None
        ref = self.globals.get(func.id)
        if ref is None or ref.kind != "module" or ref.value not in _TORCH_MODULES:
            return None
        return ".".join([*ref.value.split(".")[1:], *reversed(parts)])

    def print_call(self, node: ast.expr) -> bool:
        """`print(out)`, `print(f"{out = }")` after fd.execute: repros show their results.
        Recognised and skipped (nothing is printed or evaluated); only names, literals,
        f-strings, subscripts and attributes of them may be printed."""
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "print"
                and "print" not in self.globals):
            return False
        for arg in [*node.args, *(k.value for k in node.keywords)]:
            if not _printable(arg):
                raise self.error(node, f"print(...) may only show names and literals; not {_excerpt(arg)}")
        return True

    def run_call(self, node: ast.expr) -> bool:
        """`fd.execute(inputs)` / `fd.validate(...)`: recognised, not run. A literal list
        of inputs there (`fd.execute([input1, 2.0])`) gives the specs when no inputs list did."""
        if (isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant)
                and isinstance(node.slice.value, int)):
            node = node.value  # `fd.execute(inputs)[0]`
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr in _RUN_METHODS and isinstance(node.func.value, ast.Name)):
            return False
        ref = self.globals.get(node.func.value.id)
        if ref is None or ref.kind != "fd" and not (ref.kind == "fusion" and ref.value is not None):
            return False
        given = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "inputs"), None)
        for arg in [*node.args, *(k.value for k in node.keywords)]:
            entries = arg is given and isinstance(arg, (ast.List, ast.Tuple))
            if not (_inert(arg) or entries and all(_inert(e) or self.is_spec_expr(e) or self.is_number_expr(e)
                                                   for e in arg.elts)):
                raise self.error(node, f"fd.{node.func.attr}(...) may only name inputs and literals")
        if any(k.arg is None for k in node.keywords):
            raise self.error(node, "** arguments are not allowed")
        if (node.func.attr == "execute" and isinstance(given, (ast.List, ast.Tuple)) and given.elts
                and self.specs is None):
            self.specs = [self.spec(e) for e in given.elts]
        elif (node.func.attr == "execute" and isinstance(given, ast.Name) and self.specs is None
              and getattr(self.globals.get(given.id), "kind", None) == "const"):
            self.specs = self.spec_list(given)  # `sizes = [2, 3]` ... fd.execute(sizes): scalar inputs
        self.run_seen = True
        for arg in [*node.args, *(k.value for k in node.keywords)]:
            self.run_names.update(n.id for n in ast.walk(arg) if isinstance(n, ast.Name))
        return True

    # ---- after the run: the repro's checking code ----------------------------------------
    def after_run(self, stmt: ast.stmt) -> None:
        """A top-level statement after the one that first ran the fusion: skipped unread (and
        recorded) when it is the repro's own checking code, read as before otherwise."""
        why = self.not_checking_code(stmt)
        if why is None:
            if not (isinstance(stmt, ast.Pass) or isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant)):
                first = min([stmt.lineno, *(d.lineno for d in getattr(stmt, "decorator_list", ()))])
                self.skipped.append(SkippedStatement(
                    first, stmt.end_lineno or stmt.lineno,
                    f"skipped, not evaluated (checking code after the run at line {self.ran_line}): {_excerpt(stmt)}"))
            return
        try:
            self.top_statement(stmt)
        except FusionFileError as e:
            err = FusionFileError(f"{e.message} (not skipped as checking code after the run at line "
                                  f"{self.ran_line}: {why})", path=e.path, line=e.line)
            err.__cause__, err.__suppress_context__ = e.__cause__, True
            raise err from None

    def not_checking_code(self, stmt: ast.stmt) -> str | None:
        """Why `stmt`, after the run, is not the repro's checking code; None when it is.

        It is not when it (a) names the fusion (the fd, a Fusion, FusionDefinition or its
        subclasses, a fusion function, the nvfuser module) other than to call a read-only
        method on it (`fd.execute(...)`, `fd.last_cuda_code()`, ...) or to print it, (b)
        rebinds a name the loader holds (the fusion's, torch, the inputs list, an input the
        run named, ...) or stores into the inputs, or (c) runs the fusion on a literal list
        of inputs when the file gave none before (that list gives them)."""
        if self.specs is None and self.gives_inputs(stmt):
            return "it gives the fusion's inputs"
        for name, whole in _bound_names(stmt):
            if name == "*":
                return "a * import may rebind the names the fusion uses"
            if whole and self.held_name(name):
                return f"it rebinds {name!r}, which the loader reads"
            if not whole and (name in self.run_names or self.fusion_name(name)
                              or getattr(self.globals.get(name), "kind", None) in ("inputs", "spec")):
                return f"it changes {name!r}, which the fusion or its inputs are read from"
        for node, parent, grand in _with_parents(stmt):
            if isinstance(node, ast.Name) and self.fusion_name(node.id):
                inspects = (isinstance(parent, ast.Attribute) and parent.attr in _INSPECT_METHODS
                            and isinstance(grand, ast.Call) and grand.func is parent)
                printed = (isinstance(parent, ast.Call) and node in parent.args and isinstance(parent.func, ast.Name)
                           and parent.func.id == "print" and "print" not in self.globals)
                if not (inspects or printed):
                    return f"it uses {node.id!r} (only its run and report methods may follow the run)"
        return None

    def held_name(self, name: str) -> bool:
        """A name the loader gives a meaning (outputs of the run aside), or one it reads."""
        ref = self.globals.get(name)
        if ref is not None:
            return ref.kind not in ("outputs", "const", "opaque")
        return name in self.run_names or name in ("print", "range") or self.nvfuser_name(name) is not None

    def fusion_name(self, name: str) -> bool:
        ref = self.globals.get(name) or self.nvfuser_name(name)
        return ref is not None and (ref.kind in _FUSION_KINDS or ref.kind == "module" and ref.value == "nvfuser")

    def gives_inputs(self, stmt: ast.stmt) -> bool:
        """`fd.execute([x, y])` (as run_call reads it): a literal list of inputs."""
        node = stmt.value if isinstance(stmt, (ast.Expr, ast.Assign)) else None
        if isinstance(node, ast.Subscript):
            node = node.value
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "execute"
                and isinstance(node.func.value, ast.Name)):
            return False
        ref = self.globals.get(node.func.value.id)
        if ref is None or ref.kind not in ("fd", "fusion"):
            return False
        given = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "inputs"), None)
        return isinstance(given, (ast.List, ast.Tuple)) and bool(given.elts)

    # ---- input specs ------------------------------------------------------------------
    def spec(self, node: ast.expr) -> InputSpec:
        """One inputs entry, checked to be makeable (dtype holds the data, sizes fit)."""
        spec = self.read_spec(node)
        try:
            check_spec(spec)
        except ValueError as e:
            raise self.error(node, f"{_excerpt(node)}: {e}") from None
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
        raise self.error(node, f"an inputs entry must be a torch call or a number: {_excerpt(node)}")

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
            self.view(node, spec, f"indexing [{_excerpt(node.slice)}]", lambda t: t[index])
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
                                       f"{_excerpt(node)} (only a tensor and a number)")
            op = _SPEC_ARITH[type(node.op)]
            spec = self.tensor_expr(node.left if left else node.right)
            value = self.plain(node.right if left else node.left, allow_names=False)
            if not left and op == "div":
                raise self.error(node, f"a number divided by a tensor is not supported in an inputs entry: "
                                       f"{_excerpt(node)}")
            self.arithmetic(node, spec, op, value, reflected=not left)
            return spec
        if isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in _SPEC_COMPARE:
            op = _SPEC_COMPARE[type(node.ops[0])]
            left, right = self.is_spec_expr(node.left), self.is_spec_expr(node.comparators[0])
            if left and right:
                raise self.error(node, f"comparing two tensors is not supported in an inputs entry: "
                                       f"{_excerpt(node)} (only a tensor and a number)")
            if not left:
                op = _FLIPPED[op]  # 0.5 > x is x < 0.5
            spec = self.tensor_expr(node.left if left else node.comparators[0])
            value = self.plain(node.comparators[0] if left else node.left, allow_names=False)
            self.comparison(node, spec, op, value)
            return spec
        raise self.error(node, f"not supported in an inputs entry: {_excerpt(node)} (a torch call with "
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
                raise self.error(call, f".{attr} takes one number: {_excerpt(call)}")
            self.arithmetic(call, spec, _ARITH_METHODS[attr], pos[0])
            return
        if attr in _COMPARE_METHODS:
            if kw or len(pos) != 1:
                raise self.error(call, f".{attr} takes one number: {_excerpt(call)}")
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
            ok = _is_int(v) or isinstance(v, (list, tuple)) and all(_is_int(x) for x in v)
            if not ok:
                raise self.error(call, f".{attr} takes integers: {_excerpt(call)}")
        method = attr
        self.view(call, spec, f".{attr}", lambda t: getattr(t, method)(*pos, **kw))

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
        shape, strides = _ints(self, call, args["size"]), _ints(self, call, args["stride"])
        offset = args.get("storage_offset")
        offset = spec.offset if offset is None else offset
        if len(shape) != len(strides) or any(s < 0 for s in (*shape, *strides)):
            raise self.error(call, f"as_strided: size {shape} and stride {strides} do not match")
        if not _is_int(offset) or offset < 0:
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
                raise self.error(call, f".{attr}({_excerpt(call)}): unsupported argument {v!r}")
        if kw:
            raise self.error(call, f".{attr}: unknown keyword {next(iter(kw))!r}")
        if dtype is not None:
            if not isinstance(dtype, torch.dtype):
                raise self.error(call, f".{attr}: dtype must be a torch dtype, got {dtype!r}")
            self.no_view_dtype(call, spec, f".{attr}(...)")
            spec.dtype = dtype
        if fmt is None and attr == "contiguous":
            fmt = _TorchConst("contiguous_format")
        if fmt is None and attr == "clone":
            fmt = _TorchConst("preserve_format")
        if fmt is not None:
            if not isinstance(fmt, _TorchConst) or fmt.name not in _MEMORY_FORMATS:
                raise self.error(call, f".{attr}: memory_format must be one of "
                                       f"{', '.join('torch.' + f for f in _MEMORY_FORMATS)}")
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
            raise self.error(call, f".{attr}({', '.join(names)}): unexpected arguments in {_excerpt(call)}")
        args = dict(zip(names, pos)) | kw
        if not all(_is_number(v) for v in args.values()):
            raise self.error(call, f".{attr} takes numbers: {_excerpt(call)}")
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
            spec.kind, spec.scale, spec.shift = "rand", _affine_scale(hi - lo), _affine_shift(lo)
        elif attr == "normal_":
            spec.kind = "randn"
            spec.scale, spec.shift = _affine_scale(args.get("std", 1)), _affine_shift(args.get("mean", 0))
        elif attr == "random_":
            if "to" not in args and "from" not in args:
                raise self.error(call, ".random_() needs a range: .random_(low, high) or .random_(high)")
            lo, hi = (args.get("from", 0), args["to"]) if "to" in args else (0, args["from"])
            if not (_is_int(lo) and _is_int(hi)) or lo >= hi:
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
        what = f"{_excerpt(node)}"
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
        spec.scale, spec.shift = _affine_scale(scale), _affine_shift(shift)
        spec.fill_dtype = spec.fill_dtype or spec.dtype
        spec.dtype = r.dtype
        if spec.scale is None and spec.shift is None:
            spec.fill_dtype = None  # `x * 1.0`: a dtype change only; made in that dtype

    def comparison(self, node: ast.AST, spec: InputSpec, op: str, value: Any) -> None:
        """`x < 0.5` (`x.lt(0.5)`, ...): a bool tensor of the comparison of the values."""
        what = _excerpt(node)
        self.no_view_dtype(node, spec, "a comparison")
        if spec.compare is not None:
            raise self.error(node, f"{what}: a second comparison is not supported in an inputs entry")
        if not (_is_number(value) and not isinstance(value, complex)):
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

    def index(self, node: ast.expr) -> Any:
        """`[:, :6]`, `[::2]`, `[0]`, `[None, ...]`: basic indexing with integers, slices,
        None and ..., as torch takes it (a tuple for several axes)."""
        if isinstance(node, ast.Tuple):
            return tuple(self.index_item(e) for e in node.elts)
        return self.index_item(node)

    def index_item(self, node: ast.expr) -> Any:
        if isinstance(node, ast.Slice):
            parts = [None if p is None else self.plain(p, allow_names=False) for p in (node.lower, node.upper, node.step)]
            if not all(p is None or _is_int(p) for p in parts):
                raise self.error(node, f"a slice takes integers: {_excerpt(node)}")
            return slice(*parts)
        if isinstance(node, ast.Constant) and (node.value is None or node.value is Ellipsis):
            return node.value
        advanced = isinstance(node, (ast.List, ast.Call)) or self.is_spec_expr(node)
        v = None if advanced else self.plain(node, allow_names=False)
        if _is_int(v):
            return v
        raise self.error(node, f"an inputs entry is indexed by integers, slices, None and ... only "
                               f"(no advanced indexing): {_excerpt(node)}")

    def spec_base(self, node: ast.expr) -> InputSpec:
        if not isinstance(node, ast.Call):
            raise self.error(node, f"an inputs entry must be a torch call or a number: {_excerpt(node)}")
        kind = self.torch_function(node.func)
        if kind is None:
            raise self.error(node, f"unsupported inputs entry {_excerpt(node)} (use torch.testing.make_tensor, "
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
        if "layout" in kw and kw["layout"] != _TorchConst("strided"):
            got = f"torch.{kw['layout'].name}" if isinstance(kw["layout"], _TorchConst) else repr(kw["layout"])
            raise self.error(node, f"{kind}: layout={got} is not supported, only torch.strided")
        if fmt is not None and (not isinstance(fmt, _TorchConst) or fmt.name not in _MEMORY_FORMATS
                                or kind in ("tensor", "arange", "empty_strided")):
            got = f"torch.{fmt.name}" if isinstance(fmt, _TorchConst) else repr(fmt)
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
            spec.shape = _ints(self, node, size)
            return spec
        if kind == "full":
            if "size" in kw:
                pos = [kw.pop("size"), *pos]
            if "fill_value" in kw:
                pos = [*pos, kw.pop("fill_value")]
            if len(pos) != 2 or not isinstance(pos[1], (bool, int, float)):
                raise self.error(node, "torch.full(size, fill_value, ...) needs a size and a number")
            spec.shape, spec.fill_value = _ints(self, node, pos[0]), pos[1]
            if dtype is None:
                spec.dtype = torch.full((), pos[1]).dtype  # pos[1] is within int64: no overflow
        elif kind == "arange":
            self.arange(node, spec, pos, kw, dtype)
        elif kind == "normal":
            # torch.normal(mean, std, size): numbers and a size (tensor means are not inputs lists' form)
            names = ("mean", "std", "size")
            args = dict(zip(names, pos)) | {k: v for k, v in kw.items() if k in names}
            if len(pos) > 3 or "size" not in args or not all(_is_number(args.get(k, 0)) for k in names[:2]):
                raise self.error(node, "torch.normal(mean, std, size, ...) takes two numbers and a size")
            spec.kind, spec.shape = "randn", _ints(self, node, args["size"])
            spec.scale, spec.shift = _affine_scale(args.get("std", 1)), _affine_shift(args.get("mean", 0))
            if spec.scale is not None or spec.shift is not None:
                spec.fill_dtype = spec.dtype
        elif kind == "empty_strided":
            size = kw.pop("size") if "size" in kw else (pos.pop(0) if pos else None)
            stride = kw.pop("stride") if "stride" in kw else (pos.pop(0) if pos else None)
            if size is None or stride is None or pos:
                raise self.error(node, "torch.empty_strided(size, stride, ...) needs a size and a stride")
            shape, strides = _ints(self, node, size), _ints(self, node, stride)
            if len(shape) != len(strides):
                raise self.error(node, f"torch.empty_strided: size {shape} and stride {strides} do not match")
            spec.kind, spec.shape, spec.strides = "empty", shape, strides
            spec.base_shape = (storage_size(shape, strides),)
        else:
            if "size" in kw:
                pos = [*pos, kw.pop("size")]
            if len(pos) == 1 and isinstance(pos[0], (list, tuple)):
                spec.shape = _ints(self, node, pos[0])
            else:
                spec.shape = _ints(self, node, pos)
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
        if not all(_is_number(v) and not isinstance(v, (bool, complex)) for v in (start, end, step)):
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
        fmt = kw.get("memory_format", _TorchConst("preserve_format"))
        if not isinstance(fmt, _TorchConst) or fmt.name not in _MEMORY_FORMATS:
            raise self.error(node, f"{kind}: memory_format must be one of "
                                   f"{', '.join('torch.' + f for f in _MEMORY_FORMATS)}")
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
            if len(bounds) != 2 or not all(_is_int(b) for b in bounds) or bounds[0] >= bounds[1]:
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
        if ref is None or ref.kind != "module" or ref.value not in _TORCH_MODULES:
            return None
        dotted = ".".join([*ref.value.split(".")[1:], *reversed(parts)])
        return TORCH_MAKERS.get(dotted)

    def call_args(self, call: ast.Call, names: Sequence[str]) -> dict[str, Any]:
        if len(call.args) > len(names) or any(k.arg is None for k in call.keywords):
            raise self.error(call, f"{_excerpt(call)}: too many arguments")
        out = {n: self.plain(a, allow_names=False) for n, a in zip(names, call.args)}
        for k in call.keywords:
            if k.arg not in names or k.arg in out:
                raise self.error(call, f"{_excerpt(call)}: unexpected keyword {k.arg!r}")
            out[k.arg] = self.plain(k.value, allow_names=False)
        return out

    # ---- literals -----------------------------------------------------------------------
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
            if _is_number(v):
                return -v if isinstance(node.op, ast.USub) else v
            raise self.error(node, f"unary minus on {v!r}")
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub, ast.Mult, ast.FloorDiv,
                                                                 ast.Div, ast.Mod)):
            # Plain arithmetic on numbers (`4096 * 2`), as users write sizes; never on values.
            a = self.plain(node.left, env, allow_names, fd_names, attrs, call)
            b = self.plain(node.right, env, allow_names, fd_names, attrs, call)
            if _is_number(a) and _is_number(b):
                return self.arith(node, a, b)
            joined = self.sequence_arith(node, a, b)
            if joined is None:
                raise self.error(node, f"arithmetic is only allowed on numbers: {_excerpt(node)}")
            return joined
        if isinstance(node, ast.Subscript) and env is not None:
            # `tvs[0]`: an item of a list or tuple the body built, by an integer.
            seq = self.plain(node.value, env, allow_names, fd_names, attrs, call)
            k = self.plain(node.slice, env, allow_names, fd_names, attrs, call)
            if not isinstance(seq, (list, tuple)) or isinstance(k, bool) or not isinstance(k, int):
                raise self.error(node, f"only lists and tuples are indexed, by an integer: {_excerpt(node)}")
            if not -len(seq) <= k < len(seq):
                raise self.error(node, f"index {k} is out of range: {_excerpt(node)}")
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
                    raise self.error(k, f"a dict key must be a number or a string: {_excerpt(k)}")  # type: ignore[arg-type]
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
                return _copied(ref.value)  # `N = 1024` at the top level, read where a number goes
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
                    raise self.error(node, f"math.{math_fn} takes positional arguments only: {_excerpt(node)}")
                args = [self.plain(a, env, allow_names, fd_names, attrs, call) for a in node.args]
                try:
                    return self.int64(node, pure.call(math_fn, args))
                except pure.MathError as e:
                    raise self.error(node, str(e)) from None
            if call is not None:
                return call(node)
            raise self.error(node, f"call not allowed here: {_excerpt(node)}")
        raise self.error(node, f"{type(node).__name__} expression is not allowed: {_excerpt(node)}")

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
                raise self.error(node, f"torch.Size takes one list of sizes: {_excerpt(node)}")
            return _ints(self, node, pos[0] if pos else [])
        names = ("type", "index")
        if len(pos) > 2 or any(k not in names for k in kw):
            raise self.error(node, f"torch.device(type, index): unexpected arguments in {_excerpt(node)}")
        args = dict(zip(names, pos)) | kw
        kind, index = args.get("type"), args.get("index")
        if not isinstance(kind, str) or not (index is None or _is_int(index) and index >= 0):
            raise self.error(node, f"torch.device(type, index) takes a string and an index: {_excerpt(node)}")
        try:
            return str(torch.device(kind) if index is None else torch.device(kind, index))
        except (RuntimeError, ValueError) as e:
            raise self.error(node, f"torch.device: {str(e).splitlines()[0]}") from None

    def arith(self, node: ast.BinOp, a: int | float, b: int | float) -> int | float:
        """`a op b` on two numbers, as Python computes it, within the engine's 64 bits."""
        try:
            return self.int64(node, _ARITH[type(node.op)](a, b))
        except ZeroDivisionError:
            raise self.error(node, "division by zero") from None
        except OverflowError:
            raise self.error(node, f"{_excerpt(node)} overflows") from None

    def sequence_arith(self, node: ast.BinOp, a: Any, b: Any) -> list[Any] | tuple[Any, ...] | None:
        """`[1, 2] + [3]` and `[-7, 2] * 64` (how example inputs and shapes get written) on
        lists or tuples, capped at _MAX_ITEMS; None for any other operands."""
        if isinstance(node.op, ast.Add) and isinstance(a, (list, tuple)) and type(a) is type(b):
            out = a + b
        elif isinstance(node.op, ast.Mult) and (isinstance(a, (list, tuple)) and _is_int(b)
                                                or isinstance(b, (list, tuple)) and _is_int(a)):
            seq, n = (a, b) if isinstance(a, (list, tuple)) else (b, a)
            if len(seq) * max(n, 0) > _MAX_ITEMS:
                raise self.error(node, f"{_excerpt(node)}: more than {_MAX_ITEMS} items")
            out = seq * n
        else:
            return None
        if len(out) > _MAX_ITEMS:
            raise self.error(node, f"{_excerpt(node)}: more than {_MAX_ITEMS} items")
        return _copied(out)

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
                if node.attr in ("strided", *_MEMORY_FORMATS):
                    return _TorchConst(node.attr)  # layout= / memory_format= of an inputs entry
                raise self.error(node, f"torch.{node.attr} is not a dtype this format knows")
        raise self.error(node, f"attribute not allowed here: {_excerpt(node)}")

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


# Iterations of `for` loops and comprehensions, and calls made through map() and filter(), a
# fusion body may run in all (a file cannot make the loader spin).
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
_MEMORY_FORMATS = ("contiguous_format", "channels_last", "channels_last_3d", "preserve_format")
# Top-level calls a repro makes before its inputs list that change no input's sizes: seeds.
_SEED_CALLS = ("manual_seed", "seed", "cuda.manual_seed", "cuda.manual_seed_all", "random.manual_seed")


def _affine_scale(v: Any) -> Any:
    return None if v == 1 and not isinstance(v, complex) else v


def _affine_shift(v: Any) -> Any:
    return None if v == 0 and not isinstance(v, complex) else v

_MAX_LOOP_STEPS = 10_000
# Items a list the body builds may hold (range(), list(), extend(), ...): bounded like the
# loops, so that no line can make the loader allocate without end.
_MAX_ITEMS = 10_000

# Methods of a plain list the body bound (`selected.extend([c1, c5])`): they change the
# loader's own list, as Python would; a tuple has the two that only read.
_LIST_METHODS = ("append", "extend", "insert", "pop", "remove", "index", "count")
_TUPLE_METHODS = ("index", "count")

# Builtins a fusion body may call, by (fewest, most positional arguments (None: any),
# keywords): pure functions of the plain values the loader holds, run by the loader.
_BUILTINS: dict[str, tuple[int, int | None, tuple[str, ...]]] = {
    "list": (0, 1, ()), "tuple": (0, 1, ()), "len": (1, 1, ()), "range": (1, 3, ()),
    "enumerate": (1, 1, ("start",)), "zip": (0, None, ()), "reversed": (1, 1, ()),
    "sorted": (1, 1, ("reverse",)), "min": (1, None, ()), "max": (1, None, ()), "sum": (1, 2, ("start",)),
    "any": (1, 1, ()), "all": (1, 1, ()), "filter": (2, 2, ()), "map": (2, None, ()),
    # abs(T): nvFuser's Tensor and Scalar define __abs__ (fd.ops.abs), as they do __neg__.
    "abs": (1, 1, ()),
}
# The iterators those builtins and generator expressions make: a body may hold them and
# give them to the builtins and loops, never to a frontend call.
class _Lazy:
    """A generator expression of the body, read item by item when something consumes it.
    Reading it while it makes an item (its element names it) is refused by `reentered`,
    where Python would raise ValueError."""

    def __init__(self, items: Iterator[Any], reentered: Callable[[], Exception]) -> None:
        self.items = items
        self.reentered = reentered
        self.running = False

    def __iter__(self) -> _Lazy:
        return self

    def __next__(self) -> Any:
        if self.running:
            raise self.reentered()
        self.running = True
        try:
            return next(self.items)
        finally:
            self.running = False


_ITERATORS = (zip, map, filter, enumerate, reversed, type(reversed([])), type(reversed(range(0))), _Lazy)
# Values a condition (comprehension `if`, filter, any, all) may test: Python's truth of an
# IR value would be no nvFuser semantics.
_TRUTH_TYPES = (bool, int, float, str, type(None))


@dataclass(frozen=True)
class _Function:
    """A callable the loader knows, given to map() or filter() (`self.sched.is_reduction`):
    calling it interprets that frontend call or builtin; it is no object of the file."""

    name: str
    run: Callable[..., Any]

    def __call__(self, *args: Any) -> Any:
        return self.run(*args)


# nvFuser's DataType members that this engine has no type for, with why: named in the refusal.
_UNSUPPORTED_DTYPES = {
    "UInt64": "nvFuser's unsigned 64-bit type is not supported by this engine (use DataType.Int)",
    "Float4_e2m1fn_x2": "packed fp4 pairs are not supported by this engine; DataType.Float4_e2m1fn is "
                        "(one fp4 value per element, as nv_block_quantize makes)",
}

# Python operators on tensors and scalars -> the fd.ops they stand for (nvFuser's Tensor and
# Scalar bindings: `/` is div, `%` is mod).
_OPERATOR_OPS = {
    ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.Div: "div", ast.Mod: "mod", ast.Pow: "pow",
    ast.BitAnd: "bitwise_and", ast.BitOr: "bitwise_or", ast.BitXor: "bitwise_xor",
    ast.LShift: "bitwise_left_shift", ast.RShift: "bitwise_right_shift",
}
# Comparison -> (fd.ops name, Python's own on numbers); the names are the operator module's.
_COMPARE_OPS = {ast.Lt: "lt", ast.LtE: "le", ast.Gt: "gt", ast.GtE: "ge", ast.Eq: "eq", ast.NotEq: "ne"}


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


_ARITH = {
    ast.Add: lambda a, b: a + b,
    ast.Sub: lambda a, b: a - b,
    ast.Mult: lambda a, b: a * b,
    ast.FloorDiv: lambda a, b: a // b,
    ast.Div: lambda a, b: a / b,
    ast.Mod: lambda a, b: a % b,
}


class _Body:
    """Interprets the statements of one fusion body against `fd`."""

    def __init__(self, loader: _Loader, fd: FusionDefinition, fd_name: str, attrs: dict[str, Any],
                 alias: str | None = None) -> None:
        self.loader = loader
        self.fd = fd
        self.fd_name = fd_name
        # The names the FusionDefinition goes by: the body's parameter and, in a subclass, the
        # module-level name of its instance (see _Loader.instantiate).
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
        if isinstance(stmt, ast.Pass) or _is_docstring(stmt):
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
                               f"{_excerpt(stmt)}")

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
        if not _is_iterable(items):
            raise self.error(node, f"a loop runs over a list, a tuple or range(...), not {_excerpt(node)}")
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
            if target.attr in ("ops", "sched", "fusion", "from_pytorch", *_FD_METHODS, *_RUN_METHODS):
                raise self.error(stmt, f"cannot assign to {target.value.id}.{target.attr}")
            self.attrs[target.attr] = value
        elif isinstance(target, (ast.Tuple, ast.List)):
            if isinstance(value, _ITERATORS):  # `a, b = map(...)`: unpacking uses it up, as in Python
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
            raise self.error(stmt, f"cannot assign to {_excerpt(target)}")

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
                                   f"{self.fd_name}.define_*, got {_excerpt(node)}")
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
        if target is None:
            fd = self.fd_name
            raise self.error(node, f"call not allowed: {_excerpt(node)} (only {fd}.ops.*, {fd}.sched.*, "
                                   f"{fd}.define_tensor/define_scalar/from_pytorch, {fd}.add_output, a "
                                   f"tensor's .size(dim) and .shape(), the list methods "
                                   f"{'/'.join(_LIST_METHODS)} and the builtins {', '.join(_BUILTINS)})")
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

    def invoke(self, node: ast.AST, func: ast.expr, target: str, name: str, args: list[Any],
               kwargs: dict[str, Any]) -> Any:
        """Make one frontend call (fd.X, fd.ops.X, fd.sched.X) with values the body holds;
        errors name the line and the call as the file spells it (`func`)."""
        where = _excerpt(func)
        for v in (*args, *kwargs.values()):
            why = _unpassable(v)
            if why is not None:
                raise self.error(node, f"{where}: {why}")
        # Copies, as nvFuser's bindings convert lists: the engine never holds a list of the
        # body, which a later `selected.append(...)` would change.
        args = [_copied(a) for a in args]
        kwargs = {k: _copied(v) for k, v in kwargs.items()}
        if target == "ops":
            import engine.ops as ops

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
                raise self.error(node, f"`not` is not an nvFuser operator: {_excerpt(node)}")
            if _is_number(v):
                if isinstance(node.op, ast.USub):
                    return -v
                if isinstance(v, int):
                    return ~v
                raise self.error(node, f"~ on {v!r}")
            return self.apply_op(node, "neg" if isinstance(node.op, ast.USub) else "bitwise_not", v)
        if isinstance(node, ast.Compare):
            if len(node.ops) != 1:
                raise self.error(node, f"chained comparisons are not allowed: {_excerpt(node)}")
            a, b = self.value(node.left), self.value(node.comparators[0])
            name = _COMPARE_OPS.get(type(node.ops[0]))
            if name is None:
                raise self.error(node, f"{type(node.ops[0]).__name__} is not an nvFuser operator")
            if _is_number(a) and _is_number(b):
                return getattr(operator, name)(a, b)
            return self.apply_op(node, name, a, b)
        a, b = self.value(node.left), self.value(node.right)
        if _is_number(a) and _is_number(b) and type(node.op) in _ARITH:
            return self.loader.arith(node, a, b)
        joined = self.loader.sequence_arith(node, a, b)
        if joined is not None:
            return joined
        name = _OPERATOR_OPS.get(type(node.op))
        if name is None:
            raise self.error(node, f"{type(node.op).__name__} is not an nvFuser operator on tensors and "
                                   f"scalars: {_excerpt(node)}")
        return self.apply_op(node, name, a, b)

    def apply_op(self, node: ast.expr, name: str, *args: Any) -> Any:
        for v in args:
            why = _unpassable(v)
            if why is not None:
                raise self.error(node, f"{_excerpt(node)} ({self.fd_name}.ops.{name}): {why}")
        try:
            return getattr(self.fd.ops, name)(*args)
        except (FusionDefinitionError, ScheduleError) as e:
            raise self.error(node, f"{_excerpt(node)} ({self.fd_name}.ops.{name}): {e}") from e
        except Exception as e:  # odd operands still name the line
            raise self.error(node, f"{_excerpt(node)} ({self.fd_name}.ops.{name}): {type(e).__name__}: {e}") from e

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

    def is_fd(self, node: ast.expr) -> bool:
        return isinstance(node, ast.Name) and node.id in self.fd_names

    def is_builtin(self, name: str) -> bool:
        """A builtin of _BUILTINS that no name of the body or the module shadows."""
        return name in _BUILTINS and name not in self.env and name not in self.loader.globals

    def callee(self, func: ast.expr) -> tuple[str | None, str]:
        if isinstance(func, ast.Name):
            return ("builtin", func.id) if self.is_builtin(func.id) else (None, "")
        if not isinstance(func, ast.Attribute) or func.attr.startswith("_"):
            return None, ""
        base = func.value
        if self.is_fd(base):
            if func.attr in ("define_vector", "from_pytorch"):
                return {"define_vector": "vector", "from_pytorch": "from_pytorch"}[func.attr], func.attr
            return ("fd", func.attr) if func.attr in _FD_METHODS else (None, "")
        if isinstance(base, ast.Attribute) and self.is_fd(base.value) and base.attr in ("ops", "sched"):
            if base.attr == "sched" and not _is_sched_method(func.attr):
                raise self.loader.error(func, f"unknown schedule operation {_excerpt(func)}")
            return base.attr, func.attr
        held = self.loader.bound(base, self.env, self.fd_names, self.attrs)
        if isinstance(held, TensorView) and func.attr in _TENSOR_METHODS:
            return "tensor", func.attr
        if func.attr in (_LIST_METHODS if isinstance(held, list) else
                         _TUPLE_METHODS if isinstance(held, tuple) else ()):
            return "list", func.attr
        return None, ""

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
        where = f"{_excerpt(func)}()"
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

    # ---- plain Python on the loader's own values ---------------------------------------------
    def list_method(self, node: ast.Call, name: str) -> Any:
        """`selected.extend([c1, c5])`, `selected.append(rf)`, `tvs.index(t)`, ... on a list (or,
        for index/count, a tuple) the body bound: Python's method on the loader's value, so the
        frontend calls below see the change. Items compare as list.index does: numbers and
        strings by value, tensors and scalars by identity (their == would build an op)."""
        func = node.func
        assert isinstance(func, ast.Attribute)
        seq = self.loader.bound(func.value, self.env, self.fd_names, self.attrs)
        where = f"{_excerpt(func)}()"
        if node.keywords:
            raise self.error(node, f"{where} takes no keyword arguments")
        args, _ = self.arguments(node)
        most = {"append": 1, "extend": 1, "insert": 2, "pop": 1, "remove": 1, "index": 3, "count": 1}[name]
        fewest = {"insert": 2, "pop": 0}.get(name, 1)
        if not fewest <= len(args) <= most:
            raise self.error(node, f"{where} takes {_arity(fewest, most)}, got {len(args)}")
        if name in ("insert", "pop", "index") and not all(_is_int(a) for a in
                                                          (args[:1] if name != "index" else args[1:])):
            raise self.error(node, f"{where}: positions are integers: {_excerpt(node)}")
        if name == "count":
            return sum(_same(x, args[0]) for x in seq)
        if name == "index":
            return self.find(node, seq, args[0], *args[1:])
        if name == "pop":
            if not seq or args and not -len(seq) <= args[0] < len(seq):
                raise self.error(node, f"{where}: pop index out of range")
            return seq.pop(*args)
        if name == "append":
            seq.append(args[0])
        elif name == "extend":
            seq.extend(self.items(node, args[0]))
        elif name == "insert":
            seq.insert(args[0], args[1])
        else:  # remove
            del seq[self.find(node, seq, args[0])]
        if len(seq) > _MAX_ITEMS:
            raise self.error(node, f"{where}: a list in a fusion body holds at most {_MAX_ITEMS} items")
        return None

    def find(self, node: ast.Call, seq: Sequence[Any], item: Any, start: int = 0, stop: int | None = None) -> int:
        """list.index(item, start, stop) with _same for ==."""
        lo, hi, _ = slice(start, stop).indices(len(seq))
        for k in range(lo, hi):
            if _same(seq[k], item):
                return k
        raise self.error(node, f"{_excerpt(node)}: {_excerpt(node.args[0])} is not in the list")

    def items(self, node: ast.AST, v: Any) -> list[Any]:
        """The items of a list, tuple, range or iterator the body holds (bounded)."""
        if not _is_iterable(v):
            raise self.error(node, f"{_excerpt(node)}: expected a list, a tuple, range(...) or an iterator, "
                                   f"got {type(v).__name__}")
        out = list(itertools.islice(v, _MAX_ITEMS + 1))
        if len(out) > _MAX_ITEMS:
            raise self.error(node, f"{_excerpt(node)}: more than {_MAX_ITEMS} items")
        return out

    def truth(self, node: ast.AST, v: Any) -> bool:
        """Python's truth of a plain value; an IR value's truth is refused (no nvFuser meaning)."""
        if not isinstance(v, _TRUTH_TYPES):
            raise self.error(node, f"{_excerpt(node)}: a condition must be a bool or a number, "
                                   f"got {type(v).__name__}")
        return bool(v)

    def builtin(self, node: ast.Call, name: str) -> Any:
        """`list(filter(self.sched.is_reduction, self.sched.tensors()))`, `len(tvs)`, `zip(a, b)`,
        ...: one of _BUILTINS on values the body holds. map() and filter() take a function the
        loader knows (see function())."""
        if any(isinstance(a, ast.Starred) for a in node.args) or any(k.arg is None for k in node.keywords):
            raise self.error(node, "* and ** arguments are not allowed")
        unknown = [k.arg for k in node.keywords if k.arg not in _BUILTINS[name][2]]
        if unknown:  # before reading it: `sorted(tvs, key=...)` is refused for the key, not its value
            raise self.error(node, f"{name}() takes no keyword {unknown[0]!r} here: {_excerpt(node)}")
        args = [self.function(a) if k == 0 and name in ("map", "filter") else self.value(a)
                for k, a in enumerate(node.args)]
        kwargs = {k.arg: self.value(k.value) for k in node.keywords if k.arg is not None}
        return self.apply_builtin(node, name, args, kwargs)

    def function(self, node: ast.expr) -> _Function | None:
        """map()'s and filter()'s function: a frontend call the body could make
        (`self.sched.is_reduction`, `fd.ops.neg`) or an allowed builtin (`len`), run by the
        loader per item and counted as a loop step; filter(None, ...) keeps the true items.
        A lambda or any other callable is refused."""
        if isinstance(node, ast.Constant) and node.value is None:
            return None
        if isinstance(node, ast.Name) and self.is_builtin(node.id):
            name = node.id
            return _Function(name, lambda *a: self.counted(node, self.apply_builtin, node, name, list(a), {}))
        if isinstance(node, ast.Attribute):
            target, name = self.callee(node)
            if target in ("fd", "ops", "sched"):
                return _Function(_excerpt(node), lambda *a: self.counted(node, self.invoke, node, node, target,
                                                                         name, list(a), {}))
        raise self.error(node, f"map() and filter() take {self.fd_name}.ops.X, {self.fd_name}.sched.X, "
                               f"{self.fd_name}.define_* or a builtin, not {_excerpt(node)}")

    def counted(self, node: ast.AST, fn: Callable[..., Any], *args: Any) -> Any:
        self.step(node)
        return fn(*args)

    def apply_builtin(self, node: ast.Call | ast.Name, name: str, args: list[Any], kwargs: dict[str, Any]) -> Any:
        fewest, most, keywords = _BUILTINS[name]
        if not fewest <= len(args) <= (len(args) if most is None else most) or any(k not in keywords
                                                                                   for k in kwargs):
            raise self.error(node, f"{name}() takes {_arity(fewest, most)}"
                                   f"{' and ' + ', '.join(keywords) + '=' if keywords else ''}: {_excerpt(node)}")
        if name in ("list", "tuple"):
            items = self.items(node, args[0]) if args else []
            return items if name == "list" else tuple(items)
        if name == "len":
            if not isinstance(args[0], (list, tuple, range, dict, str)):
                raise self.error(node, f"len() of a {type(args[0]).__name__}: {_excerpt(node)}")
            return len(args[0])
        if name == "range":
            return self.range(node, args)
        if name in ("sorted", "min", "max", "sum"):
            return self.reduce(node, name, args, kwargs)
        if name in ("any", "all"):
            values = (self.truth(node, v) for v in self.iterable(node, args[0]))
            return any(values) if name == "any" else all(values)
        if name == "filter":
            fn = args[0]
            if fn is not None and not isinstance(fn, _Function):
                raise self.error(node, f"filter() takes a function the loader knows: {_excerpt(node)}")
            return filter(lambda x: self.truth(node, x if fn is None else fn(x)), self.iterable(node, args[1]))
        if name == "map":
            if not isinstance(args[0], _Function):
                raise self.error(node, f"map() takes a function the loader knows: {_excerpt(node)}")
            return map(args[0], *(self.iterable(node, a) for a in args[1:]))
        if name == "enumerate":
            start = kwargs.get("start", 0)
            if not _is_int(start):
                raise self.error(node, f"enumerate(start=...) takes an integer: {_excerpt(node)}")
            return enumerate(self.iterable(node, args[0]), start)
        if name == "zip":
            return zip(*(self.iterable(node, a) for a in args))
        if name == "abs":
            return abs(args[0]) if _is_number(args[0]) else self.apply_op(node, "abs", args[0])
        # reversed: a sequence, as Python requires
        if not isinstance(args[0], (list, tuple, range)):
            raise self.error(node, f"reversed() takes a list, a tuple or range(...): {_excerpt(node)}")
        return reversed(args[0])

    def iterable(self, node: ast.AST, v: Any) -> Any:
        if not _is_iterable(v):
            raise self.error(node, f"{_excerpt(node)}: expected a list, a tuple, range(...) or an iterator, "
                                   f"got {type(v).__name__}")
        return v

    def range(self, node: ast.AST, bounds: list[Any]) -> range:
        if not all(_is_int(b) for b in bounds):
            raise self.error(node, f"range() takes integers: {_excerpt(node)}")
        if len(bounds) == 3 and bounds[2] == 0:
            raise self.error(node, f"range() step must not be zero: {_excerpt(node)}")
        r = range(*bounds)
        if (r.stop - r.start) // r.step > _MAX_ITEMS:  # not len(r): past sys.maxsize it raises
            raise self.error(node, f"{_excerpt(node)} runs more than {_MAX_ITEMS} times")
        return r

    def reduce(self, node: ast.AST, name: str, args: list[Any], kwargs: dict[str, Any]) -> Any:
        """sorted, min, max and sum: on numbers (and, but for sum, strings) only, since on
        tensors and scalars Python's < and + would build ops the file never wrote."""
        many = name in ("min", "max") and len(args) > 1
        items = list(args) if many else self.items(node, args[0])
        start = args[1] if name == "sum" and len(args) > 1 else kwargs.get("start", 0)
        numbers = all(isinstance(x, (bool, int, float)) for x in [*items, *([start] if name == "sum" else [])])
        if not (numbers or name != "sum" and all(isinstance(x, str) for x in items)):
            raise self.error(node, f"{name}() takes numbers{'' if name == 'sum' else ' or strings'}: "
                                   f"{_excerpt(node)}")
        if name == "sum":
            try:
                return self.loader.int64(node, sum(items, start))
            except OverflowError:
                raise self.error(node, f"{_excerpt(node)} overflows") from None
        if name == "sorted":
            reverse = kwargs.get("reverse", False)
            if not isinstance(reverse, bool):
                raise self.error(node, f"sorted(reverse=...) takes a bool: {_excerpt(node)}")
            return sorted(items, reverse=reverse)
        if not items:
            raise self.error(node, f"{name}() of an empty sequence: {_excerpt(node)}")
        return min(items) if name == "min" else max(items)

    def comprehension(self, node: ast.ListComp | ast.GeneratorExp) -> Any:
        """`[self.sched.rfactor(t, dims=[-1]) for t in reductions]`: the element is read once per
        item as Python runs it (a generator expression lazily, when consumed), each item a loop
        step; the loop names are the comprehension's own."""
        for gen in node.generators:
            if gen.is_async or not all(isinstance(n, (ast.Name, ast.Tuple, ast.Store))
                                       for n in ast.walk(gen.target)):
                raise self.error(node, f"only `for NAME in ...` comprehensions are allowed: {_excerpt(node)}")
        names = {n.id for gen in node.generators for n in ast.walk(gen.target) if isinstance(n, ast.Name)}
        first = self.iterable(node, self.value(node.generators[0].iter))  # at once, as Python does
        items = self.generate(node, 0, first, names, {})
        if isinstance(node, ast.ListComp):
            return list(items)
        return _Lazy(items, lambda: self.error(node, f"a generator expression reads itself: {_excerpt(node)}"))

    def generate(self, node: ast.ListComp | ast.GeneratorExp, k: int, source: Iterable[Any], names: set[str],
                 local: dict[str, Any]) -> Iterator[Any]:
        gen = node.generators[k]
        last = k == len(node.generators) - 1
        for item in source:
            self.step(node)
            with self.scope(names, local):
                self.bind(gen.target, item, node)
                keep = all(self.truth(c, self.value(c)) for c in gen.ifs)
                if keep:
                    out = self.value(node.elt) if last else self.iterable(node, self.value(node.generators[k + 1].iter))
            if not keep:
                continue
            if last:
                yield out
            else:
                yield from self.generate(node, k + 1, out, names, local)

    @contextlib.contextmanager
    def scope(self, names: set[str], local: dict[str, Any]) -> Iterator[None]:
        """The body's names and a comprehension's own (`local`) while it reads one item: its
        loop names stay in `local`; a `:=` inside binds the body's name, as in Python."""
        outer = self.env
        self.env = {**outer, **local}
        try:
            yield
        finally:
            for key, v in self.env.items():
                if key in names:
                    local[key] = v
                elif key not in outer or outer[key] is not v:
                    outer[key] = v
            self.env = outer

    def from_pytorch(self, node: ast.Call) -> Any:
        """nvFuser's fd.from_pytorch(tensor, static_sizes=False): an input with the example
        tensor's rank, dtype and strides (so contiguity and stride order), sizes symbolic
        unless static_sizes. nvFuser makes it with define_tensor(sizes=, strides=), and so
        does this (recorded and written back in that spelling). The example is an entry of
        the file's inputs list (`inputs[0]`), read from its spec, never made."""
        where = _excerpt(node.func)
        args, kwargs = self.arguments(node)
        params = dict(zip(("tensor", "static_sizes"), args))
        if len(args) > 2 or any(k not in ("tensor", "static_sizes") or k in params for k in kwargs):
            raise self.error(node, f"{where}(tensor, static_sizes=False): wrong arguments: {_excerpt(node)}")
        params.update(kwargs)
        spec, static = params.get("tensor"), params.get("static_sizes", False)
        if not isinstance(spec, InputSpec) or spec.kind == "scalar":
            raise self.error(node, f"{where}: takes an example tensor of the file's inputs list (such as "
                                   f"inputs[0]): {_excerpt(node)}")
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
        if _is_int(values):
            if "dtype" in keywords:
                raise self.error(node, f"{self.fd_name}.define_vector(size=n) takes no dtype: its inputs are "
                                       "integers")
            if not 0 <= values <= _MAX_ITEMS:
                raise self.error(node, f"{self.fd_name}.define_vector: size must be in 0..{_MAX_ITEMS}, "
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

    def value(self, node: ast.expr) -> Any:
        v = self.loader.plain(node, self.env, True, self.fd_names, self.attrs, self.call)
        return _to_datatype(v)


def _arity(fewest: int, most: int | None) -> str:
    """`1 argument`, `0 to 2 arguments`, `at least 2 arguments`: for messages."""
    count = (f"at least {fewest}" if most is None else str(fewest) if fewest == most
             else f"{fewest} to {most}")
    return f"{count} argument{'' if count in ('1', 'at least 1') else 's'}"


def _is_iterable(v: Any) -> bool:
    """What a loop, a comprehension or a builtin of a fusion body may run over."""
    return isinstance(v, (list, tuple, range, *_ITERATORS))


def _same(a: Any, b: Any) -> bool:
    """`a == b` as list.index/remove/count use it (identity first), on values a body holds:
    numbers, strings, enums and dtypes by value, lists and tuples item by item, IR values by
    identity (nvFuser's == on them would build an op)."""
    if a is b:
        return True
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    plain = (bool, int, float, complex, str, type(None), enum.Enum, torch.dtype)
    return isinstance(a, plain) and isinstance(b, plain) and a == b


def _unpassable(v: Any) -> str | None:
    """Why a value the body holds may not reach a frontend call (None if it may): an iterator
    (the call would use it up, and a recorded call is written back with a list) or an
    example input (only from_pytorch reads one)."""
    if isinstance(v, _ITERATORS):
        return "pass a list, not an iterator (wrap it in list(...))"
    if isinstance(v, InputSpec):
        return "an example input of the inputs list is only read by from_pytorch"
    if isinstance(v, (list, tuple)):
        return next((why for x in v if (why := _unpassable(x)) is not None), None)
    if isinstance(v, dict):
        return next((why for x in v.values() if (why := _unpassable(x)) is not None), None)
    return None


def _copied(v: Any) -> Any:
    """A fresh copy of the containers in `v` (a range as its list, as nvFuser's bindings
    take it); IR values, numbers and enums as they are."""
    if isinstance(v, (list, range)):
        return [_copied(x) for x in v]
    if isinstance(v, tuple):
        return tuple(_copied(x) for x in v)
    if isinstance(v, dict):
        return {k: _copied(x) for k, x in v.items()}
    return v


def _op_names() -> dict[str, tuple[str, ...]]:
    """The op names that fd.ops.unary/binary/ternary/reduce accept: those the code generator
    spells (engine/codegen/ops_table.py)."""
    from engine.codegen import ops_table

    return {
        "unary": (*ops_table.FLOAT_UNARY, *ops_table.SAME_UNARY, *ops_table.BOOL_UNARY),
        "binary": (*ops_table.ARITH_BINARY, *ops_table.COMPARE_BINARY, *ops_table.BITWISE_BINARY),
        "ternary": _TERNARY_OPS,
        "reduce": ops_table.REDUCTION_OPS,
    }


# engine.ops' ternary builders (where, clamp, lerp) by the names they pass to ternary().
_TERNARY_OPS = ("where", "clamp", "lerp")


def _is_sched_method(name: str) -> bool:
    from engine.frontend.sched import SchedOperators

    attr = getattr(SchedOperators, name, None)
    return not name.startswith("_") and callable(attr) and name != "calls"


def _to_datatype(v: Any) -> Any:
    """torch.float32 written as an op argument means DataType.Float."""
    if isinstance(v, torch.dtype):
        try:
            return from_torch(v)
        except ValueError:
            return v
    if isinstance(v, (list, tuple)):
        items = [_to_datatype(x) for x in v]
        if all(a is b for a, b in zip(items, v)):
            return v  # unchanged: the same list, so that two names bound to it share it, as in Python
        return items if isinstance(v, list) else tuple(items)
    return v


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


def _extra_params(fn: ast.FunctionDef) -> list[ast.arg]:
    """A fusion function's parameters after the FusionDefinition."""
    return [*fn.args.args[1:], *fn.args.kwonlyargs]


def _is_docstring(stmt: ast.stmt) -> bool:
    return isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) and isinstance(
        stmt.value.value, str)


def _inert(node: ast.expr) -> bool:
    """Only names and literals: what `fd.execute(...)` may be given (it is not run)."""
    if isinstance(node, (ast.Name, ast.Constant)):
        return True
    if isinstance(node, (ast.List, ast.Tuple)):
        return all(_inert(e) for e in node.elts)
    return False


def _inert_literal(node: ast.expr) -> bool:
    """A literal: a constant (a negative one too) or a list or tuple of them."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        node = node.operand
    if isinstance(node, ast.Constant):
        return True
    if isinstance(node, (ast.List, ast.Tuple)):
        return all(_inert_literal(e) for e in node.elts)
    return False


def _printable(node: ast.expr) -> bool:
    """What a skipped `print(...)` may hold: names, literals, f-strings, `out[0]`, `out[0].shape`."""
    if isinstance(node, (ast.Name, ast.Constant)):
        return True
    if isinstance(node, ast.JoinedStr):
        return all(_printable(v) for v in node.values)
    if isinstance(node, ast.FormattedValue):
        return _printable(node.value) and (node.format_spec is None or _printable(node.format_spec))
    if isinstance(node, ast.Subscript):
        return _printable(node.value) and isinstance(node.slice, ast.Constant)
    if isinstance(node, ast.Attribute):
        return _printable(node.value)
    if isinstance(node, (ast.List, ast.Tuple)):
        return all(_printable(e) for e in node.elts)
    return False


def _is_data(v: Any) -> bool:
    if isinstance(v, (bool, int, float)):
        return True
    if isinstance(v, (list, tuple)):
        return all(_is_data(x) for x in v)
    return False


def _ints(loader: _Loader, node: ast.AST, v: Any) -> tuple[int, ...]:
    if isinstance(v, int) and not isinstance(v, bool):
        v = [v]
    if not isinstance(v, (list, tuple)) or not all(isinstance(x, int) and not isinstance(x, bool) and x >= 0
                                                   for x in v):
        raise loader.error(node, f"a size must be non-negative integers, got {v!r}")
    return tuple(v)


def _names_of(node: ast.AST) -> list[str]:
    """The identifiers a node spells: names, attributes, definitions, arguments, keywords."""
    if isinstance(node, ast.Name):
        return [node.id]
    if isinstance(node, ast.Attribute):
        return [node.attr]
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [node.name]
    if isinstance(node, ast.arg):
        return [node.arg]
    if isinstance(node, ast.keyword) and node.arg is not None:
        return [node.arg]
    if isinstance(node, ast.alias):
        return [n for n in (node.name, node.asname) if n]
    return []


def _with_parents(stmt: ast.stmt) -> Iterator[tuple[ast.AST, ast.AST | None, ast.AST | None]]:
    """Every node under `stmt` (in the order of the source) with its parent and grandparent."""
    todo: list[tuple[ast.AST, ast.AST | None, ast.AST | None]] = [(stmt, None, None)]
    while todo:
        node, parent, grand = todo.pop()
        yield node, parent, grand
        todo.extend((child, node, parent) for child in reversed(list(ast.iter_child_nodes(node))))


def _inert_annotation(node: ast.expr) -> bool:
    """`FusionDefinition`, `nvfuser.FusionDefinition`, `None`, `"fd"`: never evaluated, but
    a call or anything else in an annotation has no business in a repro."""
    if isinstance(node, ast.Attribute):
        return _inert_annotation(node.value)
    return isinstance(node, ast.Name) or (isinstance(node, ast.Constant) and isinstance(node.value, (str, type(None))))


def _failing_line(text: str) -> int | None:
    """The first line that Python cannot parse alone for depth or size (None when the
    trouble spans lines): locates what made ast.parse run out of stack or memory."""
    for k, line in enumerate(text.splitlines(), start=1):
        try:
            ast.parse(line.strip())
        except (RecursionError, MemoryError, ValueError):
            return k
        except SyntaxError:
            continue
    return None


def _excerpt(node: ast.AST) -> str:
    text = ast.unparse(node).splitlines()[0] if node is not None else ""
    return text if len(text) <= 80 else text[:77] + "..."
