"""The segment graph drawn with box characters: one row of boxes per layer of the graph
(networkx's topological generations, so every edge points down the page), each box with the
segment id, scheduler and op count, coloured by scheduler, and under each box its outgoing
edges labelled with the tensors and their bytes.

Plain data in (segments and edges as fusescope/compiler.py flattens them), rich Text out, so the TUI and
tests draw the same picture.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import networkx as nx
from rich.style import Style
from rich.text import Text

# The same fill colours as the engine's DOT/Mermaid exports (engine/segment/export.py), so a
# segment looks the same in the terminal and in an exported picture.
SCHEDULER_COLORS: dict[str, str] = {
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
DEFAULT_COLOR = "#ffffff"
BOX_WIDTH = 26  # inside: "g11 inner_outer_persistent" just fits
GAP = 2


class _Segment(Protocol):
    id: int
    scheduler: str
    ops: int
    forwarded: int


class _Edge(Protocol):
    producer: int
    consumer: int
    tensors: tuple[str, ...]
    bytes: int


def scheduler_color(scheduler: str) -> str:
    return SCHEDULER_COLORS.get(scheduler, DEFAULT_COLOR)


def layers(segments: Sequence[_Segment], edges: Sequence[_Edge]) -> list[list[int]]:
    """Segment ids by layer: a segment sits one layer below the lowest of its producers'."""
    g = nx.DiGraph()
    g.add_nodes_from(s.id for s in segments)
    g.add_edges_from((e.producer, e.consumer) for e in edges)
    return [sorted(layer) for layer in nx.topological_generations(g)]


@dataclass(frozen=True)
class Drawing:
    text: Text
    rows: dict[int, int]  # segment id -> the line its box starts on (to scroll it into view)


def _bytes(n: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} B"


def _fit(s: str, width: int) -> str:
    return s if len(s) <= width else s[: width - 1] + "…"


def draw(segments: Sequence[_Segment], edges: Sequence[_Edge], width: int = 100,
         selected: int | None = None) -> Drawing:
    """The graph in at most `width` columns (a layer wider than that wraps onto more rows)."""
    by_id = {s.id: s for s in segments}
    out_edges: dict[int, list[_Edge]] = {}
    for e in edges:
        out_edges.setdefault(e.producer, []).append(e)
    per_row = max(1, (width + GAP) // (BOX_WIDTH + 2 + GAP))
    text = Text()
    rows: dict[int, int] = {}
    line = 0
    for layer in layers(segments, edges):
        for start in range(0, len(layer), per_row):
            chunk = [by_id[i] for i in layer[start : start + per_row]]
            for s in chunk:
                rows[s.id] = line
            cells = [_box(s, out_edges.get(s.id, []), s.id == selected) for s in chunk]
            height = max(len(c) for c in cells)
            for r in range(height):
                row = Text()
                for k, cell in enumerate(cells):
                    if k:
                        row.append(" " * GAP)
                    part = cell[r] if r < len(cell) else Text(" " * (BOX_WIDTH + 2))
                    row.append_text(part)
                text.append_text(row.rstrip() or row)
                text.append("\n")
                line += 1
        text.append("\n")  # a blank line between layers
        line += 1
    return Drawing(text, rows)


def _box(s: _Segment, outs: list[_Edge], selected: bool) -> list[Text]:
    """The box's lines, each exactly BOX_WIDTH + 2 cells wide."""
    color = scheduler_color(s.scheduler)
    border = Style(color=color, bold=selected)
    title = Style(color=color, bold=True, reverse=selected)
    tl, tr, bl, br, h, v = ("┏", "┓", "┗", "┛", "━", "┃") if selected else ("╭", "╮", "╰", "╯", "─", "│")
    inner = BOX_WIDTH
    fwd = f" · {s.forwarded} forwarded" if s.forwarded else ""
    lines = [Text(tl + h * inner + tr, style=border)]
    for content, style in ((_fit(f" g{s.id} {s.scheduler}", inner), title),
                           (_fit(f" {s.ops} op{'s' if s.ops != 1 else ''}{fwd}", inner), Style())):
        t = Text(v, style=border)
        t.append(content.ljust(inner), style=style)
        t.append(v, style=border)
        lines.append(t)
    lines.append(Text(bl + h * inner + br, style=border))
    for k, e in enumerate(outs):
        branch = "└▶" if k == len(outs) - 1 else "├▶"
        # The bytes are the point of the label: when it is too long the tensor list gives way.
        head, tail = f" {branch} g{e.consumer} ", f" {_bytes(e.bytes)}"
        tensors = _fit(", ".join(e.tensors), max(1, inner + 2 - len(head) - len(tail)))
        label = head + tensors + tail
        t = Text(label.ljust(inner + 2))
        t.stylize(Style(color=color), 1, 3)
        lines.append(t)
    return lines
