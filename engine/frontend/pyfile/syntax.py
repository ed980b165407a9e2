"""Name analysis of Python statements, on the syntax tree alone (nothing is evaluated).

What names a statement mentions, loads, binds and reads from outside itself; which
functions take a FusionDefinition; which calls run a fusion. Shared by the module-shape
normalisation (shape) and the statement plan (needs). Also the shape checks on single
nodes that the loader and the fusion body share: docstrings, literals, what a skipped
print may show, a fusion function's parameters.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator

# What a fusion body reads off its FusionDefinition: a function whose first parameter is
# used this way takes the FusionDefinition.
FD_API = frozenset({"define_tensor", "define_scalar", "define_constant", "define_vector", "from_pytorch",
                    "add_output", "ops", "sched"})
# Calls that run a fusion (fd.execute(inputs), fd.validate(...)).
RUN_METHODS = frozenset({"execute", "validate"})
# nvFuser's names for the fusion classes (any module's: the loader reads them as nvFuser's).
FUSION_CLASSES = frozenset({"FusionDefinition", "Fusion"})
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


def names(node: ast.AST) -> Iterator[ast.Name]:
    """Every Name node under `node`, nested scopes included."""
    return (n for n in ast.walk(node) if isinstance(n, ast.Name))


def loaded(node: ast.AST) -> set[str]:
    """The names `node` reads from outside itself: loads, less what its own nested scopes
    (functions, lambdas, comprehensions) bind. A block's own stores are not subtracted."""
    out: set[str] = set()
    todo: list[ast.AST] = [node]
    while todo:
        n = todo.pop()
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            out |= free_names(n)
            continue
        if isinstance(n, ast.ClassDef):
            for part in (*n.bases, *n.keywords, *n.decorator_list):
                out |= loaded(part)
            for stmt in n.body:
                out |= loaded(stmt)
            continue
        if isinstance(n, _COMPREHENSIONS):
            targets = {t.id for g in n.generators for t in names(g.target)}
            inner: set[str] = set()
            for part in [*n.generators, *_elements(n)]:
                inner |= loaded(part)
            out |= inner - targets
            continue
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load):
            out.add(n.id)
        todo.extend(ast.iter_child_nodes(n))
    return out


def _elements(n: ast.AST) -> list[ast.AST]:
    if isinstance(n, ast.DictComp):
        return [n.key, n.value]
    return [n.elt]  # type: ignore[attr-defined]


def stored(nodes: Iterable[ast.AST]) -> set[str]:
    """Names the statements bind at their own level (assignments, loop and with targets,
    imports, definitions), not inside nested scopes."""
    out: set[str] = set()
    todo = list(nodes)
    while todo:
        n = todo.pop()
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(n.name)
            continue
        if isinstance(n, (ast.Lambda, *_COMPREHENSIONS)):
            continue
        if isinstance(n, (ast.Import, ast.ImportFrom)):
            out |= {(a.asname or a.name.split(".")[0]) for a in n.names}
        elif isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del)):
            out.add(n.id)
        todo.extend(ast.iter_child_nodes(n))
    return out


def bound_names(stmt: ast.stmt) -> Iterator[tuple[str, bool]]:
    """The module-level names a top-level statement binds or stores into, as (name, whole):
    whole for the name itself (assigned, imported, defined, deleted, a loop's or a with's
    target, a walrus, an except's), not whole where an item or attribute of it is stored or
    deleted (`inputs[0] = x`). "*" for a star import. The locals of a def, lambda or class
    body and a comprehension's own loop names are not the module's."""
    todo: list[ast.AST] = [stmt]
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                yield (alias.asname or alias.name.split(".")[0]), True
            continue
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            yield node.name, True
            outer: list[ast.AST] = list(node.decorator_list)
            if isinstance(node, ast.ClassDef):
                outer += [*node.bases, *node.keywords]
            else:
                outer += [*node.args.defaults, *(d for d in node.args.kw_defaults if d is not None)]
            todo.extend(outer)
            # `global x` inside a body binds the module's x
            for inner in ast.walk(node):
                if isinstance(inner, (ast.Global, ast.Nonlocal)):
                    yield from ((n, True) for n in inner.names)
            continue
        if isinstance(node, ast.Lambda):
            todo.extend([*node.args.defaults, *(d for d in node.args.kw_defaults if d is not None)])
            continue
        if isinstance(node, ast.comprehension):
            todo.extend([node.iter, *node.ifs])  # the target is the comprehension's own
            continue
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            yield node.id, True
        elif isinstance(node, (ast.Subscript, ast.Attribute)) and isinstance(node.ctx, (ast.Store, ast.Del)):
            base: ast.expr = node
            while isinstance(base, (ast.Subscript, ast.Attribute, ast.Starred)):
                base = base.value
            if isinstance(base, ast.Name):
                yield base.id, False
        elif isinstance(node, ast.ExceptHandler) and node.name:
            yield node.name, True
        elif isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name:
            yield node.name, True
        elif isinstance(node, ast.MatchMapping) and node.rest:
            yield node.rest, True
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            yield from ((n, True) for n in node.names)
        todo.extend(ast.iter_child_nodes(node))


def free_names(fn: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> set[str]:
    """The names a function reads from the module when it runs: what its body loads, less
    its parameters and its locals (annotations are never evaluated by the loader)."""
    a = fn.args
    params = {p.arg for p in (*a.posonlyargs, *a.args, *a.kwonlyargs, *filter(None, (a.vararg, a.kwarg)))}
    outer: set[str] = set()
    for d in (*a.defaults, *(d for d in a.kw_defaults if d is not None)):
        outer |= loaded(d)
    if isinstance(fn, ast.Lambda):
        return outer | (loaded(fn.body) - params)
    for d in fn.decorator_list:
        outer |= loaded(d)
    inner: set[str] = set()
    for stmt in fn.body:
        inner |= loaded(stmt)
    return outer | (inner - params - stored(fn.body))


def mentioned(stmt: ast.stmt) -> set[str]:
    """The names a top-level statement touches when it runs: all of its names, but for a
    definition only its name and what the def or class line evaluates (a body is not run)."""
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
        a = stmt.args
        parts = [*stmt.decorator_list, *a.defaults, *(d for d in a.kw_defaults if d is not None)]
        return {stmt.name} | {n.id for p in parts for n in names(p)}
    if isinstance(stmt, ast.ClassDef):
        parts = [*stmt.decorator_list, *stmt.bases, *stmt.keywords]
        return {stmt.name} | {n.id for p in parts for n in names(p)}
    if isinstance(stmt, (ast.Import, ast.ImportFrom)):
        return stored([stmt])
    return {n.id for n in names(stmt)}


def takes_fd(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """A fusion function: its first parameter is the FusionDefinition (named fd, annotated
    FusionDefinition, or used as one: `p.define_tensor`, `p.ops.add`, `p.add_output`)."""
    a = fn.args
    params = [*a.posonlyargs, *a.args]
    if not params:
        return False
    first = params[0]
    if first.arg == "fd" or (first.annotation is not None and _names_fd_class(first.annotation)):
        return True
    return any(isinstance(n, ast.Attribute) and n.attr in FD_API and isinstance(n.value, ast.Name)
               and n.value.id == first.arg for stmt in fn.body for n in ast.walk(stmt))


def _names_fd_class(note: ast.expr) -> bool:
    if isinstance(note, ast.Constant) and isinstance(note.value, str):
        return note.value.rsplit(".", 1)[-1] == "FusionDefinition"
    if isinstance(note, ast.Attribute):
        return note.attr == "FusionDefinition"
    return isinstance(note, ast.Name) and note.id == "FusionDefinition"


def run_target(node: ast.AST) -> str | None:
    """`fd` for a call `fd.execute(...)` / `fd.validate(...)` (or its item `[0]`); None else."""
    if isinstance(node, ast.Subscript):
        node = node.value
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in RUN_METHODS
            and isinstance(node.func.value, ast.Name)):
        return node.func.value.id
    return None


def runs_in(stmt: ast.stmt) -> set[str]:
    """The names whose execute/validate a top-level statement calls, as the loader reads a
    run: an expression or assignment of the call, or a `for` loop repeating it."""
    body = stmt.body if isinstance(stmt, ast.For) else [stmt]
    out = set()
    for s in body:
        value = s.value if isinstance(s, (ast.Expr, ast.Assign)) else None
        target = run_target(value) if value is not None else None
        if target is not None:
            out.add(target)
    return out


def excerpt(node: ast.AST) -> str:
    """The first line of `node` as source, cut to 80 characters (for messages)."""
    text = ast.unparse(node).splitlines()[0] if node is not None else ""
    return text if len(text) <= 80 else text[:77] + "..."


def extra_params(fn: ast.FunctionDef) -> list[ast.arg]:
    """A fusion function's parameters after the FusionDefinition."""
    return [*fn.args.args[1:], *fn.args.kwonlyargs]


def is_docstring(stmt: ast.stmt) -> bool:
    """A string literal standing alone as a statement."""
    return isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) and isinstance(
        stmt.value.value, str)


def inert(node: ast.expr) -> bool:
    """Only names and literals: what `fd.execute(...)` may be given (it is not run)."""
    if isinstance(node, (ast.Name, ast.Constant)):
        return True
    if isinstance(node, (ast.List, ast.Tuple)):
        return all(inert(e) for e in node.elts)
    return False


def inert_literal(node: ast.expr) -> bool:
    """A literal: a constant (a negative one too) or a list or tuple of them."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        node = node.operand
    if isinstance(node, ast.Constant):
        return True
    if isinstance(node, (ast.List, ast.Tuple)):
        return all(inert_literal(e) for e in node.elts)
    return False


def printable(node: ast.expr) -> bool:
    """What a skipped `print(...)` may hold: names, literals, f-strings, `out[0]`, `out[0].shape`."""
    if isinstance(node, (ast.Name, ast.Constant)):
        return True
    if isinstance(node, ast.JoinedStr):
        return all(printable(v) for v in node.values)
    if isinstance(node, ast.FormattedValue):
        return printable(node.value) and (node.format_spec is None or printable(node.format_spec))
    if isinstance(node, ast.Subscript):
        return printable(node.value) and isinstance(node.slice, ast.Constant)
    if isinstance(node, ast.Attribute):
        return printable(node.value)
    if isinstance(node, (ast.List, ast.Tuple)):
        return all(printable(e) for e in node.elts)
    return False


def with_parents(stmt: ast.stmt) -> Iterator[tuple[ast.AST, ast.AST | None, ast.AST | None]]:
    """Every node under `stmt` (in the order of the source) with its parent and grandparent."""
    todo: list[tuple[ast.AST, ast.AST | None, ast.AST | None]] = [(stmt, None, None)]
    while todo:
        node, parent, grand = todo.pop()
        yield node, parent, grand
        todo.extend((child, node, parent) for child in reversed(list(ast.iter_child_nodes(node))))

