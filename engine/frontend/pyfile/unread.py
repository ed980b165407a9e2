"""What a fusion file leaves unread, before its run: which top-level statements are skipped
(engine.frontend.pyfile.needs decides what the fusion needs), how each is recorded, and
the opaque names that stand for what was not read, refused naming the line where the
fusion uses one."""

from __future__ import annotations

import ast
from typing import Any, Protocol

from engine.errors import FusionFileError
from engine.frontend.definition import SkippedStatement
from engine.frontend.pyfile.needs import Plan
from engine.frontend.pyfile.refs import Ref
from engine.frontend.pyfile.shape import lines
from engine.frontend.pyfile.syntax import bound_names, excerpt, is_docstring, loaded, stored

# A reference to the inputs or the fusion that a statement stores into (`inputs[0] = x`).
_HELD_CONTAINERS = ("inputs", "spec", "fd", "fusion")


class Reader(Protocol):
    """What the loader offers: its plan, top-level names and records."""

    plan: Plan
    globals: dict[str, Ref]
    skipped: list[SkippedStatement]

    def error(self, node: ast.AST | None, message: str) -> FusionFileError: ...

    def held_name(self, name: str) -> bool: ...

    def fusion_name(self, name: str) -> bool: ...


def skip_unneeded(reader: Reader, k: int, stmt: ast.stmt) -> bool:
    """Skip (and record) top-level statement k, before the run, when the fusion does not need
    it; False when it is to be read."""
    bound = list(bound_names(stmt))
    why = not_needed(reader, k, stmt, bound)
    if why is None:
        return False
    skip(reader, stmt, why, bound=bound)
    return True


def not_needed(reader: Reader, k: int, stmt: ast.stmt, bound: list[tuple[str, bool]]) -> str | None:
    """Why top-level statement k, before the run, is skipped unread; None when it is read: it
    mentions the fusion or a name the fusion (or its inputs) reads later (the plan), rebinds
    a name the loader holds or stores into one (`bound`: its bound_names), or is an import
    (read or skipped by the import readers themselves), a docstring or `pass`."""
    if isinstance(stmt, (ast.Import, ast.ImportFrom, ast.Pass)) or is_docstring(stmt):
        return None
    if reader.plan.needed(k) is not None:
        return None
    for name, whole in bound:
        held = reader.globals.get(name)
        if name == "*" or whole and reader.held_name(name) or not whole and held is not None \
                and held.kind in _HELD_CONTAINERS:
            return None
    if any(reader.fusion_name(n) for n in reader.plan.mentions[k]):
        return None
    if isinstance(stmt, ast.FunctionDef):
        return "a function that does not take the FusionDefinition, not used by the fusion"
    if isinstance(stmt, ast.ClassDef):
        return "a class that is not a FusionDefinition, not used by the fusion"
    return "not used by the fusion"


def skip(reader: Reader, stmt: ast.stmt, why: str, verb: str = "evaluated",
         bound: list[tuple[str, bool]] | None = None) -> None:
    """Record `stmt` as skipped; the module names it binds stand for nothing the loader can
    read (a later use names this line)."""
    first, last = lines(stmt)
    reader.skipped.append(SkippedStatement(first, last, f"skipped, not {verb} ({why}): {excerpt(stmt)}"))
    for name, whole in bound_names(stmt) if bound is None else bound:
        if whole and name != "*" and (name not in reader.globals or reader.globals[name].kind == "opaque"):
            reader.globals[name] = Ref("opaque", f"bound at line {first} by a statement that was skipped, not "
                                                 f"evaluated ({why})")


def note(skipped: list[SkippedStatement]) -> str:
    """The first skipped statements, for a refusal of a file in which nothing was read."""
    if not skipped:
        return ""
    shown = "; ".join(str(s) for s in skipped[:3])
    more = f"; and {len(skipped) - 3} more" if len(skipped) > 3 else ""
    return f"; skipped unread: {shown}{more}"


def check_opaque(reader: Reader, stmt: ast.stmt, env: dict[str, Any] | None = None) -> None:
    """Refuse, naming the line and the name, a statement about to be read that uses a name the
    loader gave no meaning: from another module's import, a skipped statement, a helper
    function, or a read test function's parameter. `env`: the names a fusion body bound."""
    if isinstance(stmt, (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.ClassDef)):
        return
    if env is None and isinstance(stmt, ast.With):
        return  # its body is checked statement by statement, against the block's own names
    own = stored([stmt]) if isinstance(stmt, (ast.With, ast.For)) else set()
    for name in sorted(loaded(stmt) - own - set(env or ())):
        ref = reader.globals.get(name)
        if ref is not None and ref.kind == "opaque":
            node = next(n for n in ast.walk(stmt) if isinstance(n, ast.Name) and n.id == name)
            raise reader.error(node, f"{name!r} is {ref.value}; the fusion cannot use it")
