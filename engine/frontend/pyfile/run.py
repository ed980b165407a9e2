"""The run and what may come with it: fd.execute(...) / fd.validate(...) (recognised, never
run), timing loops of them, seeds, prints and assert_close checks; after the run, the
repro's checking code, skipped unread unless it changes what the fusion is read from.
"""

from __future__ import annotations

import ast

from engine.errors import FusionFileError
from engine.frontend.definition import SkippedStatement
from engine.frontend.pyfile.imports import TORCH_MODULES
from engine.frontend.pyfile.syntax import (
    bound_names,
    excerpt,
    inert,
    inert_literal,
    is_docstring,
    printable,
    with_parents,
)
from engine.frontend.pyfile.vocab import FUSION_KINDS, INSPECT_METHODS, REPORT_METHODS, RUN_METHODS, is_int

# Top-level calls a repro makes before its inputs list that change no input's sizes: seeds.
_SEED_CALLS = ("manual_seed", "seed", "cuda.manual_seed", "cuda.manual_seed_all", "random.manual_seed")


class RunReader:
    """The loader's reading of the run and what follows it (a part of Loader)."""

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
                                        f"not {excerpt(inner)}")

    def top_expr(self, stmt: ast.Expr) -> None:
        if is_docstring(stmt):
            return
        if self.run_call(stmt.value) or self.check_call(stmt.value) or self.print_call(stmt.value):
            return
        if self.seed_call(stmt.value) or self.inputs_append(stmt.value):
            return
        v = stmt.value
        if (isinstance(v, ast.Call) and isinstance(v.func, ast.Name) and v.func.id in self.functions):
            raise self.error(stmt, f"call {v.func.id}(fd) inside `with FusionDefinition() as fd:`")
        raise self.error(stmt, f"statement is not allowed: {excerpt(stmt)}")

    def seed_call(self, node: ast.expr) -> bool:
        """`torch.manual_seed(0)` before the inputs: recognised and not run (the debugger
        makes its example inputs from its own seed; sizes do not depend on it)."""
        return (isinstance(node, ast.Call) and self.torch_path(node.func) in _SEED_CALLS
                and all(inert_literal(a) for a in [*node.args, *(k.value for k in node.keywords)]))

    def outputs_read(self, node: ast.expr) -> bool:
        """A read of what fd.execute returned or of the inputs: a name bound to one, an item
        by an integer, or a plain attribute of those (`out.shape`), never a call."""
        while True:
            if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant) \
                    and is_int(node.slice.value):
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
            return all(self.outputs_read(a) or self.report_call(a) or inert_literal(a) for a in args)
        if self.report_call(node):
            return True
        if self.torch_path(node.func) == "testing.assert_close":
            return all(self.outputs_read(a) or inert_literal(a) for a in args)
        return False

    def report_call(self, node: ast.expr) -> bool:
        """`fd.last_cuda_code()`, `fd.fusion_ir()`, ...: what a repro prints about its fusion."""
        return (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr in REPORT_METHODS and isinstance(node.func.value, ast.Name)
                and getattr(self.globals.get(node.func.value.id), "kind", None) == "fd"
                and all(inert_literal(a) for a in [*node.args, *(k.value for k in node.keywords)]))

    def torch_path(self, func: ast.expr) -> str | None:
        """`torch.testing.assert_close` -> "testing.assert_close" (torch imported as a module)."""
        parts: list[str] = []
        while isinstance(func, ast.Attribute):
            parts.append(func.attr)
            func = func.value
        if not isinstance(func, ast.Name):
            return None
        ref = self.globals.get(func.id)
        if ref is None or ref.kind != "module" or ref.value not in TORCH_MODULES:
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
            if not printable(arg):
                raise self.error(node, f"print(...) may only show names and literals; not {excerpt(arg)}")
        return True

    def run_call(self, node: ast.expr) -> bool:
        """`fd.execute(inputs)` / `fd.validate(...)`: recognised, not run. A literal list
        of inputs there (`fd.execute([input1, 2.0])`) gives the specs when no inputs list did."""
        if (isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant)
                and isinstance(node.slice.value, int)):
            node = node.value  # `fd.execute(inputs)[0]`
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr in RUN_METHODS and isinstance(node.func.value, ast.Name)):
            return False
        ref = self.globals.get(node.func.value.id)
        if ref is None or ref.kind != "fd" and not (ref.kind == "fusion" and ref.value is not None):
            return False
        given = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "inputs"), None)
        for arg in [*node.args, *(k.value for k in node.keywords)]:
            entries = arg is given and isinstance(arg, (ast.List, ast.Tuple))
            if not (inert(arg) or entries and all(inert(e) or self.is_spec_expr(e) or self.is_number_expr(e)
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
                    f"skipped, not evaluated (checking code after the run at line {self.ran_line}): {excerpt(stmt)}"))
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
        for name, whole in bound_names(stmt):
            if name == "*":
                return "a * import may rebind the names the fusion uses"
            if whole and self.held_name(name):
                return f"it rebinds {name!r}, which the loader reads"
            if not whole and (name in self.run_names or self.fusion_name(name)
                              or getattr(self.globals.get(name), "kind", None) in ("inputs", "spec")):
                return f"it changes {name!r}, which the fusion or its inputs are read from"
        for node, parent, grand in with_parents(stmt):
            if isinstance(node, ast.Name) and self.fusion_name(node.id):
                inspects = (isinstance(parent, ast.Attribute) and parent.attr in INSPECT_METHODS
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
        return ref is not None and (ref.kind in FUSION_KINDS or ref.kind == "module" and ref.value == "nvfuser")

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
