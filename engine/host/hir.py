"""Host IR: the program that orchestrates a compiled fusion on the host (nvFuser's hir).

A HostIrContainer holds the program's inputs, outputs and top-level statements. Statements
are the host nodes below (allocations, stream management, for-loops over a Stream axis,
aliasing selects, kernel launches) and fusion-level Exprs (set, binary ops, reductions,
matmul, linear, select, ...) that the evaluator runs through torch, as nvFuser's
HostIrEvaluator runs them through ATen.

The container owns a clone of the compiled fusion: the host program creates tensors of its
own (the outputs of HirAliasSelect) and marks the tensors its host ops pass around as global,
and neither may leak into the fusion the rest of the pipeline shows.

`str()` of a container is its listing in seed 002's format (nvFuser's HostIrContainer::print):
two spaces per nesting level; fusion-level exprs print as in a fusion listing (the output on
its own line, ` = op( ... )` one level in), each host node prints itself (`to_string`) on one
line:

    %HostIrContainer { (T0_g_float[iS0{i0}, iS1{i2}]) -> (T1_g_float[iStreamIdx2{i0}, iS3{i2}]) :
      T1_g_float[...] = ALLOCATE(buffer=T1_g_float[...], mem_type=global, size=( i0 * i2 ), ...)
      GetCurrentStream into Stream 0
      FOR StreamIdx in iStreamIdx2{i0}:
        SetCurrentStream to Stream ( StreamIdx % numberOfStreams )
        Synchronize Stream 0
      ...
    } // %HostIrContainer
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeAlias

from engine.dtypes import DataType
from engine.ir.base import Expr, Val
from engine.ir.exprs import ind
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
    """A host-IR statement; `to_string` prints it in the listing's format (see above)."""

    def to_string(self, indent: int = 0) -> str:
        """The statement (and a loop's body) as listing lines, each ending in a newline."""
        raise TypeError(f"no host-IR format for {type(self).__name__}")

    def __str__(self) -> str:
        return self.to_string()


def _vals(vals: list[Any]) -> str:
    return ", ".join(str(v) for v in vals)


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

    def to_string(self, indent: int = 0) -> str:
        zero = "true" if self.zero_init else "false"
        return (f"{ind(indent)}{self.tv} = ALLOCATE(buffer={self.tv}, mem_type={self.mem_type}, "
                f"size={self.size.inline()}, zero_init={zero}, resets_to_zero=false)\n")


class Deallocate(HostNode):
    """Drop the program's reference to `tv` after its last use."""

    def __init__(self, tv: TensorView) -> None:
        self.tv = tv

    def to_string(self, indent: int = 0) -> str:
        return f"{ind(indent)}Deallocate( {self.tv} )\n"


class ForLoop(HostNode):
    """`FOR StreamIdx in <axis>:` over the extent of a Stream-parallel IterDomain."""

    def __init__(self, index: NamedScalar, axis: IterDomain, body: list[Any] | None = None) -> None:
        self.index = index
        self.axis = axis
        self.body: list[Any] = list(body or [])

    def to_string(self, indent: int = 0) -> str:
        body = "".join(s.to_string(indent + 1) for s in self.body)
        return f"{ind(indent)}FOR {self.index.inline()} in {self.axis}:\n{body}"


class GetCurrentStream(HostNode):
    """Bind `stream` to the stream current when the statement runs (the caller's)."""

    def __init__(self, stream: Stream) -> None:
        self.stream = stream

    def to_string(self, indent: int = 0) -> str:
        return f"{ind(indent)}GetCurrentStream into {self.stream}\n"


class SetCurrentStream(HostNode):
    def __init__(self, stream: Stream) -> None:
        self.stream = stream

    def to_string(self, indent: int = 0) -> str:
        return f"{ind(indent)}SetCurrentStream to {self.stream}\n"


class Synchronize(HostNode):
    """The current stream waits for the work issued so far on `stream` (an event wait;
    the host never blocks)."""

    def __init__(self, stream: Stream) -> None:
        self.stream = stream

    def to_string(self, indent: int = 0) -> str:
        return f"{ind(indent)}Synchronize {self.stream}\n"


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

    def to_string(self, indent: int = 0) -> str:
        return (f"{ind(indent)}{self.out}\n{ind(indent + 1)} = HirAliasSelect( {self.inp}, axis = {self.axis}, "
                f"index = {self.index.inline()} )\n")


class LaunchKernel(HostNode):
    """Launch a compiled segment's kernel (`segment.run`); it allocates its own outputs."""

    def __init__(self, segment: CompiledSegment, inputs: list[Val], outputs: list[Val]) -> None:
        self.segment = segment
        self.inputs = inputs
        self.outputs = outputs

    def to_string(self, indent: int = 0) -> str:
        seg = self.segment
        return (f"{ind(indent)}LaunchKernel(Group ID: {seg.id}, Inputs: {{{_vals(self.inputs)}}}, "
                f"Outputs: {{{_vals(self.outputs)}}}, kernel={seg.kernel_name})\n")


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

    def to_string(self, indent: int = 0) -> str:
        seg = self.unit.segment
        return (f"{ind(indent)}PostOnStream (HostUnit{seg.id} ({seg.scheduler}), Inputs: {{{_vals(self.inputs)}}}, "
                f"Outputs: {{{_vals(self.outputs)}}})\n")


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

    def to_string(self, indent: int = 0) -> str:
        root = f", root={self.root}" if self.root is not None else ""
        team = " ".join(str(d) for d in self.team)
        return (f"{ind(indent)}Communication {self.number} (type={self.type}, team=({team}){root}, "
                f"input={self.inp}, output={self.out}, backend={self.backend})\n")


class Wait(HostNode):
    """Wait until `communication` completes."""

    def __init__(self, communication: CommunicationNode) -> None:
        self.communication = communication

    def to_string(self, indent: int = 0) -> str:
        return f"{ind(indent)}Wait(Communication {self.communication.number})\n"


class ShardByDevice(HostNode):
    """`out` = this device's part of `inp` along the axis `parallel_type` shards: a local
    narrow (no communication), where a replicated tensor feeds a sharded op."""

    def __init__(self, inp: Val, out: Val, parallel_type: Any) -> None:
        self.inp = inp
        self.out = out
        self.parallel_type = parallel_type

    def to_string(self, indent: int = 0) -> str:
        return (f"{ind(indent)}{self.out}\n{ind(indent + 1)} = ShardByDevice( {self.inp}, "
                f"parallel_type = {self.parallel_type} )\n")


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
        head = f"%HostIrContainer {{ ({_vals(self.inputs)}) -> ({_vals(self.outputs)}) :\n"
        body = "".join(s.to_string(1) for s in self.top_level)
        return f"{head}{body}}} // %HostIrContainer\n"
