"""Core IR: scalars, naming, IterDomain transforms, fusion graph editing and cloning."""

import pytest

from engine import DataType, FusionDefinition, FusionDefinitionError, ScheduleError
from engine.ir.fusion import Fusion
from engine.ir.iterdomain import IterDomain, IterType, ParallelType
from engine.ir.scalar import Scalar, ceil_div, same_scalar

SEED001_LISTING = """\
Inputs:
  T0_g_float[bS0{1}, iS1{4096}, iS2{4096}]
Outputs:
  T4_g_float[bS10{1}, iS11{4096}, iS12{4096}]
  T6_g_float[rS15{4096}, iS16{4096}]

%kernel_math {
T1_l_float[iS3{4096}, iS4{4096}]
   = squeeze( T0_g_float[bS0{1}, iS1{4096}, iS2{4096}], flags = {true, false, false} )
T2_l_float[iS5{4096}, rS6{4096}]
   = reduction( T1_l_float[iS3{4096}, iS4{4096}], op = add, initial value = float(0), allreduce = false )
T3_l_float[bS7{1}, iS8{4096}, bS9{1}]
   = broadcast( T2_l_float[iS5{4096}, rS6{4096}], flags = {true, false, true} )
T4_g_float[bS10{1}, iS11{4096}, iS12{4096}]
   = T0_g_float[bS0{1}, iS1{4096}, iS2{4096}]
   + T3_l_float[bS7{1}, iS8{4096}, bS9{1}];
T5_l_float[iS13{4096}, iS14{4096}]
   = squeeze( T4_g_float[bS10{1}, iS11{4096}, iS12{4096}], flags = {true, false, false} )
T6_g_float[rS15{4096}, iS16{4096}]
   = reduction( T5_l_float[iS13{4096}, iS14{4096}], op = add, initial value = float(0), allreduce = false )
} // %kernel_math
""".replace("// %kernel_math\n", "// %kernel_math \n")  # nvFuser prints a trailing space


def seed001() -> FusionDefinition:
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[1, 4096, 4096], contiguity=[True, None, True],
                              dtype=DataType.Float, stride_order=[1, 2, 0])
        t1 = fd.ops.squeeze(t0, [0])
        t2 = fd.ops.sum(t1, dims=[1])
        t3 = fd.ops.broadcast(t2, [True, False, True])
        t4 = fd.ops.add(t0, t3)
        t5 = fd.ops.squeeze(t4, [0])
        t6 = fd.ops.sum(t5, dims=[0])
        fd.add_output(t4)
        fd.add_output(t6)
    return fd


def test_seed001_listing_exact():
    assert str(seed001().fusion) == SEED001_LISTING


def test_seed001_input_allocation_block():
    from engine.ir.printer import transforms_block

    t0 = seed001().fusion.inputs[0]
    assert transforms_block(t0) == (
        "T0_g_float[bS0{1}, iS1{4096}, iS2{4096}]\n"
        " logical domain : (bS0{1}, iS1{4096}, iS2{4096})\n"
        " allocation domain : (iS1{4096}, bS0{1}, iS2{4096})\n"
        " contiguity: t n t\n"
        " loop domain : (bS0{1}, iS1{4096}, iS2{4096})\n"
    )


def test_symbolic_extent_names_follow_nvfuser():
    # nvFuser's lazily created zero takes name 1: 2-D extents are i0, i2; 3-D i0, i2, i3.
    with FusionDefinition() as fd:
        a = fd.define_tensor(shape=[-1, -1])
    assert str(a) == "T0_g_float[iS0{i0}, iS1{i2}]"
    with FusionDefinition() as fd:
        b = fd.define_tensor(shape=[-1, -1, -1])
    assert str(b) == "T0_g_float[iS0{i0}, iS1{i2}, iS2{i3}]"


def test_scalar_folding_and_printing():
    f = Fusion()
    i0, i2 = f.new_symbol(), f.new_symbol()
    f.zero_val()  # takes no new name once the symbols exist: names stay i0, i1
    assert (i0 * i2).inline() == "( i0 * i1 )"
    assert ceil_div(i0, 4).inline() == "( ceilDiv(i0, 4) )"
    assert (Scalar(value=6) * 7).value == 42
    assert ceil_div(4096, 2).value == 2048
    assert (i0 * 1) is i0 and (i0 + 0) is i0
    assert (i0 * i2).evaluate({i0: 3, i2: 5}) == 15
    assert ceil_div(i0, 4).evaluate({i0: 9}) == 3
    with pytest.raises(KeyError, match="i1"):
        (i0 * i2).evaluate({i0: 1})
    assert same_scalar(i0 * i2, i0 * i2) and not same_scalar(i0 * i2, i2 * i0)


def test_iterdomain_printing():
    f = Fusion()
    i = IterDomain(f, 32, IterType.Broadcast)
    i.expanded_extent = Scalar(value=32)
    i.extent = Scalar(value=1)
    assert str(i) == "bS0{1 ex 32}"
    j = IterDomain(f, 132, parallel_type=ParallelType.grid_y)
    assert str(j) == "iblockIdx.y1{132}"
    k = IterDomain(f, 8, is_rfactor=True)
    assert str(k) == "iS2{8}rf"
    s = IterDomain(f, f.new_symbol(), parallel_type=ParallelType.stream)
    assert str(s) == "iStreamIdx3{i0}"


def test_split_merge_reorder_history():
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1, -1])
        t1 = fd.ops.exp(t0)
        fd.add_output(t1)
    t1.split(1, 4)
    assert str(t1) == "T1_g_float[iS2{i0}, iS4{( ceilDiv(i2, 4) )}, iS5{4}]"
    t1.merge(0)
    assert str(t1.axis(0)) == "iS6{( i0 * ( ceilDiv(i2, 4) ) )}"
    t1.reorder({0: 1})
    assert [i.name for i in t1.loop()] == [5, 6]
    t1.split(0, 2, inner_split=False)
    assert str(t1.axis(0)) == "iS7{2}"
    with pytest.raises(ScheduleError, match="T1"):
        t1.split(7, 2)
    with pytest.raises(ScheduleError, match="not a permutation"):
        t1.reorder([0, 0, 1])


def test_merge_of_reduction_with_iteration_refused():
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1, -1])
        t1 = fd.ops.sum(t0, [1])
        fd.add_output(t1)
    with pytest.raises(ScheduleError, match="reduction"):
        t1.merge(0, 1)


def test_exprs_topological_and_uses():
    fd = seed001()
    names = [e.output.short_name for e in fd.fusion.exprs()]
    assert names == ["T1", "T2", "T3", "T4", "T5", "T6"]
    t0 = fd.fusion.inputs[0]
    assert [e.output.short_name for e in t0.uses] == ["T1", "T4"]


def test_clone_keeps_listing_and_maps_values():
    fd = seed001()
    clone, vmap = fd.fusion.clone()
    assert str(clone) == str(fd.fusion)
    t0 = fd.fusion.inputs[0]
    assert vmap[t0] is clone.inputs[0] and vmap[t0] is not t0
    # Editing the clone leaves the original alone.
    clone.outputs[0].split(0, 1)
    assert str(fd.fusion) == SEED001_LISTING


def test_remove_and_rewire_expr():
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1])
        t1 = fd.ops.exp(t0)
        t2 = fd.ops.neg(t1)
        fd.add_output(t2)
    f = fd.fusion
    f.replace_input_of(t2.definition, t1, t0)
    assert [e.output.short_name for e in f.exprs()] == ["T2"]
    assert t1.definition.output is t1 and t2.definition not in t1.uses
    f.remove_expr(t1.definition)
    assert t1.definition is None


def test_definition_errors_name_the_operands():
    with FusionDefinition() as fd:
        a = fd.define_tensor(shape=[2, 3])
        b = fd.define_tensor(shape=[4, 3])
        with pytest.raises(FusionDefinitionError, match="add: shapes of T0, T1 do not broadcast at axis 0"):
            fd.ops.add(a, b)
        with pytest.raises(FusionDefinitionError, match="sum: dim 2 is out of range for rank 2 of T0"):
            fd.ops.sum(a, [2])
        with pytest.raises(FusionDefinitionError, match="squeeze: axis 0 of T0"):
            fd.ops.squeeze(a, [0])
        with pytest.raises(FusionDefinitionError, match="stride_order"):
            fd.define_tensor(shape=[2, 3], stride_order=[0, 0])
        with pytest.raises(FusionDefinitionError, match="contiguity"):
            fd.define_tensor(shape=[2, 3], contiguity=[True])
        with pytest.raises(FusionDefinitionError, match="where: condition T0 must be bool"):
            fd.ops.where(a, a, a)


def test_type_promotion_like_torch():
    import torch

    with FusionDefinition() as fd:
        h = fd.define_tensor(shape=[-1], dtype=DataType.BFloat16)
        i = fd.define_tensor(shape=[-1], dtype=DataType.Int32)
        x = fd.ops.mul(h, 2.0)
        y = fd.ops.add(i, 1)
        z = fd.ops.add(i, 0.5)
        w = fd.ops.lt(h, i)
        for t in (x, y, z, w):
            fd.add_output(t)
    assert [t.dtype for t in (x, y, z, w)] == [DataType.BFloat16, DataType.Int32, DataType.Float, DataType.Bool]
    hv = torch.randn(5, dtype=torch.bfloat16)
    iv = torch.arange(5, dtype=torch.int32)
    outs = fd.execute([hv, iv])
    want = [hv * 2.0, iv + 1, iv + 0.5, hv < iv]
    for got, exp in zip(outs, want):
        assert got.dtype == exp.dtype
        torch.testing.assert_close(got, exp)


def test_implicit_broadcast_of_lower_rank_operand():
    import torch

    with FusionDefinition() as fd:
        a = fd.define_tensor(shape=[-1, -1])
        b = fd.define_tensor(shape=[-1])
        fd.add_output(fd.ops.sub(a, b))
    assert "broadcast( T1_g_float[iS2{i3}], flags = {true, false} )" in str(fd.fusion)
    x, y = torch.randn(3, 4), torch.randn(4)
    torch.testing.assert_close(fd.execute([x, y])[0], x - y)


def test_reference_checks_inputs():
    import torch

    from engine import ExecutionError

    fd = seed001()
    with pytest.raises(ExecutionError, match="must have size 4096"):
        fd.execute([torch.randn(1, 4096, 8)])
    with pytest.raises(ExecutionError, match="must be float"):
        fd.execute([torch.randn(1, 4096, 4096, dtype=torch.float64)])
    with pytest.raises(ExecutionError, match="takes 1 inputs"):
        fd.execute([])
    with FusionDefinition() as fd2:
        a = fd2.define_tensor(shape=[-1, -1])
        b = fd2.define_tensor(shape=[-1, -1])
        fd2.add_output(fd2.ops.add(a, b))
    # Different symbols may legally differ; the op then fails with its name and the sizes.
    with pytest.raises(ExecutionError, match="add producing T2: axis 1 of T0 has 3 elements and of T1 4"):
        fd2.execute([torch.randn(2, 3), torch.randn(2, 4)])


def test_seed001_values_and_output_strides():
    import torch

    fd = seed001()
    x = torch.randn(4096, 1, 64).permute(1, 0, 2)  # allocation order (1, 0, 2)
    # Use a small variant with the same structure to keep the test fast.
    with FusionDefinition() as small:
        t0 = small.define_tensor(shape=[1, -1, -1], contiguity=[True, None, True], stride_order=[1, 2, 0])
        t1 = small.ops.squeeze(t0, [0])
        t3 = small.ops.broadcast(small.ops.sum(t1, dims=[1]), [True, False, True])
        t4 = small.ops.add(t0, t3)
        small.add_output(t4)
        small.add_output(small.ops.sum(small.ops.squeeze(t4, [0]), dims=[0]))
    o4, o6 = small.execute([x])
    e4 = x + x.squeeze(0).sum(1)[None, :, None]
    torch.testing.assert_close(o4, e4)
    torch.testing.assert_close(o6, e4.squeeze(0).sum(0))
    assert fd.fusion.outputs[0].domain.allocation is None


def test_integer_sums_are_the_same_scalar_in_any_grouping():
    from engine.dtypes import DataType
    from engine.ir.scalar import Scalar, binary, same_scalar

    a, b, c = (Scalar(DataType.Index) for _ in range(3))
    assert same_scalar(binary("add", a, binary("add", b, c)), binary("add", binary("add", a, b), c))
    assert same_scalar(binary("add", binary("add", c, a), b), binary("add", a, binary("add", b, c)))
    assert not same_scalar(binary("add", a, binary("add", b, b)), binary("add", binary("add", a, b), c))
    assert not same_scalar(binary("add", a, b), binary("add", binary("add", a, b), c))
    x, y = Scalar(DataType.Double), Scalar(DataType.Double)
    assert not same_scalar(binary("add", x, binary("add", y, x)), binary("add", binary("add", x, y), x))
