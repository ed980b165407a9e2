"""Narrow tensors across segment boundaries: up-casts and squeezes with several uses are
privatized (one copy per use) before merging and folded back when the copies land in one
group; after merging, a cast moves across a boundary when the narrower tensor then crosses it.
"""

from __future__ import annotations

from engine.ir import exprs as ex
from engine.ir.base import Expr, FusionGuard
from engine.ops.arith import cast
from engine.ops.shape import squeeze


def is_cast(e: Expr) -> bool:
    return isinstance(e, ex.UnaryOp) and e.op == "cast"


def is_upcast(e: Expr) -> bool:
    if not is_cast(e):
        return False
    a, b = e.input.dtype, e.output.dtype
    return a.is_float and b.is_float and b.bits > a.bits


def is_downcast(e: Expr) -> bool:
    if not is_cast(e):
        return False
    a, b = e.input.dtype, e.output.dtype
    return a.is_float and b.is_float and b.bits < a.bits


class Narrowing:
    """The segmenter's privatized copies and narrowed boundaries (a part of the finder,
    engine.segment.segmenter, whose state it reads)."""

    def _privatize(self) -> None:
        """One copy of an up-cast or squeeze per use, so that a segment boundary after it
        passes the narrow tensor (nvFuser's privatizeUpcast)."""
        excluded = self.forwarding.excluded
        outs = set(self.fusion.outputs)

        for e in self.fusion.exprs():
            if e in excluded or not (is_upcast(e) or isinstance(e, ex.SqueezeOp)):
                continue
            out = e.output
            uses = self.fusion.uses_of(out)
            if len(uses) < 2 or out in outs or out in self.boundary or out in self.forced:
                continue
            clones = []
            with FusionGuard(self.fusion):
                for use in uses[1:]:
                    if isinstance(e, ex.SqueezeOp):
                        new = squeeze(e.input, [k for k, f in enumerate(e.flags) if f], squeeze_expanded=True)
                    else:
                        new = cast(e.input, out.dtype)
                    self.fusion.replace_input_of(use, out, new)
                    clones.append(new.definition)
            self.privatized[e] = clones
            self._event("privatize", out.short_name,
                        f"{type(e).__name__} producing {out.short_name} copied once per use "
                        f"({', '.join(c.output.short_name for c in clones)})",
                        copies=[c.output.short_name for c in clones])

    def _narrow_boundaries(self) -> None:
        """Move a cast across a segment boundary so that the narrow tensor crosses it: an
        up-cast producing the boundary tensor moves into its reader, a down-cast reading
        it into its producer, when both schedulers accept the groups so changed. A
        group left with a reshape alone then runs as a view (expr_eval)."""
        outputs = set(self.fusion.outputs)
        moved = True
        while moved:
            moved = False
            prod = self._producer_group()
            for a, b, v in self._edges():
                if a.is_input or v in outputs or v in self.boundary or v in self.forced:
                    continue
                uses = self.fusion.uses_of(v)
                if any(u not in b.exprs for u in uses):
                    continue  # v is read elsewhere too: it crosses the boundary anyway
                e = v.definition
                if e in a.exprs and is_upcast(e) and len(a.exprs) > 1:
                    src, dst, cast_expr = a, b, e
                elif len(uses) == 1 and is_downcast(uses[0]) and len(b.exprs) > 1:
                    src, dst, cast_expr = b, a, uses[0]
                else:
                    continue
                if prod.get(v) is not a:
                    continue
                rest = [x for x in src.exprs if x is not cast_expr]
                grown = sorted([*dst.exprs, cast_expr], key=self.pos.__getitem__)
                if self._ask(rest)[1] is None or self._ask(grown)[1] is None:
                    continue
                src.exprs[:] = rest
                dst.exprs[:] = grown
                self._groups_changed()
                self._event("narrow", v.short_name,
                            f"boundary narrowed: the cast producing {cast_expr.output.short_name} moved "
                            f"from {src.label()} to {dst.label()}, so the narrower tensor crosses",
                            moved=cast_expr.name, source=src.label(), target=dst.label())
                moved = True
                break

    def _revert_privatized(self) -> None:
        for orig, clones in self.privatized.items():
            members = [orig, *clones]
            for g in self.groups:
                inside = [m for m in members if m in g.exprs]
                if len(inside) < 2:
                    continue
                keep = inside[0]
                for m in inside[1:]:
                    for use in list(self.fusion.uses_of(m.output)):
                        self.fusion.replace_input_of(use, m.output, keep.output)
                    self.fusion.remove_expr(m)
                    g.exprs.remove(m)
                    self._groups_changed()
                self._event("privatize", orig.output.short_name,
                            f"copies of {orig.output.short_name} landed in one group {g.label()}: "
                            f"folded back into {keep.output.short_name}", reverted=True)
        # Exprs were removed: recompute positions for the final order.
        self.pos = {e: k for k, e in enumerate(self.fusion.exprs())}
