"""The one adapter between the debugger and the engine: the only fusescope module that imports
`engine`. Widgets and the CLI see plain data (strings, dataclasses), never engine objects, so
the UI can't reach into the IR and the engine can change behind this file.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from engine import load_fusion
from engine.errors import EngineError
from engine.ir.printer import transforms_block

if TYPE_CHECKING:
    from engine import FusionDefinition

Role = Literal["input", "output", "intermediate"]


class LoadError(Exception):
    """A fusion could not be loaded; the message is one line meant for the user."""


@dataclass(frozen=True)
class TensorInfo:
    name: str  # "T3", the name the listing uses
    text: str  # the full TensorView string, e.g. T0_g_float[bS0{1}, iS1{4096}]
    dtype: str  # CUDA spelling, as in the listing: float, __bfloat, ...
    role: Role
    transforms: str  # the seed-001 transform block


@dataclass(frozen=True)
class ValueInfo:
    """A fusion input or output as the listing prints it (a tensor or a scalar)."""

    name: str
    text: str
    is_tensor: bool


@dataclass
class Session:
    """A loaded fusion and the text views derived from it."""

    fd: FusionDefinition
    path: Path | None
    title: str
    listing: str
    inputs: list[ValueInfo]
    outputs: list[ValueInfo]
    tensors: dict[str, TensorInfo] = field(default_factory=dict)

    @classmethod
    def from_definition(
        cls, fd: FusionDefinition, path: Path | None = None, title: str | None = None
    ) -> Session:
        fusion = fd.fusion
        ins = {id(v) for v in fusion.inputs}
        outs = {id(v) for v in fusion.outputs}
        tensors: dict[str, TensorInfo] = {}
        for tv in fusion.tensors():
            role: Role = "input" if id(tv) in ins else "output" if id(tv) in outs else "intermediate"
            tensors[tv.short_name] = TensorInfo(
                name=tv.short_name,
                text=str(tv),
                dtype=tv.dtype.cuda_name,
                role=role,
                transforms=transforms_block(tv),
            )
        return cls(
            fd=fd,
            path=path,
            title=title or (path.name if path is not None else "untitled fusion"),
            listing=str(fusion),
            inputs=[_value_info(v) for v in fusion.inputs],
            outputs=[_value_info(v) for v in fusion.outputs],
            tensors=tensors,
        )

    def transforms(self, name: str) -> str:
        """The transform block of tensor `name` (e.g. "T7"); KeyError names the tensor."""
        try:
            return self.tensors[name].transforms
        except KeyError:
            known = ", ".join(self.tensors) or "none"
            raise KeyError(f"no tensor {name} in {self.title} (tensors: {known})") from None


def _value_info(v: object) -> ValueInfo:
    from engine.ir.tensorview import TensorView

    if isinstance(v, TensorView):
        return ValueInfo(v.short_name, str(v), True)
    return ValueInfo(str(v), str(v), False)


def load_session(path: str | Path) -> Session:
    """Read a fusion file (nvFuser's python-frontend format) without running it.

    Every failure the user can cause (missing file, unreadable file, a FusionFileError or
    FusionDefinitionError from the engine) becomes a LoadError with one line of text.
    """
    p = Path(path)
    if not p.exists():
        raise LoadError(f"no such file: {p}")
    if p.is_dir():
        raise LoadError(f"{p} is a folder, not a fusion file")
    try:
        fd = load_fusion(str(p))
    except (EngineError, OSError, UnicodeDecodeError) as e:
        raise LoadError(_one_line(f"{type(e).__name__}: {e}")) from e
    return Session.from_definition(fd, path=p)


def _one_line(text: str) -> str:
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    return " | ".join(lines)
