"""A fast `__deepcopy__` for the IR's node classes.

The segmenter copies part of the fusion for every candidate merge it asks the schedulers
about (nvFuser's makeFusion does the same), and schedulers clone fusions to try a schedule.
`copy.deepcopy` spends most of that time in its generic machinery (reduce protocol, a
dispatch per atomic field); the IR's nodes are plain objects whose fields are atoms,
enums, lists, tuples, dicts and other nodes, so copying their `__dict__` directly gives the
same graph several times faster. The memo semantics are deepcopy's own, including a memo
entry of None meaning "cut here" (cut_fusion relies on it), and shared lists stay shared.
"""

from __future__ import annotations

import copy
import enum
from typing import Any

_ATOMS: set[type] = {int, float, bool, str, bytes, complex, type(None), type, range}
# Types whose __deepcopy__ is copy_node: copied without deepcopy's dispatch (filled lazily).
_NODES: set[type] = set()
_MISSING = object()


def _is_atom(t: type) -> bool:
    if t in _ATOMS:
        return True
    if issubclass(t, enum.Enum):  # enum members copy to themselves
        _ATOMS.add(t)
        return True
    return False


def copy_value(v: Any, memo: dict[int, Any]) -> Any:
    """deepcopy(v, memo), with the IR's common field types copied without the reduce protocol."""
    t = type(v)
    if t in _ATOMS:
        return v
    y = memo.get(id(v), _MISSING)
    if y is not _MISSING:
        return y
    if t in _NODES:
        return copy_node(v, memo)
    if t is list:
        y = []
        memo[id(v)] = y
        y.extend(_copy_items(v, memo))
        return y
    if t is dict:
        y = {}
        memo[id(v)] = y
        for k, x in v.items():
            y[copy_value(k, memo)] = x if type(x) in _ATOMS else copy_value(x, memo)
        return y
    if t is tuple:
        y = tuple(_copy_items(v, memo))
        memo[id(v)] = y
        return y
    if _is_atom(t):
        return v
    if getattr(t, "__deepcopy__", None) is copy_node:
        _NODES.add(t)
        return copy_node(v, memo)
    return copy.deepcopy(v, memo)


def _copy_items(items: Any, memo: dict[int, Any]) -> list[Any]:
    """copy_value of each item. Most items are atoms or nodes copied already (a tensor's
    uses, an op's operands): those are found here without a call."""
    atoms, nodes, get = _ATOMS, _NODES, memo.get
    out = []
    for x in items:
        t = type(x)
        if t in atoms:
            out.append(x)
            continue
        y = get(id(x), _MISSING)
        if y is _MISSING:
            y = copy_node(x, memo) if t in nodes else copy_value(x, memo)
        out.append(y)
    return out


def copy_node(node: Any, memo: dict[int, Any]) -> Any:
    """The `__deepcopy__` of an IR node: a new instance whose fields are copies."""
    new = object.__new__(type(node))
    memo[id(node)] = new
    fields = new.__dict__
    atoms, nodes, get = _ATOMS, _NODES, memo.get
    for k, v in node.__dict__.items():
        t = type(v)
        if t in atoms:
            fields[k] = v
            continue
        # Fields that refer back (a tensor's definition, an id's fusion) are copied already.
        y = get(id(v), _MISSING)
        if y is _MISSING:
            y = copy_node(v, memo) if t in nodes else copy_value(v, memo)
        fields[k] = y
    return new
