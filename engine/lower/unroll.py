"""Serial loops that index a local array are unrolled whole, so that the array stays in registers.

ptxas keeps a local array in registers only when every access has an index it knows at
compile time; one access at an index that depends on a loop it does not unroll puts the
whole array in local memory (a stack frame: 128 bytes per thread for the 32 floats of an
RMSNorm's persistent row, read in a `#pragma unroll 4` loop over its 4 batches of 8). nvFuser
unrolls such loops (ForLoop::isUnrolled); here a serial loop of a known trip count whose
variable appears in the index of a local array gets `#pragma unroll`. Arrays too large for
the register file, and loops longer than they are, are left alone: unrolling would not keep
them in registers, only make the kernel larger.
"""

from __future__ import annotations

from collections.abc import Iterator

from engine.lower import kir, kquery

# Elements of a local array registers can hold (255 registers per thread at most).
MAX_REGISTER_ARRAY = 255


def _walk(stmts: list[kir.Stmt]) -> Iterator[kir.Stmt]:
    for s in stmts:
        yield s
        for child in kir.children(s):  # loops, scopes, branches, a grid epilogue's share loop
            yield from _walk(child)


def local_arrays(body: list[kir.Stmt]) -> dict[str, int]:
    """Name -> elements of every local array the kernel allocates."""
    return {s.name: s.size for s in _walk(body) if isinstance(s, kir.Allocate) and s.memory == "local"}


def _indexes(stmts: list[kir.Stmt], arrays: set[str], var: str) -> bool:
    """Whether an access to one of `arrays` in `stmts` has `var` in its index."""
    return any(a.name in arrays and kquery.mentions(a.index, var)
               for s in _walk(stmts) for e in kir.exprs(s) for a in kquery.accesses(e))


def unroll_local_indexing(body: list[kir.Stmt]) -> list[str]:
    """Mark `unroll` the serial loops whose variable indexes a local array that registers can
    hold; returns the loops marked (variable and extent) for the lowering notes."""
    arrays = {n for n, size in local_arrays(body).items() if 1 < size <= MAX_REGISTER_ARRAY}
    if not arrays:
        return []
    marked: list[str] = []
    for s in _walk(body):
        if not (isinstance(s, kir.ForLoop) and s.kind == "serial" and 1 < s.extent <= MAX_REGISTER_ARRAY):
            continue
        if _indexes(s.body, arrays, s.var):
            s.kind = "unroll"
            marked.append(f"{s.var} ({s.extent})")
    return marked
