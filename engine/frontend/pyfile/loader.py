"""The fusion-file loader: reads a file (load_fusion, loads_fusion), parses and checks its
tree, and reads its top-level statements in order (engine.frontend.pyread documents the
format).

Loader holds the state of one read (the top-level names, the fusion, the inputs list, the
run, what was skipped); its methods come from one module per job: toplevel (statements
before the run), run (the run call and the checking code after it), inputs (the inputs
list), makers (the torch calls that make an entry), spec_ops (what an entry's methods and
operators do to it) and values (literal values and names). A fusion body is read by
engine.frontend.pyfile.body.
"""

from __future__ import annotations

import ast
import os
import stat

from engine.errors import FusionDefinitionError, FusionFileError, ScheduleError
from engine.frontend.definition import FusionDefinition, SkippedStatement
from engine.frontend.input_spec import InputSpec
from engine.frontend.pyfile import unread
from engine.frontend.pyfile.body import Body
from engine.frontend.pyfile.inputs import InputsReader
from engine.frontend.pyfile.makers import Makers
from engine.frontend.pyfile.needs import Plan, plan
from engine.frontend.pyfile.refs import Ref
from engine.frontend.pyfile.run import RunReader
from engine.frontend.pyfile.shape import module_shape
from engine.frontend.pyfile.spec_ops import SpecChanges
from engine.frontend.pyfile.syntax import excerpt, extra_params
from engine.frontend.pyfile.toplevel import TopLevel
from engine.frontend.pyfile.values import Values
from engine.frontend.pyfile.vocab import enum_namespaces

# A fusion file is a few KiB of text; anything far larger is refused before parsing.
MAX_FILE_BYTES = 16 << 20

# How deeply expressions may nest. Real repros nest a few levels; reading recurses per
# level, so a cap (with the line) replaces a RecursionError deep inside the reader.
MAX_DEPTH = 100


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
    return Loader(text, filename).load()


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


class Loader(TopLevel, RunReader, InputsReader, SpecChanges, Makers, Values):
    """Reads one fusion file's text into a FusionDefinition (load())."""

    def __init__(self, text: str, filename: str) -> None:
        self.text = text
        self.filename = filename
        self.enums = enum_namespaces()
        self.globals: dict[str, Ref] = {}
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
        self.bodies: dict[int, Body] = {}

    def error(self, node: ast.AST | None, message: str) -> FusionFileError:
        line = getattr(node, "lineno", None) if node is not None else None
        return FusionFileError(message, path=self.filename, line=line)

    def load(self) -> FusionDefinition:
        tree = self._parse()
        shape = module_shape(tree)
        self._check_tree(tree, shape.main_guard_names)
        body = shape.body
        self.tree = ast.Module(body=body, type_ignores=[])
        self.skipped = list(shape.skipped)
        for name, why in shape.params.items():
            self.globals[name] = Ref("opaque", why)
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
                        raise self.error(note, f"annotation {excerpt(note)} is not allowed (a name only)")
            todo.extend((child, depth + 1, line) for child in ast.iter_child_nodes(node))

    def _implicit_fusion(self) -> None:
        # A pasted fusion function (or subclass) with no block that uses it: build it.
        assert self.tree is not None
        if len(self.functions) == 1 and not self.classes:
            (name, fn), = self.functions.items()
            missing = [p.arg for p in extra_params(fn) if p.arg not in self.defaults(fn)]
            if missing:
                raise self.error(fn, f"fusion function {name!r} takes {', '.join(missing)}: call it in "
                                     f"`with FusionDefinition() as fd: {name}(fd, ...)`")
            fd = self.new_fd(fn)
            self.run_function(fn, fd, fn)
        elif len(self.classes) == 1 and not self.functions:
            (name, methods), = self.classes.items()
            node = next(s for s in self.tree.body if isinstance(s, ast.ClassDef) and s.name == name)
            self.instantiate(name, node)
