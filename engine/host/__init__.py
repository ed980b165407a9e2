"""Host IR: the host program of a compiled fusion (allocations, kernel launches, host ops,
Stream-parallel for-loops, which print themselves), its lowering, the Stream-parallel pass and
evaluator."""

from engine.host.evaluator import HostIrEvaluator, TimelineEvent, run_host_ir
from engine.host.hir import HostIrContainer
from engine.host.lower import lower_to_host
from engine.host.stream import stream_parallel_pass

__all__ = ["HostIrContainer", "HostIrEvaluator", "TimelineEvent", "lower_to_host", "run_host_ir",
           "stream_parallel_pass"]
