"""Shape ops: expand, reshape, permute, slice, pad, cat, broadcast_in_dim.

Values are checked against torch written out in each test; listings against the
seeds' text (seed 002's concat pattern from the Llama RoPE backward, seed 003's slice,
pad and expand lines)."""

import re

import pytest
import torch

from engine import DataType, ExecutionError, FusionDefinition, FusionDefinitionError
from engine.ir.printer import transforms_block

BF16 = DataType.BFloat16


def canon(text: str) -> str:
    """Rename tensors and IterDomains in order of appearance, so that a listing can be
    compared with a seed's when only the numbering differs."""
    names: dict[str, str] = {}
    return re.sub(r"(T\d+_)|((?<=[A-Za-z.])\d+(?=\{))", lambda m: _rename(m, names), text)


def _rename(m: re.Match, names: dict[str, str]) -> str:
    key = m.group(0)
    if key not in names:
        prefix = "T" if key.startswith("T") else "#"
        n = sum(1 for v in names.values() if v.startswith(prefix))
        names[key] = f"{prefix}{n}_" if prefix == "T" else f"#{n}"
    return names[key]


# ---- seed 002: pad x3 -> cat -> Set.Permute -> view -----------------------------------

SEED002_CAT = """\
Inputs:
  T0_g___bfloat[bS0{1}, iS1{8}, iS2{4}, iS3{8192}, iS4{128}]
  T1_g___bfloat[bS5{1}, iS6{8}, bS7{1}, iS8{8192}, iS9{128}]
  T2_g___bfloat[bS10{1}, iS11{8}, bS12{1}, iS13{8192}, iS14{128}]
Outputs:
  T8_g___bfloat[bS43{1}, iS44{8192}, iS52{6144}rf]

%kernel_math {
T3_l___bfloat[bS15{1}, iS16{8}, iS18{6}rf, iS19{8192}, iS20{128}]
   = pad( T0_g___bfloat[bS0{1}, iS1{8}, iS2{4}, iS3{8192}, iS4{128}], {0, 0, 0, 0, 0, 2, 0, 0, 0, 0} )
i31 = 0 + 4;
T4_l___bfloat[bS21{1}, iS22{8}, iS24{( ( ( 0 + 4 ) + 1 ) + 1 )}rf, iS25{8192}, iS26{128}]
   = pad( T1_g___bfloat[bS5{1}, iS6{8}, bS7{1}, iS8{8192}, iS9{128}], {0, 0, 0, 0, i31, 1, 0, 0, 0, 0} )
i47 = i31 + 1;
T5_l___bfloat[bS27{1}, iS28{8}, iS30{( ( ( 0 + 4 ) + 1 ) + 1 )}rf, iS31{8192}, iS32{128}]
   = pad( T2_g___bfloat[bS10{1}, iS11{8}, bS12{1}, iS13{8192}, iS14{128}], {0, 0, 0, 0, i47, 0, 0, 0, 0, 0} )
T6_l___bfloat[bS33{1}, iS34{8}, iS35{6}, iS36{8192}, iS37{128}]
   = cat( T3_l___bfloat[bS15{1}, iS16{8}, iS18{6}rf, iS19{8192}, iS20{128}], T4_l___bfloat[bS21{1}, iS22{8}, iS24{( ( ( 0 + 4 ) + 1 ) + 1 )}rf, iS25{8192}, iS26{128}], T5_l___bfloat[bS27{1}, iS28{8}, iS30{( ( ( 0 + 4 ) + 1 ) + 1 )}rf, iS31{8192}, iS32{128}], 2 )
T7_l___bfloat[bS38{1}, iS41{8192}, iS39{8}, iS40{6}, iS42{128}]
   = Set.Permute( T6_l___bfloat[bS33{1}, iS34{8}, iS35{6}, iS36{8192}, iS37{128}], cache_op=Streaming )
T8_g___bfloat[bS43{1}, iS44{8192}, iS52{6144}rf] = view( T7_l___bfloat[bS38{1}, iS41{8192}, iS39{8}, iS40{6}, iS42{128}] )
} // %kernel_math
""".replace("// %kernel_math\n", "// %kernel_math \n")  # nvFuser prints a trailing space


def seed002_cat(seq: int = 8192) -> FusionDefinition:
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[1, 8, 4, seq, 128], dtype=BF16)
        t1 = fd.define_tensor(shape=[1, 8, 1, seq, 128], dtype=BF16)
        t2 = fd.define_tensor(shape=[1, 8, 1, seq, 128], dtype=BF16)
        t6 = fd.ops.cat([t0, t1, t2], dim=2)
        t7 = fd.ops.permute(t6, dims=[0, 3, 1, 2, 4])
        t8 = fd.ops.reshape(t7, new_shape=[1, seq, 8 * 6 * 128])
        fd.add_output(t8)
    return fd


def _seed_lines_without_named_scalars() -> list[str]:
    # The seed's T4/T5 pads print the cat's running offsets as named scalars (i31, i47)
    # with unfolded extents; the engine folds constant offsets. Everything else matches.
    lines = SEED002_CAT.splitlines()
    out = []
    for line in lines:
        if line.startswith("i31 =") or line.startswith("i47 ="):
            continue
        line = line.replace("( ( ( 0 + 4 ) + 1 ) + 1 )", "6")
        line = line.replace("{0, 0, 0, 0, i31, 1, 0, 0, 0, 0}", "{0, 0, 0, 0, 4, 1, 0, 0, 0, 0}")
        line = line.replace("{0, 0, 0, 0, i47, 0, 0, 0, 0, 0}", "{0, 0, 0, 0, 5, 0, 0, 0, 0, 0}")
        out.append(line)
    return out


def test_seed002_concat_listing_matches_seed_with_folded_offsets():
    got = str(seed002_cat().fusion).splitlines()
    assert got == _seed_lines_without_named_scalars()


@pytest.mark.xfail(strict=True, reason="named derived scalars (`i31 = 0 + 4;`) are not modelled: offsets fold")
def test_seed002_concat_listing_exact():
    assert str(seed002_cat().fusion) == SEED002_CAT


def test_seed002_view_transforms_follow_nvfusers_rfactor_clones():
    fd = seed002_cat()
    t8 = fd.fusion.outputs[0]
    assert transforms_block(t8) == (
        "T8_g___bfloat[bS43{1}, iS44{8192}, iS52{6144}rf]\n"
        " root domain : (bS43{1}, iS44{8192}, iS48{8}rf, iS49{6}rf, iS51{128}rf)\n"
        "  Merge: iS48{8}rf and iS49{6}rf -> iS50{48}rf\n"
        "  Merge: iS50{48}rf and iS51{128}rf -> iS52{6144}rf\n"
        " logical domain : (bS43{1}, iS44{8192}, iS52{6144}rf)\n"
        " contiguity: n t t\n"
        "  Merge: iS48{8}rf and iS49{6}rf -> iS50{48}rf\n"
        "  Merge: iS50{48}rf and iS51{128}rf -> iS52{6144}rf\n"
        " loop domain : (bS43{1}, iS44{8192}, iS52{6144}rf)\n"
    )


def test_seed002_concat_values():
    fd = seed002_cat(seq=16)
    a = torch.randn(1, 8, 4, 16, 128).to(torch.bfloat16)
    b = torch.randn(1, 8, 1, 16, 128).to(torch.bfloat16)
    c = torch.randn(1, 8, 1, 16, 128).to(torch.bfloat16)
    (out,) = fd.execute([a, b, c])
    want = torch.cat([a, b, c], dim=2).permute(0, 3, 1, 2, 4).reshape(1, 16, 6144)
    assert out.dtype == torch.bfloat16
    assert torch.equal(out, want)


# ---- seed 003: slice, pad, expand, reshape -------------------------------------------------

def test_seed003_slice_and_pad_lines():
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[1, 32, 8192, 128], dtype=BF16)
        t1 = fd.ops.slice(t0, start_indices=[0, 0, 0, 64], end_indices=[1, 32, 8192, 128])
        t2 = fd.ops.pad(t1, [0, 64])
        t3 = fd.ops.slice(t0, [0, 0, 0, 0], [1, 32, 8192, 64], [1, 1, 1, 1])
        t4 = fd.ops.pad(t3, [64, 0])
        for t in (t2, t4):
            fd.add_output(t)
    math = fd.fusion.print_math().splitlines()
    # Seed 003's lines (T34 -> T50 -> T55, T34 -> T39, T48 -> T51) up to numbering.
    assert canon("\n".join(math[1:3])) == canon(
        "T50_l___bfloat[bS212{1}, iS213{32}, iS214{8192}, iS216{64}rf]\n"
        "   = slice( T34_g___bfloat[bS144{1}, iS145{32}, iS146{8192}, iS147{128}], "
        "{ {0, 1, 1} {0, 32, 1} {0, 8192, 1} {64, 128, 1} } )"
    )
    # The sliced axis has a root id (one name) before its resized rf id, as in the seed.
    assert math[1].startswith("T1_l___bfloat[bS4{1}, iS5{32}, iS6{8192}, iS8{64}rf]")
    assert canon(math[4].split("= ")[1]) == canon(
        "pad( T50_l___bfloat[bS212{1}, iS213{32}, iS214{8192}, iS216{64}rf], {0, 0, 0, 0, 0, 0, 0, 64} )"
    )
    assert math[3].startswith("T2_g___bfloat[bS9{1}, iS10{32}, iS11{8192}, iS13{128}rf]")
    assert math[8].endswith("{0, 0, 0, 0, 0, 0, 64, 0} )")


def test_seed003_expand_and_full_lines():
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[1, 8192, 128], dtype=BF16)
        t1 = fd.ops.broadcast_in_dim(t0, shape=[1, 32, 8192, 128], broadcast_dims=[0, 2, 3])
        t2 = fd.ops.full([1, 32, 8192, 128], 0, dtype=BF16)
        fd.add_output(t1)
        fd.add_output(t2)
    math = fd.fusion.print_math().splitlines()
    assert canon("\n".join(math[1:6])) == canon(
        "T5_l___bfloat[bS18{1}, bS19{1}, iS20{8192}, iS21{128}]\n"
        "   = broadcast( T0_g___bfloat[bS0{1}, iS1{8192}, iS2{128}], flags = {false, true, false, false} )\n"
        "T9_g___bfloat[bS38{1}, bS39{1 ex 32}, iS40{8192}, iS41{128}] = expand( "
        "T5_l___bfloat[bS18{1}, bS19{1}, iS20{8192}, iS21{128}], {1, 32, 8192, 128} )\n"
        "T81_g___bfloat[bS366{1}, iS367{32}, iS368{8192}, iS369{128}]\n"
        "   = full({1, 32, 8192, 128}, __bfloat(0));"
    )


def test_seed003_reshape_split_numbering():
    # Seed 003's T54 [bS233{1}, iS238{8}rf, iS239{4}rf, iS235{8192}, iS236{128}]: root copies
    # 233-236, the rfactor clone 237 of the split axis, then the split's outputs 238 and 239.
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[1, 32, 8192, 128], dtype=BF16)
        t1 = fd.ops.reshape(t0, [1, 8, 4, 8192, 128])
        fd.add_output(t1)
    assert str(t1) == "T1_g___bfloat[bS4{1}, iS9{8}rf, iS10{4}rf, iS6{8192}, iS7{128}]"
    block = transforms_block(t1)
    assert " root domain : (bS4{1}, iS8{32}rf, iS6{8192}, iS7{128})" in block
    assert "  Outer split: iS8{32}rf by factor 8 -> iS9{8}rf, iS10{4}rf" in block


def test_rope_like_slice_neg_pad_add_values():
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[1, 4, 6, 8], dtype=BF16)
        lo = fd.ops.slice(t0, [0, 0, 0, 0], [1, 4, 6, 4])
        hi = fd.ops.slice(t0, [0, 0, 0, 4], [1, 4, 6, 8])
        neg = fd.ops.cast(fd.ops.neg(fd.ops.cast(hi, DataType.Float)), BF16)
        a = fd.ops.pad(neg, [0, 4])
        b = fd.ops.pad(lo, [4, 0])
        fd.add_output(fd.ops.add(a, b))
    x = torch.randn(1, 4, 6, 8).to(torch.bfloat16)
    (out,) = fd.execute([x])
    want = (torch.cat([-x[..., 4:], x[..., :4]], -1).float()).to(torch.bfloat16)
    assert torch.equal(out, want)


# ---- expand ----------------------------------------------------------------------------------

def test_expand_keeps_stride_zero_and_prints_ex():
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[1, -1], dtype=DataType.Float)
        t1 = fd.ops.expand(t0, [5, -1])
        fd.add_output(t1)
    assert str(t1) == "T1_g_float[bS2{1 ex 5}, iS3{i2}]"
    assert fd.fusion.print_math().splitlines()[1] == (
        "T1_g_float[bS2{1 ex 5}, iS3{i2}] = expand( T0_g_float[bS0{1}, iS1{i2}], {5, i2} )"
    )
    x = torch.randn(1, 3)
    (out,) = fd.execute([x])
    assert out.shape == (5, 3) and out.stride(0) == 0
    assert torch.equal(out, x.expand(5, 3))


def test_expand_then_reduce_counts_expanded_elements():
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[1, 3], dtype=DataType.Float)
        t1 = fd.ops.expand(t0, [4, 3])
        fd.add_output(fd.ops.sum(t1, [0]))
        fd.add_output(fd.ops.mean(t1, [0, 1]))
    x = torch.randn(1, 3)
    s, m = fd.execute([x])
    assert torch.allclose(s, x[0] * 4)
    assert torch.allclose(m, x.mean())


def test_broadcast_in_dim_expands():
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1], dtype=DataType.Float)
        t1 = fd.ops.broadcast_in_dim(t0, shape=[3, 2, 4], broadcast_dims=[2])
        fd.add_output(t1)
    assert [str(i) for i in t1.domain.logical][:2] == ["bS4{1 ex 3}", "bS5{1 ex 2}"]
    x = torch.randn(4)
    (out,) = fd.execute([x])
    assert torch.equal(out, x.expand(3, 2, 4))


def test_broadcast_in_dim_expands_a_size_one_input_axis():
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[1, -1], dtype=DataType.Float)
        t1 = fd.ops.broadcast_in_dim(t0, shape=[3, 4], broadcast_dims=[0, 1])
        fd.add_output(t1)
    assert str(t1.domain.logical[0]) == "bS4{1 ex 3}"
    x = torch.randn(1, 4)
    (out,) = fd.execute([x])
    assert torch.equal(out, x.expand(3, 4)) and out.stride(0) == 0


def test_broadcast_in_dim_checks_iteration_axes_against_the_shape():
    """A symbolic axis that turns out to have one element is not a broadcast: asking
    broadcast_in_dim to widen it is an error, not a silently narrower output."""
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1, -1], dtype=DataType.Float)
        t1 = fd.ops.broadcast_in_dim(t0, shape=[4, 8], broadcast_dims=[0, 1])
        fd.add_output(t1)
    x = torch.randn(4, 8)
    assert torch.equal(fd.execute([x])[0], x)
    with pytest.raises(ExecutionError, match=r"broadcast_in_dim: axis 0 of T1 has 1 elements, not 4, and is not a broadcast"):
        fd.execute([torch.randn(1, 8)])
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[2, 8], dtype=DataType.Float)
        with pytest.raises(FusionDefinitionError, match=r"broadcast_in_dim: axis 0 of T1 \(iS\d+\{2\}\) is not a broadcast"):
            fd.ops.broadcast_in_dim(t0, shape=[4, 8], broadcast_dims=[0, 1])
    with FusionDefinition() as fd:  # expand names the op too
        t0 = fd.define_tensor(shape=[-1, -1], dtype=DataType.Float)
        fd.add_output(fd.ops.expand(t0, [4, 8]))
    with pytest.raises(ExecutionError, match=r"expand: axis 0 of T0 has 1 elements, not 4"):
        fd.execute([torch.randn(1, 8)])


def test_expand_errors():
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[2, 3])
        with pytest.raises(FusionDefinitionError, match=r"expand: axis 1 of T0 .* not a broadcast"):
            fd.ops.expand(t0, [2, 6])
        with pytest.raises(FusionDefinitionError, match=r"expand: T0 has rank 2 but shape \[2\]"):
            fd.ops.expand(t0, [2])


# ---- reshape ----------------------------------------------------------------------------------

@pytest.mark.parametrize(
    "shape,new_shape",
    [
        ((2, 3, 4), (6, 4)),
        ((2, 3, 4), (4, -1)),
        ((6, 4), (2, 3, 2, 2)),
        ((6, 4), (4, 6)),
        ((2, 1, 3), (6,)),
        ((6,), (1, 2, 3, 1)),
        ((1, 6), (3, 1, 2)),
        ((2, 3, 4), (2, 3, 4)),
        ((1, 2, 1, 3), (3, 1, 2)),
        ((3, 1), (1, 3)),
        ((6,), (1, 2, 1, 3, 1)),
    ],
)
def test_reshape_values(shape, new_shape):
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=list(shape), dtype=DataType.Float)
        fd.add_output(fd.ops.reshape(t0, list(new_shape)))
    x = torch.randn(*shape)
    (out,) = fd.execute([x])
    assert torch.equal(out, x.reshape(*new_shape))


def test_reshape_squeezes_and_broadcasts_size_one_axes():
    # As nvFuser: size-1 input broadcasts are squeezed first, new size-1 axes are
    # broadcast afterwards, and only the rest goes through the view's merges/splits.
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[1, 2, 1, 3], dtype=DataType.Float)
        t1 = fd.ops.reshape(t0, [3, 1, 2])
        fd.add_output(t1)
    kinds = [type(e).__name__ for e in fd.fusion.exprs()]
    assert kinds == ["SqueezeOp", "ViewOp", "BroadcastOp"]
    assert str(t1) == "T3_g_float[iS13{3}, bS14{1}, iS15{2}]"


@pytest.mark.parametrize(
    "shape, new_shape",
    [((1,), (1, 1)), ((8, 1), (8,)), ((100, 1), (100,)), ((2, 3, 1), (6,)), ((1, 1), (1,))],
)
def test_reshape_symbolic_axes_that_are_one_at_run_time(shape, new_shape):
    """Symbolic input sizes that the element count forces to 1 ([-1] -> [1, 1], [8, -1] ->
    [8]) fold into the last output axis: nvFuser accepts these, deciding at concretization."""
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1] * len(shape), contiguity=[True] * len(shape), dtype=DataType.Float)
        fd.add_output(fd.ops.neg(fd.ops.reshape(t0, list(new_shape))))
    x = torch.randn(*shape)
    (out,) = fd.execute([x])
    assert torch.equal(out, -x.reshape(*new_shape))


def test_reshape_symbolic_and_old_signature():
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1, -1, -1], dtype=DataType.Float)
        t1 = fd.ops.reshape(t0, [-1, 2, 6])
        t2 = fd.ops.reshape(t1, [2, 3, 4], [-1, 12])  # old frontend: (arg, original, new)
        fd.add_output(t1)
        fd.add_output(t2)
    x = torch.randn(2, 3, 4)
    o1, o2 = fd.execute([x])
    assert torch.equal(o1, x.reshape(-1, 2, 6))
    assert torch.equal(o2, x.reshape(-1, 12))
    # Logical axes of a reshape derive from its root by Merge/Split and carry rf.
    assert all(i.is_rfactor for i in t1.domain.logical)
    assert fd.fusion.print_math().splitlines()[1].endswith("= view( T0_g_float[iS0{i0}, iS1{i2}, iS2{i3}] )")


@pytest.mark.parametrize("shape", [[0, 6], [-1, -1]])
@pytest.mark.parametrize("new_shape", [[3, 0, 2], [0, 3, 2], [2, 0], [0]])
def test_reshape_of_an_empty_tensor_to_a_shape_with_a_zero(shape, new_shape):
    """[0, 6] -> [3, 0, 2]: splitting by the 0 size would divide by zero (the reference and
    the definition failed so); the other sizes are split off, the remainder is the 0 axis."""
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=shape, contiguity=[True, True], dtype=DataType.Float)
        fd.add_output(fd.ops.reshape(t0, new_shape))
    (out,) = fd.execute([torch.randn(0, 6)])
    assert list(out.shape) == new_shape
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=shape, contiguity=[True, True], dtype=DataType.Float)
        with pytest.raises(FusionDefinitionError, match=r"more than one 0 size in \[0, 0\]"):
            fd.ops.reshape(t0, [0, 0])


def test_reshape_errors():
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[2, 3, 4])
        with pytest.raises(FusionDefinitionError, match=r"reshape: T0 of shape \[2, 3, 4\] \(24 elements\)"):
            fd.ops.reshape(t0, [5, 5])
        with pytest.raises(FusionDefinitionError, match="more than one -1"):
            fd.ops.reshape(t0, [-1, -1])
        with pytest.raises(FusionDefinitionError, match="no -1 size"):
            fd.ops.reshape(t0, [5, -1])
        with pytest.raises(FusionDefinitionError, match="original_shape"):
            fd.ops.reshape(t0, [2, 12], [24])



def test_symbolic_reshape_with_a_wrong_element_count_fails_at_run_time():
    """[-1, -1] -> [4, 6]: the last axis is the split's ceilDiv remainder, so 16 elements
    would pass as [4, 4]; the sizes asked for are checked when the input's are known."""
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1, -1], dtype=DataType.Float)
        fd.add_output(fd.ops.reshape(t0, [4, 6]))
    x = torch.randn(4, 6)
    assert torch.equal(fd.execute([x])[0], x.reshape(4, 6))
    with pytest.raises(ExecutionError, match=r"reshape of T0: \[4, 4\] has 16 elements, the new shape \[4, 6\] has 24"):
        fd.execute([torch.randn(4, 4)])


# ---- permute -------------------------------------------------------------------------------

def test_permute_values_and_domains():
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[2, 3, 4], dtype=DataType.Half)
        t1 = fd.ops.permute(t0, [2, 0, -2])
        fd.add_output(t1)
    assert str(t1) == "T1_g___half[iS5{4}, iS3{2}, iS4{3}]"
    assert [str(i) for i in t1.domain.root] == ["iS3{2}", "iS4{3}", "iS5{4}"]
    assert "= Set.Permute( T0_g___half[iS0{2}, iS1{3}, iS2{4}], cache_op=Streaming )" in str(fd.fusion)
    x = torch.randn(2, 3, 4).half()
    (out,) = fd.execute([x])
    assert torch.equal(out, x.permute(2, 0, 1)) and out.is_contiguous()


def test_permute_errors():
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[2, 3, 4])
        with pytest.raises(FusionDefinitionError, match=r"permute: dims \[0, 1\] has 2 entries for T0 of rank 3"):
            fd.ops.permute(t0, [0, 1])
        with pytest.raises(FusionDefinitionError, match="repeat"):
            fd.ops.permute(t0, [0, 1, 1])
        with pytest.raises(FusionDefinitionError, match="dim 3 is out of range for rank 3 of T0"):
            fd.ops.permute(t0, [0, 1, 3])


# ---- slice --------------------------------------------------------------------------------

def test_slice_values_negative_and_clamped():
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1, -1], dtype=DataType.Float)
        t1 = fd.ops.slice(t0, [1, 2], [3, 100])
        fd.add_output(t1)
        t2 = fd.define_tensor(shape=[6, 5], dtype=DataType.Float)
        t3 = fd.ops.slice(t2, [-4, 0], [-1, 100])
        fd.add_output(t3)
    x, y = torch.randn(5, 7), torch.randn(6, 5)
    o1, o3 = fd.execute([x, y])
    assert torch.equal(o1, x[1:3, 2:100])
    assert torch.equal(o3, y[-4:-1, 0:100])
    # A whole axis is copied, not resized.
    assert str(t3) == "T3_g_float[iS9{3}rf, iS10{5}]"


def test_slice_errors():
    with FusionDefinition() as fd:
        t3 = fd.define_tensor(shape=[4, 4])
        with pytest.raises(FusionDefinitionError, match="slice: T0 has rank 2 but start_indices has 1 entries"):
            fd.ops.slice(t3, [0], [1, 1])
        with pytest.raises(FusionDefinitionError, match="slice: T0 axis 1: only stride 1"):
            fd.ops.slice(t3, [0, 0], [4, 4], [1, 2])
        with pytest.raises(FusionDefinitionError, match="slice: input must be a tensor"):
            fd.ops.slice(3, [0], [1])


# ---- pad and cat ------------------------------------------------------------------------------

def test_pad_values_with_value_and_negative():
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[2, 3, 4], dtype=DataType.Float)
        fd.add_output(fd.ops.pad(t0, [1, 2], value=fd.define_scalar(-1.5)))
        fd.add_output(fd.ops.pad(t0, [0, 0, 2, 1, 1, 0]))
        fd.add_output(fd.ops.pad(t0, [-1, 1]))
    x = torch.randn(2, 3, 4)
    o1, o2, o3 = fd.execute([x])
    fpad = torch.nn.functional.pad
    assert torch.equal(o1, fpad(x, [1, 2], value=-1.5))
    assert torch.equal(o2, fpad(x, [0, 0, 2, 1, 1, 0]))
    assert torch.equal(o3, fpad(x, [-1, 1]))


def test_pad_errors():
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[2, 3])
        with pytest.raises(FusionDefinitionError, match="pad: pad_widths .* of T0 must have an even"):
            fd.ops.pad(t0, [1])
        with pytest.raises(FusionDefinitionError, match="at most 4"):
            fd.ops.pad(t0, [1, 1, 1, 1, 1, 1])


def test_cat_values_broadcast_axis_and_promotion():
    with FusionDefinition() as fd:
        a = fd.define_tensor(shape=[2, -1], dtype=DataType.Float)
        b = fd.define_tensor(shape=[2, 1], dtype=DataType.Float)
        c = fd.define_tensor(shape=[2, 3], dtype=DataType.Half)
        t = fd.ops.cat([a, b, c], -1)
        fd.add_output(t)
    assert t.dtype == DataType.Float
    xa, xb, xc = torch.randn(2, 4), torch.randn(2, 1), torch.randn(2, 3).half()
    (out,) = fd.execute([xa, xb, xc])
    assert torch.equal(out, torch.cat([xa, xb, xc.float()], -1))


def test_cat_manual_padding():
    with FusionDefinition() as fd:
        a = fd.define_tensor(shape=[2, 3], dtype=DataType.Float)
        b = fd.define_tensor(shape=[2, 4], dtype=DataType.Float)
        pa = fd.ops.pad(a, [0, 4])
        pb = fd.ops.pad(b, [3, 0])
        fd.add_output(fd.ops.cat([pa, pb], 1, manual_padding=True))
    xa, xb = torch.randn(2, 3), torch.randn(2, 4)
    (out,) = fd.execute([xa, xb])
    assert torch.equal(out, torch.cat([xa, xb], 1))


def test_cat_errors():
    with FusionDefinition() as fd:
        a = fd.define_tensor(shape=[2, 3])
        b = fd.define_tensor(shape=[3, 3])
        c = fd.define_tensor(shape=[3])
        with pytest.raises(FusionDefinitionError, match="cat: axis 0 of T1 has extent 3 but T0 has 2"):
            fd.ops.cat([a, b], 1)
        with pytest.raises(FusionDefinitionError, match="cat: T2 has rank 1 but T0 has rank 2"):
            fd.ops.cat([a, c], 0)
        with pytest.raises(FusionDefinitionError, match="cat: dim 2 is out of range"):
            fd.ops.cat([a, a], 2)
        with pytest.raises(FusionDefinitionError, match="cat: input 1 must be a tensor"):
            fd.ops.cat([a, 1.0], 0)


def test_dynamic_reshape_uses_the_given_sizes():
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1], dtype=DataType.Float)
        s0 = fd.define_scalar(dtype=DataType.Int)
        s1 = fd.define_scalar(dtype=DataType.Int)
        t1 = fd.ops.reshape(t0, [s0, s1])
        fd.add_output(t1)
    assert str(t1) == "T1_g_float[iS3{i2}rf, iS4{i3}rf]"
    x = torch.randn(6)
    (out,) = fd.execute([x, 2, 3])
    assert torch.equal(out, x.reshape(2, 3))
    with pytest.raises(ExecutionError, match="ViewOp producing T1 failed"):
        fd.execute([x, 2, 4])


def test_a_reshape_of_symbolic_sizes_keeps_its_trailing_axes_of_the_same_size() -> None:
    """[b, s, 8] -> [-1, 8] with b and s symbolic: the last axis is the same axis (row-major),
    so only [b, s] are merged; it is not merged with them and split again."""
    from engine.ir.iterdomain import transforms_between

    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1, 8], contiguity=True, dtype=DataType.Float)
        y = fd.ops.reshape(x, [-1, 8])
        fd.add_output(y)
    root, logical = y.domain.maybe_root, y.domain.logical
    assert root[-1] is logical[-1]  # kept as is
    ts = transforms_between(root, logical)
    assert [type(t).__name__ for t in ts] == ["Merge"] and set(ts[0].inputs) == set(root[:2])
    xs = [torch.randn(2, 3, 8)]
    from engine.reference import evaluate

    assert torch.equal(evaluate(fd.fusion, xs)[0], xs[0].reshape(-1, 8))
