"""nvFuser's text formats for fusions and tensors' transform histories."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from engine.ir.iterdomain import IdTransform, IterDomain, transforms_between

if TYPE_CHECKING:
    from engine.ir.fusion import Fusion
    from engine.ir.tensorview import TensorView


def kernel_math(fusion: Fusion, indent: int = 0) -> str:
    """The `%kernel_math { ... } // %kernel_math ` block (trailing space as nvFuser)."""
    body = "".join(e.to_string(indent) for e in fusion.exprs())
    return f"%kernel_math {{\n{body}}} // %kernel_math \n"


def fusion_listing(fusion: Fusion) -> str:
    """`Inputs:` / `Outputs:` / `%kernel_math`: what nvFuser prints for a fusion."""
    lines = ["Inputs:"]
    lines += [f"  {v}" for v in fusion.inputs]
    lines.append("Outputs:")
    lines += [f"  {v}" for v in fusion.outputs]
    return "\n".join(lines) + "\n\n" + kernel_math(fusion)


def domain_str(ids: Iterable[IterDomain]) -> str:
    return "(" + ", ".join(str(i) for i in ids) + ")"


def contiguity_str(tv: TensorView) -> str:
    return " ".join("n" if c is None else ("t" if c else "f") for c in tv.domain.contiguity)


def transform_history(tv: TensorView) -> list[IdTransform]:
    """Transforms from the root (or logical) domain to the loop and allocation domains."""
    dom = tv.domain
    return transforms_between(dom.maybe_root, [*dom.loop, *dom.maybe_allocation, *dom.logical])


def root_to_logical(tv: TensorView) -> list[IdTransform]:
    logical = {id(i) for i in tv.domain.logical}
    out = []
    for t in transform_history(tv):
        if any(id(o) in logical for o in _downstream(t)):
            out.append(t)
    return out


def _downstream(t: IdTransform) -> list[IterDomain]:
    """Every IterDomain produced from `t`'s outputs, them included."""
    seen: list[IterDomain] = []
    stack = list(t.outputs)
    while stack:
        i = stack.pop()
        seen.append(i)
        for u in i.uses:
            stack.extend(u.outputs)
    return seen


def transforms_block(tv: TensorView) -> str:
    """The per-tensor block of seed 001 (nvFuser's printTransforms): domains, contiguity,
    every transform of the tensor, loop domain."""
    dom = tv.domain
    lines = [str(tv)]
    if dom.has_root:
        # nvFuser lists the root->logical transforms here and again among all of them below.
        lines.append(f" root domain : {domain_str(dom.root)}")
        lines += [f"  {t}" for t in root_to_logical(tv)]
    lines.append(f" logical domain : {domain_str(dom.logical)}")
    if dom.has_allocation:
        lines.append(f" allocation domain : {domain_str(dom.allocation)}")
    lines.append(f" contiguity: {contiguity_str(tv)}")
    lines += [f"  {t}" for t in transform_history(tv)]
    lines.append(f" loop domain : {domain_str(dom.loop)}")
    return "\n".join(lines) + "\n"
