"""The ops that run through torch in expr_eval segments (engine.ir.aten_exprs): scans, topk,
argsort, scatter, index_put_accumulate and grouped_mm. Values against torch computed
independently of the engine's handlers, nvFuser's IR lines, segmentation (each op alone
in an expr_eval segment, the kernel schedulers refusing it by name), builder refusals, and
the saved-file round trip."""

import pytest
import torch

from engine import DataType, FusionDefinition, compile_fusion, dumps_fusion, loads_fusion
from engine.errors import ExecutionError, FusionDefinitionError
from engine.reference import evaluate
from engine.schedule import registry
from engine.schedule.runtime_info import SchedulerRuntimeInfo


def _one(build, *shapes_dtypes):
    """A fusion of one op over fresh inputs [(shape, DataType)], and its outputs."""
    with FusionDefinition() as fd:
        ins = [fd.define_tensor(shape=[-1] * len(s), contiguity=[True] * len(s), dtype=d) for s, d in shapes_dtypes]
        outs = build(fd, *ins)
        for o in outs if isinstance(outs, tuple) else (outs,):
            fd.add_output(o)
    return fd


@pytest.mark.parametrize("kind", ["cumsum", "cumprod", "cummax", "cummin"])
@pytest.mark.parametrize("dtype", [DataType.Float, DataType.BFloat16, DataType.Int32])
def test_scans_match_torch(kind, dtype):
    fd = _one(lambda fd, t: getattr(fd.ops, kind)(t, dim=1), ((3, 7), dtype))
    g = torch.Generator().manual_seed(1)
    x = (torch.rand(3, 7, generator=g) * 2 + 0.5)
    x = x.round().int() if dtype == DataType.Int32 else x.to(torch.bfloat16 if dtype == DataType.BFloat16 else torch.float32)
    (got,) = compile_fusion(fd, [x]).run([x], backend="reference")
    xf = x.double()
    want = {"cumsum": xf.cumsum(1), "cumprod": xf.cumprod(1), "cummax": xf.cummax(1).values,
            "cummin": xf.cummin(1).values}[kind]
    assert got.dtype == x.dtype and got.shape == x.shape  # no promotion, as in nvFuser
    torch.testing.assert_close(got.double(), want.to(x.dtype).double(), rtol=1e-2, atol=1e-5)


def test_scan_init_joins_the_first_element():
    with FusionDefinition() as fd:
        t = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float)
        fd.add_output(fd.ops.cumsum(t, 0, init=10.0))
        fd.add_output(fd.ops.cummax(t, 0, init=fd.define_scalar(2.0, dtype=DataType.Float)))
    x = torch.tensor([1.0, -3.0, 4.0, 0.5])
    s, m = evaluate(fd.fusion, [x])
    assert s.tolist() == [11.0, 8.0, 12.0, 12.5]
    assert m.tolist() == [2.0, 2.0, 4.0, 4.0]


@pytest.mark.parametrize("largest", [True, False])
def test_topk_returns_sorted_values_and_int64_indices(largest):
    with FusionDefinition() as fd:
        t = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
        k = fd.define_scalar(3, dtype=DataType.Int)
        v, i = fd.ops.topk(t, k, dim=0, largest=largest, sorted=False)
        fd.add_output(v)
        fd.add_output(i)
    x = torch.randperm(40).float().view(8, 5)
    v, i = compile_fusion(fd, [x]).run([x], backend="reference")
    assert v.shape == (3, 5) and i.dtype == torch.int64
    order = x.sort(dim=0, descending=largest)
    assert torch.equal(v, order.values[:3]) and torch.equal(i, order.indices[:3])
    assert torch.equal(torch.gather(x, 0, i), v)


def test_argsort_is_stable_and_int64():
    fd = _one(lambda fd, t: fd.ops.argsort(t, dim=1, descending=True), ((2, 6), DataType.Int))
    x = torch.tensor([[3, 1, 3, 2, 3, 0], [0, 0, 1, 1, 0, 1]])
    (got,) = evaluate(fd.fusion, [x])
    assert got.dtype == torch.int64
    assert got.tolist() == [[0, 2, 4, 3, 1, 5], [2, 3, 5, 0, 1, 4]]


def test_scatter_with_a_tensor_and_a_scalar_source():
    with FusionDefinition() as fd:
        t = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
        i = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Int)
        s = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
        fd.add_output(fd.ops.scatter(t, i, s, 1))
        fd.add_output(fd.ops.scatter(t, i, -1.0, dim=1))
    x, src = torch.zeros(2, 4), torch.arange(1.0, 7.0).view(2, 3)
    idx = torch.tensor([[3, 0, 1], [2, 1, 0]])
    a, b = compile_fusion(fd, [x, idx, src]).run([x, idx, src], backend="reference")
    assert a.tolist() == [[2.0, 3.0, 0.0, 1.0], [6.0, 5.0, 4.0, 0.0]]
    assert b.tolist() == [[-1.0, -1.0, 0.0, -1.0], [-1.0, -1.0, -1.0, 0.0]]
    with pytest.raises(ExecutionError, match="scatter: an index is out of range for an axis of 4 elements"):
        evaluate(fd.fusion, [x, idx + 2, src])


def test_index_put_accumulate_adds_rows_with_repeats():
    fd = _one(lambda fd, a, i, v: fd.ops.index_put_accumulate(a, i, v),
              ((5, 3), DataType.BFloat16), ((4,), DataType.Int), ((4, 3), DataType.BFloat16))
    acc = torch.ones(5, 3, dtype=torch.bfloat16)
    idx = torch.tensor([4, 0, 4, 2])
    val = torch.arange(12.0).view(4, 3).to(torch.bfloat16)
    (got,) = evaluate(fd.fusion, [acc, idx, val])
    want = acc.float().clone()
    for j, r in enumerate(idx.tolist()):
        want[r] += val[j].float()
    assert torch.equal(got, want.to(torch.bfloat16))


def _groups(offsets: list[int], n: int) -> torch.Tensor:
    """The group of each of n positions split by cumulative end offsets."""
    return torch.bucketize(torch.arange(n), torch.tensor(offsets), right=True)


@pytest.mark.parametrize("ranks", [(2, 2), (3, 2), (2, 3)])
def test_grouped_mm_matches_per_group_matmuls(ranks):
    g, m, k, n = 3, 6, 8, 5
    offsets = [2, 2, {(2, 2): k, (3, 2): n, (2, 3): m}[ranks]]
    gen = torch.Generator().manual_seed(0)
    a = torch.randn((g, m, k) if ranks[0] == 3 else (m, k), generator=gen, dtype=torch.float64)
    b = torch.randn((g, k, n) if ranks[1] == 3 else (k, n), generator=gen, dtype=torch.float64)
    fd = _one(lambda fd, x, y, o: fd.ops.grouped_mm(x, y, o),
              (a.shape, DataType.Double), (b.shape, DataType.Double), ((g,), DataType.Int32))
    offs = torch.tensor(offsets, dtype=torch.int32)
    (got,) = evaluate(fd.fusion, [a, b, offs])
    if ranks == (2, 2):
        mask = (_groups(offsets, k)[None, :] == torch.arange(g)[:, None]).double()  # [g, k]
        want = torch.einsum("mk,gk,kn->gmn", a, mask, b)
    elif ranks == (3, 2):
        want = torch.einsum("nmk,kn->mn", a[_groups(offsets, n)], b)
    else:
        want = torch.einsum("mk,mkn->mn", a, b[_groups(offsets, m)])
    torch.testing.assert_close(got, want)
    assert [i.is_reduction for i in fd.fusion.outputs[0].domain.logical][-1]


def test_ir_lines_are_nvfusers():
    with FusionDefinition() as fd:
        t = fd.define_tensor(shape=[4, 6], contiguity=[True, True], dtype=DataType.Float)
        i = fd.define_tensor(shape=[4, 6], contiguity=[True, True], dtype=DataType.Int)
        fd.add_output(fd.ops.cumsum(t, dim=1))
        for o in fd.ops.topk(t, 2, dim=1):
            fd.add_output(o)
        fd.add_output(fd.ops.argsort(t, dim=0, stable=True))
        fd.add_output(fd.ops.scatter(t, i, t, 0))
        fd.add_output(fd.ops.index_put_accumulate(t, fd.ops.argsort(fd.ops.sum(t, [1]), dim=0), t))
    text = str(fd.fusion)
    for line in [
        "T2_g_float[iS4{4}, iS5{6}]\n   = scan(T0_g_float[iS0{4}, iS1{6}],\n          dim=1,\n"
        "          op_type=add,\n          init=0)\n",
        "( T3_g_float[iS6{4}, iS7{2}], T4_g_int64_t[iS8{4}, iS9{2}] ) = topk( T0_g_float[iS0{4}, iS1{6}], 2, "
        "dim = 1, largest = True, sorted = False )\n",
        "T5_g_int64_t[iS10{4}, iS11{6}] = argsort( T0_g_float[iS0{4}, iS1{6}], dim = 0, descending = False, "
        "stable = True )\n",
        "T6_g_float[iS12{4}, iS13{6}]\n   = scatter(in = T0_g_float[iS0{4}, iS1{6}], dim = 0, "
        "src = T0_g_float[iS0{4}, iS1{6}], idx = T1_g_int64_t[iS2{4}, iS3{6}] )\n",
        "   = indexPutAccumulate( T0_g_float[iS0{4}, iS1{6}], T8_l_int64_t[iS16{4}], T0_g_float[iS0{4}, iS1{6}] )\n",
    ]:
        assert line in text, line


def test_each_op_gets_an_expr_eval_segment_of_its_own():
    with FusionDefinition() as fd:
        t = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
        c = fd.ops.cumsum(fd.ops.mul(t, t), dim=1)
        v, _ = fd.ops.topk(fd.ops.exp(c), 2, dim=1)
        fd.add_output(fd.ops.add(v, v))
    x = torch.randn(3, 5)
    cf = compile_fusion(fd, [x])
    assert [s.scheduler for s in cf.segments] == ["pointwise", "expr_eval", "pointwise", "expr_eval", "pointwise"]
    (got,) = cf.run([x], backend="reference")
    want = (x * x).cumsum(1).exp().topk(2, dim=1).values * 2
    torch.testing.assert_close(got, want)
    with FusionDefinition() as alone:
        a = alone.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
        alone.add_output(alone.ops.exp(alone.ops.cumsum(a, dim=0)))
    verdicts, _ = registry.can_schedule(alone.fusion, SchedulerRuntimeInfo(alone.fusion, [x]))
    why = "Has unsupported ops: ScanOp (evaluated by the expr_eval scheduler in this engine)"
    kernels = {"reduction", "resize", "transpose", "pointwise", "inner_persistent", "outer_persistent",
               "inner_outer_persistent"}
    assert {v.scheduler.value for v in verdicts if v.reason == why} == kernels


@pytest.mark.parametrize("build, why", [
    (lambda fd, t, i: fd.ops.topk(t, 2.0), "topk: k must be an int or an integer Scalar, got 2.0"),
    (lambda fd, t, i: fd.ops.argsort(t, dim=2), "argsort: dim 2 is out of range for rank 2 of T0"),
    (lambda fd, t, i: fd.ops.cumsum(t, dim=[1]), "cumsum: dim must be an int, got [1]"),
    (lambda fd, t, i: fd.ops.scatter(t, fd.ops.sum(i, [1]), t, 0), "scatter: index T2 has rank 1 but T0 has rank 2"),
    (lambda fd, t, i: fd.ops.scatter(t, t, t, 0), "scatter: index T0 must be an integer tensor, got float"),
    (lambda fd, t, i: fd.ops.index_put_accumulate(t, i, t), "index_put_accumulate: index T1 must be 1-D, got rank 2"),
    (lambda fd, t, i: fd.ops.grouped_mm(t, t, t), "grouped_mm: offsets T0 must be a 1-D integer tensor"),
])
def test_builders_refuse_bad_arguments_by_name(build, why):
    with pytest.raises(FusionDefinitionError) as e:
        _one(build, ((4, 6), DataType.Float), ((4, 6), DataType.Int))
    assert why in str(e.value)


def test_topk_checks_k_against_the_axis():
    with pytest.raises(FusionDefinitionError, match=r"topk: k = 9 is out of range for axis 1 of T0 \(6 elements\)"):
        with FusionDefinition() as fd:
            fd.ops.topk(fd.define_tensor(shape=[4, 6], contiguity=[True, True], dtype=DataType.Float), 9, dim=1)
    with FusionDefinition() as fd:
        t = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
        for o in fd.ops.topk(t, fd.define_scalar(dtype=DataType.Int), dim=1):
            fd.add_output(o)
    with pytest.raises(ExecutionError, match=r"topk: k = 9 is out of range for axis 1 \(6 elements\)"):
        evaluate(fd.fusion, [torch.zeros(4, 6), 9])


def test_saved_file_round_trip_keeps_every_op():
    with FusionDefinition() as fd:
        t = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
        i = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Int)
        v, ix = fd.ops.topk(t, fd.define_scalar(2, dtype=DataType.Int), dim=1, largest=False, sorted=True)
        for o in (fd.ops.cumprod(t, 0), v, ix, fd.ops.argsort(t, 1, descending=True),
                  fd.ops.scatter(t, i, 0.5, dim=1)):
            fd.add_output(o)
    x, idx = torch.randn(3, 4), torch.tensor([[0, 3], [1, 1], [2, 0]])
    text = dumps_fusion(fd, [x, idx])
    assert "T3, T4 = fd.ops.topk(T0, S2, dim=1, largest=False, sorted=True)" in text
    again = loads_fusion(text, "saved.py")
    assert str(again.fusion) == str(fd.fusion)
    for a, b in zip(evaluate(again.fusion, [x, idx]), evaluate(fd.fusion, [x, idx])):
        assert torch.equal(a, b)


def test_a_plain_cast_to_fp4_runs_as_an_expr_eval_segment():
    """Kernels write fp4 (two values per byte) only through block quantization: a plain cast
    to Float4_e2m1fn, as Thunder's nvfp4 quantization emits, is refused by every kernel
    scheduler by name and evaluated by expr_eval, its bytes those of the reference."""
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.BFloat16)
        y = fd.ops.mul(x, 2.0)
        fd.add_output(fd.ops.cast(y, DataType.Float4_e2m1fn))
    xs = [torch.randn(8, 32, dtype=torch.bfloat16)]
    cf = compile_fusion(fd, xs)
    assert [s.scheduler for s in cf.segments] == ["pointwise", "expr_eval"]
    verdicts, _ = registry.can_schedule(cf.segments[1].fusion, SchedulerRuntimeInfo(cf.segments[1].fusion, [xs[0]]))
    pw = next(v for v in verdicts if str(v.scheduler) == "pointwise")
    assert not pw.accepted and "cast to Float4_e2m1fn" in pw.reason
    (out,) = cf.run(xs, backend="emulate")
    (ref,) = evaluate(fd.fusion, xs)
    assert out.dtype == torch.float4_e2m1fn_x2 and torch.equal(out.view(torch.uint8), ref.view(torch.uint8))
