"""DeviceMesh: the devices a tensor lives on, as an n-D grid (nvFuser's DeviceMesh).

Mesh axes and device parallel types pair up from the innermost axis out, as nvFuser's
`parallelTypeToAxis`: on a mesh of shape (a, b, c), `mesh_x` (DIDx) runs along the last axis
(c devices), `mesh_y` along b and `mesh_z` along a. A mesh is immutable and shared between
copies of a fusion.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import torch
import torch.distributed as dist

from engine.errors import FusionDefinitionError
from engine.ir.iterdomain import ParallelType

DEVICE_TYPES = (ParallelType.mesh_x, ParallelType.mesh_y, ParallelType.mesh_z)


def this_rank() -> int:
    """This process's rank in the default process group (engine.multidevice.Communicator
    sets it up)."""
    if dist.is_available() and dist.is_initialized():
        return dist.get_rank()
    if "RANK" in os.environ:  # under torchrun, before the process group is set up
        return int(os.environ["RANK"])
    raise ValueError("no process group and no RANK in the environment: pass device=")


class DeviceMesh:
    """`DeviceMesh(torch.arange(d))`, `DeviceMesh(torch.arange(d).reshape(2, d // 2))` or a
    list of device ids."""

    def __init__(self, devices: Any) -> None:
        t = devices if isinstance(devices, torch.Tensor) else torch.tensor(list(devices), dtype=torch.long)
        if t.dtype.is_floating_point or t.dtype.is_complex or t.dtype == torch.bool:
            raise FusionDefinitionError(f"DeviceMesh: device ids must be integers, got {t.dtype}")
        if t.dim() == 0 or t.numel() == 0:
            raise FusionDefinitionError("DeviceMesh: needs at least one device")
        if t.dim() > 3:
            raise FusionDefinitionError(f"DeviceMesh: at most 3 dimensions (mesh_x/y/z), got {t.dim()}")
        ids = [int(x) for x in t.flatten().tolist()]
        if len(set(ids)) != len(ids):
            raise FusionDefinitionError(f"DeviceMesh: device ids repeat: {ids}")
        if min(ids) < 0:
            raise FusionDefinitionError(f"DeviceMesh: device ids must be >= 0: {ids}")
        self._shape = tuple(int(s) for s in t.shape)
        self._ids = tuple(ids)

    def __deepcopy__(self, memo: dict[int, Any]) -> DeviceMesh:
        return self

    # ---- shape ---------------------------------------------------------------
    @property
    def size(self) -> int:
        """The number of devices."""
        return len(self._ids)

    @property
    def shape(self) -> tuple[int, ...]:
        return self._shape

    @property
    def rank(self) -> int:
        """The number of mesh dimensions."""
        return len(self._shape)

    @property
    def devices(self) -> list[int]:
        return list(self._ids)

    def axis_of(self, pt: ParallelType) -> int:
        """The mesh dimension `pt` runs along, or -1 when the mesh has too few dimensions."""
        if pt not in DEVICE_TYPES:
            raise FusionDefinitionError(f"DeviceMesh: {pt} is not a device parallel type")
        k = DEVICE_TYPES.index(pt)
        return self.rank - 1 - k if k < self.rank else -1

    def extent(self, pt: ParallelType) -> int:
        """The number of devices along `pt` (1 for a parallel type the mesh does not have)."""
        a = self.axis_of(pt)
        return self._shape[a] if a >= 0 else 1

    def has(self, device: int) -> bool:
        return device in self._ids

    def coordinates(self, device: int) -> tuple[int, ...]:
        """The device's index along each mesh dimension."""
        if device not in self._ids:
            raise ValueError(f"device {device} is not in {self}")
        flat = self._ids.index(device)
        out = []
        for s in reversed(self._shape):
            out.append(flat % s)
            flat //= s
        return tuple(reversed(out))

    def index(self, device: int, pt: ParallelType) -> int:
        """The device's index along `pt` (0 for a parallel type the mesh does not have)."""
        a = self.axis_of(pt)
        return self.coordinates(device)[a] if a >= 0 else 0

    def team(self, device: int, pt: ParallelType) -> list[int]:
        """The devices that differ from `device` only along `pt`, in order along it: the
        team of a communication over `pt`."""
        a = self.axis_of(pt)
        if a < 0:
            return [device]
        c = list(self.coordinates(device))
        out = []
        for k in range(self._shape[a]):
            c[a] = k
            out.append(self._device_at(c))
        return out

    def teams(self, pt: ParallelType) -> list[list[int]]:
        """Every team along `pt`, each in order along it (a partition of the mesh)."""
        seen: set[int] = set()
        out = []
        for d in self._ids:
            if d not in seen:
                t = self.team(d, pt)
                seen.update(t)
                out.append(t)
        return out

    def _device_at(self, coords: Sequence[int]) -> int:
        flat = 0
        for c, s in zip(coords, self._shape):
            flat = flat * s + c
        return self._ids[flat]

    # ---- tensors -------------------------------------------------------------
    def shard_tensor(self, tensor: torch.Tensor, axis: int, device: int | None = None) -> torch.Tensor:
        """This rank's (or `device`'s) part of `tensor` split evenly along `axis` over a 1-D
        mesh, as nvFuser's `DeviceMesh.shard_tensor`."""
        if self.rank != 1:
            raise ValueError(f"shard_tensor: {self} is not 1-D; shard with multidevice.shard_tensor(t, tv)")
        dev = this_rank() if device is None else device
        n = tensor.shape[axis]
        if n % self.size:
            raise ValueError(f"shard_tensor: axis {axis} of size {n} does not split evenly over {self.size} devices")
        k = self.coordinates(dev)[0]
        return tensor.narrow(axis, k * (n // self.size), n // self.size).contiguous()

    # ---- identity ------------------------------------------------------------
    def __eq__(self, other: object) -> bool:
        return isinstance(other, DeviceMesh) and other._shape == self._shape and other._ids == self._ids

    def __hash__(self) -> int:
        return hash((self._shape, self._ids))

    def __str__(self) -> str:
        """nvFuser's form: `DeviceMesh{0 1 2 3}`, `DeviceMesh{{0 1}{2 3}}`."""
        def nest(ids: list[int], shape: tuple[int, ...]) -> str:
            if len(shape) == 1:
                return "{" + " ".join(str(i) for i in ids) + "}"
            step = len(ids) // shape[0]
            return "{" + "".join(nest(ids[k * step:(k + 1) * step], shape[1:]) for k in range(shape[0])) + "}"

        return "DeviceMesh" + nest(list(self._ids), self._shape)

    __repr__ = __str__

    def python(self) -> str:
        """The constructor call a fusion file spells this mesh with."""
        if self._ids == tuple(range(self.size)):
            base = f"torch.arange({self.size})"
            return base if self.rank == 1 else f"{base}.reshape({', '.join(str(s) for s in self._shape)})"
        nested = torch.tensor(self._ids).reshape(self._shape).tolist()
        return f"torch.tensor({nested})"
