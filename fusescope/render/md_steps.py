"""A multi-device program's steps drawn in the terminal, top to bottom in run order: a region
of local exprs as a single-line box (blue), a communication as a double-line box (orange)
with its type and team, and between them the tensors one hands to the next."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.text import Text

if TYPE_CHECKING:
    from fusescope.md_model import MultiDeviceInfo, StepInfo

REGION_STYLE = "bold #5fafff"
COMM_STYLE = "bold #ff8700"


def _box(lines: list[str], width: int, double: bool) -> list[str]:
    tl, tr, bl, br, h, v = ("╔", "╗", "╚", "╝", "═", "║") if double else ("┌", "┐", "└", "┘", "─", "│")
    out = [tl + h * (width + 2) + tr]
    out += [f"{v} {line:<{width}} {v}" for line in lines]
    out.append(bl + h * (width + 2) + br)
    return out


def _lines(s: StepInfo) -> list[str]:
    if s.kind == "region":
        return [f"{s.name} on {s.mesh or 'every device'}", *(f"  {e}" for e in s.exprs)]
    teams = sorted(set(s.teams))
    out = [f"{s.name}: {s.comm_type}", f"  team=({') ('.join(teams)})", f"  {s.inputs[0]} -> {s.outputs[0]}"]
    if s.overlap:
        out.append(f"  overlapped with the {s.overlap_side} region, {s.overlap} stream chunks")
    return out


def draw_steps(info: MultiDeviceInfo, width: int = 100) -> Text:
    """The steps as boxes joined by arrows labelled with the tensors passed on."""
    text = Text()
    inner = min(max((len(line) for s in info.steps for line in _lines(s)), default=10), max(20, width - 4))
    made: dict[str, int] = {}
    for k, s in enumerate(info.steps):
        passed = [t for t in s.inputs if made.get(t) == k - 1]
        if k:
            text.append(f"   │ {', '.join(passed)}\n   ▼\n" if passed else "   │\n   ▼\n", style="dim")
        style = REGION_STYLE if s.kind == "region" else COMM_STYLE
        for line in _box([line[:inner] for line in _lines(s)], inner, s.kind != "region"):
            text.append(line + "\n", style=style)
        for t in s.outputs:
            made[t] = k
    text.append("\n")
    text.append("┌┐ ", style=REGION_STYLE)
    text.append("region (local exprs, compiled per rank)   ")
    text.append("╔╗ ", style=COMM_STYLE)
    text.append("communication (torch.distributed)")
    return text
