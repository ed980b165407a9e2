"""The cells of the Run tab's table: display text (coloured deltas, bars of the time's share)
and the CSV export's plain numbers."""

from __future__ import annotations

from rich.text import Text

BAR_WIDTH = 12


# The CSV export's columns: plain numbers, the unit in the header.
CSV_HEADER = ("segment", "scheduler", "kernel", "time (ms)", "time change vs previous run (%)",
              "share of time (%)", "bytes (B)", "bandwidth (GB/s)", "of peak bandwidth (%)",
              "max abs error", "registers", "local memory per thread (B)", "occupancy (%)")


def _csv(v: float | int | None) -> str:
    """A number as a spreadsheet reads it (repr keeps every digit of a float); "" for none."""
    return "" if v is None else repr(v)


def _num(v: float | int | None, spec: str) -> str:
    return "-" if v is None else spec.format(v)


def _error(v: float | None) -> Text:
    if v is None:
        return Text("-")
    return Text(f"{v:.2e}", style="green" if v == 0 else "")


def _delta(now: float | None, before: float | None) -> Text:
    """The change of a time against the previous run: red slower, green faster."""
    if now is None or before is None or before <= 0:
        return Text("-", style="dim")
    change = (now - before) / before
    style = "red" if change > 0.05 else "green" if change < -0.05 else "dim"
    return Text(f"{change:+.0%}", style=style)


def _bar(ms: float | None, total: float) -> Text:
    """The segment's share of the run's time as a bar of eighths."""
    if ms is None or total <= 0:
        return Text("")
    eighths = round(ms / total * BAR_WIDTH * 8)
    full, part = divmod(eighths, 8)
    return Text("█" * full + (" ▏▎▍▌▋▊▉"[part] if part else ""), style="cyan")
