"""Heuristic parameters: frozen dataclasses that print like nvFuser's scheduler_params.

Each scheduler module defines its own params class on top of HeuristicParams;
`derivation` keeps, in order, how each value was reached (readable lines that the
trace also records).
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class LaunchParams:
    """Launch dimensions; -1 means "decided at launch from the sizes" as in nvFuser."""

    gdimx: int = -1
    gdimy: int = -1
    gdimz: int = -1
    bdimx: int = -1
    bdimy: int = -1
    bdimz: int = -1
    smem: int = 0

    def __str__(self) -> str:
        return (
            f"Launch Parameters: BlockDim.x = {self.bdimx}, BlockDim.y = {self.bdimy}, "
            f"BlockDim.z = {self.bdimz}, GridDim.x = {self.gdimx}, GridDim.y = {self.gdimy}, "
            f"GridDim.z = {self.gdimz}, Smem Size = {self.smem}"
        )


@dataclass(frozen=True)
class HeuristicParams:
    tag: str = ""
    lparams: LaunchParams = field(default_factory=LaunchParams)
    # 32-bit indexing when every extent product fits, as nvFuser decides per kernel.
    index_type: str = "int"
    derivation: tuple[str, ...] = ()
