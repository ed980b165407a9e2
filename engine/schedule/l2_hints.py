"""L2 eviction hints on a kernel's input loads, chosen after a scheduler has run.

An input larger than the L2 cache that a kernel streams through once gets evict_last loads
(TensorView.l2_evict_last, lowered to loadGlobalEvictLast): its lines are kept ahead of the
output's, which then leave L2 first. Only the schedulers whose kernels gain take it
(SCHEDULERS): the resize scheduler's kernels, for one, are bound by instruction issue, and
the hinted loads cost them registers and time. Inputs that fit in L2
keep plain loads: a later kernel may want the room.
"""

from __future__ import annotations

from engine.ir.fusion import Fusion
from engine.ir.tensorview import TensorView
from engine.schedule.runtime_info import SchedulerRuntimeInfo
from engine.trace import Trace

SCHEDULERS = frozenset({"pointwise", "inner_persistent", "transpose"})


def mark_streamed_inputs(fusion: Fusion, info: SchedulerRuntimeInfo, scheduler: str,
                         trace: Trace | None = None) -> None:
    """Mark the fusion's inputs larger than the device's L2 for evict_last loads, in a kernel
    of one of SCHEDULERS."""
    if scheduler not in SCHEDULERS:
        return
    l2 = info.device.l2_cache_bytes
    for tv in fusion.inputs:
        nbytes = info.input_bytes(tv) if isinstance(tv, TensorView) else 0
        if nbytes > l2:
            tv.l2_evict_last = True
            if trace is not None:
                trace.event("transform", tv.short_name, f"vector loads keep L2 lines (evict_last): "
                            f"{nbytes / 2**20:.0f} MiB input, larger than the {l2 / 2**20:.0f} MiB L2")
