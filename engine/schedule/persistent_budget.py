"""What a block may keep on chip for the persistent schedulers, and what their buffers take.

Persistent buffers live in registers, up to three quarters of the register file
(`register_budget`), or in shared memory, up to the opt-in maximum less the block
reduction's workspace (`smem_budget`). They take the bytes per reduction row of the
persistent buffers, or of the inputs they are projected to when that is smaller
(`buffer_bytes`); `kept_buffers` names the tensors then kept, and `kept_bytes` is what they
take at once."""

from __future__ import annotations

from typing import TYPE_CHECKING

from engine.analysis.persistent import (
    PersistentBufferInfo,
    bytes_per_row,
    is_fastest_dim_reduction,
    persistent_buffer_size,
    persistent_buffers,
    reduction_properties,
    reduction_tvs,
)
from engine.ir.tensorview import TensorView

if TYPE_CHECKING:
    from engine.ir.fusion import Fusion
    from engine.runtime.device import DeviceProperties
    from engine.schedule.runtime_info import SchedulerRuntimeInfo


def register_budget(dev: DeviceProperties) -> int:
    """Bytes of registers a block may use for persistent buffers: three quarters of
    the SM's register file, the rest for addresses, loop indices and temporaries
    (nvFuser keeps a similar reserve in scheduler_utils::register_file_size)."""
    return dev.registers_per_sm * 4 * 3 // 4


def smem_budget(dev: DeviceProperties, dtype_bytes: int = 4) -> int:
    """Shared memory a block may use for persistent buffers: the opt-in maximum less the
    block reduction's workspace (one value per thread), as nvFuser's
    getAvailableSmemSize."""
    return dev.shared_memory_per_block - dev.max_threads_per_block * dtype_bytes


def buffer_bytes(fusion: Fusion, info: SchedulerRuntimeInfo) -> tuple[int, bool, PersistentBufferInfo]:
    """Bytes per reduction row of the persistent buffers, and whether projecting them
    to the inputs is what gives that size."""
    reds = reduction_tvs(fusion)
    ref = next((r for r in reds if is_fastest_dim_reduction(r)), reds[0])
    props = reduction_properties(ref, info)
    pb = persistent_buffers(fusion)
    sz = persistent_buffer_size(fusion, info, pb, props.total_iteration_numel, ref)
    project = sz.can_project and sz.projected_persistent_buffer_size < sz.persistent_buffer_size
    size = sz.projected_persistent_buffer_size if project else sz.persistent_buffer_size
    return size, project, pb


def kept_bytes(pb: PersistentBufferInfo, project: bool, info: SchedulerRuntimeInfo,
               iteration_numel: int) -> int:
    """Bytes per row (per column for an outer reduction) of all `kept_buffers` at once: what
    shared memory holds when they are kept there (for the whole kernel, where registers
    hold only the buffers alive across one reduction at a time, `buffer_bytes`)."""
    return sum(bytes_per_row(t, info, iteration_numel) for t in kept_buffers(pb, project))


def kept_buffers(pb: PersistentBufferInfo, project: bool) -> list[TensorView]:
    out: list[TensorView] = []
    for b in pb.persistent_buffers:
        for t in (pb.projectable.get(b, [b]) if project else [b]):
            if t not in out:
                out.append(t)
    return out
