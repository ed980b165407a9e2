"""ReductionParams: the parameters of the reduction and persistent (normalization)
schedules, printed as nvFuser prints them."""

from __future__ import annotations

from dataclasses import dataclass

from engine.ir.iterdomain import ParallelType
from engine.schedule.params import HeuristicParams


@dataclass(frozen=True)
class ReductionParams(HeuristicParams):
    """nvFuser's ReductionParams (the fields this engine schedules by).

    As in nvFuser, a 2-D schedule calls its one reduction domain the "inner"
    reduction whichever memory dimension it is on; the "outer" fields describe the
    outer reductions of a combined inner-outer (or 3-D) schedule.

    str() follows nvFuser's toString line by line; three lines are this engine's:
    "Circular buffer: stages N" (nvFuser prints its CircularBufferOptions there),
    "Combined Inner Outer" with the outer reduction's line (nvFuser prints that line
    for 3-D schedules only) and "Shared Memory Persistent Buffers: ...".
    """

    fastest_dim: bool = True
    persistent_kernel: bool = False
    project_persistent_buffers: bool = False
    # projections may stop at earlier reductions' results (analysis.persistent_buffers'
    # through_results), not only at the fusion inputs
    project_through_results: bool = False
    # projected only so that the rows can be staged in shared memory a step ahead (inner-outer
    # on sm_90; only inputs can be): every use of a buffer that leads to its reduction's
    # result reads a copy recomputed from its float inputs (persistent_projection)
    project_for_staging: bool = False
    cross_block_inner_reduction: bool = False
    cross_grid_inner_reduction: bool = False
    cross_block_outer_reduction: bool = False
    cross_grid_outer_reduction: bool = False
    unroll_factor_inner_reduction: int = 1
    vectorize_inner_reduction: bool = False
    unroll_factor_iter_dom: int = 1
    vectorize_iter_dom: bool = False
    batches_per_block_inner_reduction: int = 1
    batches_per_block_outer_reduction: int = 1
    multiple_reds_per_blk: bool = False
    combined_inner_outer: bool = False
    block_dim_inner_reduction: ParallelType = ParallelType.serial
    grid_dim_inner_reduction: ParallelType = ParallelType.serial
    block_dim_iter_dom: ParallelType = ParallelType.serial
    grid_dim_iter_dom: ParallelType = ParallelType.serial
    block_dim_outer_reduction: ParallelType = ParallelType.serial
    grid_dim_outer_reduction: ParallelType = ParallelType.serial
    # names of the persistent buffers kept in shared memory ("T7"); registers otherwise
    smem_persistent_buffers: tuple[str, ...] = ()
    # inner-outer schedule with its inputs staged in shared memory: circular-buffer stages
    circular_buffer_stages: int = 0
    # rows of the iteration domain a block handles per step (inner-outer)
    rows_per_step: int = 1
    # blocks of a persistent grid each SM holds at once (gdimy = blocks_per_sm x SMs): the
    # kernel's __launch_bounds__ asks ptxas for registers that let them be co-resident
    blocks_per_sm: int = 1

    def is_unrolled(self) -> bool:
        return self.unroll_factor_inner_reduction > 1 or self.unroll_factor_iter_dom > 1

    def __str__(self) -> str:
        s = "\n===== Reduction Parameters ========\n"
        s += (f"Tag: {self.tag}" if self.tag else "") + "\n"
        s += "Red On Fastest Dim\n" if self.fastest_dim else "Red On Slow Dim\n"
        s += "Persistent Kernel\n" if self.persistent_kernel else ""
        s += "Project Persistent Buffers\n" if self.project_persistent_buffers else ""
        if self.batches_per_block_inner_reduction > 1 or self.persistent_kernel:
            s += f"Batches per block: {self.batches_per_block_inner_reduction}\n"
        if self.circular_buffer_stages > 1:
            s += f"Circular buffer: stages {self.circular_buffer_stages}\n"
        else:
            s += "Circular buffer: not used\n"
        if self.combined_inner_outer:
            s += "Combined Inner Outer\nOuter Reduction: "
            if self.cross_block_outer_reduction:
                s += f"cross block - {self.block_dim_outer_reduction} / "
            if self.cross_grid_outer_reduction:
                s += f"cross grid - {self.grid_dim_outer_reduction} / "
            if self.batches_per_block_outer_reduction > 1 or self.persistent_kernel:
                s += f"persistent batch - {self.batches_per_block_outer_reduction}"
        s += "\nIteration Domain: "
        if self.grid_dim_iter_dom != ParallelType.serial:
            s += f"{self.grid_dim_iter_dom} / "
        if self.block_dim_iter_dom != ParallelType.serial:
            s += f"{self.block_dim_iter_dom} / "
        s += "multiple reductions per block / " if self.multiple_reds_per_blk else ""
        s += "vectorize / " if self.vectorize_iter_dom else ""
        s += "unroll / " if self.unroll_factor_iter_dom > 1 and not self.vectorize_iter_dom else ""
        if self.unroll_factor_iter_dom > 1:
            s += f"factor {self.unroll_factor_iter_dom}"
        s += "\nInner Reduction Domain: "
        if self.cross_block_inner_reduction:
            s += f"cross block - {self.block_dim_inner_reduction} / "
        if self.cross_grid_inner_reduction:
            s += f"cross grid - {self.grid_dim_inner_reduction} / "
        if self.batches_per_block_inner_reduction > 1 or self.persistent_kernel:
            s += f"persistent batch - {self.batches_per_block_inner_reduction} / "
        s += "vectorize / " if self.vectorize_inner_reduction else ""
        s += ("unroll / " if self.unroll_factor_inner_reduction > 1
              and not self.vectorize_inner_reduction else "")
        if self.unroll_factor_inner_reduction > 1:
            s += f"factor {self.unroll_factor_inner_reduction}"
        if self.smem_persistent_buffers:
            s += "\nShared Memory Persistent Buffers: " + ", ".join(self.smem_persistent_buffers)
        s += f"\n{self.lparams}\n"
        s += f"Compile Parameters: index_type = {self.index_type}"
        if self.blocks_per_sm > 1:
            s += f", min blocks per SM = {self.blocks_per_sm}"
        s += "\n"
        s += "====================================\n"
        return s
