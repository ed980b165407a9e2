"""Bundled sample fusions: where they live and how a name on the command line finds one.

The samples are the repository's `sample_fusions/` folder, read in place (the project is
installed editable, as the README says), so this module needs neither the engine nor Textual.
FUSESCOPE_SAMPLES overrides the folder, for an installed copy or a private collection.
"""

from __future__ import annotations

import ast
import os
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
    """The first line of the file's docstring or of its leading comment block."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError:
        return ""
    try:
        doc = ast.get_docstring(ast.parse(text))
    except SyntaxError:
        doc = None
    if doc:
        return doc.strip().splitlines()[0]
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped:
            continue
        if stripped.startswith("#"):
            return stripped.lstrip("#").strip()
        break
    return ""


def default_sample() -> Sample | None:
    """The seed-001 sample when present, else the first one, else None."""
    samples = list_samples()
    for s in samples:
        if s.name == DEFAULT_SAMPLE:
            return s
    return samples[0] if samples else None


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
