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
    is_reduction_result,
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


def buffer_bytes(fusion: Fusion, info: SchedulerRuntimeInfo, through_results: bool = True
                 ) -> tuple[int, bool, PersistentBufferInfo]:
    """Bytes per reduction row of the persistent buffers, and whether projecting them
    to the inputs is what gives that size. Buffers larger than the registers hold are
    projected through earlier reductions' results too when that is smaller (a softmax row
    of a 50304-word vocabulary: exp(x - max) recomputed from the bf16 logits and the max,
    100 KB a row instead of 201 KB): the extra arithmetic is paid only where storage binds
    (fp32 rows of 32768 ran 8% slower recomputed on an H200). The combined inner-outer
    schedule projects to inputs only (`through_results` False)."""
    reds = reduction_tvs(fusion)
    ref = next((r for r in reds if is_fastest_dim_reduction(r)), reds[0])
    props = reduction_properties(ref, info)
    size, project, pb = _sized(fusion, info, persistent_buffers(fusion), props.total_iteration_numel, ref)
    if through_results and size > register_budget(info.device):
        deep = persistent_buffers(fusion, through_results=True)
        if deep.projectable != pb.projectable:
            d_size, d_project, deep = _sized(fusion, info, deep, props.total_iteration_numel, ref)
            if d_project and d_size < size:
                return d_size, d_project, deep
    return size, project, pb


def _sized(fusion: Fusion, info: SchedulerRuntimeInfo, pb: PersistentBufferInfo, iteration_numel: int,
           ref: TensorView) -> tuple[int, bool, PersistentBufferInfo]:
    sz = persistent_buffer_size(fusion, info, pb, iteration_numel, ref)
    project = sz.can_project and sz.projected_persistent_buffer_size < sz.persistent_buffer_size
    return (sz.projected_persistent_buffer_size if project else sz.persistent_buffer_size), project, pb


def kept_bytes(pb: PersistentBufferInfo, project: bool, info: SchedulerRuntimeInfo,
               iteration_numel: int) -> int:
    """Bytes per row (per column for an outer reduction) of all `kept_buffers` at once: what
    shared memory holds when they are kept there (for the whole kernel, where registers
    hold only the buffers alive across one reduction at a time, `buffer_bytes`)."""
    return sum(bytes_per_row(t, info, iteration_numel) for t in kept_buffers(pb, project))


def kept_buffers(pb: PersistentBufferInfo, project: bool) -> list[TensorView]:
    """The rows kept: the buffers, or what the projected ones are recomputed from (less the
    reduction results among those, one value a row that the kernel holds anyway)."""
    out: list[TensorView] = []
    for b in pb.persistent_buffers:
        for t in (pb.projectable.get(b, [b]) if project else [b]):
            if t not in out and (t is b or not is_reduction_result(t)):
                out.append(t)
    return out
