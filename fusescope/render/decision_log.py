"""The decision log as people read it (`show --why`, the Segments tab): a decision repeated
word for word is shown once with its count, and each tensor the line names is linked to the
name and line it has in the fusion file it was loaded from."""

from __future__ import annotations

import re
from collections.abc import Hashable, Iterable, Mapping
from typing import TypeVar

K = TypeVar("K", bound=Hashable)

_TENSOR = re.compile(r"\bT\d+\b")


def collapse(items: Iterable[K]) -> list[tuple[K, int]]:
    """Each distinct item once, in the order first seen, with how many times it came."""
    counts: dict[K, int] = {}
    for item in items:
        counts[item] = counts.get(item, 0) + 1
    return list(counts.items())


def counted(text: str, n: int) -> str:
    return f"{text} (x{n})" if n > 1 else text


def file_names(line: str, origins: Mapping[str, tuple[str, int]]) -> str:
    """"T5 is T4 (line 17), ..." for the tensors `line` names that the file names (origins: the
    engine's name -> the file's name and line); "" when none does."""
    seen: list[str] = []
    for name in _TENSOR.findall(line):
        if name in origins and name not in seen:
            seen.append(name)
    parts = []
    for name in seen:
        file_name, lineno = origins[name]
        parts.append(f"{name} is line {lineno}" if file_name == name else f"{name} is {file_name} (line {lineno})")
    return ", ".join(parts)


def annotate(line: str, origins: Mapping[str, tuple[str, int]]) -> str:
    """`line` with the file's names of its tensors after it, in brackets."""
    names = file_names(line, origins)
    return f"{line}  [file: {names}]" if names else line


def why_lines(lines: Iterable[str], origins: Mapping[str, tuple[str, int]]) -> list[str]:
    """`show --why`: repeats collapsed with their count, tensors linked to the file."""
    return [annotate(counted(text, n), origins) for text, n in collapse(lines)]
