"""What a FusionDefinition records: each call made through the frontend (FrontendCall), with
its arguments copied as given, and the namespaces that record theirs: `fd.ops` (every builder
in engine.ops, by nvFuser's python names) and `fd.sched` (the schedule calls that change the
schedule). The fusion file writer turns the calls back into lines.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from engine import ops
from engine.frontend.spellings import normalize, unknown_op_message

if TYPE_CHECKING:
    from engine.frontend.definition import FusionDefinition


@dataclass
class FrontendCall:
    """One call made through the frontend (`fd.define_*`, `fd.ops.*`, `fd.sched.*`,
    `fd.add_output`), with its arguments as given and what it returned.

    The fusion file writer turns these back into lines, so a saved fusion replays
    the same calls in the same order and gets the same IR (names included).
    """

    target: str  # "fd", "ops" or "sched"
    name: str
    args: tuple[Any, ...]
    kwargs: dict[str, Any] = field(default_factory=dict)
    result: Any = None


_F = TypeVar("_F", bound=Callable[..., Any])


def snapshot(value: Any) -> Any:
    """Copy argument containers so that a caller reusing a list later does not
    change what was recorded; IR values and enums are kept as they are."""
    if isinstance(value, list):
        return [snapshot(v) for v in value]
    if isinstance(value, tuple) and type(value) is tuple:
        return tuple(snapshot(v) for v in value)
    if isinstance(value, dict):
        return {k: snapshot(v) for k, v in value.items()}
    return value


def recorded(method: _F) -> _F:
    """Record a FusionDefinition method call (only the outermost one)."""

    @functools.wraps(method)
    def wrapper(self: FusionDefinition, *args: Any, **kwargs: Any) -> Any:
        return self._record_call("fd", method.__name__, method, (self, *args), kwargs)

    return wrapper  # type: ignore[return-value]

class Ops:
    """`fd.ops`: every builder in engine.ops, by nvFuser's python names."""

    def __init__(self, fd: FusionDefinition) -> None:
        self._fd = fd

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_") or name not in ops.__all__:
            raise AttributeError(unknown_op_message(name))
        builder = getattr(ops, name)
        fd = self._fd

        @functools.wraps(builder)
        def op(*args: Any, **kwargs: Any) -> Any:
            # Older frontends' argument names and overloads, in the current spelling.
            args, kwargs = normalize(name, args, kwargs)
            return fd._record_call("ops", name, builder, args, kwargs)

        return op

    def __dir__(self) -> list[str]:
        return sorted(ops.__all__)


class RecordingSched:
    """`fd.sched`: forwards to SchedOperators and records the calls that change the
    schedule (those SchedOperators itself logs in `.calls`), with their results, in
    the order they interleave with `fd.ops` calls."""

    def __init__(self, fd: FusionDefinition, target: Any) -> None:
        self._fd = fd
        self._target = target

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._target, name)
        if name.startswith("_") or not callable(attr):
            return attr
        fd, target = self._fd, self._target

        @functools.wraps(attr)
        def call(*args: Any, **kwargs: Any) -> Any:
            before = len(target.calls)
            fd._depth += 1
            try:
                result = attr(*args, **kwargs)
            finally:
                fd._depth -= 1
            # Inspection calls (to_string, tensors, ...) leave `.calls` alone: not recorded.
            if fd._depth == 0 and len(target.calls) > before:
                fd.recorded_calls.append(
                    FrontendCall("sched", name, snapshot(args), snapshot(dict(kwargs)), result)
                )
            return result

        return call

    def __dir__(self) -> list[str]:
        return dir(self._target)
