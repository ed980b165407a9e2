"""Split a fusion listing into entries a cursor can move over: one per input or output line and
one per expression (which may span several lines), each tagged with the tensor it is about.

Parsing the printed text (rather than walking the IR) keeps the UI's listing identical to what
the engine prints; joining the entries' text with newlines gives the listing back.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_TENSOR_AT_START = re.compile(r"^\s*(T\d+)_[gls]_")
# A multi-device fusion's listing ends with its sharding column (fusescope.md_model): a row per tensor.
_SHARDING_ROW = re.compile(r"^  (T\d+)  ")


@dataclass(frozen=True)
class Entry:
    text: str
    tensor: str | None  # the input/output tensor, or the (first) output of an expression


def split_listing(listing: str) -> list[Entry]:
    lines = listing.split("\n")
    if lines and lines[-1] == "":
        lines.pop()  # the listing's final newline; joining the entries drops it too
    entries: list[Entry] = []
    in_math = in_sharding = False
    for line in lines:
        m = _TENSOR_AT_START.match(line)
        if line.startswith("Sharding ("):
            in_sharding = True
        elif in_sharding:
            m = _SHARDING_ROW.match(line)
        if line.startswith("%kernel_math"):
            in_math = True
        elif line.startswith("}"):
            in_math = False
        elif in_math and line[:1].isspace() and entries and entries[-1].tensor:
            # Inside %kernel_math only an expression's first line starts at column 0; indented
            # lines (operands, a binary operator, a matmul's second input) continue it.
            prev = entries.pop()
            entries.append(Entry(prev.text + "\n" + line, prev.tensor))
            continue
        entries.append(Entry(line, m.group(1) if m else None))
    return entries
