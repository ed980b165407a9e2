"""FusionDefinition: nvFuser's python-frontend names over the engine's Fusion.

The calls it records and the `fd.ops` and `fd.sched` namespaces that record theirs are in
recording.py; define_tensor's argument forms and their checks in tensor_args.py.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from engine import gc_pause, reference
from engine.dtypes import DataType
from engine.errors import ExecutionError, FusionDefinitionError
from engine.frontend.example_inputs import synthesize
from engine.frontend.input_spec import input_signature
from engine.frontend.recording import FrontendCall, Ops, RecordingSched, recorded, snapshot
from engine.frontend.sched import SchedOperators
from engine.frontend.tensor_args import (
    INDEX_MAX,
    allocation_contiguity,
    allocation_order,
    check_stride_order,
    from_sizes_strides,
    short_repr,
)
from engine.ir.base import _current
from engine.ir.base import open_definition as base_open_definition
from engine.ir.fusion import Fusion
from engine.ir.iterdomain import IterDomain, IterType
from engine.ir.scalar import Scalar
from engine.ir.tensorview import MemoryType, TensorDomain, TensorView
from engine.ops.compat import stride_order as stride_order_op

# Compiles a fusion for its inputs (engine.compile.compile_fusion, installed when that module
# is imported, as `import engine` does): fd.execute compiles through it.
COMPILE: Callable[[Any, list[Any]], Any] | None = None

# Runs a fusion whose tensors carry device meshes on this rank (engine.multidevice installs
# it when imported, as `import engine` does); returns None for a single-device fusion.
MULTIDEVICE_RUN: Callable[[Any, list[Any]], list[Any] | None] | None = None


@dataclass(frozen=True)
class SkippedStatement:
    """A top-level statement of a fusion file that the loader skipped without evaluating it:
    the repro's own checking code after the fusion was run (eager reference computations,
    asserts, prints, timing loops), and before it what the fusion does not need (imports
    of other modules than torch, nvfuser and math, helper functions, other tests). Lines
    are 1-based and inclusive."""

    first_line: int
    last_line: int
    reason: str

    def __str__(self) -> str:
        lines = (f"line {self.first_line}" if self.first_line == self.last_line
                 else f"lines {self.first_line}-{self.last_line}")
        return f"{lines}: {self.reason}"


# The FusionDefinition whose `with` block is open (engine.ir.base.open_definition).
_open = base_open_definition


def open_definition() -> FusionDefinition | None:
    return _open.get()


class FusionDefinition:
    """Define a fusion with `with FusionDefinition() as fd:` or a `definition` method.

    Subclasses may define `definition(self)` (and `schedule(self)`) as nvFuser's
    frontend allows; they run when the object is created.
    """

    def __init__(self) -> None:
        self.fusion = Fusion()
        # Frontend calls in order, for writing the fusion back out (engine.frontend.pyformat).
        self.recorded_calls: list[FrontendCall] = []
        self._depth = 0
        self.ops = Ops(self)
        self.sched = RecordingSched(self, SchedOperators(self))
        # Specs of example inputs, as read from a fusion file's `inputs = [...]` list.
        self.input_specs: list[Any] | None = None
        # add_output(T, alias_input): fusion output index -> fusion input index. The fusion
        # computes T as an output; execute() writes it into that input and does not return it.
        self.output_aliases: dict[int, int] = {}
        # What a fusion file's loader skipped, unread: what the fusion does not need and the
        # repro's checking code after the run (engine.frontend.pyread). Empty for a fusion
        # built in Python.
        self.skipped_statements: list[SkippedStatement] = []
        # Producers made by a tensor's own rfactor method in the definition (not inside a
        # recorded call, which makes them again when a saved file is read): a saved file
        # spells each (engine.frontend.pywrite).
        self.method_rfactors: list[TensorView] = []
        self._token: contextvars.Token | None = None
        self._open_token: contextvars.Token | None = None
        self._reentered = 0
        if type(self).definition is not FusionDefinition.definition:
            with self:
                self.definition()
        if type(self).schedule is not FusionDefinition.schedule:
            with self:
                self.schedule()

    def definition(self) -> None:
        """Override to define the fusion (nvFuser's subclass style)."""

    def schedule(self) -> None:
        """Override to add user-schedule calls through `self.sched`."""

    # ---- context -----------------------------------------------------------------
    def __enter__(self) -> FusionDefinition:
        if self._token is None:  # entering an open definition again changes nothing
            self._token = _current.set(self.fusion)
            self._open_token = _open.set(self)
            gc_pause.hold()  # no full collections in mid-definition (see engine.gc_pause)
        else:
            self._reentered += 1
        return self

    def __exit__(self, *exc: object) -> None:
        if self._reentered:
            self._reentered -= 1
        elif self._token is not None:
            _current.reset(self._token)
            if self._open_token is not None:
                _open.reset(self._open_token)
            self._token = None
            gc_pause.release()

    def _record_call(
        self, target: str, name: str, fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        # Calls made from inside another recorded call are part of it: not recorded.
        self._depth += 1
        try:
            result = fn(*args, **kwargs)
        finally:
            self._depth -= 1
        if self._depth == 0:
            shown = args[1:] if target == "fd" else args  # drop `self`
            self.recorded_calls.append(
                FrontendCall(target, name, snapshot(tuple(shown)), snapshot(dict(kwargs)), result)
            )
            self._take_queued_aliases()
        return result

    def note_rfactor(self, producer: TensorView) -> None:
        """`producer` was just made by a tensor's rfactor method (TensorView.rfactor)."""
        if self._depth == 0:
            self.method_rfactors.append(producer)

    def _take_queued_aliases(self) -> None:
        """Outputs a composite op asked to write into inputs (batch_norm's running stats):
        aliased outputs, as add_output(out, alias_input) makes them, but not recorded as
        calls of their own (the op's call makes them again when the file is read back)."""
        queued, self.fusion.queued_aliases = self.fusion.queued_aliases, []
        for out, inp in queued:
            self._check_alias(out, inp)
            self.fusion.add_output(out)
            self.output_aliases[len(self.fusion.outputs) - 1] = self.fusion.inputs.index(inp)

    # ---- definition ------------------------------------------------------------
    @recorded
    def define_tensor(
        self,
        shape: Sequence[int] | None = None,
        contiguity: Sequence[bool | None] | bool | None = None,
        dtype: DataType = DataType.Float,
        is_cpu: bool = False,
        stride_order: Sequence[int] | None = None,
        *,
        symbolic_sizes: Sequence[int] | None = None,
        contiguous: Sequence[bool | None] | None = None,
        sizes: Sequence[int] | None = None,
        strides: Sequence[int] | None = None,
        static_sizes: bool = False,
    ) -> TensorView:
        """A fusion input. shape: -1 symbolic, 1 broadcast, n static. contiguity and
        stride_order as nvFuser: contiguity per allocation axis (None for broadcast;
        None on a non-1 axis makes an expanded broadcast), stride_order[i] the rank of
        dim i's stride with 0 the innermost. symbolic_sizes/contiguous are the 2023
        names of shape/contiguity; sizes/strides (with static_sizes) the 2022 form that
        takes a tensor's size() and stride()."""
        if isinstance(shape, int) and not isinstance(shape, bool):
            # The first frontend (2022, inside PyTorch) took a rank and a later fd.add_input.
            raise FusionDefinitionError(
                f"define_tensor({shape}): the rank-only form of the 2022 frontend (with fd.add_input) is not "
                f"supported; give the sizes: shape=[{', '.join(['-1'] * min(max(shape, 0), 8))}]")
        if sizes is not None or strides is not None:
            if shape is not None or symbolic_sizes is not None or contiguity is not None or stride_order:
                raise FusionDefinitionError("define_tensor: give sizes/strides or shape/contiguity, not both")
            shape, contiguity, stride_order = from_sizes_strides(sizes, strides, static_sizes)
        shape = list(shape if shape is not None else symbolic_sizes or [])
        if contiguity is None:
            contiguity = contiguous
        if not isinstance(dtype, DataType) or dtype == DataType.Null:
            raise FusionDefinitionError(f"define_tensor: dtype must be a DataType, got {dtype!r}")
        for s in shape:
            if not isinstance(s, int) or isinstance(s, bool) or not -1 <= s <= INDEX_MAX:
                raise FusionDefinitionError(
                    f"define_tensor: shape {short_repr(shape)} must hold -1 (symbolic) or sizes >= 0 "
                    "that fit in 64 bits"
                )
        rank = len(shape)
        order = allocation_order(shape, stride_order)
        contig = allocation_contiguity(shape, contiguity, order)
        ids = self._input_ids(shape, contig, order)
        alloc = [ids[d] for d in order]
        domain = TensorDomain(
            ids,
            allocation=alloc if order != list(range(rank)) else None,
            contiguity=[None if i.is_broadcast else c for i, c in zip(alloc, contig)],
        )
        tv = TensorView(self.fusion, domain, dtype, MemoryType.Global)
        self.fusion.add_input(tv)
        return tv

    def _input_ids(self, shape: list[int], contig: list[bool | None], order: list[int]) -> list[IterDomain]:
        fusion = self.fusion
        by_dim = {d: c for d, c in zip(order, contig)}
        ids = []
        for d, s in enumerate(shape):
            if s == -1:
                extent: Scalar = fusion.new_symbol()
            else:
                # nvFuser makes a named constant per static extent; keep its numbering.
                fusion.new_scalar_name()
                extent = Scalar(DataType.Index, s)
            if s == 1:
                i = IterDomain(fusion, 1, IterType.Broadcast)
            elif by_dim[d] is None and s != 1:
                i = IterDomain(fusion, 1, IterType.Broadcast, expanded_extent=extent)
            else:
                i = IterDomain(fusion, extent, IterType.Iteration)
            fusion.zero_val()
            ids.append(i)
        return ids

    @recorded
    def define_scalar(self, value: Any = None, dtype: DataType | None = None) -> Scalar:
        """A constant when `value` is given, else a scalar input of the fusion."""
        if isinstance(value, DataType) and dtype is None:
            value, dtype = None, value  # the 2022-2023 define_scalar(DataType.Int): an input
        if dtype is not None and not isinstance(dtype, DataType):
            raise FusionDefinitionError(f"define_scalar: dtype must be a DataType, got {dtype!r}")
        if value is None:
            s = self.fusion.new_symbol(dtype or DataType.Double)
            self.fusion.add_input(s)
            return s
        if not isinstance(value, (bool, int, float, complex)):
            raise FusionDefinitionError(f"define_scalar: value must be a number, got {value!r}")
        if dtype is None:
            dtype = DataType.Bool if isinstance(value, bool) else (
                DataType.Int if isinstance(value, int) else
                DataType.ComplexDouble if isinstance(value, complex) else DataType.Double)
        if isinstance(value, complex) or dtype.is_complex:
            # Complex tensors work; a complex constant has no spelling in the IR or the kernels.
            raise FusionDefinitionError(f"define_scalar: complex constants are not supported, got {value!r}")
        if dtype.is_float:
            try:
                value = float(value)
            except OverflowError:
                raise FusionDefinitionError(f"define_scalar: {short_repr(value)} is too large for a float") from None
        elif dtype.is_integer:
            value = int(value)
            if not -INDEX_MAX - 1 <= value <= INDEX_MAX:
                raise FusionDefinitionError(f"define_scalar: {short_repr(value)} does not fit in 64 bits")
        return Scalar(dtype, value)

    define_constant = define_scalar

    @recorded
    def add_output(self, output: Any, alias_input: Any = None, stride_order: Sequence[int] | None = None) -> None:
        """Mark `output` as a fusion output. alias_input: write it into that input instead of
        returning it. stride_order (nvFuser's other overload): the output's memory layout,
        `stride_order[i]` the rank of dim i's stride with 0 the innermost."""
        if not isinstance(output, (TensorView, Scalar)):
            raise FusionDefinitionError(f"add_output: expected a tensor or scalar, got {output!r}")
        if isinstance(output, TensorView) and output.fusion is not self.fusion:
            raise FusionDefinitionError(f"add_output: {output.short_name} belongs to another fusion")
        if alias_input is not None:
            self._check_alias(output, alias_input)
        if stride_order is not None and list(stride_order):
            if alias_input is not None or not isinstance(output, TensorView):
                raise FusionDefinitionError("add_output: stride_order applies to a tensor output without "
                                            "alias_input")
            output = self._with_stride_order(output, stride_order)
        self.fusion.add_output(output)
        if alias_input is not None:
            self.output_aliases[len(self.fusion.outputs) - 1] = self.fusion.inputs.index(alias_input)

    def _with_stride_order(self, output: TensorView, stride_order: Sequence[int]) -> TensorView:
        """nvFuser lays the output out in place (its allocation domain); an input, a reduction
        or a tensor already laid out gets a copy with that layout, as fd.ops.stride_order."""
        rank = len([i for i in output.domain.logical if not i.is_reduction])
        order = allocation_order([0] * rank, check_stride_order("add_output", stride_order, rank))
        if (any(output is x for x in self.fusion.inputs) or output.domain.allocation is not None
                or any(i.is_reduction for i in output.domain.logical)):
            return stride_order_op(output, list(stride_order))
        if order != list(range(rank)):
            logical = [i for i in output.domain.logical if not i.is_reduction]
            output.set_allocation_domain([logical[d] for d in order], True)
        return output

    def _check_alias(self, output: Any, target: Any) -> None:
        """nvFuser writes an aliased output into its input's buffer: same dtype, a tensor input."""
        if not isinstance(output, TensorView) or not isinstance(target, TensorView) or not any(
                target is x for x in self.fusion.inputs):
            raise FusionDefinitionError(f"add_output: alias_input must be a tensor input of the fusion, "
                                        f"got {short_repr(target)}")
        if output.dtype != target.dtype:
            raise FusionDefinitionError(f"add_output: {output.short_name} ({output.dtype.cuda_name}) cannot "
                                        f"alias {target.short_name} ({target.dtype.cuda_name})")
        if any(output is o for o in self.fusion.outputs):
            raise FusionDefinitionError(f"add_output: {output.short_name} is already an output")

    def apply_output_aliases(self, inputs: Sequence[Any], outputs: Sequence[Any]) -> list[Any]:
        """What nvFuser returns for `outputs` of this fusion: aliased outputs are written into
        their inputs (in place) and left out of the list."""
        if not self.output_aliases:
            return outputs if type(outputs) is list else list(outputs)
        # Not copied where a kernel wrote it in place (RunPlan.writing_in_place).
        pairs = [(inputs[in_k], outputs[out_k]) for out_k, in_k in self.output_aliases.items()
                 if outputs[out_k] is not inputs[in_k]]
        if len(pairs) == 1:
            pairs[0][0].copy_(pairs[0][1])
        elif pairs:  # one launch for all of them (a BatchNorm's running mean and variance)
            import torch

            torch._foreach_copy_([d for d, _ in pairs], [s for _, s in pairs])
        return [o for k, o in enumerate(outputs) if k not in self.output_aliases]

    # ---- use ------------------------------------------------------------------------
    def execute(self, inputs: Sequence[Any], device: Any = None, *, cuda_graph: bool = False,
                **_: Any) -> list[Any]:
        """Run the fusion: compiled kernels on the GPU when the inputs are CUDA tensors, or
        when no input is a tensor and a GPU is there (compiled once per input signature), the
        reference evaluator (torch ops) otherwise.

        `cuda_graph`: on the GPU, capture the run as a CUDA graph and replay it on later
        calls with the same input buffers (CompiledFusion.graphs); the outputs are then the
        graph's, written again by its next replay."""
        xs = inputs if type(inputs) is list else list(inputs)
        if cuda_graph and device is None and any(getattr(x, "is_cuda", False) for x in xs):
            graphs = self.__dict__.get("_last_graphs")
            outs = graphs.run(xs) if graphs is not None else None
            if outs is None:
                first = self.execute(xs)  # compiled for this signature (or found), as a plain call
                cf = self.__dict__.get("_compiled", {}).get(input_signature([x.cuda() if getattr(x, "is_cuda", True)
                                                                       is False else x for x in xs]))
                if cf is None or not hasattr(cf, "graphs"):
                    return first  # not compiled as one single-device fusion: no graph
                self.__dict__["_last_graphs"] = cf.graphs()
                return first  # this call ran plainly; the next one captures, later ones replay
            return self.apply_output_aliases(inputs, list(outs))  # the graph keeps its own list
        # Repeated calls with the inputs of the last GPU call's signature (shapes, strides,
        # dtypes, alignment: what the layout check and the compile depend on) go straight
        # to its run plan, which compares them once each.
        plan = self.__dict__.get("_last_plan")
        if plan is not None and device is None:
            outs = plan.try_run(xs)
            if outs is not None:
                return self.apply_output_aliases(inputs, outs)
        if MULTIDEVICE_RUN is not None:
            outs = MULTIDEVICE_RUN(self, xs)
            if outs is not None:
                return outs
        reference.check_input_layouts(self.fusion, xs)
        import torch

        on_gpu = any(getattr(x, "is_cuda", False) for x in xs) or str(device or "").startswith("cuda")
        if device is None and not any(isinstance(x, torch.Tensor) for x in xs):
            # No tensor says where to run (a fusion of scalars, iota, full): the GPU when
            # there is one, as nvFuser runs it on its default device.
            on_gpu = torch.cuda.is_available()
        if not on_gpu:
            return self.apply_output_aliases(inputs, reference.evaluate(self.fusion, xs, device=device))

        if COMPILE is None:
            raise ExecutionError("fd.execute on the GPU needs engine.compile (import engine)")
        xs = [x.cuda() if isinstance(x, torch.Tensor) else x for x in xs]
        key = input_signature(xs)
        cache = self.__dict__.setdefault("_compiled", {})
        if key not in cache:
            cache[key] = COMPILE(self, xs)
        outs = cache[key].run(xs, backend="cuda")
        plan = cache[key]._plans.get("cuda") or None
        if plan is not None and self.output_aliases:
            plan = plan.writing_in_place(self.output_aliases)
        self.__dict__["_last_plan"] = plan
        return self.apply_output_aliases(inputs, outs)

    def example_inputs(self, device: str = "cpu", seed: int | None = None, sizes: Any = None) -> list[Any]:
        """Fresh tensors with the shapes, dtypes and strides of the file's `inputs` list; for
        a fusion without one, made from the definition (engine.frontend.example_inputs),
        `sizes` giving its symbolic sizes: an int for all, a mapping ({"T0": [4096, 8192],
        "i0": 64, "*": 16}) or a list with an entry per input. FusionDefinitionError says
        which sizes are missing and how to give them."""
        import torch

        # An empty `inputs = []` is a list: fusions of factories only (iota, full) take nothing.
        if self.input_specs is not None and sizes is not None:
            raise FusionDefinitionError("sizes are for a fusion without an inputs list; this one's example inputs "
                                        "are its file's `inputs = [...]`")
        if self.input_specs is None:
            specs = synthesize(self.fusion, sizes)
        else:
            specs = self.input_specs
        gen = torch.Generator().manual_seed(seed) if seed is not None else None
        return [spec.make(device=device, generator=gen) for spec in specs]

    def __str__(self) -> str:
        return str(self.fusion)

    def __repr__(self) -> str:
        return f"<FusionDefinition {len(self.fusion.inputs)} inputs, {len(self.fusion.outputs)} outputs>"
