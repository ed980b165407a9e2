"""x ** 1, x ** 2 and x ** 3 with a constant exponent are products in the generated CUDA, as
torch's kernels compute them; other exponents keep the library pow."""

from __future__ import annotations

import pytest
import torch

from engine import loads_fusion
from engine.codegen import ops_table
from engine.compile import compile_fusion
from engine.dtypes import DataType

SCRIPT = """
import torch
from nvfuser import FusionDefinition, DataType

with FusionDefinition() as fd:
    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
    S1 = fd.define_scalar({e}, dtype=DataType.Double)
    T2 = fd.ops.pow(T0, S1)
    T3 = fd.ops.sum(T2, dims=[1], keepdim=False, dtype=DataType.Null)
    fd.add_output(T2)
    fd.add_output(T3)

inputs = [torch.randn(6, 40, device="cuda")]
"""


@pytest.mark.parametrize(("exponent", "text"), [(2.0, "(a * a)"), (3, "(a * a * a)"), (1.0, "(a)")])
def test_small_integer_exponents_are_products(exponent, text):
    assert ops_table.binary("pow", "a", "b", DataType.Float, exponent) == text
    assert ops_table.binary("pow", "a", "b", DataType.Double, exponent) == text


def test_other_exponents_and_integers_keep_pow():
    assert ops_table.binary("pow", "a", "b", DataType.Float, 2.5) == "fsPow(a, b)"
    assert ops_table.binary("pow", "a", "b", DataType.Float, None) == "fsPow(a, b)"
    assert ops_table.binary("pow", "a", "b", DataType.Int, 2) == "fsPow(a, b)"


@pytest.mark.parametrize("exponent", ["2.0", "3.0", "0.5"])
def test_pow_kernels_match_the_reference(exponent):
    fd = loads_fusion(SCRIPT.format(e=exponent))
    xs = fd.example_inputs(device="cpu", seed=0)
    cf = compile_fusion(fd, xs)
    src = "".join(s.cuda_source[s.cuda_source.rfind('extern "C"'):] for s in cf.segments if s.is_kernel)
    assert ("fsPow(" in src) == (exponent == "0.5")
    for got, want in zip(cf.run(xs, backend="emulate"), cf.run(xs, backend="reference")):
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5, equal_nan=True)
