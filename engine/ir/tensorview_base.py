"""A tensor's state, below the scheduling primitives: its shape, memory type, positions,
devices and printing (TensorViewBase), and the memory types (MemoryType).

The IR's analyses (logical and loop maps, transform replay, verification, rfactor, the
fusion's graph) read tensors through this class; TensorView (engine.ir.tensorview) adds the
scheduling primitives, which call those analyses. Every TensorViewBase is a TensorView:
the class is never made by itself.
"""

from __future__ import annotations

import enum
from typing import TYPE_CHECKING, Any

from engine.dtypes import DataType
from engine.errors import FusionDefinitionError, ScheduleError
from engine.ir.base import Val, open_definition
from engine.ir.device_mesh import DeviceMesh
from engine.ir.iterdomain import IterDomain
from engine.ir.tensordomain import TensorDomain

if TYPE_CHECKING:
    from engine.ir.fusion import Fusion
    from engine.ir.tensorview import TensorView


class MemoryType(enum.Enum):
    Global = "g"
    Local = "l"
    Shared = "s"

    # nvFuser's python names (`global` is a Python keyword: getattr(MemoryType, "global") works)
    local = "l"
    shared = "s"


setattr(MemoryType, "global", MemoryType.Global)


def _definition_ops(tv: TensorView, method: str) -> Any:
    """The `fd.ops` of the open FusionDefinition that owns `tv`, so that the call is recorded
    as the op (a saved file then spells it fd.ops.size / fd.ops.shape)."""
    fd = open_definition.get()
    if fd is None or fd.fusion is not tv.fusion:
        raise FusionDefinitionError(f"{tv.short_name}.{method}(): only inside the `with FusionDefinition()` "
                                    "block that defines the tensor")
    return fd.ops


class TensorViewBase(Val):
    """A tensor in the fusion: T0, T1, ... in creation order (the state of a TensorView)."""

    def __init__(
        self,
        fusion: Fusion,
        domain: TensorDomain,
        dtype: DataType,
        memory_type: MemoryType = MemoryType.Local,
    ) -> None:
        super().__init__()
        self.fusion = fusion
        self.name = fusion.new_tv_name()
        self.domain = domain
        self.dtype = dtype
        self.memory_type = memory_type
        self.compute_at_pos = 0
        self.max_producer_pos = 0
        # Stages of a shared-memory cache that lowering loads ahead of their use (circular_buffer).
        self.circular_buffer_depth = 0
        # Bytes that this global input's vector loads prefetch into L2 (0: no hint); a
        # scheduler's choice for inputs read in short rows (engine-only: nvFuser has no such hint).
        self.l2_prefetch = 0
        # Whether this global input's vector loads keep their L2 lines ahead of others
        # (evict_last); set for inputs larger than L2 that a kernel streams through once.
        self.l2_evict_last = False
        # The devices this tensor lives on (engine.multidevice.DeviceMesh); None: one device.
        self.device_mesh: DeviceMesh | None = None
        fusion.register_val(self)

    # ---- shape -------------------------------------------------------------
    @property
    def short_name(self) -> str:
        return f"T{self.name}"

    @property
    def ndim(self) -> int:
        """Rank of the logical domain, without reduction axes (nvFuser's ndim)."""
        return len([i for i in self.domain.logical if not i.is_reduction])

    @property
    def nloop(self) -> int:
        return len(self.domain.loop)

    def size(self, dim: int) -> Any:
        """nvFuser's Tensor.size(dim): fd.ops.size of the FusionDefinition being written."""
        return _definition_ops(self, "size").size(self, dim)

    def shape(self) -> Any:
        """nvFuser's Tensor.shape(): fd.ops.shape of the FusionDefinition being written."""
        return _definition_ops(self, "shape").shape(self)

    def logical(self) -> list[IterDomain]:
        return self.domain.logical

    def loop(self) -> list[IterDomain]:
        return self.domain.loop

    def axis(self, i: int) -> IterDomain:
        return self.domain.loop[self._pos(i)]

    def _pos(self, i: int, n: int | None = None) -> int:
        n = self.nloop if n is None else n
        j = i + n if i < 0 else i
        if not 0 <= j < n:
            raise ScheduleError(f"{self.short_name}: axis {i} is out of range for {n} loop axes")
        return j

    def _check_outside_ca(self, pos: int, what: str) -> None:
        # Loop ids left of ca_pos are shared with consumers and those left of
        # produce_pos with producers: changing them would break the inlining.
        fixed = max(self.compute_at_pos, self.max_producer_pos)
        if pos < fixed:
            raise ScheduleError(
                f"{self.short_name}: cannot {what} axis {pos} inside the inlined positions "
                f"(ca_pos {self.compute_at_pos}, produce_pos {self.max_producer_pos})"
            )

    def _require_not_inlined(self, what: str) -> None:
        if self.compute_at_pos or self.max_producer_pos:
            raise ScheduleError(
                f"{self.short_name}: {what} must come before inlining "
                f"(ca_pos {self.compute_at_pos}, produce_pos {self.max_producer_pos})"
            )

    # ---- devices ---------------------------------------------------------------------------
    def set_device_mesh(self, mesh: Any) -> TensorView:
        """Place the tensor on the devices of `mesh` (an engine.multidevice.DeviceMesh)."""
        if not isinstance(mesh, DeviceMesh):
            raise ScheduleError(f"{self.short_name}.set_device_mesh: expected a DeviceMesh, got {mesh!r}")
        self.device_mesh = mesh
        return self

    def has_device_mesh(self) -> bool:
        return self.device_mesh is not None

    # ---- printing ----------------------------------------------------------
    def __str__(self) -> str:
        s = f"T{self.name}_{self.memory_type._value_}_{self.dtype.cuda_name}{self.domain}"
        if self.compute_at_pos > 0:
            s += f" ca_pos( {self.compute_at_pos} )"
        if self.max_producer_pos > 0:
            s += f" produce_pos( {self.max_producer_pos} )"
        mesh = self.__dict__.get("device_mesh")
        if mesh is not None:
            s += f" ({mesh})"
        return s

    def __repr__(self) -> str:
        return f"<TensorView {self}>"
