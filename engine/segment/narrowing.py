"""Narrow tensors across segment boundaries: up-casts and squeezes with several uses are
privatized (one copy per use) before merging and folded back when the copies land in one
group; after merging, a cast moves across a boundary when the narrower tensor then crosses it,
and the elementwise ops computing a boundary tensor move into its only reader when what
crosses instead is fewer bytes.
"""

from __future__ import annotations

from engine.ir import exprs as ex
from engine.ir.base import Expr, FusionGuard, Val
from engine.ir.tensorview import TensorView
from engine.ops.arith import cast
from engine.ops.shape import squeeze
from engine.schedule.base import SchedulerType
from engine.segment.group_graph import Group
from engine.segment.level_merge import NO_KERNEL


def _movable(e: Expr) -> bool:
    """An op the boundary narrowing may move between groups: elementwise or a shape op (a
    plain copy too: broadcast_in_dim of a tensor already broadcast, not a segment_set)."""
    if isinstance(e, ex.LoadStoreOp):
        return e.kind == "Set" and not e.is_permute
    return isinstance(e, (ex.UnaryOp, ex.BinaryOp, ex.TernaryOp, ex.BroadcastOp, ex.ExpandOp))


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
                if prod.get(v) is not a:
                    continue
                if e in a.exprs and (is_upcast(e) or isinstance(e, ex.BroadcastOp)) and len(a.exprs) > 1:
                    # A broadcast crosses as the tensor it broadcasts (as many bytes): its
                    # reader then indexes a row's value once, not as a tensor of the row's shape.
                    src, dst, moving = a, b, [e]
                elif len(uses) == 1 and is_downcast(uses[0]) and len(b.exprs) > 1:
                    src, dst, moving = b, a, [uses[0]]
                else:
                    src, dst, moving = a, b, self._sinkable(a, b, v, prod)
                    if not moving:
                        continue
                rest = [x for x in src.exprs if x not in moving]
                grown = sorted([*dst.exprs, *moving], key=self.pos.__getitem__)
                if not rest:
                    continue
                now = (self._ask(rest)[1], self._ask(grown)[1])
                if None in now:
                    continue
                if not self._same_kernels(src, dst, now):
                    continue
                src.exprs[:] = rest
                dst.exprs[:] = grown
                self._groups_changed()
                what = (f"the cast producing {moving[0].output.short_name}" if len(moving) == 1 and is_cast(moving[0])
                        else f"the {len(moving)} ops computing {v.short_name}")
                self._event("narrow", v.short_name,
                            f"boundary narrowed: {what} moved from {src.label()} to {dst.label()}, so "
                            "fewer bytes cross", moved=[x.name for x in moving], source=src.label(),
                            target=dst.label())
                moved = True
                break

    def _same_kernels(self, src: Group, dst: Group, now: tuple[SchedulerType | None, SchedulerType | None]) -> bool:
        """Whether ops moved from `src` to `dst` for fewer bytes leave each group to the
        scheduler that took it (or `src` to no kernel at all): a MoE unpermute's gather, left
        alone, went to the transpose scheduler, and its reduction read the gathered rows three
        times slower on an H200."""
        before = (self._ask(src.exprs)[1], self._ask(dst.exprs)[1])
        return now[1] == before[1] and (now[0] == before[0] or now[0] in NO_KERNEL)

    def _sinkable(self, a: Group, b: Group, v: TensorView, prod: dict[Val, Group]) -> list[Expr]:
        """The ops of `a` that compute `v` (read only by `b`) from tensors that cross into `b`
        anyway or are fewer bytes than `v`: moved into `b`, `v` no longer crosses (a RoPE's
        float product of a bf16 rotary half and a broadcast cos, written by the kernel before
        the one that reads it). Elementwise and shape ops only, each read only by the others
        or by `b`; [] when the bytes that would cross instead are not fewer than `v`'s."""
        outputs = set(self.fusion.outputs)
        keep = {*self.boundary, *self.forced, *outputs}
        moving: list[Expr] = []
        todo = [v]
        seen: set[Val] = set()
        crossing: list[TensorView] = []
        while todo:
            t = todo.pop()
            if t in seen:
                continue
            seen.add(t)
            d = t.definition
            inside = (d is not None and d in a.exprs and len(d.outputs) == 1 and _movable(d)
                      and t not in keep
                      and all(u in b.exprs or u in moving for u in self.fusion.uses_of(t)))
            if t is v and not inside:
                return []
            if not inside:
                crossing.append(t)
                continue
            moving.append(d)
            todo += [x for x in d.inputs if isinstance(x, TensorView)]
        # Uses of each moved op's output: all in `b` or among the moved ops.
        names = set(moving)
        for d in moving:
            if any(u not in b.exprs and u not in names for u in self.fusion.uses_of(d.output)):
                return []
        read_by_b = {self._origin(x) for e in b.exprs if e not in names for x in e.inputs}
        new = sum(self.sizes.bytes(t) for t in {self._origin(t) for t in crossing} - read_by_b
                  if isinstance(t, TensorView))
        if new >= self.sizes.bytes(v):
            return []
        return sorted(moving, key=self.pos.__getitem__)

    def _origin(self, v: Val) -> Val | None:
        """The fusion input a forwarded chain (casts, broadcasts of an input, recomputed by
        every segment that reads them) starts from, None for a chain from a factory (an
        iota: nothing read); for a privatized copy's output, the original's (the same
        values: one of them crossing is enough); `v` itself otherwise."""
        d = v.definition
        if d is not None and d not in self.privatized:
            orig = next((o for o, clones in self.privatized.items() if d in clones), None)
            if orig is not None:
                v = orig.outputs[0]
        chain = self.forwarding.chains.get(v)
        if not chain:
            return v
        return next((x for x in chain[0].inputs if isinstance(x, TensorView)), None)

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
