"""Heuristic parameters: frozen dataclasses that print like nvFuser's scheduler_params.

Each scheduler module defines its own params class on top of HeuristicParams;
`derivation` keeps, in order, how each value was reached (readable lines that the
trace also records).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from engine.errors import ScheduleError


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


def apply_overrides(params: HeuristicParams, overrides: dict[str, object],
                    segment: int) -> tuple[HeuristicParams, set[str]]:
    """`params` with the user's values: keys are field names (`vectorization_factor`),
    launch fields (`lparams.gdimy`), or either prefixed by a segment (`g1.lparams.bdimx`)
    to touch one segment only. Returns the new params and the keys used: a key naming no
    field of this segment's params may belong to another segment's scheduler, so the
    caller decides whether it was used at all. A value of the wrong type is refused."""
    from dataclasses import fields, replace

    changes: dict[str, object] = {}
    launch: dict[str, object] = {}
    used: set[str] = set()
    names = {f.name for f in fields(params)}
    for full, value in overrides.items():
        key = full
        head, _, rest = key.partition(".")
        if head.startswith("g") and head[1:].isdigit() and rest:
            if int(head[1:]) != segment:
                continue
            key = rest
        target, name = (launch, key[len("lparams."):]) if key.startswith("lparams.") else (changes, key)
        current = params.lparams if target is launch else params
        if target is changes and name not in names:
            continue
        if not hasattr(current, name):
            raise ScheduleError(f"heuristic override {full!r}: LaunchParams has no field {name!r}")
        old = getattr(current, name)
        if isinstance(old, tuple) and isinstance(value, list):  # JSON has no tuples
            value = tuple(value)
        if type(value) is not type(old) and not (isinstance(old, float) and isinstance(value, int)):
            raise ScheduleError(f"heuristic override {full!r}: expected {type(old).__name__}, "
                                f"got {type(value).__name__} {value!r}")
        target[name] = value
        used.add(full)
    if launch:
        changes["lparams"] = replace(params.lparams, **launch)
    if not changes:
        return params, used
    note = "overridden by the user: " + ", ".join(f"{k}={overrides[k]}" for k in sorted(used))
    return replace(params, **changes, derivation=(*params.derivation, note)), used
