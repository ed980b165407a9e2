"""Block-wide copies into shared memory widened to 16-byte vectors (a bulk axis: the block's
threads share the iterations of a plain copy, which a barrier follows). Each thread copies
runs of V consecutive elements; the global operand's compiled-for strides and alignment must
allow them."""

from __future__ import annotations

import re

from engine.lower import kir
from engine.lower.vectorize import ACCESS, base_access, element_size, sum_terms, unguard


def _multiple_of(index: str, width: int, layouts: dict[str, tuple[list[int], int]]) -> bool:
    """Every term is a multiple of `width`: `(..) * k`, a constant, or `(..) * T.alloc_stride[j]`
    with the compiled-for stride a multiple."""
    for t in sum_terms(index):
        if t.isdigit():
            if int(t) % width:
                return False
            continue
        m = re.search(r"\* (\d+)$", t)
        if m is not None and int(m.group(1)) % width == 0:
            continue
        m = re.search(r"\* (\w+)\.alloc_stride\[(\d+)\]$", t)
        if m is None or m.group(1) not in layouts:
            return False
        strides, _align = layouts[m.group(1)]
        if strides[int(m.group(2))] % width:
            return False
    return True


def widen_bulk_copy(var: str, extent: int, body: list[kir.Stmt], threads: int,
                    layouts: dict[str, tuple[list[int], int]], ctypes: dict[str, str]) -> kir.Stmt | None:
    """A block-strided copy `S[a + i] = G[b + i]` as 16-byte vectors: each thread copies runs of
    V consecutive elements. Needs both bases and the extent to divide into whole vectors, and
    the global operand's compiled-for strides and pointer alignment to allow them; when the
    vectors do not divide among the threads, the last trip is guarded."""
    if len(body) != 1:
        return None
    stmt, cond = unguard(body[0])
    if not isinstance(stmt, kir.Assign) or stmt.copy_ctype is None or (cond and re.search(rf"\b{var}\b", str(cond))):
        return None
    width = 16 // max(element_size(stmt.copy_ctype), 1)
    if width < 2 or extent % width:
        return None
    dst, src = base_access(stmt.lhs, var), base_access(stmt.rhs, var)
    if dst is None or src is None:
        return None
    for access in (dst, src):
        m = ACCESS.match(access)
        name, index = m.group(1), m.group(2)
        if name in layouts and layouts[name][1] < 16:
            return None
        if not _multiple_of(index, width, layouts):
            return None
    vectors = extent // width
    trips = -(-vectors // threads)
    tid = "(threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z))"
    d_base, s_base = dst[:-1], src[:-1]  # drop the closing bracket: `X[base`
    call: kir.Stmt = kir.Raw(f"loadGeneric<{stmt.copy_ctype}, {width}>(&{d_base} + {var}], &{s_base} + {var}]);")
    if vectors % threads:  # the last trip has vectors for some threads only
        call = kir.IfThenElse(f"{var} < {extent}", [call])
    loop = kir.ForLoop(f"{var}_k", trips, "unroll", f"{var} in vectors of {width}",
                       [kir.Raw(f"const nvfuser_index_t {var} = ({tid} + {var}_k * {threads}) * {width};"), call])
    return kir.Scope(kir.guard([cond] if cond else [], [loop])) if cond else loop
