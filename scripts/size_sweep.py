"""Size sweep: every real-world script (tests/realworld WORKS) and bundled sample, compiled again
at larger sizes that keep its shape patterns, to find what the small CI sizes hide.

    python scripts/size_sweep.py                        # compile every fusion at every scale
    python scripts/size_sweep.py --only rms_norm rope   # fusions whose names hold these
    python scripts/size_sweep.py --emulate              # also emulate the moderate scales
    python scripts/size_sweep.py --json sweep.json      # every record, for a later look

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

Inputs are re-made from the small ones: same dtype, stride order, expanded (stride 0)
and size-0/1 dims, padding ratio of padded layouts; integer tensors keep their values'
range (indices stay valid for what they index), float tensors the file keeps
non-negative (a running variance) their values' range; data tensors (torch.tensor) and values
the file gives as numbers stay as they are unless the file's own constants scale them.
No tensor exceeds --cap elements (default 64M): a larger scale is skipped.

Reported: compile errors, fusions that run in more kernels than at the small size (with
the trace's reasons: failed to lower, is refused for, no scheduler accepts) and
refusals. --emulate runs the scales whose inputs hold at most --emulate-elems elements
(default 4M) on the g++ emulator and compares every output with the reference
evaluator, with tests/realworld's tolerances.
"""

from __future__ import annotations

import argparse
import ast
import json
import math
import sys
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

from engine import compile_fusion, fusion_cache, loads_fusion  # noqa: E402
from engine.errors import ExecutionError, FusionDefinitionError, FusionFileError  # noqa: E402

# Why a fusion ran in more kernels: trace messages that say so.
SPLIT_REASONS = ("failed to lower", "is refused for", "no scheduler accepts")

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
    wide = [v for v in values if v >= 5]
    if wide:
        f = 1 << max(0, math.ceil(math.log2(4096 / max(wide))))
        if f > 1:
            out.append(Scale(f"model(x{f})", {v: v * f for v in wide}))
    return out


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
    """Input `x` (made from `spec`) at the scale's sizes."""
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
        flat = torch.arange(spec.low, spec.low + shape[0] * step, step, dtype=torch.float64)[:storage]
    elif dtype == torch.bool:
        flat = torch.randint(0, 2, (storage,), generator=gen).bool()
    elif dtype in (torch.float4_e2m1fn_x2, torch.float8_e8m0fnu):
        # packed fp4 pairs and e8m0 scales: bytes (0xff is e8m0's NaN)
        flat = torch.randint(0, 255, (storage,), generator=gen).to(torch.uint8)
        return flat.view(dtype).as_strided(shape, strides)
    elif dtype.is_floating_point and x.numel() and x.float().min() >= 0:
        # values the file keeps positive (a running variance, torch.rand + 0.5): the same range
        lo, hi = x.float().min().item(), x.float().max().item()
        flat = torch.rand((storage,), generator=gen) * (hi - lo) + lo
    elif dtype.is_floating_point:
        flat = torch.randn((storage,), generator=gen)
        if x.numel():
            flat = flat * max(1.0, x.float().abs().max().item() / 3)
    else:
        lo, hi = (int(x.min()), int(x.max())) if x.numel() else (0, 1)
        flat = torch.randint(lo, hi + 1, (storage,), generator=gen)
    return flat.to(dtype).as_strided(shape, strides)


# ---- one compile --------------------------------------------------------------------------
@dataclass
class Result:
    name: str
    scale: str
    status: str  # ok, split, error, unscalable, skipped, mismatch
    kernels: int = 0
    schedulers: list[str] = field(default_factory=list)
    detail: str = ""
    shapes: list[list[int]] = field(default_factory=list)
    seconds: float = 0.0


def compiled(fd: Any, xs: list[Any]) -> tuple[Any, int, list[str]]:
    fusion_cache.clear()
    cf = compile_fusion(fd, xs)
    return cf, sum(s.is_kernel for s in cf.segments), [s.scheduler for s in cf.segments]


def split_reasons(cf: Any) -> str:
    lines = [str(e) for e in cf.trace.events if any(r in e.message for r in SPLIT_REASONS)]
    return "\n".join(dict.fromkeys(lines))


def _first_line(e: BaseException) -> str:
    return f"{type(e).__name__}: {str(e).strip().splitlines()[0] if str(e).strip() else ''}"


def scaled_fusion(path: Path, text: str, scale: Scale, base_xs: list[Any], specs: list[Any],
                  cap: int) -> tuple[Any, list[Any]]:
    """The fusion and inputs at `scale`; UnscalableError when the rewrite does not hold together."""
    try:
        fd = loads_fusion(rewrite(text, scale), filename=f"{path.stem}@{scale.label}")
    except (FusionFileError, FusionDefinitionError) as e:
        raise UnscalableError(_first_line(e)) from None
    gen = torch.Generator().manual_seed(0)
    xs = [remake(x, s, scale, cap, gen) for x, s in zip(base_xs, specs)]
    return fd, xs


def try_scale(name: str, path: Path, text: str, scale: Scale, base: tuple[int, list[str]],
              base_xs: list[Any], specs: list[Any], cap: int) -> tuple[Result, Any, list[Any]]:
    attempts = [scale, Scale(scale.label, scale.chosen, multiples=False)]
    why = ""
    for s in attempts:
        t = time.perf_counter()
        try:
            fd, xs = scaled_fusion(path, text, s, base_xs, specs, cap)
        except UnscalableError as e:
            why = str(e)
            if "over the cap" in why:
                return Result(name, scale.label, "skipped", detail=why), None, []
            continue
        shapes = [list(x.shape) for x in xs if isinstance(x, torch.Tensor)]
        try:
            cf, kernels, scheds = compiled(fd, xs)
        except (ExecutionError, FusionDefinitionError) as e:
            why = _first_line(e)  # the new sizes do not fit the fusion's own constants
            continue
        except Exception as e:  # noqa: BLE001 - every failure is a finding
            detail = "".join(traceback.format_exception_only(e)).strip()
            return Result(name, scale.label, "error", detail=detail, shapes=shapes,
                          seconds=time.perf_counter() - t), None, []
        status = "split" if kernels > base[0] else "ok"
        detail = split_reasons(cf) if status == "split" else ""
        if s.multiples != scale.multiples:
            detail = ("(exact values only) " + detail).strip()
        return (Result(name, scale.label, status, kernels, scheds, detail, shapes, time.perf_counter() - t),
                (fd, cf), xs)
    return Result(name, scale.label, "unscalable", detail=why), None, []


# ---- emulation ----------------------------------------------------------------------------
def emulate_check(fd: Any, cf: Any, xs: list[Any]) -> str:
    """'' when every emulated output matches the reference; else what differs."""
    from engine.reference import evaluate
    from tests.realworld.test_realworld import _close

    outs = cf.run(xs, backend="emulate")
    refs = evaluate(fd.fusion, xs)
    bad = []
    for k, (o, r) in enumerate(zip(outs, refs)):
        try:
            _close(o, r)
        except AssertionError as e:
            bad.append(f"output {k}: {str(e).strip().splitlines()[0]}")
    return "; ".join(bad)


# ---- the sweep ----------------------------------------------------------------------------
def fusion_files() -> Iterator[tuple[str, Path]]:
    from tests.realworld.test_realworld import SCRIPTS, WORKS

    for n in WORKS:
        yield f"realworld/{n}", SCRIPTS / f"{n}.py"
    for p in sorted((ROOT / "sample_fusions").glob("*.py")):
        yield f"sample/{p.stem}", p


def sweep_one(name: str, path: Path, a: argparse.Namespace, report: Callable[[Result], None]) -> None:
    text = path.read_text()
    try:
        fd0 = loads_fusion(text, filename=str(path))
        xs0 = fd0.example_inputs(device="cpu", seed=0)
        _, k0, s0 = compiled(fd0, xs0)
    except Exception as e:  # noqa: BLE001
        report(Result(name, "base", "error", detail=_first_line(e)))
        return
    report(Result(name, "base", "ok", k0, s0))
    values, inner = input_values(xs0)
    specs = fd0.input_specs or [None] * len(xs0)
    for scale in scales_for(values, inner):
        if a.scales and not any(s in scale.label for s in a.scales):
            continue
        r, got, xs = try_scale(name, path, text, scale, (k0, s0), xs0, specs, a.cap)
        if got is not None and a.emulate and sum(x.numel() for x in xs if isinstance(x, torch.Tensor)) \
                <= a.emulate_elems:
            fd, cf = got
            try:
                bad = emulate_check(fd, cf, xs)
            except Exception as e:  # noqa: BLE001
                bad = "run failed: " + _first_line(e)
            r.status = "mismatch" if bad else r.status + "+emulated"
            r.detail = (r.detail + "\n" + bad).strip()
        report(r)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", nargs="*", default=[], help="substrings of the fusion names to sweep")
    ap.add_argument("--scales", nargs="*", default=[], help="substrings of the scale labels to run")
    ap.add_argument("--cap", type=int, default=64 << 20, help="most elements of one input tensor")
    ap.add_argument("--emulate", action="store_true", help="emulate the scales small enough (--emulate-elems)")
    ap.add_argument("--emulate-elems", type=int, default=4 << 20, help="most input elements of an emulated run")
    ap.add_argument("--json", type=Path, help="write every record here")
    ap.add_argument("-q", "--quiet", action="store_true", help="print findings only")
    a = ap.parse_args(argv)
    records: list[Result] = []

    def report(r: Result) -> None:
        records.append(r)
        finding = r.status in ("error", "split", "mismatch")
        if finding or not a.quiet:
            kernels = f" kernels={r.kernels}" if r.kernels else ""
            print(f"{r.status.upper():11s} {r.name} @ {r.scale}{kernels} {r.shapes if finding else ''}".rstrip())
            if r.detail and (finding or r.status == "unscalable"):
                print("    " + r.detail.replace("\n", "\n    ")[:1500])
        sys.stdout.flush()

    start = time.perf_counter()
    try:
        for name, path in fusion_files():
            if a.only and not any(s in name for s in a.only):
                continue
            sweep_one(name, path, a, report)
    finally:
        if a.json:
            a.json.write_text(json.dumps([r.__dict__ for r in records], indent=1))
    counts: dict[str, int] = {}
    for r in records:
        counts[r.status] = counts.get(r.status, 0) + 1
    print(f"{len(records)} compiles in {time.perf_counter() - start:.0f} s: "
          + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    return 1 if any(r.status in ("error", "split", "mismatch") for r in records) else 0


if __name__ == "__main__":
    sys.exit(main())
