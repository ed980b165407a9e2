"""A fusion file re-made at other sizes: the scales of scripts/size_sweep.py and of the real-size
sweep (benchmarks/realworld.py), the rewrite of a script's text and its inputs re-made at a scale.

Scales. A script's sizes are mostly literals (define_tensor shapes, broadcast_in_dim and
reshape shapes, slice ends, pads, define_vector and define_scalar sizes), so a fusion is
re-made by rewriting its text (ast, never run): each input dim size v >= 2 is a *value*
that a scale maps to a new size, and every literal in a size position that is v, or a
product of chosen values with other factors (B*S of a reshape), is mapped with it. Axis
arguments (dims, broadcast_dims, stride_order, ...) and fd.sched calls are left alone.
Per value: x4, x16, =4096 (=2048 for a value that is no innermost dim) and an odd size
(=4097 / =2047); then "model": every value >= 5 times the power of two that makes the
largest one 4096. A rewrite that does not keep the fusion consistent (a reshape or a
slice the new sizes do not fit) is tried again mapping only exact values, then reported
as unscalable, not as an engine failure.

Real sizes. A script written small for the CPU emulator names the sizes of the model it
comes from in a header line, `# real-sizes: 64=8192 24=16384 67=20481` (small=real per
input dim size): real_scale reads it. reduced_scale divides such a scale down until the
largest input fits a bound (the GPU tests' realistic sizes), keeping odd sizes odd, each
size's power-of-two factor up to 16, and sizes that are products of others (hidden =
heads x head_dim) products of them.

Inputs are re-made from the small ones: same dtype, stride order, expanded (stride 0)
and size-0/1 dims, padding ratio of padded layouts; integer tensors keep their values'
range (indices stay valid for what they index), float tensors the file keeps
non-negative (a running variance) their values' range; data tensors (torch.tensor) and values
the file gives as numbers stay as they are unless the file's own constants scale them.
No tensor exceeds the caller's cap of elements: a larger scale is unscalable.
"""

from __future__ import annotations

import ast
import itertools
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from engine import loads_fusion
from engine.errors import FusionDefinitionError, FusionFileError

# fd.ops / fd calls whose arguments hold sizes: positional indexes and keyword names.
SIZE_ARGS: dict[str, tuple[tuple[int, ...], frozenset[str]]] = {
    "define_tensor": ((0, 4), frozenset({"shape", "symbolic_sizes", "sizes", "strides"})),
    "broadcast_in_dim": ((1,), frozenset({"shape", "output_shape"})),
    "reshape": ((1, 2), frozenset({"new_shape", "original_shape"})),
    "view": ((1, 2), frozenset({"new_shape", "original_shape"})),
    "expand": ((1,), frozenset({"shape"})),
    "full": ((0,), frozenset({"shape"})),
    "iota": ((0,), frozenset({"length"})),
    "define_vector": ((0,), frozenset({"values"})),
    "define_scalar": ((0,), frozenset({"value"})),
    "slice": ((1, 2), frozenset({"start_indices", "end_indices"})),
    "pad": ((1,), frozenset({"pad_widths"})),
    "uniform": ((2,), frozenset({"shape"})),
    "normal": ((2,), frozenset({"shape"})),
    "rand": ((0,), frozenset({"shape"})),
    "randn": ((0,), frozenset({"shape"})),
}


# ---- scales -------------------------------------------------------------------------------
@dataclass
class Scale:
    """A map of input dim sizes to new ones; `multiples` also maps literals that are products
    of a chosen size with other factors."""

    label: str
    chosen: dict[int, int]
    multiples: bool = True

    def __call__(self, c: int) -> int:
        if c < 2:
            return c
        if c in self.chosen:
            return self.chosen[c]
        if not self.multiples:
            return c
        rest, out = c, 1
        for v in sorted(self.chosen, reverse=True):
            if rest % v == 0:
                rest //= v
                out *= self.chosen[v]
        return out * rest


def input_values(xs: list[Any]) -> tuple[list[int], set[int]]:
    """The distinct dim sizes >= 2 of the tensor inputs, and those that are some input's
    innermost dim."""
    values: set[int] = set()
    inner: set[int] = set()
    for x in xs:
        if isinstance(x, torch.Tensor) and x.dim():
            values.update(n for n in x.shape if n >= 2)
            big = [n for n in x.shape if n >= 2]
            if big and x.shape[-1] >= 2:
                inner.add(x.shape[-1])
    return sorted(values), inner


def scales_for(values: list[int], inner: set[int]) -> list[Scale]:
    out: list[Scale] = []
    for v in sorted(values, reverse=True):
        big, odd = (4096, 4097) if v in inner else (2048, 2047)
        out += [Scale(f"{v}x4", {v: 4 * v}), Scale(f"{v}x16", {v: 16 * v})]
        if v < big:
            out += [Scale(f"{v}={big}", {v: big}), Scale(f"{v}={odd}", {v: odd})]
    model = model_scale(values)
    return out + ([model] if model is not None else [])


def model_scale(values: list[int], largest: int = 4096) -> Scale | None:
    """Every value >= 5 times the power of two that makes the largest one `largest` (None when
    no value is >= 5, or the largest already is that large)."""
    wide = [v for v in values if v >= 5]
    if not wide:
        return None
    f = 1 << max(0, math.ceil(math.log2(largest / max(wide))))
    return Scale(f"model(x{f})", {v: v * f for v in wide}) if f > 1 else None


REAL_SIZES = re.compile(r"^#\s*real-sizes:(.*)$", re.MULTILINE)


def real_scale(text: str) -> Scale | None:
    """The script's `# real-sizes: 64=8192 24=16384 67=20481` line as Scale("real", ...): each
    input dim size of the script (small) and the size it has in the model the script comes
    from (real). None without the line; ValueError for a malformed one."""
    m = REAL_SIZES.search(text)
    if m is None:
        return None
    chosen: dict[int, int] = {}
    for tok in m.group(1).split():
        small, sep, real = tok.partition("=")
        if not (sep and small.isdigit() and real.isdigit()) or int(small) < 2 or int(real) < 2:
            raise ValueError(f"real-sizes: {tok!r} is not SMALL=REAL with both sizes >= 2")
        if chosen.setdefault(int(small), int(real)) != int(real):
            raise ValueError(f"real-sizes: {small} is given two real sizes")
    if not chosen:
        raise ValueError("real-sizes: the line names no sizes")
    return Scale("real", chosen)


def _shrink(small: int, real: int, f: int) -> int:
    """About real / f, at least `small`, with real's power-of-two factor up to 16 (a vector
    width): an odd size stays odd, 4100 = 4 x 1025 stays 4 x an odd number."""
    if f == 1 or real <= small:
        return real
    q = min(real & -real, 16)
    m = max(1, round(real / f / q))
    if q < 16 and m % 2 == 0:
        m += 1
    return max(small, m * q)


def _derivations(chosen: dict[int, int]) -> dict[int, tuple[int, tuple[int, ...]]]:
    """Values that are an integer k times a product of one to three smaller values, in the
    small sizes and the real ones alike (hidden = heads x head_dim, 3 x hidden): value ->
    (k, parts). They are derived from their parts when a scale is reduced, so reshapes that
    split or join them still hold."""
    out: dict[int, tuple[int, tuple[int, ...]]] = {}
    keys = sorted(chosen)
    for c in keys:
        lower = [v for v in keys if v < c]
        for n in (3, 2, 1):
            for parts in itertools.combinations(lower, n):
                ps, pr = math.prod(parts), math.prod(chosen[v] for v in parts)
                if c % ps == 0 and chosen[c] % pr == 0 and c // ps == chosen[c] // pr:
                    out[c] = (c // ps, parts)
                    break
            if c in out:
                break
    return out


def reduced_scale(base: Scale, shapes: list[tuple[int, ...]], max_elems: int = 16 << 20) -> Scale:
    """`base` brought down until no input (its small `shapes`) holds more than max_elems
    elements: the values that are no product of others (see _derivations) are divided, the
    largest one that shrinks the largest input first, each by a power of two (see _shrink), and
    the derived ones follow from them. Labelled base.label + "/f" with the largest divisor (the
    base itself when it fits)."""
    derived = _derivations(base.chosen)
    free = [v for v in base.chosen if v not in derived]
    div = dict.fromkeys(free, 1)

    def scale() -> Scale:
        new: dict[int, int] = {v: _shrink(v, base.chosen[v], div[v]) for v in free}
        for c in sorted(derived):
            k, parts = derived[c]
            new[c] = k * math.prod(new[v] for v in parts)
        f = max(div.values(), default=1)
        return Scale(base.label + (f"/{f}" if f > 1 else ""), new, base.multiples)

    def elems(s: Scale, shape: tuple[int, ...]) -> int:
        return math.prod(s(n) for n in shape)

    s = scale()
    while shapes and max(elems(s, sh) for sh in shapes) > max_elems:
        biggest = max(shapes, key=lambda sh: elems(s, sh))
        best: tuple[int, int] | None = None  # (reduced size, value) of the one to divide next
        for v in free:
            div[v] *= 2
            if elems(scale(), biggest) < elems(s, biggest) and (best is None or s.chosen[v] > best[0]):
                best = (s.chosen[v], v)
            div[v] //= 2
        if best is None:
            break  # every value is at its small size
        div[best[1]] *= 2
        s = scale()
    return s


def reduced_real_scale(text: str, xs: list[Any], max_elems: int = 16 << 20) -> Scale | None:
    """The GPU tests' size of a script: its real sizes (the `# real-sizes:` line) reduced by
    reduced_scale, or without the line the model scale with the largest multiplier that keeps
    every input within `max_elems` elements (one multiplier for every value, as the model
    scale has); None where no multiplier fits or no input dim is >= 5 (the script's own size)."""
    shapes = [tuple(x.shape) for x in xs if isinstance(x, torch.Tensor)]
    real = real_scale(text)
    if real is not None:
        return reduced_scale(real, shapes, max_elems)
    values, _ = input_values(xs)
    largest = 4096
    while (model := model_scale(values, largest)) is not None and \
            max(math.prod(model(n) for n in sh) for sh in shapes) > max_elems:
        largest //= 2
    return model


# ---- the script's text --------------------------------------------------------------------
def _op_name(call: ast.Call) -> str | None:
    f = call.func
    return f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else None


def _is_sched_call(call: ast.Call) -> bool:
    f = call.func
    return isinstance(f, ast.Attribute) and isinstance(f.value, ast.Attribute) and f.value.attr == "sched"


def _makes_torch_tensors(stmt: ast.stmt) -> bool:
    """A top-level statement calling torch (the inputs list): its sizes are re-made apart."""
    for n in ast.walk(stmt):
        if isinstance(n, ast.Call):
            f = n.func
            while isinstance(f, ast.Attribute):
                f = f.value
            if isinstance(f, ast.Name) and f.id == "torch":
                return True
    return False


class _Rewriter(ast.NodeTransformer):
    """Maps the int literals in size positions (and plain `H = 256` assignments) by `scale`."""

    def __init__(self, scale: Scale) -> None:
        self.scale = scale

    def _map_ints(self, node: ast.AST) -> ast.AST:
        for n in ast.walk(node):
            if isinstance(n, ast.Constant) and type(n.value) is int:
                n.value = self.scale(n.value)
        return node

    def visit_Call(self, node: ast.Call) -> ast.AST:
        if _is_sched_call(node):
            return node  # a hand-written schedule's axes and factors stay
        spec = SIZE_ARGS.get(_op_name(node) or "")
        if spec is not None:
            positions, names = spec
            for k, a in enumerate(node.args):
                if k in positions:
                    self._map_ints(a)
            for kw in node.keywords:
                if kw.arg in names:
                    self._map_ints(kw.value)
        self.generic_visit(node)
        return node

    def visit_Assign(self, node: ast.Assign) -> ast.AST:
        v = node.value
        if (isinstance(v, ast.Constant) and type(v.value) is int) or (
                isinstance(v, ast.Tuple) and all(isinstance(e, ast.Constant) and type(e.value) is int
                                                 for e in v.elts)):
            self._map_ints(v)
        self.generic_visit(node)
        return node


def rewrite(text: str, scale: Scale) -> str:
    tree = ast.parse(text)
    rw = _Rewriter(scale)
    tree.body = [s if (not isinstance(s, ast.FunctionDef | ast.ClassDef | ast.With) and _makes_torch_tensors(s))
                 else rw.visit(s) for s in tree.body]
    return ast.unparse(tree)


# ---- inputs -------------------------------------------------------------------------------
# Scatter with indices drawn again at a new size: repeated indices, whose winner is any write.
RESCALED_DATA_DEPENDENT = frozenset({"scatter"})


def rescalable(text: str, stem: str) -> bool:
    """Whether a fusion file is re-made at other sizes (the GPU tests' realistic size, the
    real-size sweep): not one with a hand-written schedule (fd.sched), which is written for
    its own sizes (threads per block, local buffers per thread), nor one whose results
    depend on data a rescale draws again (RESCALED_DATA_DEPENDENT)."""
    return ".sched." not in text and stem not in RESCALED_DATA_DEPENDENT


class UnscalableError(Exception):
    """The scale does not keep this fusion consistent (not an engine failure)."""


def _strides_like(x: torch.Tensor, shape: tuple[int, ...]) -> tuple[int, ...]:
    """Strides for `shape` in x's stride order, keeping stride-0 dims and the padding ratio
    of a padded layout."""
    old_shape, old = tuple(x.shape), x.stride()
    order = sorted(range(x.dim()), key=lambda d: (old[d], old_shape[d]))
    new = [0] * x.dim()
    prev: tuple[int, int, int, int] | None = None  # old stride, old size, new stride, new size
    for d in order:
        if old[d] == 0:
            continue
        if prev is None:
            new[d] = old[d]
        else:
            po, pn, qo, qn = prev
            dense_old, dense_new = max(po * pn, 1), max(qo * qn, 1)
            new[d] = max(1, math.ceil(old[d] * dense_new / dense_old))
        prev = (old[d], old_shape[d], new[d], shape[d])
    return tuple(new)


def remake(x: Any, spec: Any, scale: Scale, cap: int, gen: torch.Generator) -> Any:
    """Input `x` (made from `spec`) at the scale's sizes, made on the generator's device (`x`
    itself where its sizes stay)."""
    if not isinstance(x, torch.Tensor):
        return scale(x) if type(x) is int and x in scale.chosen else x
    shape = tuple(scale(n) for n in x.shape)
    if shape == tuple(x.shape):
        return x
    if spec is not None and spec.kind == "tensor":
        raise UnscalableError("a data tensor (torch.tensor) would change size")
    strides = _strides_like(x, shape)
    storage = 1 + sum((n - 1) * s for n, s in zip(shape, strides)) if all(shape) else 0
    if math.prod(shape) > cap or storage > cap:
        raise UnscalableError(f"{list(shape)} is over the cap")
    dtype = x.dtype
    if spec is not None and spec.kind == "arange" and x.dim() == 1:
        step = spec.fill_value or 1
        flat = torch.arange(spec.low, spec.low + shape[0] * step, step, dtype=torch.float64,
                            device=gen.device)[:storage]
    elif dtype == torch.bool:
        flat = torch.randint(0, 2, (storage,), generator=gen, device=gen.device).bool()
    elif dtype in (torch.float4_e2m1fn_x2, torch.float8_e8m0fnu):
        # packed fp4 pairs and e8m0 scales: bytes (0xff is e8m0's NaN)
        flat = torch.randint(0, 255, (storage,), generator=gen, device=gen.device).to(torch.uint8)
        return flat.view(dtype).as_strided(shape, strides)
    elif dtype.is_floating_point and x.numel() and x.float().min() >= 0:
        # values the file keeps positive (a running variance, torch.rand + 0.5): the same range
        lo, hi = x.float().min().item(), x.float().max().item()
        flat = torch.rand((storage,), generator=gen, device=gen.device) * (hi - lo) + lo
    elif dtype.is_floating_point:
        flat = torch.randn((storage,), generator=gen, device=gen.device)
        if x.numel():
            flat = flat * max(1.0, x.float().abs().max().item() / 3)
    else:
        lo, hi = (int(x.min()), int(x.max())) if x.numel() else (0, 1)
        flat = torch.randint(lo, hi + 1, (storage,), generator=gen, device=gen.device)
    return flat.to(dtype).as_strided(shape, strides)


def first_line(e: BaseException) -> str:
    return f"{type(e).__name__}: {str(e).strip().splitlines()[0] if str(e).strip() else ''}"


def to_device(x: Any, device: str | torch.device) -> Any:
    """`x` on `device` with its sizes, strides and offset: the storage it spans moves and the
    view is taken there (`.to` of an expanded or padded view would give a dense copy)."""
    if not isinstance(x, torch.Tensor) or x.device == torch.device(device):
        return x
    span = x.storage_offset() + 1 + sum((n - 1) * s for n, s in zip(x.shape, x.stride())) if x.numel() else 0
    return x.as_strided((span,), (1,), 0).to(device).as_strided(x.shape, x.stride(), x.storage_offset())


def scaled_fusion(path: Path, text: str, scale: Scale, base_xs: list[Any], specs: list[Any],
                  cap: int, device: str = "cpu", seed: int = 0) -> tuple[Any, list[Any]]:
    """The fusion and inputs (on `device`, drawn from `seed`) at `scale`; UnscalableError when
    the rewrite does not hold together."""
    try:
        fd = loads_fusion(rewrite(text, scale), filename=f"{path.stem}@{scale.label}")
    except (FusionFileError, FusionDefinitionError) as e:
        raise UnscalableError(first_line(e)) from None
    return fd, scaled_inputs(scale, base_xs, specs, cap, device, seed)


def scaled_inputs(scale: Scale, base_xs: list[Any], specs: list[Any], cap: int, device: str = "cpu",
                  seed: int = 0) -> list[Any]:
    """The inputs `base_xs` (made from `specs`) at `scale`, on `device`, drawn from `seed`."""
    gen = torch.Generator(device=device).manual_seed(seed)
    return [to_device(remake(x, s, scale, cap, gen), device) for x, s in zip(base_xs, specs)]
