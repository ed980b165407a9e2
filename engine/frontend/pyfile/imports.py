"""A fusion file's imports: what each binds; none of them runs.

torch (and torch.testing, and `import torch.X`, which binds torch), nvfuser (also as
nvfuser_direct or the 2022 `torch._C._nvfuser`) and math are the modules the loader
reads: their names mean what they mean in Python. Another module's import is recorded as
a skipped statement and binds opaque names: using one where the loader reads it is
refused naming the line and the name. FusionDefinition and Fusion imported from any
module (nvFuser's tests import them from their own helpers) are nvFuser's. An import
that would rebind a name the loader reads (`import os as torch`), and `from X import *`
of another module, are refused.
"""

from __future__ import annotations

import ast
from typing import Any, Protocol

from engine.errors import FusionFileError
from engine.frontend.definition import SkippedStatement
from engine.frontend.input_spec import TORCH_MAKERS
from engine.frontend.pyfile import pure
from engine.frontend.pyfile.refs import Ref
from engine.frontend.pyfile.shape import lines
from engine.frontend.pyfile.syntax import excerpt

NVFUSER_MODULES = ("nvfuser", "nvfuser_direct")
# Where the frontend lived inside PyTorch in 2022 (`from torch._C._nvfuser import Fusion,
# FusionDefinition, DataType`); repros of that time import it from there.
TORCH_NVFUSER_MODULE = "torch._C._nvfuser"
TORCH_MODULES = ("torch", "torch.testing")
# FusionDefinition and Fusion, read as nvFuser's from whatever module a test imports them.
_FUSION_CLASS_NAMES = ("FusionDefinition", "Fusion")


class Reader(Protocol):
    """What the loader offers the import readers."""

    globals: dict[str, Ref]
    skipped: list[SkippedStatement]

    def error(self, node: ast.AST | None, message: str) -> FusionFileError: ...

    def held_name(self, name: str) -> bool: ...

    def nvfuser_name(self, name: str) -> Ref | None: ...


def read_import(reader: Reader, stmt: ast.Import) -> None:
    unread = []
    for alias in stmt.names:
        bound = alias.asname or alias.name.split(".")[0]
        if alias.name in TORCH_MODULES or (alias.name.startswith("torch.") and not alias.asname
                                           and alias.name != TORCH_NVFUSER_MODULE):
            # `import torch.testing` binds `torch`, as Python does; `as tt` binds the submodule.
            reader.globals[bound] = Ref("module", alias.name if alias.asname else "torch")
        elif alias.name.split(".")[0] in NVFUSER_MODULES or alias.name == TORCH_NVFUSER_MODULE:
            if alias.name == TORCH_NVFUSER_MODULE and not alias.asname:
                raise reader.error(stmt, f"import {alias.name} as a name (`import {alias.name} as nvfuser`)")
            reader.globals[bound] = Ref("module", "nvfuser")
        elif alias.name == "math":
            reader.globals[bound] = Ref("module", "math")
        else:
            _unread(reader, stmt, bound, f"import {alias.name}")
            unread.append(alias.name)
    if unread:
        _record(reader, stmt, unread)


def read_import_from(reader: Reader, stmt: ast.ImportFrom) -> None:
    module = stmt.module or ""
    dots = "." * stmt.level
    known_module = not stmt.level and (module.split(".")[0] in NVFUSER_MODULES
                                       or module in (TORCH_NVFUSER_MODULE, "math", *TORCH_MODULES))
    unread = []
    for alias in stmt.names:
        bound = alias.asname or alias.name
        dotted = f"{module.removeprefix('torch').lstrip('.')}.{alias.name}".lstrip(".")
        ref: Any = None
        if alias.name == "*":
            if not known_module:  # it could bind any name, torch or FusionDefinition too
                raise reader.error(stmt, f"from {dots}{module} import * is not allowed: it may rebind the names "
                                         "the fusion uses (import the names one by one)")
            continue  # nvfuser's: the names we know are always available
        if not stmt.level and module in TORCH_MODULES and dotted in TORCH_MAKERS:
            ref = Ref("torch_fn", TORCH_MAKERS[dotted])  # `from torch import randn`: input makers
        elif not stmt.level and module == "math" and alias.name in pure.FUNCTIONS:
            ref = Ref("math_fn", alias.name)
        elif not stmt.level and module == "math" and alias.name in pure.CONSTANTS:
            ref = Ref("const", pure.CONSTANTS[alias.name])
        elif known_module or alias.name in _FUSION_CLASS_NAMES:
            # nvFuser's names, and FusionDefinition / Fusion from a test's own module (`from
            # direct_fusion_definition import FusionDefinition`); other nvfuser names bind nothing.
            ref = reader.nvfuser_name(alias.name)
            if ref is None and module.split(".")[0] in (*NVFUSER_MODULES, TORCH_NVFUSER_MODULE):
                continue
        if ref is None:
            _unread(reader, stmt, bound, f"from {dots}{module} import {alias.name}")
            unread.append(f"{dots}{module}.{alias.name}" if module else f"{dots}{alias.name}")
            continue
        reader.globals[bound] = ref
    if unread:
        _record(reader, stmt, unread)


def _unread(reader: Reader, stmt: ast.stmt, bound: str, what: str) -> None:
    """`bound`, from an import the loader does not read: opaque, unless it would rebind a name
    the loader reads (refused)."""
    if reader.held_name(bound):
        raise reader.error(stmt, f"{what} is not allowed: only torch, nvfuser and math are read, and it "
                                 f"would rebind {bound!r}")
    reader.globals[bound] = Ref("opaque", f"from `{what}` at line {stmt.lineno}, which is not read (only torch, "
                                          "nvfuser and math are)")


def _record(reader: Reader, stmt: ast.stmt, modules: list[str]) -> None:
    first, last = lines(stmt)
    reader.skipped.append(SkippedStatement(first, last, f"skipped, not imported (only torch, nvfuser and math are "
                                                        f"read; {', '.join(modules)} is not): {excerpt(stmt)}"))
