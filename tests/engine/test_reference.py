"""The reference evaluator's rules for shape, factory, indexing, matmul and statistics
exprs: coverage, output strides (allocation domains, expanded broadcasts), low precision,
and errors naming the op at fault."""

import inspect

import pytest
import torch

from engine import DataType, ExecutionError, FusionDefinition
from engine.ir import exprs as ex
from engine.ir.base import Expr
from engine.reference import HANDLERS, evaluate


def test_every_expr_class_has_a_rule():
    classes = [
        c for c in (getattr(ex, name) for name in ex.__all__)
        if inspect.isclass(c) and issubclass(c, Expr) and c is not Expr
    ]
    assert len(classes) >= 20
    missing = [c.__name__ for c in classes if c not in HANDLERS]
    assert missing == []


def test_output_follows_a_permuted_allocation_domain():
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1, -1], dtype=DataType.Float)
        t1 = fd.ops.pad(t0, [1, 1])
        fd.add_output(t1)
    a, b = t1.domain.logical
    t1.domain.allocation = [b, a]  # column-major output
    t1.domain.contiguity = [True, True]
    x = torch.randn(3, 4)
    (out,) = fd.execute([x])
    assert torch.equal(out, torch.nn.functional.pad(x, [1, 1]))
    assert out.stride() == (1, 3)


def test_expanded_output_stays_stride_zero_with_allocation():
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1, 1], dtype=DataType.Float)
        t1 = fd.ops.expand(t0, [-1, 5])
        t2 = fd.ops.set(t1)
        fd.add_output(t1)
        fd.add_output(t2)
    x = torch.randn(3, 1)
    o1, o2 = fd.execute([x])
    assert o1.stride() == (1, 0)
    assert torch.equal(o1, x.expand(3, 5)) and torch.equal(o2, x.expand(3, 5))


def test_expanded_input_binds_and_reduces():
    with FusionDefinition() as fd:
        # contiguity None on a non-1 axis: an expanded broadcast input (stride 0).
        t0 = fd.define_tensor(shape=[-1, -1], contiguity=[None, True], dtype=DataType.Float)
        t1 = fd.ops.reshape(t0, [-1])
        fd.add_output(fd.ops.sum(t0, [0]))
        fd.add_output(t1)
    assert str(t0) == "T0_g_float[bS0{1 ex i0}, iS1{i2}]"
    x = torch.randn(1, 3).expand(4, 3)
    s, r = fd.execute([x])
    assert torch.allclose(s, x[0] * 4)
    assert torch.equal(r, x.reshape(-1))


def test_cat_takes_regions_not_sums_of_padded_inputs():
    # The pad value is 7, so adding the padded inputs would be wrong; the CatOp rule must
    # pick each input's own region.
    with FusionDefinition() as fd:
        a = fd.define_tensor(shape=[2, -1], dtype=DataType.Float)
        b = fd.define_tensor(shape=[2, -1], dtype=DataType.Float)
        pa = fd.ops.pad(a, [0, 2], value=7.0)
        pb = fd.ops.pad(b, [3, 0], value=7.0)
        fd.add_output(fd.ops.cat([pa, pb], 1, manual_padding=True))
    xa, xb = torch.randn(2, 3), torch.randn(2, 2)
    (out,) = fd.execute([xa, xb])
    assert torch.equal(out, torch.cat([xa, xb], 1))


def test_fp8_full_goes_through_the_cast_rule():
    with FusionDefinition() as fd:
        fd.add_output(fd.ops.full([2, 3], 1.75, dtype=DataType.Float8_e4m3fn))
    (out,) = fd.execute([])
    assert out.dtype == torch.float8_e4m3fn
    assert torch.equal(out.float(), torch.full((2, 3), 1.75))


def test_half_pad_and_permute_keep_dtype_and_bits():
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1, -1], dtype=DataType.Half)
        fd.add_output(fd.ops.permute(fd.ops.pad(t0, [2, 0], value=0.5), [1, 0]))
    x = torch.randn(3, 2).half()
    (out,) = fd.execute([x])
    assert out.dtype == torch.float16
    assert torch.equal(out, torch.nn.functional.pad(x, [2, 0], value=0.5).t())


def test_runtime_failure_names_the_op():
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1], dtype=DataType.Float)
        fd.add_output(fd.ops.reshape(t0, [-1, 4]))
    with pytest.raises(ExecutionError, match="ViewOp producing T1 failed"):
        fd.execute([torch.randn(6)])


def test_symbolic_slice_bounds_from_scalar_inputs():
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1, -1], dtype=DataType.Float)
        lo = fd.define_scalar(dtype=DataType.Int)
        hi = fd.define_scalar(dtype=DataType.Int)
        fd.add_output(fd.ops.slice(t0, [0, lo], [2, hi]))
    x = torch.randn(3, 8)
    (out,) = fd.execute([x, 2, 6])
    assert torch.equal(out, x[0:2, 2:6])


def test_fp4_inputs_bind_logical_extents_and_compute_in_float():
    from engine.nvfp4 import fp4_code_values, pack_fp4, unpack_fp4

    with FusionDefinition() as fd:
        a = fd.define_tensor([4, 32], dtype=DataType.Float4_e2m1fn)
        fd.add_output(fd.ops.cast(a, DataType.Float))
        fd.add_output(fd.ops.abs(a))
    codes = torch.randint(0, 16, (4, 32), dtype=torch.uint8, generator=torch.Generator().manual_seed(0))
    as_float, magnitude = fd.execute([pack_fp4(codes)])
    assert torch.equal(as_float, fp4_code_values(codes))
    assert magnitude.dtype == torch.float4_e2m1fn_x2 and torch.equal(unpack_fp4(magnitude), codes & 7)
    with pytest.raises(ExecutionError, match="axis 1 must have size 32, got 16"):
        fd.execute([pack_fp4(codes[:, :16])])


def test_pointwise_operands_must_agree_where_no_axis_is_a_broadcast():
    """torch would stretch any size-1 axis; nvFuser broadcasts only broadcast axes, so a
    slice's extent-1 axis against a wider one is refused, naming the op and the tensors (the
    compile evaluates the same way, instead of failing later in lowering)."""
    from engine import compile_fusion

    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
        t1 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
        fd.add_output(fd.ops.mul(t0, fd.ops.slice(t1, start_indices=[0, 0], end_indices=[4, 1])))
    xs = [torch.randn(4, 6), torch.randn(4, 3)]
    why = "mul producing T3: axis 1 of T0 has 6 elements and of T2 1; neither is a broadcast axis"
    with pytest.raises(ExecutionError, match=why):
        evaluate(fd.fusion, xs)
    with pytest.raises(ExecutionError, match=why):
        compile_fusion(fd, xs)
    with FusionDefinition() as ok:
        t0 = ok.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
        t1 = ok.define_tensor(shape=[-1, 1], contiguity=[True, None], dtype=DataType.Float)
        ok.add_output(ok.ops.mul(t0, t1))
    (out,) = evaluate(ok.fusion, [xs[0], xs[0][:, :1]])
    assert torch.equal(out, xs[0] * xs[0][:, :1])


def _doubled(**define):
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(dtype=DataType.Float, **define)
        fd.add_output(fd.ops.mul(t0, 2.0))
    return fd


def test_inputs_laid_out_against_their_contiguity_are_refused_by_name():
    """Kernels index a contiguous axis without its runtime stride: a transposed tensor given for
    a row-major definition would be read wrongly, so it is refused (nvFuser: "Stride mismatch
    with contiguity info"), by fd.execute and compile_fusion alike."""
    from engine.compile import compile_fusion

    fd = _doubled(shape=[-1, -1], contiguity=[True, True])
    xt = torch.randn(6, 4).t()
    for call in (lambda: fd.execute([xt]), lambda: compile_fusion(fd, [xt])):
        with pytest.raises(ExecutionError, match=r"input 0 \(T0\) axis 1 has stride 4, .* contiguous .*stride 1"):
            call()
    col = _doubled(shape=[-1, -1], contiguity=[True, True], stride_order=[0, 1])
    with pytest.raises(ExecutionError, match=r"input 0 \(T0\) axis 0 has stride 6"):
        col.execute([torch.randn(4, 6)])
    torch.testing.assert_close(col.execute([xt])[0], xt * 2)  # column-major as declared


def test_layouts_the_definition_allows_are_accepted():
    x = torch.randn(4, 10)
    # A slice: rows 10 apart, inner axis contiguous.
    torch.testing.assert_close(
        _doubled(shape=[-1, -1], contiguity=[False, True]).execute([x[:, :6]])[0], x[:, :6] * 2)
    # Size-1 axes keep whatever stride torch gives them.
    odd = torch.randn(4, 1, 6)[:, :, :].as_strided((4, 1, 6), (6, 99, 1))
    torch.testing.assert_close(_doubled(shape=[-1, 1, -1], contiguity=[True, None, True]).execute([odd])[0], odd * 2)
    one = torch.randn(3, 1).as_strided((3, 1), (1, 7))
    torch.testing.assert_close(_doubled(shape=[-1, -1], contiguity=[True, True]).execute([one])[0], one * 2)
    # An expanded broadcast (stride 0) has no contiguity.
    ex_in = torch.randn(5, 1).expand(5, 3)
    fd = _doubled(shape=[-1, -1], contiguity=[True, None])
    torch.testing.assert_close(fd.execute([ex_in])[0], ex_in * 2)
    # channels_last with its stride order.
    cl = torch.randn(2, 3, 4, 5).to(memory_format=torch.channels_last)
    fd = _doubled(shape=[-1, -1, -1, -1], contiguity=[True, True, True, True], stride_order=[3, 0, 2, 1])
    torch.testing.assert_close(fd.execute([cl])[0], cl * 2)
