"""The runtime headers every generated kernel inlines, as one text.

A kernel's complete source is `runtime_prelude() + kernel`: it compiles alone with
NVRTC, with `nvcc --ptx`, and under the emulator (whose header g++ force-includes
first and which defines FS_EMULATE). The headers are package data
(engine/runtime/headers/*.cuh), read with importlib.resources so an installed
wheel finds them too.
"""

from __future__ import annotations

from functools import cache
from importlib import resources

# Dependency order: each header uses only those before it.
HEADERS: tuple[str, ...] = (
    "types.cuh",
    "array.cuh",
    "helpers.cuh",
    "random.cuh",
    "reduce.cuh",
    "grid_reduce.cuh",
    "quantize.cuh",
)


def header_text(name: str) -> str:
    """One runtime header's text."""
    return resources.files("engine.runtime").joinpath("headers", name).read_text(encoding="utf-8")


@cache
def runtime_prelude() -> str:
    """All runtime headers concatenated in dependency order, each under a banner line."""
    parts = [f"// ---- fusescope runtime: {name} ----\n{header_text(name)}" for name in HEADERS]
    return "\n".join(parts) + "\n// ---- end of fusescope runtime ----\n"
