"""The resize scheduler's heuristics (ResizeParams), as nvFuser's: 128 threads, the grid
split beyond its x limit, the largest input's index, and the vectorization factor of
the reference's innermost axis.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from engine.analysis.vectorize import vectorization_factor
from engine.ir.fusion import Fusion
from engine.ir.tensorview import TensorView
from engine.schedule.params import HeuristicParams, LaunchParams
from engine.schedule.resize_reference import reference_tensor
from engine.schedule.runtime_info import SchedulerRuntimeInfo
from engine.trace import Trace

BDIMX = 128  # nvFuser's resize scheduler uses 128 threads per block
MAX_GDIMX = (1 << 31) - 1  # nvFuser's ResizeParams::max_gdimx


@dataclass(frozen=True)
class ResizeParams(HeuristicParams):
    split_grid_x_dim: bool = False
    largest_input: int = -1
    vectorization_factor: int = 1
    reference: str = ""
    # Inputs and outputs whose innermost contiguous run the analysis found to hold whole
    # vectors (engine.analysis.vectorize): their accesses may vectorize through a merge.
    contiguous: tuple[str, ...] = ()

    def __str__(self) -> str:
        # nvFuser's ResizeParams::toString (a C++ bool prints as 0/1).
        return "\n".join([
            "", "===== Resize Parameters ========",
            ("Tag: " if self.tag else "") + f"{self.tag} Resize Characteristics:",
            f" split grid x dim: {int(self.split_grid_x_dim)}",
            f" index of largest input: {self.largest_input}",
            f" vectorization factor: {self.vectorization_factor}",
            "====================================",
        ]) + "\n"


def compute_resize_heuristics(
    fusion: Fusion, info: SchedulerRuntimeInfo, trace: Trace | None = None
) -> ResizeParams:
    """ResizeParams for `fusion` at these sizes; the derivation goes to `trace`."""
    outs = [v for v in fusion.outputs if isinstance(v, TensorView)]
    largest_out = max(outs, key=lambda t: (info.numel(t), -outs.index(t)))
    n = info.numel(largest_out)
    ins = [(k, v) for k, v in enumerate(fusion.inputs) if isinstance(v, TensorView)]
    largest_in = -1
    if ins:
        largest_in = max(ins, key=lambda kv: (info.numel(kv[1]), -kv[0]))[0]
    ref = reference_tensor(fusion)
    assert ref is not None
    # Only the innermost axis is vectorized, as nvFuser's resize scheduler.
    vec = vectorization_factor(fusion, ref, info, break_point=max(ref.ndim - 1, 0))
    split_grid = -(-n // BDIMX) > MAX_GDIMX
    lines = [f"reference {ref.short_name}; largest output {largest_out.short_name} "
             f"with {n} elements", f"split grid x dim: ceilDiv({n}, {BDIMX}) > {MAX_GDIMX} "
             f"is {split_grid}", f"index of largest input: {largest_in}", *vec.derivation]
    params = ResizeParams(
        tag="Resize heuristics", split_grid_x_dim=split_grid, largest_input=largest_in,
        vectorization_factor=vec.factor, reference=ref.short_name,
        contiguous=tuple(t.short_name for t in vec.vectorizable),
        lparams=LaunchParams(bdimx=BDIMX),
        index_type="int" if info.index_type().name == "Int32" else "int64_t",
    )
    params = replace(params, derivation=tuple(lines))
    if trace is not None:
        for line in lines:
            trace.event("heuristic", "resize", line)
    return params
