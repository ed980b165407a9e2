"""DeviceMesh lives with the IR (engine.ir.device_mesh); re-exported for the multidevice API."""

from engine.ir.device_mesh import DEVICE_TYPES, DeviceMesh

__all__ = ["DEVICE_TYPES", "DeviceMesh"]
