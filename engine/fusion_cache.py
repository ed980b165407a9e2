"""Compiled fusions kept per definition, as nvFuser's FusionCache keeps them.

Compiling a definition that was compiled before, for inputs of the same sizes, strides,
dtypes, alignment and device (and scalar values), with the same options, reuses the
segments, schedules and kernels of the first compile. The key holds the definition twice:
as its frontend calls (the text dumps_fusion writes, from which a loaded file rebuilds the
same fusion) and as its IR listing, which shows a schedule applied outside the recorded
calls. A definition that cannot be written out (tensors made outside the frontend) and a
bare Fusion are not cached.
"""

from __future__ import annotations

import dataclasses
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

import torch

from engine.config import Options
from engine.frontend.input_spec import input_signature
from engine.frontend.pywrite import dumps_fusion

_SIZE = 64  # compiled fusions kept (least recently used dropped first)
_cache: OrderedDict[tuple, Any] = OrderedDict()


def key(fd: Any, inputs: Sequence[Any], options: Options, listing: str | None = None) -> tuple | None:
    """The cache key of compiling `fd` for `inputs`, or None when it is not cached.
    `listing`: str(fd.fusion) when the caller has it already."""
    if not hasattr(fd, "recorded_calls"):
        return None

    try:
        text = dumps_fusion(fd)
    except Exception:  # noqa: BLE001 - a definition the writer cannot spell is compiled, not cached
        return None
    # The signature's sizes, strides, dtypes and alignment; and devices and scalar values.
    extra = tuple(x.device.type if isinstance(x, torch.Tensor) else repr(x) for x in inputs)
    return text, str(fd.fusion) if listing is None else listing, input_signature(list(inputs)), extra, repr(options)


def get(k: tuple | None) -> Any:
    """A copy of the compiled fusion kept under `k` (its own run state), or None."""
    if k is None or k not in _cache:
        return None
    _cache.move_to_end(k)
    return dataclasses.replace(_cache[k], last_run=None, _plans={})


def put(k: tuple | None, cf: Any) -> None:
    if k is None:
        return
    _cache[k] = cf
    _cache.move_to_end(k)
    while len(_cache) > _SIZE:
        _cache.popitem(last=False)


def clear() -> None:
    _cache.clear()
