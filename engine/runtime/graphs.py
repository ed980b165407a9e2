"""CUDA-graph replay of a compiled fusion's runs: repeated calls on the same input buffers
replay one captured graph (every kernel launch and ATen call of the host program) instead of
launching each op from Python, as torch.compile's reduce-overhead mode does.

A graph is captured per set of input buffers (their addresses) and scalar input values:
the kernels read the inputs where they were at capture, so a call with other tensors, or
other scalars, captures again (the few latest graphs are kept). The outputs live in the
graph's memory: each replay of a graph writes the same output tensors, so a caller who
keeps an output across calls clones it. A host program that cannot be captured (one that
reads device data on the host, as a data-dependent size does) runs without graphs, and the
reason is kept in `refused`.
"""

from __future__ import annotations

import warnings
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any

import torch

# Graphs kept per compiled signature (one per recent set of input buffers).
KEPT = 8


def _key(xs: Sequence[Any]) -> tuple:
    out = []
    for x in xs:
        if isinstance(x, torch.Tensor):
            out.append(("ptr", x.data_ptr()) if x.is_cuda else ("val", x.item() if x.numel() == 1 else id(x)))
        else:
            out.append(("val", x))
    return tuple(out)


class GraphReplay:
    """Replays of `run` captured as CUDA graphs; `fits(xs)` says whether inputs have the
    signature `run` was compiled for, `run(xs)` queues the work on torch's current stream."""

    def __init__(self, fits: Callable[[list[Any]], bool], run: Callable[[list[Any]], list[Any]]) -> None:
        self.fits, self._run = fits, run
        self.graphs: OrderedDict[tuple, tuple[torch.cuda.CUDAGraph, list[Any], list[Any]]] = OrderedDict()
        self.refused: str | None = None
        self.captures = 0
        self.replays = 0

    def run(self, xs: list[Any]) -> list[Any] | None:
        """The outputs for `xs`, or None when they do not fit the compiled signature."""
        if not self.fits(xs):
            return None
        if self.refused is not None:
            return self._run(xs)
        key = _key(xs)
        entry = self.graphs.get(key)
        if entry is None:
            entry = self._capture(xs)
            if entry is None:
                return self._run(xs)
            self.graphs[key] = entry
            while len(self.graphs) > KEPT:
                self.graphs.popitem(last=False)
        else:
            self.graphs.move_to_end(key)
        graph, outs, _inputs = entry
        graph.replay()
        self.replays += 1
        return outs

    def _capture(self, xs: list[Any]) -> tuple[torch.cuda.CUDAGraph, list[Any], list[Any]] | None:
        captured = capture(lambda: self._run(xs))
        if isinstance(captured, str):
            self.refused = captured
            return None
        graph, outs = captured
        self.captures += 1
        # The inputs stay referenced: their buffers must outlive the graph that reads them.
        return graph, list(outs or []), list(xs)


def capture(run: Callable[[], Any]) -> tuple[torch.cuda.CUDAGraph, Any] | str:
    """`run`'s work captured as a CUDA graph on torch's current device, with what `run`
    returned while capturing; or why it cannot be (a string).

    `run` runs once first on a side stream, as torch's capture recipe has it (kernels
    loaded, launches settled, workspaces made outside the graph), with torch's
    synchronizing calls made errors: a run that reads device data on the host cannot be
    captured, and is refused before any capture begins. A capture that fails all the same
    is followed by an empty one, which leaves torch's CUDA generator out of capture mode
    (a failed capture ends before telling it so)."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    mode = torch.cuda.get_sync_debug_mode()
    try:
        torch.cuda.set_sync_debug_mode("error")
        with torch.cuda.stream(side):
            run()
    except Exception as e:  # noqa: BLE001 - a run that fails here runs (and fails) plainly
        return _first_line(e)
    finally:
        torch.cuda.set_sync_debug_mode(mode)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    try:
        with torch.cuda.graph(graph):
            out = run()
    except RuntimeError as e:
        _reset_capture_state()
        return _first_line(e)
    return graph, out


def _first_line(e: BaseException) -> str:
    text = str(e).strip()
    return text.splitlines()[0] if text else type(e).__name__


def _reset_capture_state() -> None:
    empty = torch.cuda.CUDAGraph()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            with torch.cuda.graph(empty):
                pass
        except RuntimeError:
            pass
