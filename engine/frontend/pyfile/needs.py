"""Which top-level statements the fusion needs: the rest are skipped, never evaluated.

A statement is read (and refused when the loader cannot read it) when it mentions the
fusion (a FusionDefinition or Fusion, a name bound to one, a fusion function or class, the
nvfuser module) or a name that a later read statement reads: a liveness analysis over
the module, run backwards from its end. What a statement reads is what it loads; a with
block or a call of a fusion function also reads the free names of the functions it calls
(`N` in `fd.define_tensor(shape=[N])`), and a file whose fusion is built from its one
fusion function when the module ends reads that function's free names there.

Statements after the run are the repro's checking code, decided by the loader as they
come; here they read something only when the loader reads them too: a run on a literal
list of inputs, or a use of the fusion beyond its run and report methods.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from engine.frontend.pyfile.syntax import (
    FUSION_CLASSES,
    free_names,
    loaded,
    mentioned,
    run_target,
    runs_in,
    stored,
    takes_fd,
)

_NVFUSER_MODULES = ("nvfuser", "nvfuser_direct")
# What checking code after the run may call on the fusion without being read (the loader's
# _INSPECT_METHODS, spelled here to keep this module free of the loader).
INSPECT_METHODS = frozenset({"execute", "validate", "last_cuda_code", "fusion_ir", "last_scheduled_fusion_ir",
                             "print_ir", "last_kernel_ir", "user_schedule_ir", "cuda_code_for",
                             "scheduled_fusion_ir_for", "last_repro_script", "repro_script_for", "profile",
                             "debug_output", "id", "print_kernel"})


@dataclass
class Plan:
    """reasons[k]: why top-level statement k must be read (it mentions the fusion, or a name
    a later read statement reads), None when the fusion does not need it; fusion_names: the
    names that stand for the fusion."""

    reasons: list[str | None]
    fusion_names: frozenset[str]
    mentions: list[set[str]]  # syntax.mentioned of each statement, worked out once

    def needed(self, k: int) -> str | None:
        return self.reasons[k] if k < len(self.reasons) else None


def plan(stmts: list[ast.stmt]) -> Plan:
    """The plan of a module's (normalised) top-level statements, in one backward pass: each
    statement's names are looked at a bounded number of times, whatever the file's size."""
    fusion = _fusion_names(stmts)
    functions = {s.name: s for s in stmts if isinstance(s, ast.FunctionDef) and s.name in fusion}
    classes = {s.name: s for s in stmts if isinstance(s, ast.ClassDef) and s.name in fusion}
    run = next((k for k, s in enumerate(stmts) if runs_in(s) & fusion), len(stmts))
    called = _Called(functions, classes)

    def reads(stmt: ast.stmt) -> set[str]:
        """What reading `stmt` reads: its loads (a block's own stores aside) and the free
        names of the fusion functions and classes it calls."""
        if isinstance(stmt, (ast.FunctionDef, ast.ClassDef, ast.Import, ast.ImportFrom)):
            return mentioned(stmt) - {getattr(stmt, "name", "")}  # what its def line evaluates
        out = loaded(stmt)
        if isinstance(stmt, (ast.With, ast.For, ast.If, ast.While, ast.Try)):
            out -= stored(stmt.body)
        return out | called(out)

    mentions = [mentioned(s) for s in stmts]
    # At the end: a fusion built from its function or class when no statement builds one.
    builders = FUSION_CLASSES | set(classes)
    builds = any(isinstance(s, (ast.With, ast.Assign)) and m & builders for s, m in zip(stmts, mentions))
    live: set[str] = set() if builds else called(set(functions) | set(classes))
    live.add("inputs")  # the example inputs, run or not
    reasons: list[str | None] = [None] * len(stmts)
    for k in range(len(stmts) - 1, -1, -1):
        stmt = stmts[k]
        reasons[k] = _reason(stmt, mentions[k], fusion, live)
        if k > run:
            live |= _after_run_reads(stmt, fusion)
        elif reasons[k] is not None:
            if isinstance(stmt, (ast.Assign, ast.Import, ast.ImportFrom, ast.FunctionDef, ast.ClassDef)):
                live -= stored([stmt])
            live |= reads(stmt)
    return Plan(reasons, frozenset(fusion), mentions)


def _reason(stmt: ast.stmt, touched: set[str], fusion: set[str], live: set[str]) -> str | None:
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)) and takes_fd(stmt):
        return f"it defines the fusion function {stmt.name!r}"
    hit = sorted(touched & fusion)
    if hit:
        return f"it uses {hit[0]!r}"
    hit = sorted(touched & live)
    return f"the fusion reads {hit[0]!r}" if hit else None


def _fusion_names(stmts: list[ast.stmt]) -> set[str]:
    """Names that stand for the fusion: FusionDefinition and Fusion (as imported or
    aliased), nvfuser modules, fusion functions, FusionDefinition subclasses, and names
    bound to a fusion (`fd = FusionDefinition()`, `with ... as fd`)."""
    names = set(FUSION_CLASSES)
    for _ in range(2):  # a name bound from another: twice reaches the common chains
        for stmt in stmts:
            if isinstance(stmt, ast.Import):
                names |= {a.asname or a.name.split(".")[0] for a in stmt.names
                          if a.name.split(".")[0] in _NVFUSER_MODULES or a.name == "torch._C._nvfuser"}
            elif isinstance(stmt, ast.ImportFrom):
                names |= {a.asname or a.name for a in stmt.names if a.name in FUSION_CLASSES}
            elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)) and takes_fd(stmt):
                names.add(stmt.name)
            elif isinstance(stmt, ast.ClassDef) and {n.id for b in stmt.bases for n in ast.walk(b)
                                                     if isinstance(n, ast.Name)} & names:
                names.add(stmt.name)
            elif isinstance(stmt, ast.Assign) and loaded(stmt.value) & names:
                if not run_target(stmt.value):
                    names |= {t.id for t in stmt.targets if isinstance(t, ast.Name)}
            elif isinstance(stmt, ast.With):
                for item in stmt.items:
                    if loaded(item.context_expr) & names and isinstance(item.optional_vars, ast.Name):
                        names.add(item.optional_vars.id)
    return names


class _Called:
    """The free names of the fusion functions and classes among some names, and of those they
    call in turn. Each function's names are given once per plan: a fusion function is called
    once (a second fusion is refused), and this bounds the work on any file."""

    def __init__(self, functions: dict[str, ast.FunctionDef], classes: dict[str, ast.ClassDef]) -> None:
        self.functions = functions
        self.classes = classes
        self.free: dict[str, set[str]] = {}
        self.seen: set[str] = set()

    def __call__(self, names: set[str]) -> set[str]:
        out: set[str] = set()
        todo = [n for n in names if n in self.functions or n in self.classes]
        seen = self.seen
        while todo:
            name = todo.pop()
            if name in seen:
                continue
            seen.add(name)
            free = self._free(name)
            out |= free
            todo += [n for n in free if n in self.functions or n in self.classes]
        return out

    def _free(self, name: str) -> set[str]:
        if name not in self.free:
            if name in self.functions:
                self.free[name] = free_names(self.functions[name])
            else:
                self.free[name] = set().union(*(free_names(m) for m in self.classes[name].body
                                                if isinstance(m, ast.FunctionDef)))
        return self.free[name]


def _after_run_reads(stmt: ast.stmt, fusion: set[str]) -> set[str]:
    """What a statement after the run reads when the loader reads it: a run on a literal
    list (it gives the inputs) or a use of the fusion other than its inspect methods."""
    value = stmt.value if isinstance(stmt, (ast.Expr, ast.Assign)) else None
    if value is not None and run_target(value) in fusion:
        call = value.value if isinstance(value, ast.Subscript) else value
        given = call.args[0] if call.args else None  # type: ignore[attr-defined]
        return loaded(given) if isinstance(given, (ast.List, ast.Tuple)) else set()
    for node in ast.walk(stmt):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in fusion:
            if node.attr not in INSPECT_METHODS:
                return loaded(stmt)
    return set()
