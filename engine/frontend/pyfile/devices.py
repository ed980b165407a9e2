"""The multidevice calls of a fusion body, in nvfuser_direct's spelling:

    mesh = nvfuser.multidevice.DeviceMesh(torch.arange(d))      # or .reshape(a, b), a list
    tv.set_device_mesh(mesh)
    tv.outer_split(0, d)                                        # inner_split, split(.., inner_split=)
    tv.axis(0).parallelize(nvfuser.ParallelType.mesh_x)
    local = tv.rfactor(axes=[-1])                               # after a split of a reduction axis

Read, not run: the mesh's devices come from `torch.arange(n)` (optionally `.reshape(...)`),
`torch.tensor([...])` or a list of integers, with the numbers the body can evaluate.
"""

from __future__ import annotations

import ast
from typing import Any

import torch

from engine.errors import FusionDefinitionError, ScheduleError
from engine.frontend.pyfile.syntax import excerpt
from engine.ir.device_mesh import DeviceMesh
from engine.ir.iterdomain import IterDomain, ParallelType

# TensorView methods of the multidevice API (and rfactor, which nvFuser's row-parallel matmul
# spells among them): name -> (fewest, most) positional arguments.
DEVICE_TENSOR_METHODS = {"set_device_mesh": (1, 1), "outer_split": (2, 2), "inner_split": (2, 2),
                         "split": (2, 3), "axis": (1, 1), "rfactor": (0, 1)}
# Their keyword arguments.
_KEYWORDS = {"split": ("inner_split",), "rfactor": ("axes",)}


class DeviceCalls:
    """A mixin of the body interpreter (engine.frontend.pyfile.body.Body)."""

    loader: Any

    def is_mesh_class(self, func: ast.expr) -> bool:
        """`nvfuser.multidevice.DeviceMesh`, `multidevice.DeviceMesh` or an imported `DeviceMesh`."""
        try:
            ref = self.loader.resolve_global(func)
        except Exception:
            return False
        return ref.kind == "mesh_class"

    def device_mesh(self, node: ast.Call) -> DeviceMesh:
        if len(node.args) != 1 or node.keywords:
            raise self.error(node, f"{excerpt(node.func)}() takes the devices: torch.arange(n) or a list")
        devices = self.mesh_devices(node.args[0])
        try:
            return DeviceMesh(devices)
        except FusionDefinitionError as e:
            raise self.error(node, str(e)) from e

    def mesh_devices(self, node: ast.expr) -> torch.Tensor:
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            f = node.func
            if f.attr == "reshape":
                base = self.mesh_devices(f.value)
                shape = [self.value(a) for a in node.args]
                if len(shape) == 1 and isinstance(shape[0], (list, tuple)):
                    shape = list(shape[0])
                return base.reshape([int(s) for s in shape])
            if self.is_torch(f.value) and f.attr in ("arange", "tensor"):
                args = [self.value(a) for a in node.args]
                if f.attr == "arange" and all(isinstance(a, int) for a in args) and 1 <= len(args) <= 3:
                    return torch.arange(*args)
                if f.attr == "tensor" and len(args) == 1:
                    return torch.tensor(args[0])
        v = self.value(node)
        if isinstance(v, (list, tuple)):
            return torch.tensor(list(v))
        raise self.error(node, f"DeviceMesh devices: expected torch.arange(n), torch.tensor([...]) or a list of "
                               f"integers, got {excerpt(node)}")

    def is_torch(self, node: ast.expr) -> bool:
        if not isinstance(node, ast.Name) or node.id in self.env:
            return False
        ref = self.loader.globals.get(node.id)
        return ref is not None and ref.kind == "module" and ref.value == "torch"

    def device_tensor_method(self, node: ast.Call, name: str) -> Any:
        func = node.func
        assert isinstance(func, ast.Attribute)
        tv = self.loader.tensor_of(func.value, self.env, self.fd_names, self.attrs)
        args, kwargs = self.arguments(node)
        fewest, most = DEVICE_TENSOR_METHODS[name]
        allowed = _KEYWORDS.get(name, ())
        if not fewest <= len(args) <= most or any(k not in allowed for k in kwargs):
            raise self.error(node, f"{excerpt(func)}() takes {fewest}-{most} arguments"
                                   + (f" and {allowed[0]}=" if allowed else ""))
        try:
            if name == "set_device_mesh":
                if not isinstance(args[0], DeviceMesh):
                    raise ScheduleError(f"expected a DeviceMesh, got {excerpt(node.args[0])}")
                return tv.set_device_mesh(args[0])
            if name == "axis":
                return tv.axis(args[0])
            if name == "rfactor":
                return tv.rfactor(self.rfactor_axes(node, args, kwargs))
            if name == "split":
                inner = kwargs.get("inner_split", args[2] if len(args) > 2 else True)
                return tv.split(args[0], args[1], inner_split=bool(inner))
            return getattr(tv, name)(*args)
        except (ScheduleError, FusionDefinitionError) as e:
            raise self.error(node, f"{excerpt(func)}(): {e}") from e

    def rfactor_axes(self, node: ast.Call, args: list[Any], kwargs: dict[str, Any]) -> list[int]:
        """`rfactor(axes=[-1])` or `rfactor([-1])`: a list of integers."""
        if len(args) + len(kwargs) != 1:
            raise self.error(node, f"{excerpt(node.func)}() takes the axes: rfactor(axes=[...])")
        axes = args[0] if args else kwargs["axes"]
        if not isinstance(axes, (list, tuple)) or not all(isinstance(a, int) and not isinstance(a, bool)
                                                          for a in axes):
            raise self.error(node, f"{excerpt(node.func)}(): axes must be a list of integers, got {axes!r}")
        return list(axes)

    def parallelize(self, node: ast.Call) -> IterDomain:
        """`tv.axis(i).parallelize(ParallelType.X)` (the IterDomain evaluated first)."""
        func = node.func
        assert isinstance(func, ast.Attribute)
        axis = self.call(func.value) if isinstance(func.value, ast.Call) else self.value(func.value)
        args, kwargs = self.arguments(node)
        if not isinstance(axis, IterDomain) or len(args) != 1 or kwargs or not isinstance(args[0], ParallelType):
            raise self.error(node, f"{excerpt(func)}() takes one ParallelType, on a tensor's axis(i)")
        return axis.parallelize(args[0])


def held_axis_call(func: ast.expr) -> bool:
    """`<something>.axis(i).parallelize`: the base is a call of a tensor's axis()."""
    return (isinstance(func, ast.Attribute) and func.attr == "parallelize" and isinstance(func.value, ast.Call)
            and isinstance(func.value.func, ast.Attribute) and func.value.func.attr == "axis")

