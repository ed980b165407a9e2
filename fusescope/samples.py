"""Bundled sample fusions: where they live and how a name on the command line finds one.

The samples are the repository's `sample_fusions/` folder, read in place (the project is
installed editable, as the README says), so this module needs neither the engine nor Textual.
FUSESCOPE_SAMPLES overrides the folder, for an installed copy or a private collection.
"""

from __future__ import annotations

import ast
import os
import re
from dataclasses import dataclass
from pathlib import Path

DEFAULT_SAMPLE = "seed001_inner_outer_alloc"


def samples_dir() -> Path:
    env = os.environ.get("FUSESCOPE_SAMPLES")
    if env:
        return Path(env)
    return Path(__file__).resolve().parent.parent / "sample_fusions"


@dataclass(frozen=True)
class Sample:
    name: str
    path: Path
    summary: str


def list_samples() -> list[Sample]:
    """Every `*.py` in the samples folder, by name; empty when the folder is missing."""
    folder = samples_dir()
    if not folder.is_dir():
        return []
    return [
        Sample(p.stem, p, _summary(p))
        for p in sorted(folder.glob("*.py"))
        if not p.name.startswith("_")
    ]


def _summary(path: Path) -> str:
    """The first sentence of the file's docstring or its leading comment block, whole and on
    one line (a sentence that goes on over several lines is not cut)."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError:
        return ""
    try:
        doc = ast.get_docstring(ast.parse(text))
    except SyntaxError:
        doc = None
    if doc:
        lines = doc.strip().splitlines()
    else:
        lines = []
        for line in text.splitlines():
            stripped = line.strip()
            if not stripped.startswith("#"):
                if lines or stripped:
                    break
                continue
            lines.append(stripped.lstrip("#"))
    paragraph = ""
    for line in lines:
        if not line.strip():
            break
        # A word hyphenated across lines ("block-" / "quantized") is joined back.
        joint = "" if not paragraph or paragraph.endswith("-") else " "
        paragraph += joint + line.strip()
    return _SENTENCE_END.split(paragraph, maxsplit=1)[0]


# The end of a sentence: a full stop, then a capital (not "e.g. foo", not "0.5").
_SENTENCE_END = re.compile(r"(?<=[a-z0-9)\]\"'`]\.)\s+(?=[A-Z])")


def default_sample() -> Sample | None:
    """The seed-001 sample when present, else the first one, else None."""
    samples = list_samples()
    for s in samples:
        if s.name == DEFAULT_SAMPLE:
            return s
    return samples[0] if samples else None


def did_you_mean(spec: str) -> str:
    """" (did you mean softmax?)" for a name close to a bundled sample's, else ""."""
    import difflib

    stem = Path(spec).name.removesuffix(".py")
    close = difflib.get_close_matches(stem, [s.name for s in list_samples()], n=3, cutoff=0.6)
    if not close:
        return ""
    return f" (did you mean {' or '.join(close)}?)"


def resolve(spec: str) -> Path:
    """A path as given when it exists, else a bundled sample by name (with or without .py).

    A name that is neither is returned as a path, so that the loader reports it missing.
    """
    path = Path(spec)
    if path.exists():
        return path
    stem = spec[:-3] if spec.endswith(".py") else spec
    for s in list_samples():
        if s.name == stem:
            return s.path
    return path
