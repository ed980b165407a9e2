"""Syntax colouring of nvFuser-format IR text (fusion listings and transform blocks).

The engine prints plain text; colour is added here by pattern so that the CLI (when writing to a
terminal) and the TUI colour the same things the same way.
"""

from __future__ import annotations

import re

from rich.style import Style
from rich.text import Text

# One style per kind of token; the TUI's help screen and the tests refer to these names.
STYLES: dict[str, Style] = {
    "section": Style(bold=True, color="yellow"),
    "op": Style(bold=True, color="green"),
    "attribute": Style(italic=True, color="bright_black"),
    "iterdomain": Style(color="blue"),
    "tensor": Style(bold=True, color="cyan"),
    "memory": Style(dim=True),
    "dtype": Style(color="magenta"),
    "label": Style(bold=True),
    "transform": Style(bold=True, color="bright_yellow"),
    "selected": Style(bgcolor="grey35", bold=True, underline=True),
}

# Applied in order: a later pattern's style is laid over an earlier one's where they overlap,
# so the specific patterns (tensors, IterDomains) come after the broad ones (op calls).
_PATTERNS: list[tuple[re.Pattern[str], dict[str, str]]] = [
    (re.compile(r"\b([A-Za-z_][A-Za-z0-9_.]*)\("), {"1": "op"}),
    (re.compile(r"\b([A-Za-z][A-Za-z ]*?) = "), {"1": "attribute"}),
    (re.compile(r"\b[a-z][A-Za-z.]*\d+\{[^{}\n]*\}"), {"0": "iterdomain"}),
    (re.compile(r"\b(T\d+)_([gls])_([^\[\s]+)(?=\[)"), {"1": "tensor", "2": "memory", "3": "dtype"}),
    (re.compile(r"^(Inputs:|Outputs:)|(%kernel_math)", re.M), {"1": "section", "2": "section"}),
    (re.compile(r"^ ((?:root|logical|allocation|loop) domain :|contiguity:)", re.M), {"1": "label"}),
    (re.compile(r"^  (Split|Merge|Resize|Swizzle\w*):", re.M), {"1": "transform"}),
]


def highlight(text: str, selected: str | None = None) -> Text:
    """`text` as rich Text with IR tokens coloured; every occurrence of the tensor named
    `selected` (e.g. "T3") is shown reversed so a selection is visible in a listing."""
    out = Text(text)
    for pattern, groups in _PATTERNS:
        for m in pattern.finditer(text):
            for group, kind in groups.items():
                g = int(group)
                if m.group(g) is not None:
                    out.stylize(STYLES[kind], m.start(g), m.end(g))
    if selected:
        tv = re.compile(rf"\b{re.escape(selected)}_[gls]_[^\[\s]+\[[^\]\n]*\]")
        for m in tv.finditer(text):
            out.stylize(STYLES["selected"], m.start(), m.end())
    return out
