"""Vectorized copies: a loop the schedule marks V around one element copy becomes one access.

The scheduler only vectorizes an inner split by V of a contiguous innermost axis whose
extent V divides (engine.analysis.vectorize), so the copy's elements are adjacent in both
tensors and its predicate holds for all of them or none: the predicate is evaluated at
the vector's first element. Loops that do not fit that shape stay unrolled scalar loops.
"""

from __future__ import annotations

import functools
import re

from engine.ir.iterdomain import IterDomain, Split
from engine.lower import kir
from engine.lower.index import Extents

ACCESS = re.compile(r"^(\w+)\[(.*)\]$")
# The copy calls this module and the circular-buffer pass emit, with their element count.
_VECTOR_CALL = re.compile(r"\b(?:loadGeneric|loadGlobalPrefetchL2|loadGlobalEvictLast|fsCpAsync)<[^<>,]+, (\d+)[,>]")


def vector_widths(listing: str) -> tuple[int, ...]:
    """The widths (in elements) of the vector copies in a kernel's listing, smallest first;
    a copy of one element is not a vector."""
    return tuple(sorted({int(n) for n in _VECTOR_CALL.findall(listing)} - {1}))


def base_access(access: str | kir.Expr, var: str, width: int = 0) -> str | None:
    """`T3[e + var]` -> `T3[e]` when `var` is a term of its own, with coefficient 1, and only
    there. A slice's or pad's shift may follow it (`e + var + 64`, or a term
    `(((nvfuser_index_t)(e + var)) - 64)`) when the shift is a multiple of `width` (given
    by callers whose guard is uniform over the vector): the vector starts at `e` shifted,
    still aligned."""
    access = str(access)
    m = ACCESS.match(access)
    if m is None or len(re.findall(rf"\b{var}\b", access)) != 1:
        return None
    name, index = m.groups()
    if index == var:
        return f"{name}[0]"
    if index.endswith(f" + {var}"):
        return f"{name}[{index[: -len(var) - 3]}]"
    terms = sum_terms(index)
    with_var = [t for t in terms if re.search(rf"\b{var}\b", t)]
    shifted = re.fullmatch(rf"\(\(\(nvfuser_index_t\)\((.*) \+ {var}\)\) - (\d+)\)", with_var[0]) if with_var else None
    if width == 0 or (with_var != [var] and shifted is None):
        return None
    shifts = [int(t) for t in terms if t.isdigit()] + ([int(shifted.group(2))] if shifted else [])
    if any(k % width for k in shifts):
        return None
    base = re.sub(rf"\b{var}\b", "0", index)
    return f"{name}[{base}]"


def _divisible(domain: IterDomain, ext: Extents, width: int) -> bool:
    """`domain` is the inner split of a `width` multiple, and no split before it overhangs:
    only then does the vector's first element's predicate hold for all of it. (fp16 [17]
    split by 32, then the 32 by 8: each 8 divides its split's input, yet the third vector
    starts at element 16 of 17, and would write 7 halves beyond the output.)"""
    t = domain.definition
    return isinstance(t, Split) and t.inner is domain and ext.of(t.in_id) % width == 0 \
        and not _overhangs(t.in_id, ext)


def _overhangs(i: IterDomain, ext: Extents) -> bool:
    """Whether a split among `i`'s ancestors does not divide its input: `i` then counts
    elements beyond the tensor's own."""
    seen: set[int] = set()
    stack = [i]
    while stack:
        d = stack.pop()
        t = d.definition
        if t is None or id(t) in seen:
            continue
        seen.add(id(t))
        if isinstance(t, Split) and ext.of(t.in_id) % ext.value(t.factor):
            return True
        stack.extend(t.inputs)
    return False


def unguard(stmt: kir.Stmt) -> tuple[kir.Stmt, kir.Expr | None]:
    if isinstance(stmt, kir.IfThenElse) and not stmt.orelse and len(stmt.then) == 1:
        return stmt.then[0], stmt.cond
    return stmt, None


def _vector_store(loop: kir.ForLoop, globals_: set[str]) -> list[kir.Stmt] | None:
    """`for v { ...; G[e + v] = x; ... }` -> `tmp[V]; for v { ...; tmp[v] = x; ... } store(G[e], tmp)`:
    values are computed element by element, each global store becomes one vector access.
    A store qualifies only when nothing else in the loop touches its tensor; None when none does."""
    body = list(loop.body)
    decls: list[kir.Stmt] = []
    stores: list[kir.Stmt] = []
    for k, stmt in enumerate(loop.body):
        inner, cond = unguard(stmt)
        if not isinstance(inner, kir.Assign) or inner.copy_ctype is None:
            continue
        m = ACCESS.match(str(inner.lhs))
        dst = base_access(inner.lhs, loop.var)
        if m is None or m.group(1) not in globals_ or dst is None:
            continue
        name = m.group(1)
        others = loop.body[:k] + loop.body[k + 1:]
        if any(re.search(rf"\b{name}\b", ln) for s in others for ln in s.lines(0)) or name in str(inner.rhs):
            continue
        tmp = f"{name}_vec"
        body[k] = kir.Assign(f"{tmp}[{loop.var}]", inner.rhs, inner.source)
        decls.append(kir.Raw(f"alignas(16) {inner.copy_ctype} {tmp}[{loop.extent}];"))
        store = kir.Raw(f"loadGeneric<{inner.copy_ctype}, {loop.extent}>(&{dst}, {tmp});")
        pred = None if cond is None else kir.Lit(re.sub(rf"\b{loop.var}\b", "0", str(cond)))
        stores.extend(kir.guard([pred] if pred else [], [store]))
    if not stores:
        return None
    return [*decls, kir.ForLoop(loop.var, loop.extent, "unroll", loop.domain, body), *stores]


def vectorize_loop(loop: kir.ForLoop, domain: IterDomain, ext: Extents,
                   globals_: set[str] | None = None, l2_prefetch: dict[str, int] | None = None,
                   l2_evict_last: set[str] | None = None) -> kir.Stmt:
    """The loop as one vector copy (or values then one vector store), or unchanged.
    `l2_prefetch`: global inputs whose vector loads prefetch that many bytes into L2;
    `l2_evict_last`: global inputs whose vector loads keep their L2 lines ahead of others."""
    v = loop.extent
    if v not in (2, 4, 8, 16) or not loop.body or not _divisible(domain, ext, v):
        return loop
    uniform_guards(loop.body, loop.var, v)
    if loop.kind != "vectorize":
        # Not the scheduler's vector: only stores to engine-allocated outputs (aligned,
        # contiguous) may be widened.
        stored = _vector_store(loop, globals_ or set())
        return kir.Scope(stored) if stored is not None else loop
    if len(loop.body) > 1:
        stored = _vector_store(loop, globals_ or set())
        return kir.Scope(stored) if stored is not None else loop
    stmt, cond = loop.body[0], None
    if isinstance(stmt, kir.IfThenElse) and not stmt.orelse and len(stmt.then) == 1:
        cond, stmt = stmt.cond, stmt.then[0]
    if not isinstance(stmt, kir.Assign) or stmt.copy_ctype is None:
        return loop
    dst, src = base_access(stmt.lhs, loop.var, v), base_access(stmt.rhs, loop.var, v)
    if dst is None or src is None:
        return loop
    table = src.split("[", 1)[0]
    prefetch = (l2_prefetch or {}).get(table)
    if prefetch:
        load = f"loadGlobalPrefetchL2<{stmt.copy_ctype}, {v}, {prefetch}>"
    elif table in (l2_evict_last or ()):
        load = f"loadGlobalEvictLast<{stmt.copy_ctype}, {v}>"
    else:
        load = f"loadGeneric<{stmt.copy_ctype}, {v}>"
    call = kir.Raw(f"{load}(&{dst}, &{src});")
    if cond is None:
        return call
    return kir.IfThenElse(re.sub(rf"\b{loop.var}\b", "0", str(cond)), [call])


def _aligned_base(index: str, width: int) -> bool:
    """Every term of the sum `index` is a multiple of `width` (`(..) * k` or a constant)."""
    return all(_is_multiple(t, width) for _, t in _top_level_split(index, (" + ",)))


def _top_level_split(text: str, seps: tuple[str, ...]) -> list[tuple[str, str]]:
    """`text` cut at the separators outside parentheses and brackets: (separator before, part)."""
    # One regex scan from bracket to separator instead of a test at every character (every
    # guard and index of every vectorized loop is split): separators hold no brackets, so a
    # separator skipped at depth > 0 hides no bracket, and a match at a position tries the
    # separators in the given order, as the character walk did.
    depth, start, sep, parts = 0, 0, "", []
    for m in _splitter(seps).finditer(text):
        tok = m.group()
        if tok in _OPEN:
            depth += 1
        elif tok in _CLOSE:
            depth -= 1
        elif depth == 0:
            parts.append((sep, text[start:m.start()]))
            sep, start = tok, m.end()
    parts.append((sep, text[start:]))
    return parts


_OPEN, _CLOSE = ("(", "["), (")", "]")
_BRACKET = re.compile(r"[()\[\]]")


@functools.cache
def _splitter(seps: tuple[str, ...]) -> re.Pattern[str]:
    if any(b in x for x in seps for b in (*_OPEN, *_CLOSE)):
        raise ValueError(f"separators with brackets: {seps}")
    return re.compile("|".join([_BRACKET.pattern, *map(re.escape, seps)]))


def _strip_parens(t: str) -> str:
    """`t` without parentheses that enclose all of it."""
    t = t.strip()
    while t.startswith("(") and t.endswith(")") and _closes_at_end(t):
        t = t[1:-1].strip()
    return t


def _closes_at_end(t: str) -> bool:
    """Whether the bracket opened by `t`'s first character closes at its last: no earlier
    character of `t` lies outside every bracket. Depth changes only at brackets, so only
    they (found by one regex scan) and the first character need testing."""
    last = len(t) - 1
    if last > 0 and t[0] not in "()[]":
        return False  # the first character itself lies outside every bracket
    depth = 0
    for m in _BRACKET.finditer(t):
        depth += 1 if m.group() in "([" else -1
        if depth == 0 and m.start() < last:
            return False
    return True


_LOWER_THAN_MUL = (" + ", " - ", " << ", " >> ", " < ", " > ", " <= ", " >= ", " == ", " != ", " & ", " ^ ",
                   " | ", " ? ", " : ")


def _is_multiple(term: str, width: int) -> bool:
    """A literal multiple of `width`, or a chain of * / % whose last step multiplies by one."""
    term = _strip_parens(term)
    if term.isdigit():
        return int(term) % width == 0
    if len(_top_level_split(term, _LOWER_THAN_MUL)) > 1:
        return False
    m = re.search(r" \* (\d+)$", term)
    return m is not None and int(m.group(1)) % width == 0


def _offset_of(expr: str, var: str, width: int) -> bool:
    """`expr` is `var` plus terms that are multiples of `width` (a cast of such a sum too)."""
    expr = _strip_parens(expr)
    m = re.fullmatch(r"\(nvfuser_index_t\)\((.*)\)", expr)
    if m is not None:
        expr = m.group(1)
    parts = _top_level_split(expr, (" + ", " - "))
    with_var = [(sep, t) for sep, t in parts if re.search(rf"\b{var}\b", t)]
    if len(with_var) != 1 or with_var[0][0] == " - ":
        return False
    inner = _strip_parens(with_var[0][1])
    if inner != var and (inner == expr or not _offset_of(inner, var, width)):
        return False
    return all(_is_multiple(t, width) for sep, t in parts if (sep, t) != with_var[0])


def _uniform_atom(atom: str, var: str, width: int) -> bool:
    """Whether the comparison `atom` has one value for every `var` in [0, width): `L < N` or
    `L >= N` where L is `var` plus multiples of `width` and N is one too. (With L = k*w + v
    and N = n*w, k*w + v < n*w holds for every v in [0, w) exactly when k < n; `<=` and `>`
    would change at v = 0.)"""
    atom = _strip_parens(atom)
    m = re.fullmatch(r"(.*) (<|>=) (\d+)", atom)
    if m is None:
        return False
    lhs, _, bound = m.groups()
    return int(bound) % width == 0 and _offset_of(lhs, var, width)


def _uniform_cond(cond: str, var: str, width: int) -> bool:
    """A conjunction whose every comparison naming `var` is uniform over the vector (and
    that reads no memory)."""
    moving = [a for _, a in _top_level_split(cond, (" && ",)) if re.search(rf"\b{var}\b", a)]
    return bool(moving) and "[" not in cond and all(_uniform_atom(a, var, width) for a in moving)


def _uniform_selects(text: str, var: str, width: int) -> str:
    """`text` with each select's condition `(c) ? a : b` that is uniform over the vector
    evaluated at `var` = 0."""
    out, k = text, 0
    while (q := out.find(" ? ", k)) >= 0:
        k = q + 3
        if q == 0 or out[q - 1] != ")":
            continue
        depth, start = 0, q - 1
        while start >= 0:
            depth += out[start] == ")"
            depth -= out[start] == "("
            if depth == 0:
                break
            start -= 1
        cond = out[start:q]
        if start >= 0 and _uniform_cond(cond, var, width):
            fixed = re.sub(rf"\b{var}\b", "0", cond)
            out = out[:start] + fixed + out[q:]
            k = start + len(fixed) + 3
    return out


def uniform_guards(body: list[kir.Stmt], var: str, width: int) -> None:
    """Guards and selects inside a loop over `var` in [0, width) that hold for all its
    iterations or none (a pad's or slice's bounds, a multiple of the vector apart) are
    evaluated at `var` = 0: one comparison a vector instead of one an element. A guard that
    reads memory, or whose uniformity this cannot show, is left as it is."""
    for st in body:
        if isinstance(st, kir.IfThenElse):
            if _uniform_cond(str(st.cond), var, width):
                st.cond = kir.Lit(re.sub(rf"\b{var}\b", "0", str(st.cond)))
            uniform_guards(st.then, var, width)
            uniform_guards(st.orelse, var, width)
        elif isinstance(st, kir.Scope):
            uniform_guards(st.body, var, width)
        elif isinstance(st, kir.Assign) and " ? " in str(st.rhs):
            st.rhs = kir.Lit(_uniform_selects(str(st.rhs), var, width))


def hoist_shared_reads(loop: kir.ForLoop, shared: dict[str, str]) -> list[kir.Stmt]:
    """Reads `S[e + v]` of a shared buffer inside a loop over v become one vector read before
    the loop (S is not written in it, e is a multiple of the width): fewer shared-memory
    instructions and no bank conflicts between threads reading neighbouring runs."""
    v, width = loop.var, loop.extent
    if width not in (2, 4, 8) or loop.kind == "block_strided":
        return [loop]
    text = "\n".join(ln for st in loop.body for ln in st.lines(0))
    inner = _declared_names(text)
    pre: list[kir.Stmt] = []
    for name, ctype in shared.items():
        if re.search(rf"\b{name}\[[^\]]*\]\s*=[^=]", text):
            continue  # written in the loop
        pattern = re.compile(rf"\b{name}\[([^\[\]]*?) \+ {v}\]")
        bases = {m.group(1) for m in pattern.finditer(text)}
        if len(bases) != 1:
            continue
        base = bases.pop()
        if any(re.search(rf"\b{x}\b", base) for x in [v, *inner]):
            continue  # the base moves inside the loop: it cannot be read before it
        if not _aligned_base(base, width) or width * element_size(ctype) > 16:
            continue
        vec = f"{name}_r{v}"
        pre += [kir.Raw(f"alignas(16) {ctype} {vec}[{width}];"),
                kir.Raw(f"loadGeneric<{ctype}, {width}>({vec}, &{name}[{base}]);")]
        _rename(loop.body, f"{name}[{base} + {v}]", f"{vec}[{v}]")
    return pre + [loop] if pre else [loop]


_DECLARED = re.compile(r"\bnvfuser_index_t (\w+) =")


def _declared_names(text: str) -> set[str]:
    """Index variables a loop body declares (inner loop counters, hoisted indices)."""
    return set(_DECLARED.findall(text))


def element_size(ctype: str) -> int:
    return {"double": 8, "int64_t": 8, "float": 4, "int": 4, "__half": 2, "__bfloat": 2}.get(ctype, 1)


def _rename(body: list[kir.Stmt], old: str, new: str) -> None:
    for st in body:
        if isinstance(st, kir.Assign):
            st.rhs = kir.Lit(str(st.rhs).replace(old, new))
        elif isinstance(st, kir.Raw):
            st.text = str(st.text).replace(old, new)
        elif isinstance(st, kir.IfThenElse):
            _rename(st.then, old, new)
            _rename(st.orelse, old, new)
        elif isinstance(st, kir.ForLoop | kir.Scope):
            _rename(st.body, old, new)


def sum_terms(index: str) -> list[str]:
    """The top-level ` + `-separated terms of an index expression."""
    depth, start, terms = 0, 0, []
    for k, ch in enumerate(index):
        depth += ch in "(["
        depth -= ch in ")]"
        if depth == 0 and index[k:k + 3] == " + ":
            terms.append(index[start:k].strip())
            start = k + 3
    terms.append(index[start:].strip())
    return terms
