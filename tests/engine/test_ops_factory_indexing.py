"""Factories (full, zeros, ones, iota) and indexing ops (select, index_select, gather,
take_along_axis): shapes, printed lines, values against torch, and errors."""

import re

import pytest
import torch

from engine import DataType, FusionDefinition, FusionDefinitionError
from engine.compile import compile_fusion
from engine.ops import full
from engine.reference import evaluate
from tests.emulation import needs_gxx


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
    # The index is broadcast to the table's rank first, as nvFuser's indexSelect does.
    assert fd.fusion.print_math().splitlines()[1:5] == [
        "T2_l_int[bS3{1}, iS4{i3}]",
        "   = broadcast( T1_g_int[iS2{i3}], flags = {true, false} )",
        "T3_g_float[iS5{i0}, iS6{i3}]",
        "   = indexSelect( T0_g_float[iS0{i0}, iS1{i2}], dim = 1, T2_l_int[bS3{1}, iS4{i3}] )",
    ]
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


# ---- index tensors inside the consumer's loops (size sweep: 'local buffer of 4608 elements') ----



def _lookup(op: str, dim: int, tail: str = "", dtype: DataType = DataType.Float) -> FusionDefinition:
    """index_select / gather / take_along_axis of a 2-D table along `dim`, then `tail`:
    '' (the lookup itself), 'square' (pointwise), 'sum' (a reduction over the other
    axis) or 'sub_max' (x - max(x) along the last axis, a normalization)."""
    with FusionDefinition() as fd:
        table = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=dtype)
        rank = 1 if op == "index_select" else 2
        idx = fd.define_tensor(shape=[-1] * rank, contiguity=[True] * rank, dtype=DataType.Int)
        t = getattr(fd.ops, op)(table, idx, dim)
        if tail == "square":
            t = fd.ops.mul(t, t)
        elif tail == "sum":
            t = fd.ops.sum(t, [1 - dim])
        elif tail == "sub_max":
            t = fd.ops.sub(t, fd.ops.broadcast(fd.ops.max(t, [1]), [False, True]))
        fd.add_output(t)
    return fd


def _inputs(op: str, dim: int, rows: int, cols: int, n: int, dtype=torch.float32, device="cpu") -> list:
    """A [rows, cols] table and indices into axis `dim`: n of them (index_select), or an
    index of the table's shape with n along `dim` (gather, take_along_axis)."""
    g = torch.Generator().manual_seed(0)
    shape = (n,) if op == "index_select" else ((n, cols) if dim == 0 else (rows, n))
    if device == "meta":
        return [torch.empty(rows, cols, dtype=dtype, device="meta"), torch.empty(shape, dtype=torch.int64, device="meta")]
    table = torch.randn(rows, cols, generator=g).to(dtype) if dtype.is_floating_point \
        else torch.randint(-1000, 1000, (rows, cols), generator=g, dtype=dtype)
    return [table, torch.randint(0, (rows, cols)[dim], shape, generator=g)]


def _local_buffers(cuda: str) -> list[int]:
    """Sizes of the kernel's local arrays (`alignas(16) float T4[8];`)."""
    return [int(n) for n in re.findall(r"^\s*alignas\(\d+\) [\w:<>, ]+ \w+\[(\d+)\];", cuda, re.M)]


@pytest.mark.parametrize("rows, cols, n", [
    (32000, 4096, 4097), (32000, 4096, 65536),  # vocabulary x hidden, tokens
    (4097, 5, 4097), (64, 8, 65536),            # narrow rows: one merged (1-D) loop
])
@pytest.mark.parametrize("dim", [0, 1])
def test_index_select_reads_only_its_own_indices_at_large_sizes(rows: int, cols: int, n: int, dim: int) -> None:
    """Each thread reads the index entries of its own elements: no kernel holds a buffer
    of the whole index (the 1-D schedule did, 4608 elements per thread at n = 4097, and
    was refused above 4096)."""
    fd = _lookup("index_select", dim, dtype=DataType.BFloat16)
    rows, cols = (rows, cols) if dim == 0 else (cols, rows)
    cf = compile_fusion(fd, _inputs("index_select", dim, rows, cols, n, torch.bfloat16, "meta"))
    for s in cf.segments:
        assert max(_local_buffers(s.cuda_source), default=1) <= 8, s.cuda_source


def test_embedding_fwd_compiles_at_llm_sizes() -> None:
    """Token ids [2, 4096] into a [32000, 4096] bf16 embedding (failed: 'a local buffer of
    8192 elements per thread')."""
    with FusionDefinition() as fd:
        ids = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Int)
        w = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.BFloat16)
        fd.add_output(fd.ops.embedding_fwd(ids, w, None, None, None, None, None))
    xs = [torch.empty(2, 4096, dtype=torch.int64, device="meta"),
          torch.empty(32000, 4096, dtype=torch.bfloat16, device="meta")]
    cf = compile_fusion(fd, xs)
    for s in cf.segments:
        assert max(_local_buffers(s.cuda_source), default=1) <= 8, s.cuda_source


@pytest.mark.parametrize("op", ["gather", "take_along_axis"])
def test_gather_compiles_at_llm_sizes(op: str) -> None:
    fd = _lookup(op, 1, dtype=DataType.BFloat16)
    cf = compile_fusion(fd, _inputs(op, 1, 4097, 32000, 4096, torch.bfloat16, "meta"))
    for s in cf.segments:
        assert max(_local_buffers(s.cuda_source), default=1) <= 8, s.cuda_source


def _emulate_exactly(fd: FusionDefinition, xs: list) -> list[str]:
    cf = compile_fusion(fd, xs)
    outs = cf.run(xs, backend="emulate")
    refs = evaluate(fd.fusion, xs)
    assert len(outs) == len(refs)
    for o, r in zip(outs, refs):
        assert torch.equal(o, r)
    # Elementwise kernels read the index per element: no local copy of all of it.
    for s in cf.segments:
        if s.scheduler == "pointwise":
            assert max(_local_buffers(s.cuda_source), default=1) <= 8, s.cuda_source
    return [s.scheduler for s in cf.segments]


@needs_gxx
@pytest.mark.parametrize("op", ["index_select", "gather", "take_along_axis"])
@pytest.mark.parametrize("dim", [0, 1])
@pytest.mark.parametrize("tail", ["", "square"])
def test_lookup_in_a_pointwise_kernel_matches_reference(op: str, dim: int, tail: str) -> None:
    assert _emulate_exactly(_lookup(op, dim, tail), _inputs(op, dim, 40, 33, 19)) == ["pointwise"]


@needs_gxx
@pytest.mark.parametrize("dim", [0, 1])
def test_index_select_under_the_transpose_scheduler_matches_reference(dim: int) -> None:
    """Large enough for the transpose scheduler (the index's inner axis is the table's
    outer one), which tiles the index with the output."""
    rows, cols, n = (64, 512, 301) if dim == 0 else (301, 64, 517)
    got = _emulate_exactly(_lookup("index_select", dim), _inputs("index_select", dim, rows, cols, n))
    assert got == (["transpose"] if dim == 0 else ["pointwise"])


@needs_gxx
@pytest.mark.parametrize("op", ["index_select", "take_along_axis"])
@pytest.mark.parametrize("dim", [0, 1])
def test_lookup_before_a_reduction_matches_reference(op: str, dim: int) -> None:
    """An integer table, so that the sum is exact in any order."""
    fd = _lookup(op, dim, "sum", DataType.Int)
    assert "reduction" in _emulate_exactly(fd, _inputs(op, dim, 40, 33, 19, torch.int64))


@needs_gxx
@pytest.mark.parametrize("dim", [0, 1])
def test_index_select_before_a_normalization_matches_reference(dim: int) -> None:
    got = _emulate_exactly(_lookup("index_select", dim, "sub_max"), _inputs("index_select", dim, 40, 33, 19))
    assert "inner_persistent" in got


@needs_gxx
def test_embedding_fwd_matches_reference() -> None:
    with FusionDefinition() as fd:
        ids = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Int)
        w = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.BFloat16)
        fd.add_output(fd.ops.embedding_fwd(ids, w, None, None, None, None, None))
    g = torch.Generator().manual_seed(0)
    xs = [torch.randint(0, 320, (2, 37), generator=g), torch.randn(320, 48, generator=g).bfloat16()]
    assert _emulate_exactly(fd, xs) == ["pointwise"]


@needs_gxx
def test_one_index_shared_by_lookups_scheduled_apart_matches_reference() -> None:
    """One computed index read by two index_selects whose outputs the pointwise schedule
    loops over differently (the rope script's cos/sin caches): the index is inlined into
    both, so the loops share it and run the larger one."""
    with FusionDefinition() as fd:
        cos = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
        sin = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
        pos = fd.ops.iota(6, 0, 1, dtype=DataType.Int)
        a = fd.ops.index_select(cos, pos, 0)
        b = fd.ops.index_select(sin, pos, 0)
        fd.add_output(fd.ops.broadcast_in_dim(a, shape=[1, 6, 8], broadcast_dims=[1, 2]))
        fd.add_output(fd.ops.expand(fd.ops.broadcast_in_dim(b, shape=[1, 6, 8], broadcast_dims=[1, 2]), [2, 6, 8]))
    g = torch.Generator().manual_seed(0)
    xs = [torch.randn(6, 8, generator=g), torch.randn(6, 8, generator=g)]
    _emulate_exactly(fd, xs)
