"""Older spellings of nvFuser's python-frontend ops, mapped to the current ones.

Repro scripts from 2023 to 2026 call the same ops with different argument names and
overloads (`sum(T, axes=...)` became `dims=`, `broadcast_in_dim(output_shape=...)`
became `shape=`, `squeeze(T, original_shape, dims)` lost its middle argument, ...).
`normalize` rewrites a call into the current form before the op builder sees it, so
each builder keeps one signature and a saved fusion writes the current spelling.
"""

from __future__ import annotations

from typing import Any

from engine.dtypes import DataType

# Keyword renames per op: old name -> current name (the renames nvFuser made over time).
# keep_dim: nvfuser_direct's spelling of keepdim.
_REDUCTION_KW = {"axes": "dims", "axis": "dims", "dim": "dims", "keep_dim": "keepdim"}
_KEYWORDS: dict[str, dict[str, str]] = {
    **{op: _REDUCTION_KW for op in ("sum", "max", "min", "prod", "mean", "var", "var_mean", "welford")},
    "broadcast_in_dim": {"output_shape": "shape"},
    "squeeze": {"dim": "dims"},
    "full": {"size": "shape", "arg": "fill_value", "output_shape": "shape"},
    "zeros": {"size": "shape"},
    "ones": {"size": "shape"},
    "expand": {"output_shape": "shape"},
    "gather": {"arg1": "arg"},
    "scatter": {"arg1": "arg"},
    "take_along_axis": {"arg1": "arg"},
    "index_select": {"input": "arg"},
    "cast": {"tensor": "arg", "input": "arg"},
}

_REDUCTIONS = ("sum", "max", "min", "prod", "mean")


def normalize(name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """`fd.ops.<name>(*args, **kwargs)` in the current spelling (unknown forms pass through,
    for the builder to refuse with its own message)."""
    renames = _KEYWORDS.get(name, {})
    out: dict[str, Any] = {}
    for k, v in kwargs.items():
        new = renames.get(k, k)
        # Both spellings given: keep the old one as is, so the builder names the clash.
        out[k if new in kwargs and new != k else new] = v
    if name in _REDUCTIONS and len(args) == 2 and isinstance(args[1], DataType):
        args, out = args[:1], {**out, "dtype": args[1]}  # the all-axes overload: sum(T, dtype)
    if name == "squeeze":
        args, out = _squeeze(args, out)
    return args, out


def _squeeze(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """squeeze(T, original_shape, dims) (the frontend before mid-2023) -> squeeze(T, dims)."""
    kwargs = {k: v for k, v in kwargs.items() if k != "original_shape"}
    if len(args) == 3 and all(isinstance(a, (list, tuple)) for a in args[1:]):
        args = (args[0], args[2])
    elif len(args) == 2 and "dims" in kwargs and isinstance(args[1], (list, tuple)):
        args = args[:1]  # squeeze(T, original_shape, dims=...)
    return args, kwargs


# nvFuser ops that this engine does not build, with why: named in the refusal.
_UNSUPPORTED: dict[str, str] = {
    **{op: "not an nvFuser op; random tensors come from fd.ops.uniform, normal, rand_like or randn_like"
       for op in ("randn", "rand")},
    "index_add": "not an nvFuser op; index_put_accumulate or scatter adds into a tensor",
    "embedding_bwd": "not an nvFuser op; index_put_accumulate builds an embedding's gradient",
    "scaled_mm": "nvFuser's block-scaled matmul (fp8/fp4 operands with block scales) is not supported "
                 "by this engine; grouped_mm and matmul are",
    "complex": "complex tensors are not supported by this engine's code generator",
}


def unknown_op_message(name: str) -> str:
    """The refusal for `fd.ops.<name>` when the engine has no such op."""
    why = _UNSUPPORTED.get(name)
    return f"fd.ops.{name}: {why}" if why else f"unknown op fd.ops.{name}"
