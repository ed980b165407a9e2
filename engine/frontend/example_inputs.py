"""Example inputs made from a fusion's definition, for a fusion without an inputs list.

A fusion copied from an issue or a C++ test comment often comes without `inputs = [...]`.
Its define_tensor calls still say most of what an input is: rank, dtype, which axes are
broadcasts (expanded or not), contiguity and stride order. What they may leave open is the
size of a symbolic axis (-1): those come from `sizes`, which is one of

- an int: the size of every symbolic axis (`sizes=1024`);
- a mapping: an input's name (as the listing prints it: "T0", a scalar input's "i4") to
  its shape (every axis, or only its symbolic ones, in order) or a scalar input's value;
  a symbolic extent's name ("i0") to its size; "*" to the size of every other symbolic
  axis (`{"T0": [4096, 8192], "T1": [8192], "*": 16}`); a number may be given as a
  one-number list;
- a list with an entry per fusion input (a shape, a scalar's value, or None).

Tensors get random values: floats from a normal distribution, integers 0 or 1 (valid
indices of any axis of two or more, never a negative index), booleans either way. An axis
the definition says is not contiguous gets a stride one past dense, so the example is
laid out as the definition allows and not only as a dense tensor happens to be. Scalar
inputs get 0.5 (floating point), 1 (integer), True or 0.5+0.5j unless `sizes` names them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import torch

from engine.dtypes import DataType, to_torch
from engine.errors import FusionDefinitionError
from engine.frontend.input_spec import InputSpec, storage_size
from engine.ir.fusion import Fusion
from engine.ir.logical_map import pairwise_logical_map, root_to_logical, tensor_edges
from engine.ir.scalar import Scalar, same_scalar
from engine.ir.tensorview import TensorView

Sizes = int | Mapping[str, Any] | Sequence[Any]
# Scalar inputs' values when `sizes` does not name them, by kind of dtype.
_SCALAR_DEFAULTS = {"float": 0.5, "int": 1, "bool": True, "complex": 0.5 + 0.5j}
_MAX_SIZE = 1 << 40  # elements per axis: past this no example can be made anyway


def synthesize(fusion: Fusion, sizes: Sizes | None = None) -> list[InputSpec]:
    """An InputSpec per fusion input, from its definition and `sizes` (see the module doc);
    FusionDefinitionError names what is missing or wrong.

    Symbolic sizes that the fusion makes equal need only one of them given: an op's input and
    output axes that are one axis (engine.ir.logical_map, broadcasts aside) share their
    size, so `T0 + T1` takes T1's from T0's, and a symbolic axis that meets a constant one
    (broadcast_in_dim to a static shape, an input of static sizes) takes that constant."""
    per_input, by_symbol, default = _split(fusion, sizes)
    same = _SameSizes(fusion)
    for k, v in enumerate(fusion.inputs):  # what was given, for every axis of the same size
        if isinstance(v, TensorView):
            for d, n in _given_axes(v, per_input.get(k)).items():
                same.give(_extents(v)[d], n, f"{v.short_name} axis {d}")
    for name, n in by_symbol.items():
        same.give_name(name, n)
    specs: list[InputSpec] = []
    missing: list[str] = []
    for v in fusion.inputs:
        if isinstance(v, TensorView):
            spec = _tensor(v, same, default, missing)
            if spec is not None:
                specs.append(spec)
        else:
            specs.append(_scalar(v, _one(per_input.get(fusion.inputs.index(v)))))
    if missing:
        raise FusionDefinitionError(_missing_message(fusion, missing))
    return specs


class _SameSizes:
    """Groups of input extents that are one size (union-find over the fusion's IterDomains,
    joined across each op by its pairwise map without broadcasts), and the size each group
    has: a constant in it, or one given."""

    def __init__(self, fusion: Fusion) -> None:
        self.parent: dict[int, int] = {}
        self.known: dict[int, tuple[int, str]] = {}  # group -> (size, where it came from)
        self.by_name: dict[str, Scalar] = {}
        try:
            for producer, consumer, _ in tensor_edges(fusion):
                for p, c in pairwise_logical_map(producer, consumer, map_broadcast=False).items():
                    self._join(p, c)
                for r, lg in root_to_logical(consumer).items():
                    if r is lg:
                        continue
                    if same_scalar(r.extent, lg.extent):  # a resize that keeps the size
                        self._join(r, lg)
        except Exception:  # a fusion the maps do not understand: no sizes are inferred
            self.parent.clear()
        self.ids: dict[int, Any] = {}
        for tv in fusion.tensors():
            for i in (*tv.domain.maybe_root, *tv.domain.logical):
                if i.is_broadcast or i.is_reduction:
                    continue
                self.ids[id(i)] = i
                if i.extent.is_const and id(i) in self.parent:
                    self.known.setdefault(self._find(id(i)), (int(i.extent.value), f"{tv.short_name}'s size"))
        self.extent_group: dict[int, int] = {}
        for tv in fusion.inputs:
            if isinstance(tv, TensorView):
                for i in _axes(tv):
                    e = _extent(i)
                    if e.is_symbol:
                        self.by_name[e.inline()] = e
                        self.extent_group[id(e)] = self._find(id(i))

    def _find(self, k: int) -> int:
        self.parent.setdefault(k, k)
        while self.parent[k] != k:
            self.parent[k] = self.parent[self.parent[k]]
            k = self.parent[k]
        return k

    def _join(self, a: Any, b: Any) -> None:
        ra, rb = self._find(id(a)), self._find(id(b))
        if ra != rb:
            self.parent[ra] = rb

    def give(self, extent: Scalar, n: int, where: str) -> None:
        group = self.extent_group.get(id(extent))
        if group is None:
            return
        had = self.known.get(group)
        if had is not None and had[0] != n:
            raise FusionDefinitionError(f"sizes: {where} ({extent.inline()}) is the same axis as {had[1]}, "
                                        f"{had[0]}, not {n}")
        self.known[group] = (n, f"{where} ({extent.inline()}) as given")

    def give_name(self, name: str, n: int) -> None:
        self.give(self.by_name[name], n, name)

    def size(self, extent: Scalar) -> int | None:
        group = self.extent_group.get(id(extent))
        return self.known[group][0] if group in self.known else None


def _split(fusion: Fusion, sizes: Sizes | None) -> tuple[dict[int, Any], dict[str, int], int | None]:
    """`sizes` as (input index -> shape or value, symbol name -> size, default size)."""
    if sizes is None:
        return {}, {}, None
    if _is_int(sizes):
        return {}, {}, _size("sizes", sizes)
    names = {_name(v): k for k, v in enumerate(fusion.inputs)}
    if isinstance(sizes, Mapping):
        symbols = {s.inline() for v in fusion.inputs if isinstance(v, TensorView) for s in _extents(v)
                   if s.is_symbol}
        per_input: dict[int, Any] = {}
        by_symbol: dict[str, int] = {}
        default = None
        for key, value in sizes.items():
            if key == "*":
                default = _size("sizes['*']", _one(value))
            elif key in names:
                per_input[names[key]] = value
            elif key in symbols:
                by_symbol[key] = _size(f"sizes[{key!r}]", _one(value))
            else:
                raise FusionDefinitionError(f"sizes: {key!r} names no input or symbolic size of this fusion "
                                            f"(inputs: {', '.join(names) or 'none'}; symbolic sizes: "
                                            f"{', '.join(sorted(symbols)) or 'none'})")
        return per_input, by_symbol, default
    if isinstance(sizes, Sequence) and not isinstance(sizes, str):
        if len(sizes) != len(fusion.inputs):
            raise FusionDefinitionError(f"sizes: {len(sizes)} entries for {len(fusion.inputs)} inputs; give one "
                                        "per input (a shape, a scalar's value, or None)")
        return {k: v for k, v in enumerate(sizes) if v is not None}, {}, None
    raise FusionDefinitionError(f"sizes must be an int, a mapping or a list, got {type(sizes).__name__}")


def _name(v: Any) -> str:
    return v.short_name if isinstance(v, TensorView) else v.inline()


def _axes(tv: TensorView) -> list[Any]:
    return [i for i in tv.domain.logical if not i.is_reduction]


def _extent(i: Any) -> Scalar:
    """The size an input axis has in a tensor: an expanded broadcast's expanded extent."""
    return i.expanded_extent if i.is_broadcast and i.expanded_extent is not None else i.extent


def _extents(tv: TensorView) -> list[Scalar]:
    return [_extent(i) for i in _axes(tv)]


def _given_axes(tv: TensorView, given: Any) -> dict[int, int]:
    """The symbolic axes of `tv` that `given` (its shape, or its symbolic sizes) sets."""
    if given is None:
        return {}
    extents = _extents(tv)
    open_axes = [d for d, e in enumerate(extents) if not e.is_const]
    values = list(given) if isinstance(given, (list, tuple)) else [given]
    where = f"sizes[{tv.short_name!r}]"
    if len(values) == len(extents):
        for d, (e, n) in enumerate(zip(extents, values)):
            if e.is_const and _size(where, n) != e.value:
                raise FusionDefinitionError(f"{where}: axis {d} is {e.value} by its definition, not {n}")
        return {d: _size(where, values[d]) for d in open_axes}
    if len(values) == len(open_axes):
        return {d: _size(where, n) for d, n in zip(open_axes, values)}
    raise FusionDefinitionError(f"{where}: {len(values)} sizes for {tv.short_name}, which has {len(extents)} "
                                f"axes ({len(open_axes)} of them symbolic)")


def _tensor(tv: TensorView, same: _SameSizes, default: int | None, missing: list[str]) -> InputSpec | None:
    shape: list[int] = []
    for d, e in enumerate(_extents(tv)):
        known = same.size(e) if not e.is_const else int(e.value)
        if known is not None:
            shape.append(known)
        elif default is not None:
            shape.append(default)
        else:
            missing.append(f"{tv.short_name}:{d}")
            shape.append(0)
    if any(m.startswith(f"{tv.short_name}:") for m in missing):
        return None
    return _layout(tv, shape)


def _layout(tv: TensorView, shape: list[int]) -> InputSpec:
    """A spec of `shape` laid out as the definition's allocation domain and contiguity say:
    expanded broadcasts stride 0, non-contiguous axes one past dense."""
    axes = _axes(tv)
    pos = {id(i): d for d, i in enumerate(axes)}
    dom = tv.domain
    alloc = [(i, c) for i, c in zip(dom.maybe_allocation, dom.contiguity) if not i.is_reduction]
    packed = tv.dtype == DataType.Float4_e2m1fn  # two values a byte, along the innermost axis
    strides = [0] * len(shape)
    expected = 1
    for i, contiguous in reversed(alloc):
        d = pos.get(id(i))
        if d is None:  # an allocation domain beyond a permutation of the logical one
            return InputSpec(kind=_kind(tv.dtype), shape=tuple(shape), dtype=to_torch(tv.dtype), **_range(tv.dtype))
        if i.is_broadcast and i.expanded_extent is not None:
            strides[d] = 0
            continue
        pad = 1 if contiguous is False and shape[d] > 1 and not packed else 0
        strides[d] = expected + pad
        expected = strides[d] * max(shape[d], 1)
    if packed:
        inner = next((pos[id(i)] for i, _ in reversed(alloc) if strides[pos[id(i)]] == 1 and shape[pos[id(i)]] > 1),
                     None)
        if inner is None or shape[inner] % 2:
            raise FusionDefinitionError(f"{tv.short_name}: an fp4 input packs two values a byte along an axis of "
                                        f"even size; its sizes {shape} have none")
        shape[inner] //= 2
        strides = [s if d == inner else s // 2 for d, s in enumerate(strides)]
    dense = list(torch.empty(shape, device="meta").stride()) if shape else []
    dtype = to_torch(tv.dtype)
    if strides == dense or not shape:
        return InputSpec(kind=_kind(tv.dtype), shape=tuple(shape), dtype=dtype, **_range(tv.dtype))
    return InputSpec(kind=_kind(tv.dtype), shape=tuple(shape), dtype=dtype, strides=tuple(strides),
                     base_shape=(storage_size(shape, strides),), **_range(tv.dtype))


def _kind(dtype: DataType) -> str:
    return "randint" if dtype.is_integer else "randn"  # booleans: randn's kind draws them 0 or 1


def _range(dtype: DataType) -> dict[str, int]:
    return {"low": 0, "high": 2} if _kind(dtype) == "randint" else {}


def _scalar(v: Any, given: Any) -> InputSpec:
    dtype = v.dtype
    kind = ("bool" if dtype == DataType.Bool else "complex" if dtype.is_complex
            else "int" if dtype.is_integer else "float")
    value = _SCALAR_DEFAULTS[kind] if given is None else given
    ok = {"bool": (bool,), "int": (int,), "float": (int, float), "complex": (int, float, complex)}[kind]
    if not isinstance(value, ok) or kind != "bool" and isinstance(value, bool):
        raise FusionDefinitionError(f"sizes[{_name(v)!r}]: the scalar input {_name(v)} ({dtype.name}) takes "
                                    f"a {kind} value, got {value!r}")
    return InputSpec(kind="scalar", shape=(), dtype=None, data=value)


def _one(v: Any) -> Any:
    """A one-number list (`--size i0=64` gives [64]) as its number."""
    return v[0] if isinstance(v, (list, tuple)) and len(v) == 1 else v


def _size(where: str, n: Any) -> int:
    if not _is_int(n) or not 0 <= n <= _MAX_SIZE:
        raise FusionDefinitionError(f"{where}: a size is an integer from 0 to {_MAX_SIZE}, got {n!r}")
    return int(n)


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _missing_message(fusion: Fusion, missing: list[str]) -> str:
    """Which inputs need sizes, and how to give them."""
    by_input: dict[str, list[int]] = {}
    for m in missing:
        name, d = m.split(":")
        by_input.setdefault(name, []).append(int(d))
    shown, example, cli, names = [], [], [], []
    for v in fusion.inputs:
        if not isinstance(v, TensorView) or v.short_name not in by_input:
            continue
        extents = _extents(v)
        axes = by_input[v.short_name]
        shown.append(f"{v.short_name} [{', '.join(e.inline() for e in extents)}] "
                     f"(ax{'es' if len(axes) > 1 else 'is'} {', '.join(map(str, axes))})")
        symbols = [e.inline() for d, e in enumerate(extents) if d in axes]
        example.append(f"{v.short_name!r}: [{', '.join(symbols)}]")
        cli.append(f"--size {v.short_name}={','.join(symbols)}")
        names += symbols
    return (f"this fusion has no example inputs (no `inputs = [...]` list), and these inputs have symbolic sizes: "
            f"{', '.join(shown)}. Give the sizes: fd.example_inputs(sizes={{{', '.join(example)}}}) with numbers "
            f"for {', '.join(names)} (or every axis of an input), or one size for all: sizes=N; in fusescope: "
            f"{' '.join(cli)}, or --size N")
