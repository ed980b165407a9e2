"""Guards inside a vector's element loop that hold for all its elements or none are evaluated
once, at the vector's first element (engine.lower.vectorize.uniform_guards): the proof on
the guard's text, and RoPE's slices and cat end to end on the emulator."""

import re

import pytest
import torch

from engine.compile import compile_fusion
from engine.lower import kir
from engine.lower.vectorize import _uniform_atom, uniform_guards
from engine.reference import evaluate
from tests.emulation import needs_gxx
from tests.engine.test_schedule_resize import cat_of_inputs, rope_forward

V = "i7"
E = "(blockIdx.x * 128 + threadIdx.x) % 16 * 8"


@pytest.mark.parametrize("atom, uniform", [
    (f"({E} + i7 + 64) < 128", True),
    (f"({E} + i7) < 64", True),
    (f"(((nvfuser_index_t)({E} + i7)) - 64) >= 0", True),
    (f"({E} + (i7 + 8)) < 16", True),
    ("((a + b) * 8 + i7 - 8) < 16", True),
    (f"({E} + i7 + 60) < 128", False),  # a shift of 60 moves the boundary into the vector
    (f"(((nvfuser_index_t)({E} + i7)) - 60) >= 0", False),
    (f"({E} + i7) < 63", False),
    ("((blockIdx.x * 128 + threadIdx.x) % 16 * 4 + i7) < 64", False),  # a multiple of 4, not 8
    ("(threadIdx.x + i7) < 64", False),
    ("(a - b * 8 + i7) < 64", False),  # `a - b * 8` is no multiple of 8
    ("((a + b) * 8 / 2 + i7) < 16", False),
    ("(b * 8 - i7) < 64", False),
    ("(b * 8 + 2 * i7) < 64", False),
    ("(b * 8 + i7) >= 8", True),  # k*8 + v >= 8 exactly when k >= 1
    ("(b * 8 + i7) >= 4", False),
    ("(b * 8 + i7) > 8", False),  # true at v = 1, false at v = 0 when k = 1
    ("(b * 8 + i7) <= 8", False),
    ("(x ? y : z * 8 + i7) < 16", False),
    ("T3[i7] < 16", False),
])
def test_a_guard_is_uniform_only_where_the_vector_cannot_straddle_its_bound(atom, uniform):
    assert _uniform_atom(atom, V, 8) is uniform


def test_only_guards_proven_uniform_are_moved_to_the_first_element():
    moved = kir.IfThenElse(f"({E} + i7 + 64) < 128 && threadIdx.y == 0", [kir.Raw("a = 1;")])
    kept = kir.IfThenElse(f"({E} + i7 + 60) < 128", [kir.Raw("b = 1;")])
    reads = kir.IfThenElse(f"({E} + i7) < 64 && T2[i7] > 0", [kir.Raw("c = 1;")])
    nested = kir.Scope([kir.IfThenElse(f"({E} + i7) < 64", [kir.Raw("d = 1;")])])
    uniform_guards([moved, kept, reads, nested], V, 8)
    assert str(moved.cond) == f"({E} + 0 + 64) < 128 && threadIdx.y == 0"
    assert str(kept.cond) == f"({E} + i7 + 60) < 128"
    assert str(reads.cond) == f"({E} + i7) < 64 && T2[i7] > 0"
    assert str(nested.body[0].cond) == f"({E} + 0) < 64"


def test_selects_with_a_uniform_condition_are_evaluated_once():
    pad = f"((({E} + i7) < 64) ? T14[0] : __float2bfloat(0.0f))"
    data = "((T3[i7] > 0.0f) ? T3[i7] : 0.0f)"
    nested = f"((({E} + i7) < 60) ? a : (({E} + i7) >= 64) ? b : c)"
    body = [kir.Assign("T15[0]", pad), kir.Assign("T16[0]", data), kir.Assign("T17[0]", nested)]
    uniform_guards(body, V, 8)
    assert str(body[0].rhs) == f"((({E} + 0) < 64) ? T14[0] : __float2bfloat(0.0f))"
    assert str(body[1].rhs) == data
    assert str(body[2].rhs) == f"((({E} + i7) < 60) ? a : (({E} + 0) >= 64) ? b : c)"


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
