"""Multi-device fusions for the debugger: the engine adapter for fusions whose tensors carry
device meshes (with fusescope/session.py, compiler.py and run_job.py, the only fusescope modules
that import `engine`).

A multi-device fusion runs on every rank: compile_fusion gives one rank's program with its
regions compiled for that rank's shards; the program (engine.multidevice.program_of) is
regions of local exprs and communications in run order, the same on every rank. This module turns that program into plain data: the sharding of every tensor, the
steps, the host IR of each rank, and the step graph in dot, json, mermaid and svg.
"""

from __future__ import annotations

import json
import re
import subprocess
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from engine.errors import EngineError
from engine.multidevice import MultiDeviceError, describe_sharding, program_of

EXPORT_FORMATS = ("dot", "json", "mermaid", "svg")


@dataclass(frozen=True)
class ShardingRow:
    """How one tensor of the user's fusion lies on its mesh. `origin`: "file" (set in the
    fusion file), "propagated" (sharding propagation set it) or "" (no mesh)."""

    name: str
    mesh: str
    sharding: str
    origin: str


@dataclass(frozen=True)
class StepInfo:
    """One step of the program in run order: a region of local exprs or a communication."""

    kind: str  # "region" | "communication"
    name: str  # "region 0", "Communication 0"
    comm_type: str  # Allgather, Allreduce, ... ("" for a region)
    exprs: tuple[str, ...]  # a region's exprs, one line each: "T3 = linear(T0, T1)"
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    mesh: str
    teams: tuple[str, ...]  # a communication's team on each rank: "(0 1)"
    overlap: int = 0  # a communication run in this many stream chunks, each overlapping a region's

    @property
    def overlap_side(self) -> str:
        """Which region a chunked communication overlaps: an Allgather the next one (whose
        input it gathers), a ReduceScatter the previous one (whose output it scatters)."""
        return "previous" if self.comm_type == "ReduceScatter" else "next"

    @property
    def label(self) -> str:
        if self.kind == "region":
            return f"{self.name} ({len(self.exprs)} exprs)"
        teams = sorted(set(self.teams))
        return f"{self.name}: {self.comm_type} team={' '.join(teams)}"


@dataclass(frozen=True)
class MultiDeviceInfo:
    """A multi-device fusion as the debugger shows it; `error` (one line, a MultiDeviceError)
    when its shardings cannot be laid out, and then no steps or host IR."""

    world: int  # the ranks it runs on: the highest device of its meshes + 1
    meshes: tuple[str, ...]
    sharding: tuple[ShardingRow, ...]
    steps: tuple[StepInfo, ...] = ()
    host_ir: tuple[str, ...] = ()  # per rank, 0 .. world-1
    error: str | None = None  # "MultiDeviceError: ..." (or another engine error's name and message)

    def host_ir_of(self, rank: int) -> str:
        if self.error:
            raise ValueError(f"no host IR: {self.error}")
        if not 0 <= rank < self.world:
            raise ValueError(f"rank {rank} is not on the mesh: ranks 0 to {self.world - 1}")
        return self.host_ir[rank]

    def sharding_line(self, name: str) -> str:
        """`sharding: mesh_x on axis 0 (split by 2) of DeviceMesh{0 1} (file)`: under a transform block."""
        row = next((r for r in self.sharding if r.name == name), None)
        if row is None or not row.mesh:
            return "sharding: no device mesh"
        return f"sharding: {row.sharding} of {row.mesh} ({row.origin})"

    def sharding_table(self) -> str:
        """The sharding column: a row per tensor (mesh, device axes, where it was set)."""
        width = max((len(r.name) for r in self.sharding), default=2)
        swidth = max((len(r.sharding) for r in self.sharding), default=8)
        out = ["Sharding (mesh and device axes of each tensor; \"propagated\": set by sharding propagation):"]
        for r in self.sharding:
            out.append(f"  {r.name:<{width}}  {r.mesh or '-':<16} {r.sharding or '-':<{swidth}}  {r.origin}".rstrip())
        if self.error:
            out.append(f"  {self.error}")
        return "\n".join(out) + "\n"

    def segments_text(self) -> str:
        """`show --segments`: the regions and communications in run order."""
        if self.error:
            return f"No multi-device program: {self.error}\n"
        regions = sum(s.kind == "region" for s in self.steps)
        out = [f"multi-device program on {self.world} ranks ({', '.join(self.meshes)}): {regions} region(s), "
               f"{len(self.steps) - regions} communication(s)", "", "Steps (run order):"]
        for s in self.steps:
            io = f"  in: {', '.join(s.inputs) or '-'}  out: {', '.join(s.outputs) or '-'}"
            if s.kind == "region":
                out.append(f"  {s.name} on {s.mesh or 'every device'}{io}")
                out += [f"      {e}" for e in s.exprs]
            else:
                teams = "; ".join(f"rank {r}: ({t})" for r, t in enumerate(s.teams))
                out.append(f"  {s.name} type={s.comm_type}{io}")
                if s.overlap:
                    out.append(f"      overlapped with the {s.overlap_side} region in {s.overlap} stream chunks (host IR: "
                               "FOR StreamIdx)")
                out.append(f"      team on {teams}")
        return "\n".join(out) + "\n"

    def to_dict(self) -> dict[str, object]:
        return {"world": self.world, "meshes": list(self.meshes), "error": self.error,
                "sharding": [asdict(r) for r in self.sharding], "steps": [asdict(s) for s in self.steps]}


def _name(v: Any) -> str:
    return str(getattr(v, "short_name", v))


def _split(desc: str) -> tuple[str, str]:
    """("DeviceMesh{0 1}", "mesh_x on axis 0 (split by 2)") from describe_sharding's text."""
    if not desc:
        return "", ""
    what, _, mesh = desc.rpartition(" of ")
    return mesh, what


def _describe(tv: Any) -> str:
    try:
        return describe_sharding(tv)
    except MultiDeviceError:
        return f"invalid sharding (the MultiDeviceError below) of {tv.device_mesh}"


_OP = re.compile(r"=\s*([A-Za-z_][\w.]*)\s*\(")


def expr_line(e: Any) -> str:
    """`T3 = linear(T0, T1)`: an expr on one line, tensors by name."""
    op = getattr(e, "op", None)  # unary, binary, ternary: the operation's name ("add", "gelu")
    if not isinstance(op, str):
        m = _OP.search(str(e))
        op = m.group(1) if m else getattr(e, "op_name", "expr")
    outs = ", ".join(_name(v) for v in e.outputs)
    return f"{outs} = {op}({', '.join(_name(v) for v in e.inputs)})"


def is_multidevice(fd: Any) -> bool:
    """Whether any tensor of the fusion has a device mesh."""
    return any(getattr(tv, "device_mesh", None) is not None for tv in fd.fusion.tensors())


def _world(fd: Any) -> tuple[int, tuple[str, ...]]:
    meshes: dict[str, Any] = {}
    for tv in fd.fusion.tensors():
        m = getattr(tv, "device_mesh", None)
        if m is not None:
            meshes.setdefault(str(m), m)
    devices = [d for m in meshes.values() for d in m.devices]
    return (max(devices) + 1 if devices else 1), tuple(meshes)


def multidevice_info(fd: Any) -> MultiDeviceInfo | None:
    """The fusion's multi-device view, or None for a single-device fusion."""
    if not is_multidevice(fd):
        return None
    world, meshes = _world(fd)
    try:
        program = program_of(fd)
        assert program is not None
        host_ir = tuple(str(program.host_ir(r)) for r in range(world))
    except Exception as e:  # MultiDeviceError, or an engine bug: the session shows it and goes on
        rows = tuple(ShardingRow(tv.short_name, *_split(_describe(tv)), "file" if tv.device_mesh else "")
                     for tv in fd.fusion.tensors())
        return MultiDeviceInfo(world, meshes, rows, error=" ".join(f"{type(e).__name__}: {e}".split()))
    return MultiDeviceInfo(world, meshes, _rows(fd, program), _steps(program, world, _overlapped(host_ir[0])),
                           host_ir)


_LOOP = re.compile(r"^(\s*)FOR StreamIdx in \S*\{(\d+)\}:")
_COMM = re.compile(r"^\s*Communication (\d+) \(")


def _overlapped(host_ir: str) -> dict[int, int]:
    """Communication number -> stream chunks, for those the host IR runs inside a stream loop."""
    out: dict[int, int] = {}
    loop: tuple[int, int] | None = None  # (indent, chunks)
    for line in host_ir.splitlines():
        m = _LOOP.match(line)
        if m:
            loop = (len(m.group(1)), int(m.group(2)))
            continue
        if loop is not None and len(line) - len(line.lstrip()) <= loop[0]:
            loop = None
        c = _COMM.match(line)
        if c and loop is not None:
            out[int(c.group(1))] = loop[1]
    return out


def _rows(fd: Any, program: Any) -> tuple[ShardingRow, ...]:
    """A row per tensor of the user's fusion: its own sharding when the file set a mesh on it,
    else the propagated one (the program's tensor of the same name, or for an output the
    program's output in its place)."""
    after = {tv.short_name: tv for tv in program.fusion.tensors()}
    outs = {id(v): k for k, v in enumerate(fd.fusion.outputs)}
    rows = []
    for tv in fd.fusion.tensors():
        if tv.device_mesh is not None:
            rows.append(ShardingRow(tv.short_name, *_split(_describe(tv)), "file"))
            continue
        twin = program.outputs[outs[id(tv)]] if id(tv) in outs else after.get(tv.short_name)
        desc = _describe(twin) if twin is not None else ""
        origin = "propagated" if desc else ""
        if desc and twin.short_name != tv.short_name:
            origin = f"propagated (as {twin.short_name} after the decomposition)"
        rows.append(ShardingRow(tv.short_name, *_split(desc), origin))
    return tuple(rows)


def _steps(program: Any, world: int, overlapped: dict[int, int]) -> tuple[StepInfo, ...]:
    steps = []
    for s in program.steps:
        if hasattr(s, "exprs"):  # a Region
            steps.append(StepInfo("region", f"region {s.index}", "", tuple(expr_line(e) for e in s.exprs),
                                  tuple(_name(v) for v in s.inputs), tuple(_name(v) for v in s.outputs),
                                  str(s.mesh or ""), ()))
            continue
        teams = tuple(" ".join(str(d) for d in s.team(r)) for r in range(world))
        steps.append(StepInfo("communication", f"Communication {s.number}", s.kind, (),
                              (_name(s.input),), (_name(s.output),), str(getattr(s.output, "device_mesh", "") or ""),
                              teams, overlapped.get(s.number, 0)))
    return tuple(steps)


# ---- the step graph --------------------------------------------------------------------------
def _edges(info: MultiDeviceInfo) -> list[tuple[int, int, str]]:
    """(producer step, consumer step, tensor) for each tensor a step hands to a later one."""
    made: dict[str, int] = {}
    edges = []
    for k, s in enumerate(info.steps):
        for t in s.inputs:
            if t in made:
                edges.append((made[t], k, t))
        for t in s.outputs:
            made[t] = k
    return edges


def _node_id(k: int, s: StepInfo) -> str:
    return f"r{s.name.split()[-1]}" if s.kind == "region" else f"c{s.name.split()[-1]}"


def to_dot(info: MultiDeviceInfo) -> str:
    lines = ["digraph multidevice {", "  rankdir=TB;", '  node [fontname="monospace"];']
    for k, s in enumerate(info.steps):
        if s.kind == "region":
            label = "\\n".join([s.label, *s.exprs]).replace('"', '\\"')
            lines.append(f'  {_node_id(k, s)} [shape=box, style=filled, fillcolor="#dbe9f6", label="{label}"];')
        else:
            label = f"{s.name}\\n{s.comm_type}\\nteam=({' | '.join(sorted(set(s.teams)))})"
            if s.overlap:
                label += f"\\noverlapped, {s.overlap} stream chunks"
            lines.append(f'  {_node_id(k, s)} [shape=hexagon, style="filled,dashed", fillcolor="#f6d5a8", '
                         f'color="#c05000", label="{label}"];')
    for a, b, t in _edges(info):
        lines.append(f'  {_node_id(a, info.steps[a])} -> {_node_id(b, info.steps[b])} [label="{t}"];')
    return "\n".join(lines) + "\n}\n"


def to_json(info: MultiDeviceInfo) -> str:
    nodes = [{"id": _node_id(k, s), "kind": s.kind, "name": s.name, "type": s.comm_type or None,
              "teams": list(s.teams), "exprs": list(s.exprs), "mesh": s.mesh,
              "inputs": list(s.inputs), "outputs": list(s.outputs)} for k, s in enumerate(info.steps)]
    edges = [{"from": _node_id(a, info.steps[a]), "to": _node_id(b, info.steps[b]), "tensor": t}
             for a, b, t in _edges(info)]
    return json.dumps({"multidevice": True, "world": info.world, "nodes": nodes, "edges": edges}, indent=2) + "\n"


def to_mermaid(info: MultiDeviceInfo) -> str:
    lines = ["flowchart TD"]
    for k, s in enumerate(info.steps):
        if s.kind == "region":
            lines.append(f'  {_node_id(k, s)}["{s.label}"]')
        else:  # a hexagon: communications stand out from the regions' boxes
            lines.append(f'  {_node_id(k, s)}{{{{"{s.name}: {s.comm_type} team=({" | ".join(sorted(set(s.teams)))})"}}}}')
    for a, b, t in _edges(info):
        lines.append(f"  {_node_id(a, info.steps[a])} -->|{t}| {_node_id(b, info.steps[b])}")
    lines.append("  classDef comm fill:#f6d5a8,stroke:#c05000,stroke-dasharray:4")
    comms = [_node_id(k, s) for k, s in enumerate(info.steps) if s.kind == "communication"]
    if comms:
        lines.append(f"  class {','.join(comms)} comm")
    return "\n".join(lines) + "\n"


def to_svg(info: MultiDeviceInfo) -> bytes:
    from engine.segment.export import layout_program

    exe = layout_program()
    if exe is None:
        raise EngineError("exporting SVG needs the graphviz-pure package or graphviz's `dot` program")
    try:
        done = subprocess.run([exe, "-Tsvg"], input=to_dot(info).encode(), capture_output=True, check=True,
                              timeout=60)
    except subprocess.CalledProcessError as e:
        raise EngineError(f"`{Path(exe).name} -Tsvg` failed: {e.stderr.decode(errors='replace').strip()}") from None
    return done.stdout


def export(info: MultiDeviceInfo, fmt: str, path: str | Path | None = None) -> str | bytes:
    """The step graph in `fmt`, written to `path` when given; ValueError (one line) otherwise."""
    if info.error:
        raise ValueError(f"no multi-device program: {info.error}")
    writers = {"dot": to_dot, "json": to_json, "mermaid": to_mermaid, "svg": to_svg}
    if fmt not in writers:
        raise ValueError(f"a multi-device fusion exports as {', '.join(EXPORT_FORMATS)}, not {fmt}")
    try:
        data = writers[fmt](info)
    except EngineError as e:
        raise ValueError(str(e)) from None
    if path is not None:
        p = Path(path)
        p.write_bytes(data) if isinstance(data, bytes) else p.write_text(data, encoding="utf-8")
    return data
