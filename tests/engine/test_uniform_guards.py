"""Guards inside a vector's element loop that hold for all its elements or none are evaluated
once, at the vector's first element (engine.lower.vectorize.uniform_guards): the proof on
the guard's text, and RoPE's slices and cat end to end on the emulator."""

import re

import pytest
import torch

from engine.codegen.expressions import render
from engine.compile import compile_fusion
from engine.lower import kir
from engine.lower.cexpr import add, mul, sub
from engine.lower.kexpr import Access, Add, And, Cmp, Div, Lit, Mod, Mul, Paren, Select, Sub, Var
from engine.lower.vector_index import uniform_atom
from engine.lower.vectorize import uniform_guards
from engine.reference import evaluate
from tests.emulation import needs_gxx
from tests.engine.test_schedule_resize import cat_of_inputs, rope_forward

V = "i7"
v, a, b, z = Var("i7"), Var("a"), Var("b"), Var("z")
E = Mul(Mod(Add(Mul(Var("blockIdx.x"), 128), Var("threadIdx.x")), 16), 8)
ET = "(blockIdx.x * 128 + threadIdx.x) % 16 * 8"


def lt(x, n, op="<"):
    return Cmp(Paren(x), op, n)


@pytest.mark.parametrize("atom, text, uniform", [
    (lt(add(add(E, v), 64), 128), f"({ET} + i7 + 64) < 128", True),
    (lt(add(E, v), 64), f"({ET} + i7) < 64", True),
    (lt(sub(add(E, v), 64), 0, ">="), f"(((nvfuser_index_t)({ET} + i7)) - 64) >= 0", True),
    (lt(Add(E, Add(v, 8)), 16), f"({ET} + i7 + 8) < 16", True),
    (lt(sub(add(mul(add(a, b), 8), v), 8), 16), "((a + b) * 8 + i7 - 8) < 16", True),
    (lt(add(add(E, v), 60), 128), f"({ET} + i7 + 60) < 128", False),  # a shift of 60 moves the boundary
    (lt(sub(add(E, v), 60), 0, ">="), f"(((nvfuser_index_t)({ET} + i7)) - 60) >= 0", False),
    (lt(add(E, v), 63), f"({ET} + i7) < 63", False),
    (lt(add(Mul(E.a, 4), v), 64), "((blockIdx.x * 128 + threadIdx.x) % 16 * 4 + i7) < 64", False),  # of 4, not 8
    (lt(add("threadIdx.x", v), 64), "(threadIdx.x + i7) < 64", False),
    (lt(add(sub(a, mul(b, 8)), v), 64), "(a - b * 8 + i7) < 64", False),  # `a - b * 8` is no multiple of 8
    (lt(add(Div(Mul(Add(a, b), 8), 2), v), 16), "((a + b) * 8 / 2 + i7) < 16", False),
    (lt(Sub(Mul(b, 8), v), 64), "(b * 8 - i7) < 64", False),
    (lt(add(mul(b, 8), mul(2, v)), 64), "(b * 8 + 2 * i7) < 64", False),
    (lt(add(mul(b, 8), v), 8, ">="), "(b * 8 + i7) >= 8", True),  # k*8 + v >= 8 exactly when k >= 1
    (lt(add(mul(b, 8), v), 4, ">="), "(b * 8 + i7) >= 4", False),
    (lt(add(mul(b, 8), v), 8, ">"), "(b * 8 + i7) > 8", False),  # true at v = 1, false at v = 0 when k = 1
    (lt(add(mul(b, 8), v), 8, "<="), "(b * 8 + i7) <= 8", False),
    (Cmp(Select(Var("x"), Var("y"), add(mul(z, 8), v)), "<", 16), "(x ? y : z * 8 + i7) < 16", False),
    (Cmp(Access("T3", v), "<", 16), "T3[i7] < 16", False),
])
def test_a_guard_is_uniform_only_where_the_vector_cannot_straddle_its_bound(atom, text, uniform):
    assert render(atom) == text
    assert uniform_atom(atom, V, 8) is uniform


def test_only_guards_proven_uniform_are_moved_to_the_first_element():
    moved = kir.IfThenElse(And((lt(add(add(E, v), 64), 128), Cmp(Var("threadIdx.y"), "==", 0))), [kir.Assign(Var("a"), Lit("1"))])
    kept = kir.IfThenElse(And((lt(add(add(E, v), 60), 128),)), [kir.Assign(Var("b"), Lit("1"))])
    reads = kir.IfThenElse(And((lt(add(E, v), 64), Cmp(Access("T2", v), ">", 0))), [kir.Assign(Var("c"), Lit("1"))])
    nested = kir.Scope([kir.IfThenElse(And((lt(add(E, v), 64),)), [kir.Assign(Var("d"), Lit("1"))])])
    uniform_guards([moved, kept, reads, nested], V, 8)
    assert render(moved.cond) == f"({ET} + 0 + 64) < 128 && threadIdx.y == 0"
    assert render(kept.cond) == f"({ET} + i7 + 60) < 128"
    assert render(reads.cond) == f"({ET} + i7) < 64 && T2[i7] > 0"
    assert render(nested.body[0].cond) == f"({ET} + 0) < 64"


def _pad(cond, inside, value):
    return Select(Paren(And((cond,))), inside, value)


def test_selects_with_a_uniform_condition_are_evaluated_once():
    pad = _pad(lt(add(E, v), 64), Access("T14", 0), Lit("__float2bfloat(0.0f)"))
    data = Select(Paren(Cmp(Access("T3", v), ">", Lit("0.0f"))), Access("T3", v), Lit("0.0f"))
    nested = _pad(lt(add(E, v), 60), Var("a"), _pad(lt(add(E, v), 64, ">="), Var("b"), Var("c")))
    body = [kir.Assign(Access("T15", 0), pad), kir.Assign(Access("T16", 0), data),
            kir.Assign(Access("T17", 0), nested)]
    uniform_guards(body, V, 8)
    assert render(body[0].rhs) == f"((({ET} + 0) < 64) ? T14[0] : __float2bfloat(0.0f))"
    assert render(body[1].rhs) == "((T3[i7] > 0.0f) ? T3[i7] : 0.0f)"
    assert render(body[2].rhs) == f"((({ET} + i7) < 60) ? a : ((({ET} + 0) >= 64) ? b : c))"


def _element_guards(source: str) -> list[str]:
    """The `if` and select conditions inside the kernel's `#pragma unroll` element loops that
    still compare the loop's variable with a bound."""
    loops = re.findall(r"for \(nvfuser_index_t (i\d+) = 0; \1 < (\d+); \+\+\1\)", source)
    conds = re.findall(r"if \((.*)\) \{", source) + re.findall(r"\(([^?;]*\)) \? ", source)
    return [c for c in conds for var, _ in loops if re.search(rf"\b{var}\b[^\]]*(<|>=) \d+", c)]


@needs_gxx
@pytest.mark.parametrize("make", [rope_forward, lambda: cat_of_inputs((64, 64)), lambda: cat_of_inputs((60, 4))])
def test_rope_and_cat_kernels_guard_once_per_vector_and_match_the_reference(make):
    fd, xs = make()
    cf = compile_fusion(fd, xs)
    kernels = [s.cuda_source for s in cf.segments if s.cuda_source]
    assert kernels and all(not _element_guards(k) for k in kernels)
    for out, ref in zip(cf.run(xs, backend="emulate"), evaluate(fd.fusion, xs)):
        assert torch.equal(out, ref)
