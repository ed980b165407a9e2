"""Fusion: the graph of TensorViews and the ops between them."""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any

from engine.dtypes import DataType
from engine.errors import FusionDefinitionError
from engine.ir.base import Expr, Val
from engine.ir.graph_copy import copy_value
from engine.ir.printer import fusion_listing, kernel_math
from engine.ir.scalar import Scalar
from engine.ir.tensorview_base import MemoryType, TensorViewBase

if TYPE_CHECKING:
    from engine.ir.tensorview import TensorView

# Checks every expr passes as it registers, before it is linked into the graph; a
# check refuses an expr by raising FusionDefinitionError. They enforce rules about
# who may consume a value whatever module builds the consumer (engine.ops.quantize
# adds one: only the grouped matmul may read the layout op's output).
EXPR_CHECKS: list[Callable[[Expr], None]] = []


class Fusion:
    def __init__(self) -> None:
        self.inputs: list[Val] = []
        self.outputs: list[Val] = []
        self.all_exprs: list[Expr] = []
        self.all_vals: list[Val] = []
        self._counters = {"tv": 0, "id": 0, "scalar": 0, "expr": 0}
        self._zero: Scalar | None = None
        # exprs() is asked for constantly while scheduling (uses_of, consumers_of); it is
        # kept until the graph changes. Every edit goes through a method below, which
        # bumps the version.
        self._version = 0
        self._exprs_cache: tuple[int, list[Expr], set[int]] | None = None
        self._vals_cache: tuple[int, list[Val]] | None = None
        # (output, input) pairs a composite op wants written back into an input (batch_norm's
        # running stats); the FusionDefinition takes them as aliased outputs.
        self.queued_aliases: list[tuple[Val, Val]] = []
        # (extent, requested size, where) of iteration axes an op was asked to give a size it
        # may not have: broadcast_in_dim of an input-sized axis to a given size. Checked once
        # sizes are bound (reference.check_extents): nvFuser's expand keeps such an axis.
        self.extent_checks: list[tuple[Scalar, Scalar, str]] = []

    def __getstate__(self) -> dict:
        # A copy (clone, pickling) recomputes the order: the cache holds ids of these exprs.
        state = dict(self.__dict__)
        state["_exprs_cache"] = None
        state["_vals_cache"] = None
        state.pop("_tensors_cache", None)
        state.pop("_consumers", None)  # engine.ir.logical_map.consumers_of's
        state.pop("ids_of", None)
        return state

    def __deepcopy__(self, memo: dict[int, Any]) -> Fusion:
        # deepcopy's reduce protocol would dispatch per list item; the nodes copy themselves
        # (graph_copy), field by field as deepcopy would.
        new = object.__new__(type(self))
        memo[id(self)] = new
        owner = self.__dict__.get("ids_of")
        if owner is not None:
            # A segmenter cut that shares the complete fusion's domains (segment.cut.
            # shareable_domains): their ids name that fusion as theirs. The copy's ids are
            # its own, as a copy of an unshared cut's would be.
            memo.setdefault(id(owner), new)
        fields = new.__dict__
        for k, v in self.__getstate__().items():
            fields[k] = copy_value(v, memo)
        return new

    def changed(self) -> None:
        """The graph was edited (operands, outputs, exprs): forget the cached order."""
        self._version += 1

    @property
    def version(self) -> int:
        """Counts the graph's edits: a result derived from the graph stays valid while it holds."""
        return self._version

    # ---- naming (nvFuser numbers each kind in creation order) ------------------
    def _next(self, kind: str) -> int:
        n = self._counters[kind]
        self._counters[kind] = n + 1
        return n

    def new_tv_name(self) -> int:
        return self._next("tv")

    def new_id_name(self) -> int:
        return self._next("id")

    def new_scalar_name(self) -> int:
        return self._next("scalar")

    def new_symbol(self, dtype: DataType = DataType.Index) -> Scalar:
        """A free scalar (an extent or a scalar input), named i0, i2, ..."""
        s = Scalar(dtype, name=self.new_scalar_name())
        self.all_vals.append(s)
        return s

    def zero_val(self) -> Scalar:
        # nvFuser creates its zero lazily and gives it a name, which is why a 2-D
        # symbolic input prints its extents as i0 and i2.
        if self._zero is None:
            self._zero = Scalar(DataType.Index, 0, name=self.new_scalar_name())
        return self._zero

    # ---- graph -----------------------------------------------------------------
    def register_val(self, val: Val) -> None:
        self.all_vals.append(val)

    def register_expr(self, expr: Expr) -> int:
        for check in EXPR_CHECKS:
            check(expr)
        for out in expr.outputs:
            if out.definition is not None and out.definition is not expr:
                raise FusionDefinitionError(f"{out} already has a definition")
            out.definition = expr
        for inp in expr.inputs:
            inp.uses.append(expr)
        self.all_exprs.append(expr)
        self.changed()
        return self._next("expr")

    def add_input(self, val: Val) -> None:
        if val.definition is not None:
            raise FusionDefinitionError(f"{_short(val)} is produced by an op; it cannot be an input")
        if val in self.inputs:
            raise FusionDefinitionError(f"{_short(val)} is already an input")
        self.inputs.append(val)
        self.changed()
        _set_global(val)

    def add_output(self, val: Val) -> None:
        if val in self.inputs and not isinstance(val, Scalar):
            # nvFuser allows an input to be an output (an alias); keep it simple and allowed.
            pass
        self.outputs.append(val)
        self.changed()
        _set_global(val)

    def queue_alias(self, output: Val, input_: Val) -> None:
        """Ask for `output` to be written into the fusion input `input_` (see queued_aliases)."""
        if input_ not in self.inputs:
            raise FusionDefinitionError(f"{_short(input_)} is not a fusion input: nothing can be written back into it")
        self.queued_aliases.append((output, input_))

    def exprs(self) -> list[Expr]:
        """Exprs the outputs depend on, in topological order (depth-first from outputs)."""
        return list(self._live()[1])

    def _live(self) -> tuple[int, list[Expr], set[int]]:
        cache = self._exprs_cache
        if cache is None or cache[0] != self._version:
            order: list[Expr] = []
            seen: set[int] = set()
            for out in self.outputs:
                self._visit(out, order, seen)
            cache = self._exprs_cache = (self._version, order, {id(e) for e in order})
        return cache

    def _visit(self, val: Val, order: list[Expr], seen: set[int]) -> None:
        # Iterative post-order so that long chains do not hit Python's recursion limit. Each
        # level resumes an iterator over its expr's inputs (the order is recomputed after
        # every edit of the graph, hundreds of times per compile).
        expr = val.definition
        if expr is None or id(expr) in seen:
            return
        seen.add(id(expr))
        stack: list[tuple[Expr, Iterator[Val]]] = [(expr, iter(expr.inputs))]
        while stack:
            expr, rest = stack[-1]
            for v in rest:
                producer = v.definition
                if producer is not None and id(producer) not in seen:
                    seen.add(id(producer))
                    stack.append((producer, iter(producer.inputs)))
                    break
            else:
                stack.pop()
                order.append(expr)

    def vals(self) -> list[Val]:
        """Inputs, then every value produced by an expr in `exprs()`, in order."""
        # Kept per graph version, as exprs() is (schedulers list the tensors constantly).
        cache = self.__dict__.get("_vals_cache")  # absent in a fusion pickled before it existed
        if cache is None or cache[0] != self._version:
            cache = self._vals_cache = (self._version, self._fresh_vals())
        return list(cache[1])

    def _fresh_vals(self) -> list[Val]:
        out: list[Val] = list(self.inputs)
        seen = {id(v) for v in out}
        for e in self.exprs():
            for v in [*e.inputs, *e.outputs]:
                if id(v) not in seen:
                    seen.add(id(v))
                    out.append(v)
        return out

    def tensors(self) -> list[TensorView]:
        # Kept per graph version as vals() is: asked hundreds of times per compile, the
        # filter then runs once per version and each call only copies the list.
        cache = self.__dict__.get("_tensors_cache")
        if cache is None or cache[0] != self._version:
            cache = self._tensors_cache = (self._version, [v for v in self.vals() if isinstance(v, TensorViewBase)])
        return list(cache[1])

    def uses_of(self, val: Val) -> list[Expr]:
        """The live exprs that read `val`, each once (an expr reading it twice, as
        lerp(a, a, w) does, is listed once in `uses` per operand)."""
        live = self._live()[2]
        uses = val.uses
        if len(uses) < 2:  # most values: no dict needed to drop repeats (asked thousands of times)
            return [e for e in uses if id(e) in live]
        return list({id(e): e for e in uses if id(e) in live}.values())

    # ---- editing -----------------------------------------------------------------
    def remove_expr(self, expr: Expr) -> None:
        for inp in expr.inputs:
            if expr in inp.uses:
                inp.uses.remove(expr)
        for out in expr.outputs:
            if out.definition is expr:
                out.definition = None
        if expr in self.all_exprs:
            self.all_exprs.remove(expr)
        self.changed()

    def replace_input_of(self, expr: Expr, old: Val, new: Val) -> None:
        """Make `expr` read `new` at every operand where it read `old`."""
        if old not in expr.inputs:
            raise ValueError(f"{_short(old)} is not an input of {expr!r}")
        for _ in range(sum(1 for v in expr.inputs if v is old)):
            if expr in old.uses:
                old.uses.remove(expr)
            new.uses.append(expr)
        expr.inputs = [new if v is old else v for v in expr.inputs]
        self.changed()

    def replace_all_uses(self, old: Val, new: Val) -> None:
        """Make every op that reads `old` read `new`, and `new` the output where `old` was."""
        for use in self.uses_of(old):
            self.replace_input_of(use, old, new)
        if any(v is old for v in self.outputs):
            self.replace_output(old, new)

    def replace_output(self, old: Val, new: Val) -> None:
        self.outputs = [new if v is old else v for v in self.outputs]
        self.changed()
        _set_global(new)
        if (isinstance(old, TensorViewBase) and all(v is not old for v in self.outputs)
                and all(v is not old for v in self.inputs)):
            # No longer an output: an intermediate again, which a kernel keeps in registers
            # unless its schedule says otherwise.
            old.memory_type = MemoryType.Local

    def release(self, shared: Iterable[object] = ()) -> None:
        """Break the reference cycles of this fusion's graph (values and ops, tensors and
        their IterDomains, the fusion itself) so that reference counting frees it without
        the cycle collector. For a fusion nothing will read again (a trial copy): it is
        unusable after. compile_fusion pauses the collector, whose first pass afterwards
        would otherwise walk every such graph the compile made. `shared`: what a clone
        shares with its original (see clone), left intact."""
        # Everything is collected before anything is cleared: tensors may share a domain
        # (a multi-output op's) and domains their ids.
        keep = {id(x) for x in shared}
        domains = [d for d in {id(v.domain): v.domain for v in self.all_vals if isinstance(v, TensorViewBase)}.values()
                   if id(d) not in keep]
        ids = {i for d in domains for i in (*d.maybe_root, *d.logical, *d.loop, *(d.allocation or ()))
               if id(i) not in keep}
        for node in [*ids, *domains, *self.all_vals, *self.all_exprs]:
            node.__dict__.clear()
        self.__dict__.clear()

    def clone(self, shared: Iterable[object] = ()) -> tuple[Fusion, dict[Val, Val]]:
        """A deep copy and the map from this fusion's vals to the copy's. `shared` objects
        are not copied: the copy refers to them (and to what it reaches only through them)."""
        memo: dict[int, object] = {id(x): x for x in shared}
        new = copy.deepcopy(self, memo)
        val_map = {v: memo[id(v)] for v in self.all_vals if id(v) in memo}
        for s in self._symbols():
            if id(s) in memo:
                val_map[s] = memo[id(s)]
        return new, val_map  # type: ignore[return-value]

    def _symbols(self) -> Iterable[Val]:
        return (v for v in self.all_vals if isinstance(v, Scalar))

    # ---- printing ----------------------------------------------------------------
    def __str__(self) -> str:
        return fusion_listing(self)

    def print_math(self) -> str:
        return kernel_math(self)


def _short(val: Val) -> str:
    return getattr(val, "short_name", repr(val))


def _set_global(val: Val) -> None:
    if isinstance(val, TensorViewBase):
        val.memory_type = MemoryType.Global
