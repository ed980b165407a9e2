"""Host-IR listings in seed 002's format (nvFuser's HostIrContainer::print).

Two spaces per nesting level; fusion-level exprs print as in a fusion listing (the output
on its own line, ` = op( ... )` one level in), host nodes one line each:

    %HostIrContainer { (T0_g_float[iS0{i0}, iS1{i2}]) -> (T1_g_float[iStreamIdx2{i0}, iS3{i2}]) :
      T1_g_float[...] = ALLOCATE(buffer=T1_g_float[...], mem_type=global, size=( i0 * i2 ), ...)
      GetCurrentStream into Stream 0
      FOR StreamIdx in iStreamIdx2{i0}:
        SetCurrentStream to Stream ( StreamIdx % numberOfStreams )
        Synchronize Stream 0
      ...
    } // %HostIrContainer
"""

from __future__ import annotations

from typing import Any

from engine.host import hir
from engine.ir.base import Expr
from engine.ir.exprs import ind


def _vals(vals: list[Any]) -> str:
    return ", ".join(str(v) for v in vals)


def node_string(node: Any, indent: int = 0) -> str:
    """One statement (and a loop's body) as listing lines, each ending in a newline."""
    pad = ind(indent)
    if isinstance(node, Expr):
        return node.to_string(indent)
    if isinstance(node, hir.Allocate):
        zero = "true" if node.zero_init else "false"
        return (f"{pad}{node.tv} = ALLOCATE(buffer={node.tv}, mem_type={node.mem_type}, "
                f"size={node.size.inline()}, zero_init={zero}, resets_to_zero=false)\n")
    if isinstance(node, hir.Deallocate):
        return f"{pad}Deallocate( {node.tv} )\n"
    if isinstance(node, hir.ForLoop):
        body = "".join(node_string(s, indent + 1) for s in node.body)
        return f"{pad}FOR {node.index.inline()} in {node.axis}:\n{body}"
    if isinstance(node, hir.GetCurrentStream):
        return f"{pad}GetCurrentStream into {node.stream}\n"
    if isinstance(node, hir.SetCurrentStream):
        return f"{pad}SetCurrentStream to {node.stream}\n"
    if isinstance(node, hir.Synchronize):
        return f"{pad}Synchronize {node.stream}\n"
    if isinstance(node, hir.HirAliasSelect):
        return (f"{pad}{node.out}\n{ind(indent + 1)} = HirAliasSelect( {node.inp}, axis = {node.axis}, "
                f"index = {node.index.inline()} )\n")
    if isinstance(node, hir.LaunchKernel):
        seg = node.segment
        return (f"{pad}LaunchKernel(Group ID: {seg.id}, Inputs: {{{_vals(node.inputs)}}}, "
                f"Outputs: {{{_vals(node.outputs)}}}, kernel={seg.kernel_name})\n")
    if isinstance(node, hir.PostOnStream):
        seg = node.unit.segment
        return (f"{pad}PostOnStream (HostUnit{seg.id} ({seg.scheduler}), Inputs: {{{_vals(node.inputs)}}}, "
                f"Outputs: {{{_vals(node.outputs)}}})\n")
    if isinstance(node, hir.CommunicationNode):
        root = f", root={node.root}" if node.root is not None else ""
        team = " ".join(str(d) for d in node.team)
        return (f"{pad}Communication {node.number} (type={node.type}, team=({team}){root}, input={node.inp}, "
                f"output={node.out}, backend={node.backend})\n")
    if isinstance(node, hir.Wait):
        return f"{pad}Wait(Communication {node.communication.number})\n"
    if isinstance(node, hir.ShardByDevice):
        return (f"{pad}{node.out}\n{ind(indent + 1)} = ShardByDevice( {node.inp}, "
                f"parallel_type = {node.parallel_type} )\n")
    raise TypeError(f"no host-IR format for {type(node).__name__}")


def host_ir_listing(container: hir.HostIrContainer) -> str:
    head = f"%HostIrContainer {{ ({_vals(container.inputs)}) -> ({_vals(container.outputs)}) :\n"
    body = "".join(node_string(s, 1) for s in container.top_level)
    return f"{head}{body}}} // %HostIrContainer\n"
