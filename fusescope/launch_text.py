"""A segment's launch as the kernel was compiled, in words: the part of the Schedule view (and of
`show --schedule` and `show --why`) whose every figure comes from the compiled segment (its
LaunchConfig and the lowering's shared-memory breakdown, which fusescope.compiler flattens into
LaunchInfo), not from the heuristic's plan.

The heuristic plans a launch before the kernel exists (`lparams`: -1 where the launch decides,
and the shared memory of the buffers it placed there). The lowering then sizes each block
dimension from the loops bound to it and lays out shared memory (buffers, then the block
reductions' workspace); where the two differ, the text says so and why.
"""

from __future__ import annotations

from dataclasses import dataclass

# nvFuser's "Launch Parameters:" line of a heuristic block, and what fusescope calls it.
ENGINE_PLAN_LABEL = "Launch Parameters: "
PLAN_LABEL = "Launch Parameters (the heuristic's plan; the kernel's launch is under Launch): "


@dataclass(frozen=True)
class LaunchInfo:
    """The compiled kernel's launch and what its dynamic shared memory holds."""

    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    shared_mem_bytes: int
    cooperative: bool
    # (bytes, what) per part of the shared memory, in offset order, then the workspace and padding
    shared_parts: tuple[tuple[int, str], ...]
    cp_async: bool  # some shared buffer is loaded by cp.async
    # The heuristic's planned launch: (bdimx, bdimy, bdimz, gdimx, gdimy, gdimz, smem); None
    # when the scheduler plans none (user schedules, expr_eval).
    plan: tuple[int, int, int, int, int, int, int] | None = None
    vector_widths: tuple[int, ...] = ()  # the kernel's vector copies, in elements
    # The vector widths the heuristic chose (its vectorization factors above 1).
    planned_vectors: tuple[int, ...] = ()

    @property
    def threads(self) -> int:
        return self.block[0] * self.block[1] * self.block[2]


def plan_text(params_text: str) -> str:
    """A heuristic parameter block with its launch line labelled as the heuristic's plan."""
    return "\n".join(PLAN_LABEL + line[len(ENGINE_PLAN_LABEL):] if line.startswith(ENGINE_PLAN_LABEL) else line
                     for line in params_text.split("\n"))


def launch_lines(info: LaunchInfo, circular_buffer_notes: str = "") -> list[str]:
    """The Launch section: grid and block, the shared memory part by part, how the lowering
    pipelined its caches (`circular_buffer_notes`: its stage text), and where the launch
    differs from the heuristic's plan."""
    g, b = info.grid, info.block
    out = [f"  grid ({g[0]}, {g[1]}, {g[2]}), block ({b[0]}, {b[1]}, {b[2]}): {info.threads} threads per block"
           + (", cooperative (every block resident at once)" if info.cooperative else "")]
    if info.shared_mem_bytes:
        out.append(f"  dynamic shared memory: {info.shared_mem_bytes} B")
        out += [f"    {n:>8} B  {what}" for n, what in info.shared_parts]
    else:
        out.append("  dynamic shared memory: none")
    widths = " and ".join(str(w) for w in info.vector_widths)
    out.append(f"  vector copies: {widths} elements wide" if widths
               else "  vector copies: none (every copy moves one element)")
    out += [f"  {line}" for line in circular_buffer_notes.splitlines() if line.strip()]
    return out + [f"  {line}" for line in plan_differences(info)]


_DIMS = ("BlockDim.x", "BlockDim.y", "BlockDim.z", "GridDim.x", "GridDim.y", "GridDim.z")
_INDEX = ("threadIdx.x", "threadIdx.y", "threadIdx.z", "blockIdx.x", "blockIdx.y", "blockIdx.z")


def plan_differences(info: LaunchInfo) -> list[str]:
    """One line for each figure the heuristic planned (not -1) that the launch does not have."""
    if info.plan is None:
        return []
    actual = (*info.block, *info.grid)
    out = []
    for name, index, planned, got in zip(_DIMS, _INDEX, info.plan[:6], actual):
        if planned != -1 and planned != got:
            out.append(f"{name} is {got}, not the planned {planned}: the kernel's loops bound to {index} "
                       f"run at most {got} iterations")
    for v in info.planned_vectors:
        if v not in info.vector_widths:
            out.append(f"the heuristic's vectorization factor {v} is not in the kernel: no copy is {v} elements "
                       "wide (its loops over those elements copy one at a time)")
    smem = info.plan[6]
    if smem != info.shared_mem_bytes:
        out.append(f"Smem Size is {info.shared_mem_bytes} B, not the planned {smem} B: the plan counts only the "
                   "buffers the heuristic put in shared memory; the launch holds the parts above")
    return out


def why_line(sid: int, info: LaunchInfo) -> str:
    """`show --why`'s one line about a segment's launch."""
    g, b = info.grid, info.block
    parts = " + ".join(f"{n} B {what.split(' (')[0]}" for n, what in info.shared_parts)
    smem = f"{info.shared_mem_bytes} B dynamic shared memory" + (f" = {parts}" if parts else "")
    return f"[launch] g{sid}: grid ({g[0]}, {g[1]}, {g[2]}), block ({b[0]}, {b[1]}, {b[2]}), {smem}"
