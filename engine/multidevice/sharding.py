"""How a TensorView is laid out over its device mesh (nvFuser's sharding of a loop domain).

A tensor is sharded along a device parallel type (mesh_x/y/z, DIDx/y/z) when one of its loop
IterDomains carries it. Two forms are understood, as nvFuser's:

- a logical axis parallelized directly (`tv.axis(0).parallelize(mesh_x)` on a `[d, ...]`
  tensor): each device holds one index of it, a local extent of 1;
- an outer split of a logical axis by the mesh's extent along that type
  (`tv.outer_split(0, d); tv.axis(0).parallelize(mesh_x)`): each device holds a contiguous
  block of `extent / d`.

A reduction axis that carries a device type marks a partial result: each device holds the
reduction of its part only (before an Allreduce or ReduceScatter completes it).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from engine.errors import FusionDefinitionError
from engine.ir.iterdomain import IterDomain, ParallelType, Split
from engine.ir.tensorview import TensorView
from engine.multidevice.communicator import Communicator
from engine.multidevice.mesh import DEVICE_TYPES, DeviceMesh


class MultiDeviceError(FusionDefinitionError):
    """A sharding the engine cannot lay out or communicate; names the tensor at fault."""


@dataclass(frozen=True)
class AxisSharding:
    """`pt` lays out the logical IterDomain `logical` (a reduction one for a partial)."""

    pt: ParallelType
    logical: IterDomain
    split: bool  # True: outer split by the mesh extent; False: the logical axis itself

    @property
    def reduction(self) -> bool:
        return self.logical.is_reduction


def mesh_of(tv: TensorView) -> DeviceMesh | None:
    return tv.__dict__.get("device_mesh")


def shardings(tv: TensorView) -> list[AxisSharding]:
    """The tensor's device shardings, one per device parallel type it carries."""
    mesh = mesh_of(tv)
    logical = tv.domain.logical
    out: list[AxisSharding] = []
    for i in tv.domain.loop:
        pt = i.parallel_type
        if pt not in DEVICE_TYPES:
            continue
        if mesh is None:
            raise MultiDeviceError(f"{tv.short_name}: axis {i} is parallelized on {pt} but the tensor has no "
                                   "device mesh (call set_device_mesh first)")
        d = mesh.extent(pt)
        if mesh.axis_of(pt) < 0:
            raise MultiDeviceError(f"{tv.short_name}: {pt} is not an axis of {mesh} (rank {mesh.rank})")
        if any(s.pt == pt and s.reduction == i.is_reduction for s in out):
            raise MultiDeviceError(f"{tv.short_name}: two loop axes are parallelized on {pt}")
        if i in logical:
            out.append(AxisSharding(pt, i, False))
            continue
        t = i.definition
        if isinstance(t, Split) and t.in_id in logical and t.outer is i and not t.inner_split:
            f = t.factor.inline()
            if str(f) != str(d):
                raise MultiDeviceError(f"{tv.short_name}: {i} is an outer split by {f} parallelized on {pt}, "
                                       f"but {mesh} has {d} devices along it")
            out.append(AxisSharding(pt, t.in_id, True))
            continue
        if isinstance(t, Split) and t.outer is i and t.in_id not in logical:
            raise MultiDeviceError(f"{tv.short_name}: {i} parallelized on {pt} splits a part of a split axis "
                                   "(one logical axis on two mesh axes, a nested sharding): only one mesh "
                                   "axis per logical axis is supported")
        if isinstance(t, Split) and t.inner is i:
            raise MultiDeviceError(f"{tv.short_name}: {i} is the inner part of a split parallelized on {pt} "
                                   "(strided sharding) — only outer splits of a logical axis are supported")
        raise MultiDeviceError(f"{tv.short_name}: {i} parallelized on {pt} is neither a logical axis nor an "
                               "outer split of one")
    return out


def check_partial_k(tv: TensorView) -> None:
    """The partial products of an rfactor'ed matmul or linear (engine.ir.rfactor) are cut
    over devices only on the outer part of the split of K, so that each device sums blocks
    of K: one index of it per device ([rK] -> [iS{d}, rS{K/d}] with iS{d} on the devices:
    device j sums block j), or an outer split of it by the devices."""
    mesh = mesh_of(tv)
    dom = tv.domain
    for s in shardings(tv):
        if s.logical in dom.root:
            continue
        t = s.logical.definition
        d = mesh.extent(s.pt)
        e = s.logical.extent
        if (not isinstance(t, Split) or t.outer is not s.logical or t.in_id not in dom.root
                or not s.split and (not e.is_const or int(e.value) != d)):
            raise MultiDeviceError(f"{tv.short_name}: {s.logical} is parallelized on {s.pt}, but of the parts of "
                                   f"K only the outer one can be cut over devices, one index per device ({d}) "
                                   "or split by them")


def sharding_of(tv: TensorView, pt: ParallelType, *, reduction: bool = False) -> AxisSharding | None:
    for s in shardings(tv):
        if s.pt == pt and s.reduction == reduction:
            return s
    return None


def is_sharded(tv: TensorView) -> bool:
    return any(not s.reduction for s in shardings(tv))


def _dims(tv: TensorView) -> list[IterDomain]:
    return [i for i in tv.domain.logical if not i.is_reduction]


def sharded_dims(tv: TensorView) -> list[tuple[int, AxisSharding]]:
    """(torch dimension, sharding) of each non-reduction sharding."""
    dims = _dims(tv)
    return [(dims.index(s.logical), s) for s in shardings(tv) if not s.reduction]


def local_shape(tv: TensorView, global_shape: list[int], device: int) -> list[int]:
    """The shape `device` holds of a tensor of `global_shape` (an empty tensor off the mesh)."""
    mesh = mesh_of(tv)
    shape = list(global_shape)
    if mesh is None:
        return shape
    if not mesh.has(device):
        return [0] * len(shape)
    for dim, s in sharded_dims(tv):
        d = mesh.extent(s.pt)
        if s.split:
            if shape[dim] % d:
                raise MultiDeviceError(f"{tv.short_name}: axis {dim} of size {shape[dim]} does not split evenly "
                                       f"over {d} devices")
            shape[dim] //= d
        else:
            if shape[dim] != d:
                raise MultiDeviceError(f"{tv.short_name}: axis {dim} is parallelized on {s.pt} without a split, "
                                       f"so its size must be {d} (the devices along it), got {shape[dim]}")
            shape[dim] = 1
    return shape


def shard_tensor(t: torch.Tensor, tv: TensorView, device: int | None = None) -> torch.Tensor:
    """`device`'s (default: this rank's) part of the unsharded tensor `t` laid out as `tv`
    (nvFuser's multidevice.shard_tensor).

    Any loop domain made of splits is understood here (an inner split, a split of a split,
    several mesh axes on one logical axis): each logical axis is viewed as the leaves of its
    splits, the device-parallel leaves are fixed at `device`'s index along their type, and
    the rest are flattened back in order. (Running a fusion takes the layouts of
    `shardings` only.)"""
    if device is None:
        device = Communicator.instance().rank()
    mesh = mesh_of(tv)
    if mesh is None:
        return t
    dims = _dims(tv)
    if t.dim() != len(dims):
        raise MultiDeviceError(f"shard_tensor: {tv.short_name} has {len(dims)} dimensions, the tensor {t.dim()}")
    if not mesh.has(device):
        return t.new_empty([0] * t.dim())
    consumer = _split_uses(tv)
    leaves = [_leaves(tv, i, n, consumer) for i, n in zip(dims, t.shape)]
    t = t.reshape([n for axis in leaves for _, n in axis])
    pos = 0
    for axis in leaves:
        for i, n in axis:
            if i.parallel_type in DEVICE_TYPES:
                if mesh.axis_of(i.parallel_type) < 0:
                    raise MultiDeviceError(f"{tv.short_name}: {i.parallel_type} is not an axis of {mesh}")
                if n != mesh.extent(i.parallel_type):
                    raise MultiDeviceError(f"{tv.short_name}: {i} has {n} elements parallelized on "
                                           f"{i.parallel_type}, but {mesh} has {mesh.extent(i.parallel_type)} "
                                           "devices along it")
                t = t.narrow(pos, mesh.index(device, i.parallel_type), 1)
            pos += 1
    shape = [_prod(1 if i.parallel_type in DEVICE_TYPES else n for i, n in axis) for axis in leaves]
    return t.reshape(shape).contiguous()


def _prod(xs: object) -> int:
    out = 1
    for x in xs:  # type: ignore[attr-defined]
        out *= int(x)
    return out


def _split_uses(tv: TensorView) -> dict[int, Split]:
    """Each IterDomain between `tv`'s logical and loop domains -> the split that divides it."""
    out: dict[int, Split] = {}
    todo = list(tv.domain.loop)
    while todo:
        i = todo.pop()
        t = i.definition
        if t is None or i in tv.domain.logical:
            continue
        if not isinstance(t, Split):
            raise MultiDeviceError(f"shard_tensor: {tv.short_name}'s loop domain has a {type(t).__name__} "
                                   f"between its logical axes and {i}; only splits are understood")
        out[id(t.in_id)] = t
        todo.append(t.in_id)
    return out


def _on_devices(i: IterDomain, consumer: dict[int, Split]) -> bool:
    """Whether `i` or an axis split from it is device-parallel."""
    t = consumer.get(id(i))
    if t is None:
        return i.parallel_type in DEVICE_TYPES
    return _on_devices(t.outer, consumer) or _on_devices(t.inner, consumer)


def _leaves(tv: TensorView, i: IterDomain, n: int, consumer: dict[int, Split]) -> list[tuple[IterDomain, int]]:
    """The loop axes a logical axis of `n` elements is split into, outer first, with their
    sizes; splits with no device axis under them (a stream split) are left whole."""
    t = consumer.get(id(i))
    if t is None or not _on_devices(i, consumer):
        return [(i, n)]
    f = t.factor.value if t.factor.is_const else None
    if f is None or n % int(f):
        raise MultiDeviceError(f"{tv.short_name}: axis {i} of size {n} does not split evenly by {t.factor.inline()}")
    f = int(f)
    outer, inner = (f, n // f) if not t.inner_split else (n // f, f)
    return _leaves(tv, t.outer, outer, consumer) + _leaves(tv, t.inner, inner, consumer)


def describe(tv: TensorView) -> str:
    """`mesh_x on axis 2 (split by 2) of DeviceMesh{0 1}`, `replicated on DeviceMesh{0 1}`, ''."""
    mesh = mesh_of(tv)
    if mesh is None:
        return ""
    dims = [i for i in tv.domain.logical]
    parts = []
    for s in shardings(tv):
        pos = dims.index(s.logical)
        what = "partial over" if s.reduction else "on"
        how = f" (split by {mesh.extent(s.pt)})" if s.split else ""
        parts.append(f"{s.pt.name} {what} axis {pos}{how}")
    return (", ".join(parts) or "replicated") + f" of {mesh}"
