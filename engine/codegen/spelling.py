"""The C spelling of the kernel IR's typed ops (engine.lower.kops), from ops_table.

Installed as engine.lower.kexpr.SPELLING when this module is imported (engine.codegen's
package does, and `import engine` imports it): lowering builds typed op nodes without
importing codegen, and each node takes its spelling from here when it is built.
"""

from __future__ import annotations

from engine.codegen import ops_table
from engine.lower import kexpr, kops


def _text(node: kexpr.Spelled, m: tuple[str, ...]) -> str:
    """`node`'s C text, with `m` standing for its operands."""
    if isinstance(node, kops.Literal):
        return ops_table.literal(node.value, node.dtype)
    if isinstance(node, kops.Cast):
        return ops_table.cast(m[0], node.src, node.dst, node.each)
    if isinstance(node, kops.Unary):
        return ops_table.unary(node.op, m[0], node.dtype)
    if isinstance(node, kops.Binary):
        return ops_table.binary(node.op, m[0], m[1], node.dtype, node.b_value)
    if isinstance(node, kops.Ternary):
        return ops_table.ternary(node.op, m[0], m[1], m[2], node.dtype)
    if isinstance(node, kops.Combine):
        return ops_table.reduction_combine(node.op, m[0], m[1], node.dtype)
    if isinstance(node, kops.Combiner):
        t = node.dtype.cuda_name
        return f"[]({t} a, {t} b) {{ return {ops_table.reduction_combine(node.op, 'a', 'b', node.dtype)}; }}"
    raise TypeError(f"no C spelling for {type(node).__name__}")


def spelling(node: kexpr.Spelled) -> tuple[tuple[str, ...], tuple[int, ...]]:
    """The text around `node`'s operands, and its operands in the order the text names them."""
    return kexpr.marked(lambda *m: _text(node, m), len(node.operands()))


kexpr.SPELLING = spelling
