"""The host program flattened for repeated runs at the compiled input signature.

`CompiledFusion.run` calls this on every call, so it does per call only what depends on
the data: check the inputs against the signature (shape, strides, dtype, alignment, one
comparison each), then run a flat list of steps over a list of value slots. Kernel
launches replay the launch settled at their first call (engine.host.launch); values that
depend only on the sizes (extents, derived scalars) are computed once when the plan is
built. Host programs with stream statements (loops, stream switches, aliasing selects) and
runs that record a timeline go through HostIrEvaluator instead.
"""

from __future__ import annotations

import copy
from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import torch

from engine.errors import ExecutionError
from engine.host import graph_plan, hir
from engine.host.alias_replay import AliasReplay
from engine.host.in_place import in_place_writes
from engine.host.launch import launch_segment
from engine.host.view_folding import fold_view_chains
from engine.ir.base import Expr, Val
from engine.ir.scalar import Scalar
from engine.ir.tensorview import TensorView
from engine.reference import HANDLERS, Context, bind_input, finish_output
from engine.runtime.fast_paths import SignatureGuard
from engine.runtime.placement import run_device

if TYPE_CHECKING:
    from engine.compiled_fusion import CompiledFusion

# How a step reads a value: from a slot, a constant fixed by the sizes, or a scalar that
# depends on the fusion's scalar inputs (evaluated each run).
SLOT, CONST, DYN = 0, 1, 2


class InputCheck:
    """The compiled signature as one comparison per property and input: True when `xs` fit.

    Data at least as aligned as compiled for fits (the kernels assume that much). Inputs that
    fit teach a SignatureGuard (engine.runtime.fast_paths), which answers later calls with one
    C++ comparison; the comparison here stays the authority."""

    GUARD_TRIES = 4  # inputs that fit but fail the guard (requires_grad, say) build it again, so often

    def __init__(self, signature: tuple, on_gpu: bool) -> None:
        self.expected = [(tuple(s[0]), tuple(s[1]), _dtype(s[2]), s[3]) if isinstance(s, tuple) else s
                         for s in signature]
        self.on_gpu = on_gpu
        self._guard: SignatureGuard | None = None
        self._tries = self.GUARD_TRIES

    def __call__(self, xs: Sequence[Any]) -> bool:
        guard = self._guard
        if guard is not None and guard(xs):
            return True
        if not self._full(xs):
            return False
        if self._tries:
            self._tries -= 1
            self._guard = SignatureGuard.build(xs, [w[3] if type(w) is tuple else None for w in self.expected])
        return True

    def _full(self, xs: Sequence[Any]) -> bool:
        if len(xs) != len(self.expected):
            return False
        on_gpu = self.on_gpu
        for x, want in zip(xs, self.expected):
            if type(want) is tuple:
                shape, stride, dtype, align = want
                if (not isinstance(x, torch.Tensor) or x.is_cuda != on_gpu or x.shape != shape
                        or x.stride() != stride or x.dtype != dtype or x.data_ptr() % align):
                    return False
            elif type(x).__name__ != want:
                return False
        return True


def _dtype(name: str) -> torch.dtype:
    return getattr(torch, name.removeprefix("torch."))


def to_device(xs: Sequence[Any], backend: str) -> list[Any]:
    """Tensors moved to the back end's device (cuda: the GPU; emulate: the CPU)."""
    if backend == "cuda":
        return [x.cuda() if isinstance(x, torch.Tensor) and not x.is_cuda else x for x in xs]
    if backend == "emulate":
        return [x.cpu() if isinstance(x, torch.Tensor) and x.is_cuda else x for x in xs]
    return list(xs)


class RunPlan:
    """Steps over value slots: launches, host units, host exprs, deallocations."""

    def __init__(self, cf: CompiledFusion, backend: str) -> None:
        c = cf.host_ir
        self.cf = cf
        self.backend = backend
        self.check = InputCheck(cf.signature, backend == "cuda")
        self.slots: dict[int, int] = {id(v): k for k, v in enumerate(c.inputs)}
        self.scalar_inputs = [(k, v) for k, v in enumerate(c.inputs) if isinstance(v, Scalar)]
        self.trusted = {k for k, v in enumerate(c.inputs) if isinstance(v, TensorView)}
        self.static_env = _static_env(c, cf.signature)
        self.needs_env = False
        self.dyn_refs = False  # a step reads a scalar evaluated per run
        self.steps = [self._step(s) for s in c.top_level]
        self.unfolded = any(isinstance(st, _HostExpr) for st in self.steps)
        self.outputs = [self._ref(v) for v in c.outputs]
        self.output_slots = [x for _, x in self.outputs] if all(k == SLOT for k, _ in self.outputs) else None
        self.n_slots = len(self.slots)
        # Several steps: replayed as one graph where that is faster (engine.host.graph_plan).
        n_steps = sum(1 for st in self.steps if not isinstance(st, _Free))
        self.graph = (graph_plan.CopyingGraph(self.plain_steps, n_steps)
                      if backend == "cuda" and not cf.options.sync_launches and cf.options.replay_graphs
                      and graph_plan.worth(n_steps, cf.signature) else None)

    @classmethod
    def build(cls, cf: CompiledFusion, backend: str) -> RunPlan | None:
        """The plan, or None when the host program has statements only the evaluator runs."""
        for s in cf.host_ir.top_level:
            if not isinstance(s, (hir.LaunchKernel, hir.PostOnStream, hir.Deallocate, Expr)):
                return None
        return cls(cf, backend)

    # ---- running -----------------------------------------------------------------------------
    def run(self, inputs: Sequence[Any]) -> list[Any]:
        xs = inputs if type(inputs) is list else list(inputs)
        if not self.check(xs):
            # Tensors on another device are moved there first, as the evaluator's path does.
            xs = to_device(inputs, self.backend)
            if not self.check(xs):
                # The compiled fusion's full check words the error, naming the input that differs.
                self.cf._inputs_for(inputs, self.backend)
                raise ExecutionError("the inputs differ from those this fusion was compiled for; "
                                     "compile again with compile_fusion")
        return self._steps(xs)

    def try_run(self, xs: list[Any]) -> list[Any] | None:
        """The outputs for `xs` when they fit the compiled signature as they are; else None
        (nothing moved, nothing raised): FusionDefinition.execute's path for repeated calls."""
        return self._steps(xs) if self.check(xs) else None

    def try_plain(self, xs: list[Any]) -> list[Any] | None:
        """try_run, each step launched from here (never through this plan's own graph)."""
        return self.plain_steps(xs) if self.check(xs) else None

    def writing_in_place(self, aliases: dict[int, int]) -> RunPlan:
        """This plan, with the kernels that may (engine.host.in_place) writing aliased outputs
        (fusion output index -> input index) into their inputs' buffers: the plan of a call
        with nvFuser's in-place semantics. The plan itself when none may."""
        writes = in_place_writes(self.cf.host_ir, aliases)
        if not writes:
            return self
        plan = copy.copy(self)
        plan.graph = None  # the kernels write the caller's buffers, not the graph's
        plan.steps = [copy.copy(st) for st in self.steps]
        for k, into in writes.items():
            plan.steps[k].into = into
        return plan

    def _steps(self, xs: list[Any]) -> list[Any]:
        if self.graph is not None:
            outs = self.graph.run(xs)
            if outs is not None:
                return outs
        return self.plain_steps(xs)

    def plain_steps(self, xs: list[Any]) -> list[Any]:
        """The outputs for `xs` (fitting the signature), each step run from here."""
        slots: list[Any] = [None] * self.n_slots
        slots[: len(xs)] = xs
        env = self._env(xs) if self.needs_env else None
        for step in self.steps:
            step(slots, env)
        if self.unfolded:
            self._fold_views()
        if self.output_slots is not None:
            return [slots[k] for k in self.output_slots]
        return [_read(r, slots, env) for r in self.outputs]

    def _fold_views(self) -> None:
        """After the first run has taught the view steps their geometry: chains of them off
        the fusion's tensor inputs become one as_strided per tensor read (view_folding)."""
        self.unfolded = False
        roots = {k for k, v in enumerate(self.cf.host_ir.inputs) if isinstance(v, TensorView)}
        outputs = {x for kind, x in self.outputs if kind == SLOT}
        folded = fold_view_chains(self.steps, roots, outputs, _slots_read, _slot_of)
        if folded is None:
            return
        self.steps = folded
        self.needs_env = self.dyn_refs or any(isinstance(st, _Replayable) for st in self.steps)

    def _env(self, xs: list[Any]) -> Any:
        ctx = Context(run_device(self.backend, xs))
        ctx.env.update(self.static_env)
        for k, v in self.scalar_inputs:
            x = xs[k]
            ctx.env[v] = x.item() if isinstance(x, torch.Tensor) else x
        return ctx

    # ---- building ----------------------------------------------------------------------------
    def _slot(self, v: Val) -> int:
        return self.slots.setdefault(id(v), len(self.slots))

    def _ref(self, v: Val) -> tuple[int, Any]:
        if id(v) in self.slots:
            return (SLOT, self.slots[id(v)])
        if not isinstance(v, Scalar):
            raise ExecutionError(f"{getattr(v, 'short_name', v)} is read before the host program produced it")
        try:
            return (CONST, v.evaluate(self.static_env))
        except KeyError:
            self.needs_env = self.dyn_refs = True
            return (DYN, v)

    def _step(self, s: Any) -> Any:
        if isinstance(s, hir.Deallocate):
            return _Free(self.slots.get(id(s.tv)))
        if isinstance(s, hir.LaunchKernel):
            refs = [self._ref(v) for v in s.inputs]
            trusted = all(r[0] != SLOT or r[1] in self.trusted or not isinstance(v, TensorView)
                          for r, v in zip(refs, s.inputs))
            outs = [self._slot(v) for v in s.outputs]
            if trusted:
                self.trusted.update(outs)
            return _Launch(s.segment, refs, outs, self.backend, trusted)
        if isinstance(s, hir.PostOnStream):
            refs = [self._ref(v) for v in s.inputs]
            return _Unit(s.unit.segment, refs, [self._slot(v) for v in s.outputs], self.backend)
        refs = [self._ref(v) for v in s.inputs]
        self.needs_env = True
        return _HostExpr(s, refs, [self._slot(v) for v in s.outputs], self.cf.host_ir.where(s),
                         [self._laid_out(v) for v in s.outputs])

    def _laid_out(self, v: Val) -> bool:
        """Whether a host op's output is given its allocation layout: a kernel reads it (at
        the strides it was compiled for), or its allocation domain is set. Otherwise a view
        stays a view (an output that is a window of an input is returned as nvFuser returns
        an alias), and a chain of view ops copies nothing; so does a view the kernels
        reading it were compiled for."""
        if not isinstance(v, TensorView):
            return False
        if v.domain.allocation is not None:
            return True
        sizes = getattr(self.cf.segmented, "sizes", None)
        if sizes is not None and v.short_name in sizes.viewed:
            # The kernels reading it were compiled for this very view (Sizes._host_view).
            return False
        return any(isinstance(s, (hir.LaunchKernel, hir.PostOnStream)) and any(x is v for x in s.inputs)
                   for s in self.cf.host_ir.top_level)


def _static_env(c: hir.HostIrContainer, signature: tuple) -> dict:
    """Extents bound from the tensor inputs' compiled sizes (meta tensors: no data)."""
    ctx = Context(torch.device("meta"))
    for k, (v, s) in enumerate(zip(c.inputs, signature)):
        if isinstance(v, TensorView) and isinstance(s, tuple):
            bind_input(k, v, torch.empty_strided(s[0], s[1], dtype=_dtype(s[2]), device="meta"), ctx)
    ctx.env[c.number_of_streams] = c.num_streams
    return ctx.env


def _slot_of(ref: tuple[int, Any]) -> int | None:
    kind, x = ref
    return x if kind == SLOT else None


def _slots_read(step: Any) -> list[int]:
    """The slots a step reads (a _Free reads none: freeing a slot never made is a no-op)."""
    return [x for kind, x in getattr(step, "refs", ()) if kind == SLOT]


def _read(ref: tuple[int, Any], slots: list[Any], env: Any) -> Any:
    kind, x = ref
    if kind == SLOT:
        return slots[x]
    if kind == CONST:
        return x
    return env.scalar(x)


class _Free:
    def __init__(self, slot: int | None) -> None:
        self.slot = slot

    def __call__(self, slots: list[Any], env: Any) -> None:
        # Dropping the last reference returns the memory to torch's caching allocator.
        if self.slot is not None:
            slots[self.slot] = None


class _Launch:
    def __init__(self, seg: Any, refs: list[tuple[int, Any]], outs: list[int], backend: str, trusted: bool) -> None:
        self.seg, self.refs, self.outs, self.backend, self.trusted = seg, refs, outs, backend, trusted
        self.plain = all(kind == SLOT for kind, _ in refs)
        self.in_slots = [x for _, x in refs]
        self._fitted: Any = None  # the replay whose layouts these inputs were found to have
        self.into: dict[int, int] | None = None  # outputs written into inputs (RunPlan.writing_in_place)

    def __call__(self, slots: list[Any], env: Any) -> None:
        if self.plain:
            args = [slots[k] for k in self.in_slots]
        else:
            args = [_read(r, slots, env) for r in self.refs]
        replay = self.seg._replays.get(self.backend)
        # Trusted inputs keep their layouts from run to run (checked inputs, or outputs of
        # launches whose inputs are trusted): compared with the replay's once, not per run.
        if replay is not None and self.trusted and (replay is self._fitted or replay.fits(args)):
            self._fitted = replay
            outputs = replay(args, self.into)
        else:
            outputs = launch_segment(self.seg, args, self.backend)
        for k, t in zip(self.outs, outputs):
            slots[k] = t


class _Replayable(ABC):
    """A step run through torch whose outputs, when they are views of its inputs, are rebuilt
    from the geometry of its first run (engine.host.alias_replay). Steps reading a scalar
    that changes from run to run (DYN) always run: a runtime index moves a view."""

    def __init__(self, refs: list[tuple[int, Any]], outs: list[int]) -> None:
        self.refs, self.outs = refs, outs
        self.replay: AliasReplay | None = None
        self.learn = all(kind != DYN for kind, _ in refs)

    @abstractmethod
    def compute(self, args: list[Any], env: Any) -> list[Any]:
        """The step's outputs for `args`, computed."""

    def __call__(self, slots: list[Any], env: Any) -> None:
        args = [_read(r, slots, env) for r in self.refs]
        outputs = self.replay(args) if self.replay is not None else None
        if outputs is None:
            outputs = self.compute(args, env)
            if self.learn:
                self.replay, self.learn = AliasReplay.learn(args, outputs), False
        for k, t in zip(self.outs, outputs):
            slots[k] = t


class _Unit(_Replayable):
    def __init__(self, seg: Any, refs: list[tuple[int, Any]], outs: list[int], backend: str) -> None:
        super().__init__(refs, outs)
        self.seg, self.backend = seg, backend

    def compute(self, args: list[Any], env: Any) -> list[Any]:
        return self.seg.run(args, self.backend)


class _HostExpr(_Replayable):
    """A fusion-level expr run through the reference evaluator's torch rule."""

    def __init__(self, e: Expr, refs: list[tuple[int, Any]], outs: list[int], where: str = "",
                 laid_out: list[bool] | None = None) -> None:
        super().__init__(refs, outs)
        self.e, self.where = e, where
        self.laid_out = laid_out if laid_out is not None else [True] * len(e.outputs)
        self.handler = HANDLERS.get(type(e))
        if self.handler is None:
            raise ExecutionError(f"the host program has no torch rule for {type(e).__name__}")

    def compute(self, args: list[Any], env: Any) -> list[Any]:
        try:
            results = self.handler(self.e, args, env)
        except ExecutionError as err:  # name the segment the op stands for
            if not self.where:
                raise
            raise ExecutionError(f"{self.where}{err}") from err
        except Exception as err:  # name the op at fault, keep the cause
            names = ", ".join(getattr(v, "short_name", "?") for v in self.e.outputs)
            raise ExecutionError(f"{self.where}host op {type(self.e).__name__} producing {names} "
                                 f"failed: {err}") from err
        return [finish_output(v, t) if lay else t for v, t, lay in zip(self.e.outputs, results, self.laid_out)]
