"""broadcast_in_dim / expand of a non-broadcast axis, as nvFuser's expand (csrc/ops/alias.cpp)
and its concretization (csrc/dynamic_transform.cpp) treat it:

- an axis whose extent is the constant 1, of any iter type (`iS5{1}` from a slice or a
  reshape), becomes a broadcast expanded to the size asked for, at definition;
- an axis whose extent only the run settles (a slice's, a reshape's or a factory's extent that
  is not a constant: nvFuser's Symbolic IterDomain) is decided at the bound sizes: expanded
  where it has 1 element, kept where it has the size asked for, refused otherwise;
- an axis of an input's size keeps it (nvFuser's expand promotes the extent, and the extent
  substitution pass then binds the input's size to it), so an input axis declared as an
  iteration axis and given 1 element is refused, naming the op.

Values are checked against the reference evaluator, and the reference against torch, on the
emulator."""

from __future__ import annotations

import pytest
import torch

from engine import DataType, FusionDefinition, compile_fusion
from engine.errors import ExecutionError
from engine.reference import evaluate
from tests.emulation import needs_gxx


def _emulated(fd: FusionDefinition, xs: list) -> list[torch.Tensor]:
    return compile_fusion(fd, xs).run(xs, backend="emulate")


def _static_slice() -> FusionDefinition:
    """T0 [4, 8] sliced to its row 1 (iS{1}), broadcast_in_dim to [2, 8], plus T1 [2, 8]."""
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[4, 8], contiguity=[True, True], dtype=DataType.Float)
        t1 = fd.define_tensor(shape=[2, 8], contiguity=[True, True], dtype=DataType.Float)
        row = fd.ops.slice(t0, start_indices=[1, 0], end_indices=[2, 8])
        fd.add_output(fd.ops.add(fd.ops.broadcast_in_dim(row, shape=[2, 8], broadcast_dims=[0, 1]), t1))
    return fd


def test_a_constant_one_iteration_axis_becomes_an_expanded_broadcast_at_definition() -> None:
    fd = _static_slice()
    listing = str(fd.fusion)
    assert "T2_l_float[iS5{1}rf, iS6{8}]" in listing
    assert "T4_l_float[bS9{1 ex 2}, iS10{8}] = expand( T3_l_float[iS7{1}, iS8{8}], {2, 8} )" in listing
    xs = [torch.randn(4, 8), torch.randn(2, 8)]
    (ref,) = evaluate(fd.fusion, xs)
    assert torch.equal(ref, xs[0][1:2].expand(2, 8) + xs[1])
    with FusionDefinition() as fd2:  # the size asked for may be a scalar input
        t0 = fd2.define_tensor(shape=[1, 8], contiguity=[True, True], dtype=DataType.Float)
        rows = fd2.define_scalar(None, dtype=DataType.Int)
        fd2.add_output(fd2.ops.expand(fd2.ops.set(t0), [rows, 8]))
    assert "bS" in str(fd2.fusion).split("expand(")[0].splitlines()[-1]
    (out,) = evaluate(fd2.fusion, [xs[0][:1], 3])
    assert torch.equal(out, xs[0][:1].expand(3, 8))


@needs_gxx
def test_the_kernel_of_a_constant_one_expand_matches_the_reference() -> None:
    fd = _static_slice()
    xs = [torch.randn(4, 8), torch.randn(2, 8)]
    assert torch.equal(_emulated(fd, xs)[0], evaluate(fd.fusion, xs)[0])


def _symbolic_slice(end: int) -> FusionDefinition:
    """T0 [-1, -1] sliced to rows 1..end (an extent only the run settles), expanded to [2, 8]."""
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
        rows = fd.ops.slice(t0, start_indices=[1, 0], end_indices=[end, 8])
        e = fd.ops.broadcast_in_dim(rows, shape=[2, 8], broadcast_dims=[0, 1])
        fd.add_output(fd.ops.mul(e, 3.0))
        fd.add_output(e)
    return fd


@pytest.mark.parametrize("n, kept", [(2, False), (3, True)])
def test_a_symbolic_extent_is_expanded_where_it_is_one_and_kept_where_it_fits(n: int, kept: bool) -> None:
    """Rows 1..4 of an [n, 8] input: one row for n = 2 (expanded to 2), two for n = 3 (kept)."""
    fd = _symbolic_slice(4)
    x = torch.randn(n, 8)
    want = x[1:4] if kept else x[1:2].expand(2, 8)
    out, e = evaluate(fd.fusion, [x])
    assert torch.equal(e, want) and torch.equal(out, want * 3)
    cf = compile_fusion(fd, [x])
    events = [ev.message for ev in cf.trace.of_kind("concretize")]
    assert bool(events) != kept
    if not kept:
        assert events == ["expand: axis 0 of T2 (( ( -1 + i0 ) + ( ( max(1, ( min(i0, 4) )) ) - i0 ) )) has 1 element "
                          "at these sizes: T3 axis 0 is a broadcast expanded to 2 (bS8{1 ex 2})"]
        logical = {str(i) for s in cf.segments for tv in s.fusion.tensors() for i in tv.domain.logical}
        assert "bS8{1 ex 2}" in logical
    assert "T3_g_float[iS8{2}, iS9{8}] = expand(" in str(fd.fusion)  # the definition stays as written


@needs_gxx
@pytest.mark.parametrize("n", [2, 3])
def test_the_kernels_of_a_concretized_expand_match_the_reference(n: int) -> None:
    fd = _symbolic_slice(4)
    xs = [torch.randn(n, 8)]
    got, ref = _emulated(fd, xs), evaluate(fd.fusion, xs)
    assert all(torch.equal(a, b) for a, b in zip(got, ref))
    if n == 2:
        assert got[1].stride() == (0, 1)  # an expanded output, as nvFuser returns it


def test_a_symbolic_extent_of_another_size_is_refused_at_compile_and_by_the_reference() -> None:
    fd = _symbolic_slice(4)
    x = torch.randn(5, 8)  # rows 1..4: three
    why = (r"expand producing T3: axis 0 of T2 has 3 elements, so it can neither be expanded to 2 \(only an axis "
           r"of 1 element is\) nor kept \(nvFuser: \"Mismatch in sizes when concretizing expand\"\)")
    with pytest.raises(ExecutionError, match=why):
        evaluate(fd.fusion, [x])
    with pytest.raises(ExecutionError, match=why):
        compile_fusion(fd, [x])


@needs_gxx
def test_reshape_and_factory_extents_are_concretized_too() -> None:
    """A reshape to a scalar input's size and a full of a scalar input's size, 1 at run time."""
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
        rows = fd.define_scalar(None, dtype=DataType.Int)
        r = fd.ops.reshape(t0, [rows, 8])
        fd.add_output(fd.ops.mul(fd.ops.broadcast_in_dim(r, shape=[3, 8], broadcast_dims=[0, 1]), 2.0))
        f = fd.ops.full(shape=[rows, 8], fill_value=1.5, dtype=DataType.Float)
        flat = fd.ops.broadcast_in_dim(fd.ops.reshape(t0, [8]), shape=[3, 8], broadcast_dims=[1])
        fd.add_output(fd.ops.add(fd.ops.broadcast_in_dim(f, shape=[3, 8], broadcast_dims=[0, 1]), flat))
    x = torch.randn(2, 4)
    xs = [x, 1]
    ref = evaluate(fd.fusion, xs)
    assert torch.equal(ref[0], x.reshape(1, 8).expand(3, 8) * 2)
    assert torch.equal(ref[1], 1.5 + x.reshape(8).expand(3, 8))
    assert all(torch.equal(a, b) for a, b in zip(_emulated(fd, xs), ref))


def test_an_input_axis_of_one_element_declared_as_iteration_is_refused() -> None:
    """nvFuser's expand keeps an iteration axis of an input's size: T0 [-1, -1] given [1, 8]
    and broadcast to [2, 8] does not run there (the extent substitution binds i0 to 2); here
    the reference and the compile refuse it, naming the op and saying how to define the axis."""
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
        fd.add_output(fd.ops.broadcast_in_dim(t0, shape=[2, 8], broadcast_dims=[0, 1]))
    why = (r"broadcast_in_dim: axis 0 of T1 has 1 elements, not 2, and is not a broadcast axis: its size is an "
           r"input's, which nvFuser's expand keeps, binding it to the size asked for \(define a size-1 input axis "
           r"as a broadcast: shape 1 or contiguity None\)")
    x = torch.randn(1, 8)
    with pytest.raises(ExecutionError, match=why):
        evaluate(fd.fusion, [x])
    with pytest.raises(ExecutionError, match=why):
        compile_fusion(fd, [x])
    y = torch.randn(2, 8)  # an input of the size asked for runs
    assert torch.equal(evaluate(fd.fusion, [y])[0], y)
    with FusionDefinition() as ok:  # the axis defined as a broadcast expands
        t0 = ok.define_tensor(shape=[1, -1], contiguity=[None, True], dtype=DataType.Float)
        ok.add_output(ok.ops.broadcast_in_dim(t0, shape=[2, 8], broadcast_dims=[0, 1]))
    assert torch.equal(evaluate(ok.fusion, [x])[0], x.expand(2, 8))
