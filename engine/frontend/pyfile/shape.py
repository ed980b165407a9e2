"""Module shape: the flat list of top-level statements a fusion file is read as.

Repro scripts pasted from nvFuser issues and tests wrap the fusion in more than the flat
module of a printed repro. Before reading, the syntax tree is normalised (nothing is
evaluated; statements are moved, never changed in meaning):

- `if __name__ == "__main__":` is replaced by its body (its `else:`, which runs only on
  import, is skipped); `if torch.cuda.is_available():` by the branch a GPU machine takes; a `try:` holding only imports is replaced by them (its handlers
  are skipped).
- A file with no fusion at the top level reads the body of its first test (or other)
  function that defines one: a `with FusionDefinition() as fd:` block, an
  `fd = FusionDefinition()` or nvFuser's test helper `self.exec_nvfuser(fusion_func,
  inputs)`. Its statements stand where the file calls the function (`main()`), else at
  the end of the module (where pytest runs a test). Other tests are skipped; the
  function's parameters (`self`, pytest fixtures) are names the file does not give.
- `X.exec_nvfuser(fusion_func, inputs, ...)` is read as what it does: `with
  FusionDefinition() as fd: fusion_func(fd)` then `fd.execute(inputs)`.
- The legacy body without a with block (`fd = FusionDefinition()`, then top-level
  `T0 = fd.define_tensor(...)`, `fd.add_output(T1)`) is read as `with fd:` blocks
  around those statements, up to the run.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import TypeGuard

from engine.frontend.definition import SkippedStatement
from engine.frontend.pyfile.syntax import (
    FD_API,
    FUSION_CLASSES,
    RUN_METHODS,
    excerpt,
    loaded,
    runs_in,
    stored,
    takes_fd,
)

# nvFuser's test helper that builds a fusion with a function and runs it on inputs.
EXEC_HELPER = "exec_nvfuser"
# The name the FusionDefinition of an exec_nvfuser call is bound to.
_FD_NAME = "fd"


@dataclass
class ModuleShape:
    """The statements to read, in order, and what the normalisation left unread."""

    body: list[ast.stmt]
    skipped: list[SkippedStatement] = field(default_factory=list)
    # id() of the `__name__` nodes of main guards: the one dunder name a file may spell.
    main_guard_names: set[int] = field(default_factory=set)
    # Names the read function's parameters bind, with why their value is unknown.
    params: dict[str, str] = field(default_factory=dict)


def module_shape(tree: ast.Module) -> ModuleShape:
    shape = ModuleShape([])
    body = _unwrap(tree.body, shape)
    body = _test_body(body, shape)
    body = [out for stmt in body for out in _exec_helper(stmt, shape)]
    shape.body = _legacy_bodies(body)
    return shape


def lines(stmt: ast.stmt) -> tuple[int, int]:
    """First and last line of a statement, its decorators included."""
    first = min([stmt.lineno, *(d.lineno for d in getattr(stmt, "decorator_list", ()))])
    return first, stmt.end_lineno or stmt.lineno


def _skip(shape: ModuleShape, nodes: list[ast.stmt], reason: str) -> None:
    if nodes:
        first, _ = lines(nodes[0])
        _, last = lines(nodes[-1])
        shape.skipped.append(SkippedStatement(first, last, f"skipped, not evaluated ({reason}): "
                                                           f"{excerpt(nodes[0])}"))


# ---- main guards and guarded imports ------------------------------------------------------
def _main_guard(stmt: ast.stmt) -> ast.Name | None:
    """The `__name__` of `if __name__ == "__main__":` (either order); None for another if."""
    if not (isinstance(stmt, ast.If) and isinstance(stmt.test, ast.Compare) and len(stmt.test.ops) == 1
            and isinstance(stmt.test.ops[0], ast.Eq)):
        return None
    sides = [stmt.test.left, stmt.test.comparators[0]]
    name = next((s for s in sides if isinstance(s, ast.Name) and s.id == "__name__"), None)
    main = any(isinstance(s, ast.Constant) and s.value == "__main__" for s in sides)
    return name if main else None


def _cuda_guard(stmt: ast.stmt) -> bool | None:
    """For `if torch.cuda.is_available():` True, for `if not torch.cuda.is_available():` False
    (the branch a GPU machine takes is then the else); None for another statement."""
    if not isinstance(stmt, ast.If):
        return None
    test, negated = stmt.test, False
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        test, negated = test.operand, True
    if not (isinstance(test, ast.Call) and not test.args and not test.keywords):
        return None
    f = test.func
    spelled = (isinstance(f, ast.Attribute) and f.attr == "is_available" and isinstance(f.value, ast.Attribute)
               and f.value.attr == "cuda" and isinstance(f.value.value, ast.Name) and f.value.value.id == "torch")
    return (not negated) if spelled else None


def _unwrap(stmts: list[ast.stmt], shape: ModuleShape) -> list[ast.stmt]:
    out: list[ast.stmt] = []
    for stmt in stmts:
        guard = _main_guard(stmt)
        cuda = _cuda_guard(stmt)
        if cuda is not None:
            assert isinstance(stmt, ast.If)
            taken, other = (stmt.body, stmt.orelse) if cuda else (stmt.orelse, stmt.body)
            out += _unwrap(taken, shape)
            _skip(shape, other, "the branch of `if torch.cuda.is_available():` taken without a GPU "
                                "(the file is read as on a GPU machine)")
        elif guard is not None:
            assert isinstance(stmt, ast.If)
            shape.main_guard_names.add(id(guard))
            out += _unwrap(stmt.body, shape)
            _skip(shape, stmt.orelse, "the else branch of `if __name__ == '__main__':`, run only on import")
        elif (isinstance(stmt, ast.Try) and not stmt.orelse and not stmt.finalbody
              and all(isinstance(s, (ast.Import, ast.ImportFrom, ast.Pass)) for s in stmt.body)):
            out += [s for s in stmt.body if not isinstance(s, ast.Pass)]
            for handler in stmt.handlers:
                first, last = handler.lineno, handler.end_lineno or handler.lineno
                shape.skipped.append(SkippedStatement(first, last, "skipped, not evaluated (the except branch "
                                                                   "of a try around imports; the imports are read)"))
        else:
            out.append(stmt)
    return out


# ---- a test function's body -----------------------------------------------------------------
def _is_fd_class_call(node: ast.AST) -> bool:
    if not isinstance(node, ast.Call):
        return False
    f = node.func
    return (isinstance(f, ast.Name) and f.id in FUSION_CLASSES
            or isinstance(f, ast.Attribute) and f.attr in FUSION_CLASSES)


def _exec_helper_call(node: ast.AST | None) -> ast.Call | None:
    """`self.exec_nvfuser(fusion_func, inputs, ...)` with a function named first."""
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == EXEC_HELPER
            and len(node.args) >= 2 and isinstance(node.args[0], ast.Name)
            and not any(isinstance(a, ast.Starred) for a in node.args[:2])):
        return node
    return None


def _defines_fusion(stmt: ast.stmt) -> bool:
    """A statement that makes a fusion: a with block or assignment of FusionDefinition() /
    Fusion(), or an exec_nvfuser call."""
    if isinstance(stmt, ast.With):
        return any(_is_fd_class_call(item.context_expr) for item in stmt.items)
    if isinstance(stmt, (ast.Assign, ast.Expr)):
        return _is_fd_class_call(stmt.value) or _exec_helper_call(stmt.value) is not None
    return False


def _reads_as_script(fn: ast.stmt) -> TypeGuard[ast.FunctionDef]:
    """A function (a test, `main`) that takes no FusionDefinition and builds a fusion."""
    return (isinstance(fn, ast.FunctionDef) and not takes_fd(fn)
            and any(_defines_fusion(s) for s in fn.body))


def _fusion_class(cls: ast.ClassDef) -> bool:
    return any(isinstance(b, (ast.Name, ast.Attribute)) and (getattr(b, "id", None) or getattr(b, "attr", None))
               in FUSION_CLASSES for b in cls.bases)


def _test_body(stmts: list[ast.stmt], shape: ModuleShape) -> list[ast.stmt]:
    """With no fusion at the top level: the first function (or method of a test class)
    that defines one, its body read in its place; other such functions are skipped."""
    if any(_defines_fusion(s) for s in stmts):
        return stmts
    found: list[tuple[ast.FunctionDef, ast.ClassDef | None]] = []
    for stmt in stmts:
        if _reads_as_script(stmt):
            found.append((stmt, None))
        elif isinstance(stmt, ast.ClassDef) and not _fusion_class(stmt):
            found += [(m, stmt) for m in stmt.body if _reads_as_script(m)]
    if not found:
        return stmts
    fn, owner = found[0]
    where = f"the fusion is read from {fn.name} at line {fn.lineno}"
    body = fn.body[1:] if fn.body and _is_docstring(fn.body[0]) else fn.body
    a = fn.args
    for p in (*a.posonlyargs, *a.args, *a.kwonlyargs, *filter(None, (a.vararg, a.kwarg))):
        shape.params[p.arg] = f"a parameter of {fn.name} (line {fn.lineno}), whose value the file does not give"
    if fn.decorator_list:
        first, last = fn.decorator_list[0].lineno, fn.decorator_list[-1].end_lineno or fn.lineno
        shape.skipped.append(SkippedStatement(first, last, f"skipped, not evaluated (the decorators of {fn.name}; "
                                                           "its body is read)"))
    others = {id(f) for f, _ in found[1:]}
    out: list[ast.stmt] = []
    for stmt in stmts:
        if stmt is fn:
            continue
        if stmt is owner:
            assert owner is not None  # its header and decorators; its other members below
            shape.skipped.append(SkippedStatement(lines(owner)[0], owner.lineno, f"skipped, not evaluated (class "
                                                  f"{owner.name}: only the body of {fn.name} is read)"))
            for member in owner.body:
                if member is not fn and not _is_docstring(member):
                    _skip(shape, [member], f"another member of {owner.name}; {where}")
            continue
        if id(stmt) in others:
            _skip(shape, [stmt], f"another test; {where}")
            continue
        if isinstance(stmt, ast.ClassDef):
            # A test class the read method is not in: its tests are others too.
            inner = [m for m in stmt.body if id(m) in others]
            if inner:
                _skip(shape, [stmt], f"another test class; {where}")
                continue
        out.append(stmt)
    # Where the file calls the function (`main()`), else at the end, where pytest runs it.
    for k, stmt in enumerate(out):
        if (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call) and isinstance(stmt.value.func, ast.Name)
                and stmt.value.func.id == fn.name and not stmt.value.args and not stmt.value.keywords):
            return [*out[:k], *body, *out[k + 1:]]
    return [*out, *body]


def _is_docstring(stmt: ast.stmt) -> bool:
    return isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) and isinstance(
        stmt.value.value, str)


# ---- exec_nvfuser -----------------------------------------------------------------------------
def _exec_helper(stmt: ast.stmt, shape: ModuleShape) -> list[ast.stmt]:
    """`out, _ = self.exec_nvfuser(fusion_func, inputs, ...)` -> `with FusionDefinition() as
    fd: fusion_func(fd)` and `out, _ = fd.execute(inputs)`, at the same line; the helper's
    other arguments (validate=, new_fusion_expected=, ...) only check the run: recorded as
    skipped, never evaluated."""
    value = stmt.value if isinstance(stmt, (ast.Expr, ast.Assign)) else None
    call = _exec_helper_call(value)
    if call is None or isinstance(stmt, ast.Assign) and len(stmt.targets) != 1:
        return [stmt]
    func, inputs = call.args[0], call.args[1]
    rest = [*call.args[2:], *(k.value for k in call.keywords)]
    if rest:
        first, last = lines(stmt)
        shown = ", ".join(excerpt(k) if k.arg else excerpt(k.value) for k in call.keywords) if call.keywords else ""
        shown = ", ".join(filter(None, [", ".join(excerpt(a) for a in call.args[2:]), shown]))
        shape.skipped.append(SkippedStatement(first, last, f"skipped, not evaluated (the arguments of {EXEC_HELPER} "
                                                           f"after the fusion function and its inputs): {shown}"))
    assert isinstance(func, ast.Name)
    fd_load = ast.Name(_FD_NAME, ast.Load())
    block = ast.With(items=[ast.withitem(ast.Call(ast.Name("FusionDefinition", ast.Load()), [], []),
                                         ast.Name(_FD_NAME, ast.Store()))],
                     body=[ast.Expr(ast.Call(ast.Name(func.id, ast.Load()), [fd_load], []))])
    run_call = ast.Call(ast.Attribute(ast.Name(_FD_NAME, ast.Load()), "execute", ast.Load()), [inputs], [])
    run: ast.stmt = (ast.Assign(stmt.targets, run_call) if isinstance(stmt, ast.Assign)
                     else ast.Expr(run_call))
    return [_located(block, stmt), _located(run, stmt)]


def _located(node: ast.stmt, like: ast.stmt) -> ast.stmt:
    """`node` (new) at the lines of `like`, every new node inside it too."""
    for n in ast.walk(node):
        if "lineno" in n._attributes and not hasattr(n, "lineno"):
            ast.copy_location(n, like)
    return node


# ---- the legacy body without a with block ---------------------------------------------------
def _legacy_bodies(stmts: list[ast.stmt]) -> list[ast.stmt]:
    """After `fd = FusionDefinition()`: each run of top-level statements that define the
    fusion (call fd.define_*/ops/add_output/sched, or read a tensor such a statement bound),
    up to the first run, read as a `with fd:` block (the blocks of one fd share their names)."""
    out: list[ast.stmt] = []
    fd_names: set[str] = set()
    defined: set[str] = set()  # names bound by the fusion's statements
    group: list[ast.stmt] = []
    group_fd: str | None = None
    ran = False

    def flush() -> None:
        nonlocal group, group_fd
        if group:
            out.append(_located(ast.With(items=[ast.withitem(ast.Name(group_fd, ast.Load()))], body=group),
                                group[0]))
            out[-1].end_lineno = group[-1].end_lineno
        group, group_fd = [], None

    for stmt in stmts:
        if not ran and (runs_in(stmt) & fd_names):
            ran = True
        owner = None if ran else _definition_of(stmt, fd_names, defined)
        if owner is None or (group_fd is not None and owner != group_fd):
            flush()
        if owner is not None:
            group.append(stmt)
            group_fd = owner
            defined |= stored([stmt])
            continue
        out.append(stmt)
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            if _is_fd_class_call(stmt.value) and not stmt.value.args:  # type: ignore[attr-defined]
                fd_names.add(stmt.targets[0].id)
            else:
                fd_names.discard(stmt.targets[0].id)
        elif (isinstance(stmt, ast.With) and len(stmt.items) == 1 and isinstance(stmt.items[0].context_expr, ast.Name)
              and stmt.items[0].context_expr.id in fd_names):
            defined |= stored(stmt.body)  # `with fd:` blocks: their tensors, for later lines
    flush()
    return out


def _definition_of(stmt: ast.stmt, fd_names: set[str], defined: set[str]) -> str | None:
    """The fd a top-level statement defines the fusion of, or None."""
    if not isinstance(stmt, (ast.Assign, ast.Expr)) or not fd_names:
        return None
    api = [n.value.id for n in ast.walk(stmt) if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name)
           and n.value.id in fd_names and n.attr in FD_API]
    if api:
        return api[0]
    if any(isinstance(n, ast.Attribute) and n.attr in RUN_METHODS for n in ast.walk(stmt)):
        return None
    if isinstance(stmt, ast.Assign) and loaded(stmt) & defined and len(fd_names) == 1:
        return next(iter(fd_names))
    return None
