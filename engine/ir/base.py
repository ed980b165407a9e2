"""Val and Expr: the nodes of the fusion graph, and the current-fusion context."""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from engine.ir.graph_copy import copy_node

if TYPE_CHECKING:
    from engine.ir.fusion import Fusion

_current: contextvars.ContextVar[Fusion | None] = contextvars.ContextVar("fusion", default=None)

# The frontend definition whose `with` block is open (engine.frontend's FusionDefinition sets
# it): TensorView methods that are frontend ops (tv.size(), tv.shape()) record through its
# `ops`, so that a saved file spells them as the frontend does.
open_definition: contextvars.ContextVar[Any] = contextvars.ContextVar("definition", default=None)


def current_fusion() -> Fusion:
    fusion = _current.get()
    if fusion is None:
        raise RuntimeError("no fusion is being defined: use `with FusionGuard(fusion):`")
    return fusion


@contextlib.contextmanager
def FusionGuard(fusion: Fusion) -> Iterator[Fusion]:  # noqa: N802 - nvFuser's name
    token = _current.set(fusion)
    try:
        yield fusion
    finally:
        _current.reset(token)


class Val:
    """A value in the fusion graph: a TensorView or a scalar.

    `definition` is the Expr that produces it (None for inputs and constants) and
    `uses` the Exprs that read it; the Fusion keeps both up to date.
    """

    __deepcopy__ = copy_node

    def __init__(self) -> None:
        self.definition: Expr | None = None
        self.uses: list[Expr] = []


class Expr:
    """An operation: inputs -> outputs, plus attributes that are not graph edges.

    Subclasses set `op_name` and implement `to_string` in nvFuser's listing format.
    `name` is the expr's number in its fusion, the `(121)` of a segment listing.
    """

    op_name = "expr"
    __deepcopy__ = copy_node

    def __init__(
        self,
        fusion: Fusion,
        inputs: list[Val],
        outputs: list[Val],
        **attributes: Any,
    ) -> None:
        self.fusion = fusion
        self.inputs = list(inputs)
        self.outputs = list(outputs)
        self.attributes = attributes
        self.name = fusion.register_expr(self)

    def __getattr__(self, key: str) -> Any:
        # Attributes read like fields: expr.flags, expr.axis, ...
        attrs = self.__dict__.get("attributes")
        if attrs is not None and key in attrs:
            return attrs[key]
        raise AttributeError(f"{type(self).__name__} has no attribute {key!r}")

    @property
    def input(self) -> Val:
        return self.inputs[0]

    @property
    def output(self) -> Val:
        return self.outputs[0]

    def to_string(self) -> str:
        raise NotImplementedError(type(self).__name__)

    def __str__(self) -> str:
        return self.to_string()

    def __repr__(self) -> str:
        outs = ", ".join(getattr(o, "short_name", "?") for o in self.outputs)
        return f"<{type(self).__name__} {self.name} -> {outs}>"
