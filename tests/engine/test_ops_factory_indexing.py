"""Factories (full, zeros, ones, iota) and indexing ops (select, index_select, gather,
take_along_axis): shapes, printed lines, values against torch, and errors."""

import pytest
import torch

from engine import DataType, FusionDefinition, FusionDefinitionError
from engine.ops import full


def test_full_prints_as_seed003_and_evaluates():
    with FusionDefinition() as fd:
        t0 = fd.ops.full([1, 4, 3], 0, dtype=DataType.BFloat16)
        fd.add_output(t0)
    assert fd.fusion.print_math().splitlines()[1:3] == [
        "T0_g___bfloat[bS0{1}, iS1{4}, iS2{3}]",
        "   = full({1, 4, 3}, __bfloat(0));",
    ]
    (out,) = fd.execute([])
    assert out.dtype == torch.bfloat16 and torch.equal(out, torch.zeros(1, 4, 3, dtype=torch.bfloat16))


def test_full_with_symbolic_shape_from_an_input():
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1, -1], dtype=DataType.Float)
        t1 = fd.ops.full([t0.logical()[0].extent, 2], 2.5, dtype=DataType.Float)
        t2 = fd.ops.ones([3], dtype=DataType.Int32)
        t3 = fd.ops.zeros([2, 2], dtype=DataType.Bool)
        fd.add_output(fd.ops.add(t0, t1))
        fd.add_output(t2)
        fd.add_output(t3)
    x = torch.randn(5, 2)
    o1, o2, o3 = fd.execute([x])
    assert torch.equal(o1, x + 2.5)
    assert o2.dtype == torch.int32 and torch.equal(o2, torch.ones(3, dtype=torch.int32))
    assert o3.dtype == torch.bool and not o3.any()


def test_iota_values_and_line():
    with FusionDefinition() as fd:
        n = fd.define_scalar(dtype=DataType.Int)
        t0 = fd.ops.iota(n, 3, 2, dtype=DataType.Int)
        t1 = fd.ops.iota(4, 0.5, 0.25, dtype=DataType.Float)
        fd.add_output(t0)
        fd.add_output(t1)
    assert "= iota(i0, 3, 2, int64_t);" in fd.fusion.print_math()
    assert "= iota(4, float(0.5), float(0.25), float);" in fd.fusion.print_math()
    o0, o1 = fd.execute([5])
    assert torch.equal(o0, torch.arange(5) * 2 + 3)
    assert torch.equal(o1, torch.arange(4, dtype=torch.float32) * 0.25 + 0.5)


def test_iota_defaults_from_the_frontend():
    with FusionDefinition() as fd:
        fd.add_output(fd.ops.iota(3, None, None, DataType.Int32))
    (out,) = fd.execute([])
    assert out.dtype == torch.int32 and torch.equal(out, torch.arange(3, dtype=torch.int32))


def test_factory_errors():
    with pytest.raises(FusionDefinitionError, match="full: no fusion is being defined"):
        full([2], 0, DataType.Float)
    with FusionDefinition() as fd:
        with pytest.raises(FusionDefinitionError, match="full: shape entry 1 must be an int >= 0"):
            fd.ops.full([2, -3], 0, dtype=DataType.Float)
        with pytest.raises(FusionDefinitionError, match="full: dtype must be a tensor DataType"):
            fd.ops.full([2], 0, dtype="float")
        with pytest.raises(FusionDefinitionError, match="iota: shape entry 0 is a double scalar"):
            fd.ops.iota(fd.define_scalar(2.0), 0, 1, DataType.Int)
        with pytest.raises(FusionDefinitionError, match="iota: dtype must be an integer or floating"):
            fd.ops.iota(3, 0, 1, DataType.Bool)


# ---- indexing -----------------------------------------------------------------------------

def test_select_values_and_line():
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[4, -1], dtype=DataType.Float)
        i = fd.define_scalar(dtype=DataType.Int)
        t1 = fd.ops.select(t0, i, dim=0)
        t2 = fd.ops.select(t0, -1, dim=1)
        fd.add_output(t1)
        fd.add_output(t2)
    assert str(t1) == "T1_g_float[iS2{i2}]"
    assert fd.fusion.print_math().splitlines()[2] == (
        "   = select( T0_g_float[iS0{4}, iS1{i2}], axis = iS0{4}, index = i3 )"
    )
    x = torch.randn(4, 3)
    o1, o2 = fd.execute([x, 2])
    assert torch.equal(o1, x[2]) and torch.equal(o2, x[:, -1])


def test_index_select_values():
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1, -1], dtype=DataType.Float)
        idx = fd.define_tensor(shape=[-1], dtype=DataType.Int32)
        t1 = fd.ops.index_select(t0, idx, dim=1)
        fd.add_output(t1)
    assert fd.fusion.print_math().splitlines()[2] == (
        "   = indexSelect( T0_g_float[iS0{i0}, iS1{i2}], dim = 1, T1_g_int[iS2{i3}] )"
    )
    x = torch.randn(3, 5)
    ix = torch.tensor([4, 0, 0, 2, 1, 3], dtype=torch.int32)
    (out,) = fd.execute([x, ix])
    assert out.shape == (3, 6)
    assert torch.equal(out, torch.index_select(x, 1, ix.long()))


def test_gather_and_take_along_axis_values():
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1, -1], dtype=DataType.Float)
        idx = fd.define_tensor(shape=[-1, -1], dtype=DataType.Int)
        bidx = fd.define_tensor(shape=[1, -1], dtype=DataType.Int)
        fd.add_output(fd.ops.gather(t0, idx, dim=1))
        fd.add_output(fd.ops.take_along_axis(t0, bidx, dim=1))
    x = torch.randn(4, 6)
    ix = torch.randint(0, 6, (3, 2))
    bx = torch.randint(0, 6, (1, 5))
    g, t = fd.execute([x, ix, bx])
    assert torch.equal(g, torch.gather(x, 1, ix))
    assert torch.equal(t, torch.take_along_dim(x, bx, dim=1))
    assert t.shape == (4, 5)


def test_indexing_errors():
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[4, 6])
        fidx = fd.define_tensor(shape=[4, 2], dtype=DataType.Float)
        idx1 = fd.define_tensor(shape=[3], dtype=DataType.Int)
        big = fd.define_tensor(shape=[5, 2], dtype=DataType.Int)
        wrong = fd.define_tensor(shape=[3, 2], dtype=DataType.Int)
        with pytest.raises(FusionDefinitionError, match="gather: index T1 must be an integer tensor, got float"):
            fd.ops.gather(t0, fidx, 1)
        with pytest.raises(FusionDefinitionError, match="gather: index T2 has rank 1 but T0 has rank 2"):
            fd.ops.gather(t0, idx1, 1)
        with pytest.raises(FusionDefinitionError, match=r"gather: axis 0 of index T3 \(5\) is larger than T0's \(4\)"):
            fd.ops.gather(t0, big, 1)
        with pytest.raises(FusionDefinitionError, match=r"take_along_axis: axis 0 of index T4 \(3\) does not match T0"):
            fd.ops.take_along_axis(t0, wrong, 1)
        with pytest.raises(FusionDefinitionError, match="index_select: index T1 must be an integer tensor"):
            fd.ops.index_select(t0, fidx, 0)
        with pytest.raises(FusionDefinitionError, match="index_select: index T3 must be 1-D"):
            fd.ops.index_select(t0, big, 0)
        with pytest.raises(FusionDefinitionError, match="select: index 4 is out of range for axis 0 of T0"):
            fd.ops.select(t0, 4, 0)
        with pytest.raises(FusionDefinitionError, match="select: dim 2 is out of range for rank 2 of T0"):
            fd.ops.select(t0, 0, 2)


def test_gather_lines_name_the_variant():
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[4, 6], dtype=DataType.Float)
        idx = fd.define_tensor(shape=[4, 2], dtype=DataType.Int)
        fd.add_output(fd.ops.gather(t0, idx, 1))
        fd.add_output(fd.ops.take_along_axis(t0, idx, 1))
    math = fd.fusion.print_math().splitlines()
    assert math[2] == "   = torchGather( T0_g_float[iS0{4}, iS1{6}], dim = 1, T1_g_int64_t[iS2{4}, iS3{2}] )"
    assert math[4] == "   = takeAlongAxis( T0_g_float[iS0{4}, iS1{6}], T1_g_int64_t[iS2{4}, iS3{2}], dim = 1 )"
