"""Exports of a segment graph: DOT (graphviz), JSON (versioned schema), Mermaid, and SVG/PNG
drawn from the DOT text by `graphviz-pure` (a dependency: a self-contained port of graphviz's
`dot` that pip installs as a wheel, so no system graphviz is needed), else by a system `dot`.

Each text format has a reader that rebuilds the networkx graph, so that exports can be
checked (and a saved JSON reopened) without graphviz.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engine.errors import EngineError, FusionFileError

if TYPE_CHECKING:
    import networkx as nx

    from engine.segment.graph import SegmentedFusion

SCHEMA = "fusescope.segments"
SCHEMA_VERSION = 1

# One fill colour per scheduler, as the TUI colours segment nodes.
COLORS: dict[str, str] = {
    "pointwise": "#8ecae6",
    "reduction": "#ffb703",
    "inner_persistent": "#fb8500",
    "outer_persistent": "#f4a261",
    "inner_outer_persistent": "#e76f51",
    "transpose": "#90be6d",
    "resize": "#f9c74f",
    "expr_eval": "#cdb4db",
    "no_op": "#dddddd",
    "matmul": "#b5838d",
}


class GraphvizNotFoundError(EngineError):
    """SVG/PNG export needs `graphviz-pure` (installed with the package) or graphviz's `dot`."""


def _color(scheduler: str) -> str:
    return COLORS.get(scheduler, "#ffffff")


def _human_bytes(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024  # type: ignore[assignment]
    return f"{n} B"


# ---- DOT -------------------------------------------------------------------------------------

def _dot_str(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def to_dot(sf: SegmentedFusion) -> str:
    """graphviz DOT: a node per segment (label: id, scheduler, op count; filled with the
    scheduler's colour), an edge per tensor passed (label: tensor and bytes)."""
    lines = [
        "digraph segmented_fusion {",
        "  rankdir=TB;",
        '  node [shape=box, style="rounded,filled", fontname="Courier"];',
        '  edge [fontname="Courier"];',
    ]
    for g in sf.groups:
        label = f"{g.name}\n{g.scheduler}\n{len(g.exprs)} ops"
        lines.append(
            f"  {g.name} [label={_dot_str(label)}, fillcolor={_dot_str(_color(g.scheduler))}, "
            f"scheduler={_dot_str(g.scheduler)}, ops={len(g.exprs)}];"
        )
    for e in sf.edges:
        label = f"{e.val.short_name}\n{_human_bytes(e.bytes)}"
        lines.append(
            f"  {e.producer.name} -> {e.consumer.name} [label={_dot_str(label)}, "
            f"tensor={_dot_str(e.val.short_name)}, bytes={e.bytes}];"
        )
    lines.append("}")
    return "\n".join(lines) + "\n"


_DOT_ATTR = re.compile(r'(\w+)=("(?:[^"\\]|\\.)*"|[^,\]\s]+)')
_DOT_NODE = re.compile(r"^\s*(\w+)\s*\[(.*)\];\s*$")
_DOT_EDGE = re.compile(r"^\s*(\w+)\s*->\s*(\w+)\s*\[(.*)\];\s*$")


def _dot_attrs(text: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in _DOT_ATTR.findall(text):
        if v.startswith('"'):
            out[k] = json.loads(v)  # DOT's escapes used here are JSON's
        else:
            out[k] = int(v) if v.isdigit() else v
    return out


def parse_dot(text: str) -> nx.MultiDiGraph:
    """Read back `to_dot`'s output (nodes and edges with their attributes)."""
    import networkx as nx

    g = nx.MultiDiGraph()
    if not text.lstrip().startswith("digraph"):
        raise FusionFileError("not a DOT digraph")
    for line in text.splitlines():
        m = _DOT_EDGE.match(line)
        if m:
            g.add_edge(m.group(1), m.group(2), **_dot_attrs(m.group(3)))
            continue
        m = _DOT_NODE.match(line)
        if m and m.group(1) not in ("node", "edge", "graph"):
            g.add_node(m.group(1), **_dot_attrs(m.group(2)))
    return g


# ---- JSON ------------------------------------------------------------------------------------

def to_json_data(sf: SegmentedFusion) -> dict[str, Any]:
    return {
        "schema": SCHEMA,
        "version": SCHEMA_VERSION,
        "fusion": {
            "inputs": [getattr(v, "short_name", str(v)) for v in sf.fusion.inputs],
            "outputs": [getattr(v, "short_name", str(v)) for v in sf.fusion.outputs],
        },
        "nodes": [
            {
                "id": g.id,
                "name": g.name,
                "scheduler": g.scheduler,
                "ops": len(g.exprs),
                "exprs": [e.name for e in g.exprs],
                "forwarded_exprs": [e.name for e in g.forwarded_exprs],
                "inputs": [v.short_name for v in g.inputs],
                "outputs": [v.short_name for v in g.outputs],
            }
            for g in sf.groups
        ],
        "edges": [
            {"from": e.producer.id, "to": e.consumer.id, "tensor": e.val.short_name,
             "dtype": e.val.dtype.cuda_name, "bytes": e.bytes}
            for e in sf.edges
        ],
    }


def to_json(sf: SegmentedFusion) -> str:
    return json.dumps(to_json_data(sf), indent=2) + "\n"


def _need(obj: Any, key: str, kind: type | tuple[type, ...], path: str) -> Any:
    if not isinstance(obj, dict) or key not in obj:
        raise FusionFileError(f"{path}: missing field {key!r}")
    v = obj[key]
    if not isinstance(v, kind) or (kind is int and isinstance(v, bool)):
        raise FusionFileError(f"{path}.{key}: expected {getattr(kind, '__name__', kind)}, got {type(v).__name__}")
    return v


def graph_from_json(text: str) -> nx.MultiDiGraph:
    """Read a JSON export back; errors name the JSON path at fault."""
    import networkx as nx

    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise FusionFileError(f"not JSON: {e}") from None
    if _need(data, "schema", str, "$") != SCHEMA:
        raise FusionFileError(f"$.schema: expected {SCHEMA!r}, got {data['schema']!r}")
    version = _need(data, "version", int, "$")
    if version != SCHEMA_VERSION:
        raise FusionFileError(f"$.version: unknown version {version} (this engine reads {SCHEMA_VERSION})")
    g = nx.MultiDiGraph()
    for k, n in enumerate(_need(data, "nodes", list, "$")):
        p = f"$.nodes[{k}]"
        gid = _need(n, "id", int, p)
        g.add_node(gid, name=_need(n, "name", str, p), scheduler=_need(n, "scheduler", str, p),
                   ops=_need(n, "ops", int, p), exprs=_need(n, "exprs", list, p),
                   inputs=_need(n, "inputs", list, p), outputs=_need(n, "outputs", list, p))
    for k, e in enumerate(_need(data, "edges", list, "$")):
        p = f"$.edges[{k}]"
        a, b = _need(e, "from", int, p), _need(e, "to", int, p)
        for end, v in (("from", a), ("to", b)):
            if v not in g:
                raise FusionFileError(f"{p}.{end}: no node with id {v}")
        g.add_edge(a, b, tensor=_need(e, "tensor", str, p), bytes=_need(e, "bytes", int, p))
    return g


# ---- Mermaid ---------------------------------------------------------------------------------

def to_mermaid(sf: SegmentedFusion) -> str:
    lines = ["flowchart TD"]
    for g in sf.groups:
        lines.append(f'  {g.name}["{g.name}: {g.scheduler} ({len(g.exprs)} ops)"]')
    for e in sf.edges:
        lines.append(f'  {e.producer.name} -->|"{e.val.short_name} ({e.bytes} B)"| {e.consumer.name}')
    for s in sorted({g.scheduler for g in sf.groups}):
        lines.append(f"  classDef {s} fill:{_color(s)},stroke:#333")
    for g in sf.groups:
        lines.append(f"  class {g.name} {g.scheduler}")
    return "\n".join(lines) + "\n"


_MM_NODE = re.compile(r'^\s*(g\d+)\["(g\d+): (\w+) \((\d+) ops\)"\]\s*$')
_MM_EDGE = re.compile(r'^\s*(g\d+) -->\|"(\w+) \((\d+) B\)"\| (g\d+)\s*$')


def parse_mermaid(text: str) -> nx.MultiDiGraph:
    """Read back `to_mermaid`'s output."""
    import networkx as nx

    lines = text.splitlines()
    if not lines or lines[0].strip() != "flowchart TD":
        raise FusionFileError("not a Mermaid flowchart")
    g = nx.MultiDiGraph()
    for line in lines[1:]:
        m = _MM_NODE.match(line)
        if m:
            g.add_node(m.group(1), scheduler=m.group(3), ops=int(m.group(4)))
            continue
        m = _MM_EDGE.match(line)
        if m:
            g.add_edge(m.group(1), m.group(4), tensor=m.group(2), bytes=int(m.group(3)))
    return g


# ---- images -----------------------------------------------------------------------------------

# `graphviz-pure` comes first: it is the package's own dependency and writes the same bytes on
# every platform; a system graphviz is the fallback where no wheel of it exists.
LAYOUT_PROGRAMS = ("graphviz-pure", "dot")


def layout_program(names: tuple[str, ...] = LAYOUT_PROGRAMS) -> str | None:
    """The path of the first of `names` found: in this Python's scripts folder (a virtual
    environment's bin, which need not be on PATH), else on PATH."""
    folders = [sysconfig.get_path("scripts"), str(Path(sys.executable).parent)]
    for name in names:
        for folder in folders:
            exe = shutil.which(name, path=folder)
            if exe is not None:
                return exe
        exe = shutil.which(name)
        if exe is not None:
            return exe
    return None


def render(sf: SegmentedFusion, fmt: str = "svg", dot: str | None = None) -> bytes:
    """SVG or PNG bytes of `to_dot`'s graph, laid out by `dot` (a program's name or path) when
    given, else by `layout_program()`; GraphvizNotFoundError when there is none."""
    if fmt not in ("svg", "png"):
        raise ValueError(f"image format must be svg or png, got {fmt!r}")
    exe = shutil.which(dot) if dot else layout_program()
    if exe is None:
        raise GraphvizNotFoundError(
            f"exporting {fmt.upper()} needs the graphviz-pure package (`pip install graphviz-pure`, "
            "which this package depends on) or graphviz's `dot` program; neither was found "
            "(the dot, json and mermaid formats need nothing)"
        )
    try:
        done = subprocess.run([exe, f"-T{fmt}"], input=to_dot(sf).encode(), capture_output=True,
                              check=True, timeout=60)
    except subprocess.CalledProcessError as e:
        name = Path(exe).name
        raise EngineError(f"`{name} -T{fmt}` failed: {e.stderr.decode(errors='replace').strip()}") from None
    return done.stdout


def export(sf: SegmentedFusion, fmt: str, path: str | Path | None = None) -> str | bytes:
    """The export in `fmt` (dot, json, mermaid, svg, png), written to `path` when given."""
    writers = {"dot": to_dot, "json": to_json, "mermaid": to_mermaid}
    data: str | bytes
    if fmt in writers:
        data = writers[fmt](sf)
    elif fmt in ("svg", "png"):
        data = render(sf, fmt)
    else:
        raise ValueError(f"unknown export format {fmt!r}: use dot, json, mermaid, svg or png")
    if path is not None:
        p = Path(path)
        if isinstance(data, bytes):
            p.write_bytes(data)
        else:
            p.write_text(data)
    return data
