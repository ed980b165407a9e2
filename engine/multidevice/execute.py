"""`fd.execute` of a fusion whose tensors carry device meshes: the program is built once per
definition (and again when the definition changes) and run on this rank."""

from __future__ import annotations

from typing import Any

from engine.multidevice.program import MultiDeviceProgram
from engine.multidevice.propagate import has_meshes
from engine.multidevice.runtime import run_program
from engine.multidevice.sharding import MultiDeviceError
from engine.multidevice.timeline import StepTime


def program_of(fd: Any) -> MultiDeviceProgram | None:
    """The definition's multi-device program, or None when no tensor has a mesh."""
    fusion = fd.fusion
    cached = fd.__dict__.get("_multidevice")
    if cached is not None and cached[0] == fusion.version:
        return cached[1]
    program = MultiDeviceProgram(fusion) if has_meshes(fusion) else None
    fd.__dict__["_multidevice"] = (fusion.version, program)
    return program


def execute_on_rank(fd: Any, inputs: list[Any]) -> list[Any] | None:
    program = program_of(fd)
    if program is None:
        return None
    cuda = any(getattr(x, "is_cuda", False) for x in inputs)
    return run_program(program, inputs, backend="cuda" if cuda else "reference")


def execute(fd: Any, inputs: list[Any], backend: str | None = None,
            timeline: list[StepTime] | None = None) -> list[Any]:
    """This rank's outputs of `fd` for its local `inputs`, on `backend` ("reference",
    "emulate" or "cuda"; by default cuda for CUDA inputs, reference otherwise). `timeline`
    collects each step's start and end."""
    program = program_of(fd)
    if program is None:
        raise MultiDeviceError("no tensor of this fusion has a device mesh: run it with fd.execute")
    if backend is None:
        backend = "cuda" if any(getattr(x, "is_cuda", False) for x in inputs) else "reference"
    return run_program(program, list(inputs), backend=backend, timeline=timeline)
