"""Host IR: the program that orchestrates a compiled fusion on the host (nvFuser's hir).

A HostIrContainer holds the program's inputs, outputs and top-level statements. Statements
are the host nodes below (allocations, stream management, for-loops over a Stream axis,
aliasing selects, kernel launches) and fusion-level Exprs (set, binary ops, reductions,
matmul, linear, select, ...) that the evaluator runs through torch, as nvFuser's
HostIrEvaluator runs them through ATen.

The container owns a clone of the compiled fusion: the host program creates tensors of its
own (the outputs of HirAliasSelect) and marks the tensors its host ops pass around as global,
and neither may leak into the fusion the rest of the pipeline shows.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeAlias

from engine.dtypes import DataType
from engine.ir.base import Expr, Val
from engine.ir.fusion import Fusion
from engine.ir.iterdomain import IterDomain
from engine.ir.scalar import Scalar, binary
from engine.ir.tensorview import TensorView

if TYPE_CHECKING:
    from engine.compiled_segment import CompiledSegment


class NamedScalar(Scalar):
    """A free scalar printed by name (`StreamIdx`, `numberOfStreams`), bound by the evaluator."""

    def __init__(self, label: str, dtype: DataType = DataType.Index) -> None:
        super().__init__(dtype)
        self.label = label

    def inline(self) -> str:
        return self.label


class HostNode:
    """A host-IR statement; printed by engine.host.printer in the seed's format."""

    def to_string(self, indent: int = 0) -> str:
        from engine.host.printer import node_string

        return node_string(self, indent)

    def __str__(self) -> str:
        return self.to_string()


# A statement of a host program: a host node or a fusion-level Expr run through torch.
Statement: TypeAlias = "HostNode | Expr"


class Stream:
    """A CUDA stream as a value: the caller's (bound by GetCurrentStream, no index) or the
    pool stream `index` evaluates to (`StreamIdx % numberOfStreams`)."""

    def __init__(self, number: int, index: Scalar | None = None) -> None:
        self.number = number
        self.index = index

    def __str__(self) -> str:
        return f"Stream {self.index.inline()}" if self.index is not None else f"Stream {self.number}"


class Allocate(HostNode):
    """A buffer for `tv` (its logical sizes, allocation-domain layout) before a stream loop
    whose iterations each write one slice of it."""

    def __init__(self, tv: TensorView, size: Scalar, mem_type: str = "global", zero_init: bool = False) -> None:
        self.tv = tv
        self.size = size
        self.mem_type = mem_type
        self.zero_init = zero_init


class Deallocate(HostNode):
    """Drop the program's reference to `tv` after its last use."""

    def __init__(self, tv: TensorView) -> None:
        self.tv = tv


class ForLoop(HostNode):
    """`FOR StreamIdx in <axis>:` over the extent of a Stream-parallel IterDomain."""

    def __init__(self, index: NamedScalar, axis: IterDomain, body: list[Any] | None = None) -> None:
        self.index = index
        self.axis = axis
        self.body: list[Any] = list(body or [])


class GetCurrentStream(HostNode):
    """Bind `stream` to the stream current when the statement runs (the caller's)."""

    def __init__(self, stream: Stream) -> None:
        self.stream = stream


class SetCurrentStream(HostNode):
    def __init__(self, stream: Stream) -> None:
        self.stream = stream


class Synchronize(HostNode):
    """The current stream waits for the work issued so far on `stream` (an event wait;
    the host never blocks)."""

    def __init__(self, stream: Stream) -> None:
        self.stream = stream


class HirAliasSelect(HostNode):
    """`out` = the slice of `inp` at `index` along `axis`, as a view (an alias, not a copy).

    Unlike the fusion's select, it is not `out`'s definition: the op that writes the slice
    is (seed 002, nvFuser #4301), and a reduced output keeps its reduction axis.
    """

    def __init__(self, inp: TensorView, out: TensorView, axis: IterDomain, index: Scalar) -> None:
        self.inp = inp
        self.out = out
        self.axis = axis
        self.index = index

    @property
    def dim(self) -> int:
        """The axis' position in the torch tensor (which has no reduction axes)."""
        return [i for i in self.inp.domain.logical if not i.is_reduction].index(self.axis)


class LaunchKernel(HostNode):
    """Launch a compiled segment's kernel (`segment.run`); it allocates its own outputs."""

    def __init__(self, segment: CompiledSegment, inputs: list[Val], outputs: list[Val]) -> None:
        self.segment = segment
        self.inputs = inputs
        self.outputs = outputs


class HostUnit:
    """A segment executed as one unit: no kernel and no host-op form (e.g. no_op)."""

    def __init__(self, segment: CompiledSegment) -> None:
        self.segment = segment


class PostOnStream(HostNode):
    """Run a HostUnit on the current stream."""

    def __init__(self, unit: HostUnit, inputs: list[Val], outputs: list[Val]) -> None:
        self.unit = unit
        self.inputs = inputs
        self.outputs = outputs


class CommunicationNode(HostNode):
    """A collective between the devices of `team` (nvFuser's Communication): `type` is
    Allgather, ReduceScatter, Allreduce, Broadcast or SendRecv; posted asynchronously, its
    output is ready after the matching Wait."""

    def __init__(self, number: int, type_: str, team: list[int], inp: Val, out: Val, backend: str = "NCCL",
                 root: int | None = None) -> None:
        self.number = number
        self.type = type_
        self.team = list(team)
        self.inp = inp
        self.out = out
        self.backend = backend
        self.root = root


class Wait(HostNode):
    """Wait until `communication` completes."""

    def __init__(self, communication: CommunicationNode) -> None:
        self.communication = communication


class ShardByDevice(HostNode):
    """`out` = this device's part of `inp` along the axis `parallel_type` shards: a local
    narrow (no communication), where a replicated tensor feeds a sharded op."""

    def __init__(self, inp: Val, out: Val, parallel_type: Any) -> None:
        self.inp = inp
        self.out = out
        self.parallel_type = parallel_type


class HostIrContainer:
    """A host program: `str()` prints nvFuser's `%HostIrContainer { ... } // %HostIrContainer`."""

    def __init__(self, fusion: Fusion, inputs: list[Val], outputs: list[Val], num_streams: int = 4) -> None:
        self.fusion = fusion
        self.inputs = inputs
        self.outputs = outputs
        self.num_streams = num_streams
        self.top_level: list[Any] = []
        # Every stream loop binds the same index, as nvFuser's NamedScalar of ParallelType::Stream.
        self.stream_index = NamedScalar("StreamIdx")
        self.number_of_streams = NamedScalar("numberOfStreams")
        self._streams = 0
        # The segment each host op stands for ("segment 1 (expr_eval)"), by id of the op: a
        # failing op is reported naming it.
        self.segment_of: dict[int, str] = {}

    def where(self, e: Expr) -> str:
        """The prefix naming the segment a host op stands for (`segment N (scheduler): `), or
        the empty string."""
        label = self.segment_of.get(id(e))
        return f"{label}: " if label else ""

    def new_stream(self, index: Scalar | None = None) -> Stream:
        """Streams are numbered in creation order, as nvFuser names its Stream vals."""
        s = Stream(self._streams, index)
        self._streams += 1
        return s

    def pool_stream(self) -> Stream:
        """The stream of the current iteration: `Stream ( StreamIdx % numberOfStreams )`."""
        return self.new_stream(binary("mod", self.stream_index, self.number_of_streams))

    def walk(self) -> list[Any]:
        """Every statement, loop bodies included, in program order."""
        out: list[Any] = []
        stack = list(reversed(self.top_level))
        while stack:
            s = stack.pop()
            out.append(s)
            if isinstance(s, ForLoop):
                stack.extend(reversed(s.body))
        return out

    def __str__(self) -> str:
        from engine.host.printer import host_ir_listing

        return host_ir_listing(self)
