"""Plain Python a fusion body may run on the values it holds: list methods, a few pure
builtins (list, len, zip, filter, map, ...), comprehensions and generator expressions, all
bounded (MAX_ITEMS items, the body's loop steps).
"""

from __future__ import annotations

import ast
import contextlib
import enum
import itertools
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from engine.frontend.pyfile.syntax import excerpt
from engine.frontend.pyfile.vocab import MAX_ITEMS, is_int, is_number

# Methods of a plain list the body bound (`selected.extend([c1, c5])`): they change the
# loader's own list, as Python would; a tuple has the two that only read.
LIST_METHODS = ("append", "extend", "insert", "pop", "remove", "index", "count")

TUPLE_METHODS = ("index", "count")

# Builtins a fusion body may call, by (fewest, most positional arguments (None: any),
# keywords): pure functions of the plain values the loader holds, run by the loader.
BUILTINS: dict[str, tuple[int, int | None, tuple[str, ...]]] = {
    "list": (0, 1, ()), "tuple": (0, 1, ()), "len": (1, 1, ()), "range": (1, 3, ()),
    "enumerate": (1, 1, ("start",)), "zip": (0, None, ()), "reversed": (1, 1, ()),
    "sorted": (1, 1, ("reverse",)), "min": (1, None, ()), "max": (1, None, ()), "sum": (1, 2, ("start",)),
    "any": (1, 1, ()), "all": (1, 1, ()), "filter": (2, 2, ()), "map": (2, None, ()),
    # abs(T): nvFuser's Tensor and Scalar define __abs__ (fd.ops.abs), as they do __neg__.
    "abs": (1, 1, ()),
}


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


# The iterators those builtins and generator expressions make: a body may hold them and
# give them to the builtins and loops, never to a frontend call.
ITERATORS = (zip, map, filter, enumerate, reversed, type(reversed([])), type(reversed(range(0))), _Lazy)

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


def _arity(fewest: int, most: int | None) -> str:
    """`1 argument`, `0 to 2 arguments`, `at least 2 arguments`: for messages."""
    count = (f"at least {fewest}" if most is None else str(fewest) if fewest == most
             else f"{fewest} to {most}")
    return f"{count} argument{'' if count in ('1', 'at least 1') else 's'}"


def is_iterable(v: Any) -> bool:
    """What a loop, a comprehension or a builtin of a fusion body may run over."""
    return isinstance(v, (list, tuple, range, *ITERATORS))


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


class PlainPython:
    """A fusion body's plain Python on its own values (a part of Body)."""

    def list_method(self, node: ast.Call, name: str) -> Any:
        """`selected.extend([c1, c5])`, `selected.append(rf)`, `tvs.index(t)`, ... on a list (or,
        for index/count, a tuple) the body bound: Python's method on the loader's value, so the
        frontend calls below see the change. Items compare as list.index does: numbers and
        strings by value, tensors and scalars by identity (their == would build an op)."""
        func = node.func
        assert isinstance(func, ast.Attribute)
        seq = self.loader.bound(func.value, self.env, self.fd_names, self.attrs)
        where = f"{excerpt(func)}()"
        if node.keywords:
            raise self.error(node, f"{where} takes no keyword arguments")
        args, _ = self.arguments(node)
        most = {"append": 1, "extend": 1, "insert": 2, "pop": 1, "remove": 1, "index": 3, "count": 1}[name]
        fewest = {"insert": 2, "pop": 0}.get(name, 1)
        if not fewest <= len(args) <= most:
            raise self.error(node, f"{where} takes {_arity(fewest, most)}, got {len(args)}")
        if name in ("insert", "pop", "index") and not all(is_int(a) for a in
                                                          (args[:1] if name != "index" else args[1:])):
            raise self.error(node, f"{where}: positions are integers: {excerpt(node)}")
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
        if len(seq) > MAX_ITEMS:
            raise self.error(node, f"{where}: a list in a fusion body holds at most {MAX_ITEMS} items")
        return None

    def find(self, node: ast.Call, seq: Sequence[Any], item: Any, start: int = 0, stop: int | None = None) -> int:
        """list.index(item, start, stop) with _same for ==."""
        lo, hi, _ = slice(start, stop).indices(len(seq))
        for k in range(lo, hi):
            if _same(seq[k], item):
                return k
        raise self.error(node, f"{excerpt(node)}: {excerpt(node.args[0])} is not in the list")

    def items(self, node: ast.AST, v: Any) -> list[Any]:
        """The items of a list, tuple, range or iterator the body holds (bounded)."""
        if not is_iterable(v):
            raise self.error(node, f"{excerpt(node)}: expected a list, a tuple, range(...) or an iterator, "
                                   f"got {type(v).__name__}")
        out = list(itertools.islice(v, MAX_ITEMS + 1))
        if len(out) > MAX_ITEMS:
            raise self.error(node, f"{excerpt(node)}: more than {MAX_ITEMS} items")
        return out

    def truth(self, node: ast.AST, v: Any) -> bool:
        """Python's truth of a plain value; an IR value's truth is refused (no nvFuser meaning)."""
        if not isinstance(v, _TRUTH_TYPES):
            raise self.error(node, f"{excerpt(node)}: a condition must be a bool or a number, "
                                   f"got {type(v).__name__}")
        return bool(v)

    def builtin(self, node: ast.Call, name: str) -> Any:
        """`list(filter(self.sched.is_reduction, self.sched.tensors()))`, `len(tvs)`, `zip(a, b)`,
        ...: one of BUILTINS on values the body holds. map() and filter() take a function the
        loader knows (see function())."""
        if any(isinstance(a, ast.Starred) for a in node.args) or any(k.arg is None for k in node.keywords):
            raise self.error(node, "* and ** arguments are not allowed")
        unknown = [k.arg for k in node.keywords if k.arg not in BUILTINS[name][2]]
        if unknown:  # before reading it: `sorted(tvs, key=...)` is refused for the key, not its value
            raise self.error(node, f"{name}() takes no keyword {unknown[0]!r} here: {excerpt(node)}")
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
                return _Function(excerpt(node), lambda *a: self.counted(node, self.invoke, node, node, target,
                                                                        name, list(a), {}))
        raise self.error(node, f"map() and filter() take {self.fd_name}.ops.X, {self.fd_name}.sched.X, "
                               f"{self.fd_name}.define_* or a builtin, not {excerpt(node)}")

    def counted(self, node: ast.AST, fn: Callable[..., Any], *args: Any) -> Any:
        self.step(node)
        return fn(*args)

    def apply_builtin(self, node: ast.Call | ast.Name, name: str, args: list[Any], kwargs: dict[str, Any]) -> Any:
        fewest, most, keywords = BUILTINS[name]
        if not fewest <= len(args) <= (len(args) if most is None else most) or any(k not in keywords
                                                                                   for k in kwargs):
            raise self.error(node, f"{name}() takes {_arity(fewest, most)}"
                                   f"{' and ' + ', '.join(keywords) + '=' if keywords else ''}: {excerpt(node)}")
        if name in ("list", "tuple"):
            items = self.items(node, args[0]) if args else []
            return items if name == "list" else tuple(items)
        if name == "len":
            if not isinstance(args[0], (list, tuple, range, dict, str)):
                raise self.error(node, f"len() of a {type(args[0]).__name__}: {excerpt(node)}")
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
                raise self.error(node, f"filter() takes a function the loader knows: {excerpt(node)}")
            return filter(lambda x: self.truth(node, x if fn is None else fn(x)), self.iterable(node, args[1]))
        if name == "map":
            if not isinstance(args[0], _Function):
                raise self.error(node, f"map() takes a function the loader knows: {excerpt(node)}")
            return map(args[0], *(self.iterable(node, a) for a in args[1:]))
        if name == "enumerate":
            start = kwargs.get("start", 0)
            if not is_int(start):
                raise self.error(node, f"enumerate(start=...) takes an integer: {excerpt(node)}")
            return enumerate(self.iterable(node, args[0]), start)
        if name == "zip":
            return zip(*(self.iterable(node, a) for a in args))
        if name == "abs":
            return abs(args[0]) if is_number(args[0]) else self.apply_op(node, "abs", args[0])
        # reversed: a sequence, as Python requires
        if not isinstance(args[0], (list, tuple, range)):
            raise self.error(node, f"reversed() takes a list, a tuple or range(...): {excerpt(node)}")
        return reversed(args[0])

    def iterable(self, node: ast.AST, v: Any) -> Any:
        if not is_iterable(v):
            raise self.error(node, f"{excerpt(node)}: expected a list, a tuple, range(...) or an iterator, "
                                   f"got {type(v).__name__}")
        return v

    def range(self, node: ast.AST, bounds: list[Any]) -> range:
        if not all(is_int(b) for b in bounds):
            raise self.error(node, f"range() takes integers: {excerpt(node)}")
        if len(bounds) == 3 and bounds[2] == 0:
            raise self.error(node, f"range() step must not be zero: {excerpt(node)}")
        r = range(*bounds)
        if (r.stop - r.start) // r.step > MAX_ITEMS:  # not len(r): past sys.maxsize it raises
            raise self.error(node, f"{excerpt(node)} runs more than {MAX_ITEMS} times")
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
                                   f"{excerpt(node)}")
        if name == "sum":
            try:
                return self.loader.int64(node, sum(items, start))
            except OverflowError:
                raise self.error(node, f"{excerpt(node)} overflows") from None
        if name == "sorted":
            reverse = kwargs.get("reverse", False)
            if not isinstance(reverse, bool):
                raise self.error(node, f"sorted(reverse=...) takes a bool: {excerpt(node)}")
            return sorted(items, reverse=reverse)
        if not items:
            raise self.error(node, f"{name}() of an empty sequence: {excerpt(node)}")
        return min(items) if name == "min" else max(items)

    def comprehension(self, node: ast.ListComp | ast.GeneratorExp) -> Any:
        """`[self.sched.rfactor(t, dims=[-1]) for t in reductions]`: the element is read once per
        item as Python runs it (a generator expression lazily, when consumed), each item a loop
        step; the loop names are the comprehension's own."""
        for gen in node.generators:
            if gen.is_async or not all(isinstance(n, (ast.Name, ast.Tuple, ast.Store))
                                       for n in ast.walk(gen.target)):
                raise self.error(node, f"only `for NAME in ...` comprehensions are allowed: {excerpt(node)}")
        names = {n.id for gen in node.generators for n in ast.walk(gen.target) if isinstance(n, ast.Name)}
        first = self.iterable(node, self.value(node.generators[0].iter))  # at once, as Python does
        items = self.generate(node, 0, first, names, {})
        if isinstance(node, ast.ListComp):
            return list(items)
        return _Lazy(items, lambda: self.error(node, f"a generator expression reads itself: {excerpt(node)}"))

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
