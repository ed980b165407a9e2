"""A run plan of several steps replayed as one CUDA graph, with a plain call's semantics.

A host program of several steps (kernel launches, ATen calls, views) costs Python time per
step on every call; when the GPU work is short the GPU waits for the host. Here the plan is
captured once as a CUDA graph over buffers of its own, and a call is: copy the caller's
tensor inputs into those buffers, replay, copy the outputs into fresh tensors. The caller
sees what a plain run gives (fresh outputs it owns, laid out alike; the inputs as they
are when the call is queued), at the cost of the copies. Whether that pays is measured
as repeated calls run: bursts of BURST calls, plain and through the graph, are timed with
CUDA events around each burst from an idle GPU, so the host's time of a call overlaps the
GPU's work of the one before as it does in a loop of calls; the graph is kept only when
a call through it takes under KEEP_BELOW of a plain call.

Runs stay plain where a graph would change what the caller sees or cannot hold the work:
outputs that alias an input or each other, outputs off the GPU, inputs whose elements overlap
in memory other than along an expanded axis (those are copied in through a view without the
expanded axes, `own_elements`), scalars that differ from
the captured ones (their values are baked into the graph), inputs on another device than
the current one, and host programs that cannot be captured (a step that reads device data
on the host). The reason is kept in `refused`. A call made while the caller captures a
graph of its own runs plainly (its launches go into the caller's graph).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch

from engine.runtime import graphs

# Plain calls before the capture (the first settles each launch: engine.host.launch; the
# others are timed), then calls through the graph timed before it is kept; each timed
# call runs a burst of BURST (a timed plain call runs once alone first: one of more than
# LONG_CALL_MS is refused there).
PLAIN_RUNS = 3
TIMED_REPLAYS = 3
BURST = 4
# A plain call at least this long (ms) is GPU work that a graph cannot shorten: the host's
# few launches are a small part of it, and the copies would add to it.
LONG_CALL_MS = 1.0
# The graph is kept when a call through it takes at most this share of a plain call (the
# least of those timed).
KEEP_BELOW = 0.85
# Bytes of tensor inputs at most: the graph holds a copy of them.
MAX_INPUT_BYTES = 256 << 20


def _nbytes(shape: Sequence[int], stride: Sequence[int], itemsize: int) -> int:
    if any(n == 0 for n in shape):
        return 0
    return (1 + sum((n - 1) * s for n, s in zip(shape, stride))) * itemsize


def worth(steps: int, signature: tuple) -> bool:
    """Whether a plan of `steps` steps over inputs of `signature` may gain from a graph: at
    least three steps, more than its tensor inputs (each copy costs about what a step
    does on the host), within MAX_INPUT_BYTES."""
    tensors = [s for s in signature if isinstance(s, tuple)]
    if steps < 3 or steps <= len(tensors) or not tensors:
        return False
    size = sum(_nbytes(s[0], s[1], getattr(torch, s[2].removeprefix("torch.")).itemsize) for s in tensors)
    return size <= MAX_INPUT_BYTES


def _timed(run: Callable[[], Any], calls: int = BURST) -> tuple[Any, float]:
    """The last result of `calls` calls of run() back to back from an idle GPU, and the
    milliseconds a call took among them (events around them)."""
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(calls):
        out = run()
    end.record()
    end.synchronize()
    return out, start.elapsed_time(end) / calls


class CopyingGraph:
    """`run(xs)`: the outputs of `steps(xs)`, through a replayed graph once one is captured
    and found faster than plain calls; None where the plan runs them itself."""

    def __init__(self, steps: Callable[[list[Any]], list[Any]], n_steps: int) -> None:
        self._steps = steps
        self.n_steps = n_steps
        self.calls = 0
        self.refused: str | None = None
        self.captures = 0
        self.replays = 0  # calls served through the graph
        self._graph: torch.cuda.CUDAGraph | None = None
        self._tensors: list[int] = []  # positions of the tensor inputs
        self._statics: list[torch.Tensor] = []  # the graph's input buffers, in that order
        self._values: list[tuple[int, Any]] = []  # (position, value) of the baked scalar inputs
        self._outs: list[torch.Tensor] = []
        self._device: int | None = None
        self.plain_ms = float("inf")  # the least time of a timed plain call
        self.replay_ms = float("inf")  # the least time of a timed call through the graph
        self.timed = 0  # timed calls through the graph
        self.kept = False  # timed, and faster

    def run(self, xs: list[Any]) -> list[Any] | None:
        if self.refused is not None or torch.cuda.is_current_stream_capturing():
            return None  # inside the caller's own capture: plain launches, captured by it
        if self._graph is None:
            self.calls += 1
            if self.calls == 1:
                return None
            if self.calls <= PLAIN_RUNS:
                # One call alone first: a long one is refused before a burst repeats it.
                outs, ms = _timed(lambda: self._steps(xs), 1)
                if ms <= LONG_CALL_MS:
                    outs, ms = _timed(lambda: self._steps(xs))
                self.plain_ms = min(self.plain_ms, ms)
                if self.plain_ms > LONG_CALL_MS:
                    self._refuse_long()
                return outs
            if self.plain_ms > LONG_CALL_MS:
                self._refuse_long()
                return None
            return self._capture(xs)
        if not self._fits(xs):
            return None
        self.replays += 1
        if self.kept:
            return self._replay(xs)
        outs, ms = _timed(lambda: self._replay(xs))
        self.replay_ms = min(self.replay_ms, ms)
        self.timed += 1
        if self.timed >= TIMED_REPLAYS:
            if self.replay_ms <= KEEP_BELOW * self.plain_ms:
                self.kept = True
            else:
                self._refuse(f"no faster: {self.replay_ms * 1e3:.0f} us a call against "
                             f"{self.plain_ms * 1e3:.0f} us plainly")
        return outs

    def _replay(self, xs: list[Any]) -> list[torch.Tensor]:
        torch._foreach_copy_([own_elements(t) for t in self._statics],
                             [own_elements(xs[k]) for k in self._tensors])
        assert self._graph is not None
        self._graph.replay()
        return self._copy_out()

    def _fits(self, xs: list[Any]) -> bool:
        if torch.cuda.current_device() != self._device:
            return False
        for k, v in self._values:
            x = xs[k]
            if (x.item() if isinstance(x, torch.Tensor) else x) != v:
                return False
        return True

    def _copy_out(self) -> list[torch.Tensor]:
        fresh = [torch.empty_strided(o.shape, o.stride(), dtype=o.dtype, device=o.device) for o in self._outs]
        torch._foreach_copy_(fresh, self._outs)
        return fresh

    def _refuse_long(self) -> None:
        self._refuse(f"a call takes {self.plain_ms * 1e3:.0f} us of GPU work: its launches are not "
                     "what it waits for")

    def _refuse(self, why: str) -> None:
        self.refused = why
        self._graph, self._statics, self._outs = None, [], []

    def _capture(self, xs: list[Any]) -> list[Any] | None:
        device = torch.cuda.current_device()
        tensors = [k for k, x in enumerate(xs) if isinstance(x, torch.Tensor) and x.is_cuda]
        if any(xs[k].device.index != device for k in tensors):
            self._refuse("an input is on another GPU than the current one")
            return None
        values = [(k, x.item() if isinstance(x, torch.Tensor) else x) for k, x in enumerate(xs) if k not in tensors]
        statics = [torch.empty_strided(xs[k].shape, xs[k].stride(), dtype=xs[k].dtype, device=xs[k].device)
                   for k in tensors]
        if not all(_distinct(own_elements(t)) for t in statics):
            self._refuse("an input's elements overlap in memory other than along a broadcast axis")
            return None
        args = list(xs)
        for k, s in zip(tensors, statics):
            own_elements(s).copy_(own_elements(xs[k]))
            args[k] = s
        captured = graphs.capture(lambda: self._steps(args))
        if isinstance(captured, str):
            self._refuse(captured)
            return None
        graph, outs = captured
        why = _unsafe(outs, statics)
        if why:
            self._refuse(why)
            return None
        self._graph, self._device, self._tensors, self._statics = graph, device, tensors, statics
        self._values, self._outs = values, list(outs)
        self.captures += 1
        graph.replay()
        self.replays += 1
        return self._copy_out()


def _unsafe(outs: Sequence[Any], statics: Sequence[torch.Tensor]) -> str:
    """Why copying `outs` out of the graph would not give what a plain run gives ("" if it does)."""
    seen: set[int] = set()
    inputs = {s.untyped_storage().data_ptr() for s in statics}
    for k, o in enumerate(outs):
        if not isinstance(o, torch.Tensor) or not o.is_cuda:
            return f"output {k} is not a GPU tensor"
        base = o.untyped_storage().data_ptr()
        if base in inputs:
            return f"output {k} is a view of an input"
        if base in seen:
            return f"output {k} shares memory with another output"
        seen.add(base)
        if not _dense(o):
            return f"output {k} is not laid out densely (a copy would lay it out otherwise)"
    return ""


def own_elements(t: torch.Tensor) -> torch.Tensor:
    """`t` without its expanded axes (stride 0, more than one element): one element along
    each, so that a copy writes each memory location once (an expanded input's buffer of the
    graph is filled through this view, as torch refuses a copy into overlapping elements)."""
    if all(st != 0 or n <= 1 for n, st in zip(t.shape, t.stride())):
        return t
    shape = [1 if st == 0 and n > 1 else n for n, st in zip(t.shape, t.stride())]
    return t.as_strided(shape, t.stride(), t.storage_offset())


def _distinct(t: torch.Tensor) -> bool:
    """Whether no two elements of `t` share a memory location."""
    reach = 1
    for st, n in sorted((abs(st), n) for n, st in zip(t.shape, t.stride()) if n > 1):
        if st < reach:
            return False
        reach += st * (n - 1)
    return True


def _dense(t: torch.Tensor) -> bool:
    """Non-overlapping and dense: its elements fill exactly as many bytes as they span."""
    return t.numel() == 0 or _nbytes(t.shape, t.stride(), 1) == t.numel()
