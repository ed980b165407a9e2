"""The multi-device compiler in one process: propagation, the communications chosen, the
host-IR text, the local form of a region, the fusion file written back, and errors."""

import pytest
import torch

import engine.multidevice as md
from engine import DataType, FusionDefinition, ParallelType, ScheduleError, compile_fusion, dumps_fusion
from engine.multidevice.sharding import describe, local_shape
from engine.reference import evaluate
from tests.emulation import require_gxx

DIDX = ParallelType.mesh_x


def _tp_mlp(d: int = 2) -> FusionDefinition:
    mesh = md.DeviceMesh(torch.arange(d))
    with FusionDefinition() as fd:
        x = fd.define_tensor([-1, 8], dtype=DataType.Float)
        w1 = fd.define_tensor([32, 8], dtype=DataType.Float)
        w2 = fd.define_tensor([8, 32], dtype=DataType.Float)
        y = fd.ops.relu(fd.ops.linear(x, w1))
        fd.add_output(fd.ops.linear(y, w2))
        for tv in (x, w1, w2):
            tv.set_device_mesh(mesh)
        w1.outer_split(0, d)
        w1.axis(0).parallelize(DIDX)
        w2.outer_split(1, d)
        w2.axis(1).parallelize(DIDX)
    return fd


def test_device_mesh_layout_and_text() -> None:
    mesh = md.DeviceMesh(torch.arange(6).reshape(2, 3))
    assert str(mesh) == "DeviceMesh{{0 1 2}{3 4 5}}"
    assert mesh.size == 6 and mesh.shape == (2, 3)
    # mesh_x runs along the last dimension, mesh_y along the first.
    assert mesh.extent(ParallelType.mesh_x) == 3 and mesh.extent(ParallelType.mesh_y) == 2
    assert mesh.team(4, ParallelType.mesh_x) == [3, 4, 5]
    assert mesh.team(4, ParallelType.mesh_y) == [1, 4]
    assert mesh.index(5, ParallelType.mesh_y) == 1
    with pytest.raises(Exception, match="repeat"):
        md.DeviceMesh([0, 0])


def test_tp_mlp_propagation_and_host_ir() -> None:
    fd = _tp_mlp()
    prog = md.program_of(fd)
    assert [c.kind for c in prog.communications] == ["Allreduce"]
    assert len(prog.regions) == 1
    text = str(prog.host_ir(0))
    lines = [ln.strip() for ln in text.splitlines()]
    comm = next(ln for ln in lines if ln.startswith("Communication 0"))
    assert comm.startswith("Communication 0 (type=Allreduce, team=(0 1), input=T")
    assert "rdeviceIdx.x" in comm and comm.endswith("(DeviceMesh{0 1}), backend=NCCL)")
    assert lines[lines.index(comm) + 1] == "Wait(Communication 0)"
    # The first linear's output took the weight's sharding (N on mesh_x).
    first = prog.fusion.exprs()[0].output
    assert describe(first) == "mesh_x on axis 1 (split by 2) of DeviceMesh{0 1}"


def test_region_is_localized() -> None:
    fd = _tp_mlp()
    region = md.program_of(fd).regions[0]
    listing = str(region.fusion)
    assert "deviceIdx" not in listing and "DeviceMesh" not in listing
    # w1 [32, 8] split over 2 devices: 16 rows each.
    assert "iS" in listing and "{16}" in listing


def test_local_shape_and_shard_tensor() -> None:
    fd = _tp_mlp()
    w1 = fd.fusion.inputs[1]
    assert local_shape(w1, [32, 8], device=1) == [16, 8]
    t = torch.arange(32 * 8).reshape(32, 8)
    assert torch.equal(md.shard_tensor(t, w1, device=1), t[16:])


def test_saved_file_spells_the_multidevice_api() -> None:
    text = dumps_fusion(_tp_mlp())
    assert "import nvfuser_direct as nvfuser" in text
    assert "mesh0 = nvfuser.multidevice.DeviceMesh(torch.arange(2))" in text
    assert "T1.set_device_mesh(mesh0)\n    T1.outer_split(0, 2)\n    T1.axis(0).parallelize(ParallelType.mesh_x)" in text
    assert "T2.outer_split(1, 2)\n    T2.axis(1).parallelize(ParallelType.mesh_x)" in text


def test_strided_sharding_is_refused_naming_the_tensor() -> None:
    mesh = md.DeviceMesh(torch.arange(2))
    with FusionDefinition() as fd:
        x = fd.define_tensor([-1])
        fd.add_output(fd.ops.neg(x))
        x.set_device_mesh(mesh)
        x.inner_split(0, 2)
        x.axis(1).parallelize(DIDX)
    with pytest.raises(md.MultiDeviceError, match=r"T0: .*strided sharding"):
        md.program_of(fd)


def test_nested_sharding_is_refused_naming_the_tensor() -> None:
    # nvFuser's nested split (test_sharding): tokens split by tp on mesh_x, the inner part
    # split again by cp on mesh_y. One mesh axis per logical axis is what the engine lays out.
    mesh = md.DeviceMesh(torch.arange(4).reshape(2, 2))
    with FusionDefinition() as fd:
        x = fd.define_tensor([-1, -1, 5])
        fd.add_output(fd.ops.neg(x))
        x.set_device_mesh(mesh)
        x.outer_split(1, 2)
        x.axis(1).parallelize(DIDX)
        x.outer_split(2, 2)
        x.axis(2).parallelize(ParallelType.mesh_y)
    with pytest.raises(md.MultiDeviceError, match=r"T0: .* on deviceIdx\.y splits a part of a split axis "
                                                  r"\(one logical axis on two mesh axes, a nested sharding\)"):
        md.program_of(fd)


def test_uneven_split_is_refused() -> None:
    fd = _tp_mlp(d=3)
    with pytest.raises(md.MultiDeviceError, match="does not split evenly over 3 devices"):
        md.program_of(fd)


def test_parallelized_without_mesh_is_refused() -> None:
    with FusionDefinition() as fd:
        x = fd.define_tensor([2, 4])
        fd.add_output(fd.ops.neg(x))
        y = fd.ops.neg(x)
        y.set_device_mesh(md.DeviceMesh([0, 1]))
        x.axis(0).parallelize(DIDX)
    with pytest.raises(md.MultiDeviceError, match="T0: .*no device mesh"):
        md.program_of(fd)


def test_compile_fusion_of_a_multidevice_fusion() -> None:
    """compile_fusion of a meshed fusion (a lone process: rank 0) compiles this rank's regions
    for its shards' sizes and shows the communications in its host IR and segment listing."""
    from engine import compile_fusion

    fd = _tp_mlp()
    cf = compile_fusion(fd, [torch.randn(4, 8), torch.randn(16, 8), torch.randn(8, 16)])
    assert isinstance(cf, md.MultiDeviceCompiledFusion) and cf.rank == 0
    text = str(cf.host_ir)
    assert "Communication 0 (type=Allreduce, team=(0 1)" in text and "Wait(Communication 0)" in text
    assert [s.scheduler for s in cf.segments] == ["expr_eval", "pointwise", "expr_eval"]
    assert "Communication 0 (Allreduce, team=(0 1))" in cf.segmented
    assert sorted(cf.graph.nodes) == ["Communication 0", "region 0"]


def _sharded_input(shape: list[int], mesh: md.DeviceMesh, layout) -> tuple[FusionDefinition, object]:
    with FusionDefinition() as fd:
        tv = fd.define_tensor(shape)
        fd.add_output(tv)
        tv.set_device_mesh(mesh)
        layout(tv)
    return fd, tv


@pytest.mark.parametrize("rank", range(4))
def test_shard_tensor_takes_any_layout_of_splits(rank: int) -> None:
    """nvFuser's shard_tensor unit tests (tests/python/multidevice/test_sharding.py), on 4
    devices: an inner split (strided shards), a split of a split, two mesh axes on one
    logical axis, and a reorder; each device's part against torch's indexing."""
    d, tp = 4, 2
    cp = d // tp
    flat = md.DeviceMesh(torch.arange(d))
    grid = md.DeviceMesh(torch.arange(d).reshape(cp, tp))
    tp_rank, cp_rank = rank % tp, rank // tp

    def inner(tv: object) -> None:
        tv.inner_split(0, d)
        tv.axis(1).parallelize(DIDX)

    _, tv = _sharded_input([-1], flat, inner)
    t = torch.arange(3 * d, dtype=torch.float)
    assert torch.equal(md.shard_tensor(t, tv, device=rank), t.reshape(3, d)[:, rank])

    def nested(tv: object) -> None:
        tv.outer_split(0, 2)
        tv.outer_split(1, d)
        tv.axis(1).parallelize(DIDX)

    _, tv = _sharded_input([-1], flat, nested)
    t = torch.arange(2 * d * 3, dtype=torch.float)
    assert torch.equal(md.shard_tensor(t, tv, device=rank), t.reshape(2, d, 3)[:, rank, :].flatten())

    def context_and_tensor(tv: object) -> None:
        tv.outer_split(1, tp)
        tv.axis(1).parallelize(DIDX)
        tv.outer_split(2, cp)
        tv.axis(2).parallelize(ParallelType.mesh_y)
        tv.reorder({2: 0, 1: 1})

    _, tv = _sharded_input([-1, -1, 5], grid, context_and_tensor)
    b, s = 2, tp * cp * 3
    t = torch.arange(b * s * 5, dtype=torch.float).reshape(b, s, 5)
    want = t.reshape(b, tp, cp, 3, 5)[:, tp_rank, cp_rank, :, :]
    assert torch.equal(md.shard_tensor(t, tv, device=rank), want)

    def vector_2d(tv: object) -> None:
        tv.inner_split(0, tp * 3)
        tv.outer_split(0, cp)
        tv.axis(0).parallelize(ParallelType.mesh_y)
        tv.outer_split(2, tp)
        tv.axis(2).parallelize(DIDX)

    _, tv = _sharded_input([-1], grid, vector_2d)
    t = torch.arange(cp * 2 * tp * 3, dtype=torch.float)
    want = t.reshape(cp * 2, tp * 3)[cp_rank * 2:(cp_rank + 1) * 2, tp_rank * 3:(tp_rank + 1) * 3].flatten()
    assert torch.equal(md.shard_tensor(t, tv, device=rank), want)


def test_shard_tensor_names_a_split_that_does_not_divide() -> None:
    def nested(tv: object) -> None:
        tv.outer_split(0, 2)
        tv.outer_split(1, 2)
        tv.axis(1).parallelize(DIDX)

    _, tv = _sharded_input([-1], md.DeviceMesh(torch.arange(2)), nested)
    with pytest.raises(md.MultiDeviceError, match="T0: axis .* of size 7 does not split evenly by 2"):
        md.shard_tensor(torch.arange(7.0), tv, device=0)


# ---- rfactor of a matmul or linear (nvFuser's test_row_parallel_matmul spelling) -----------------

def _rfactored(op: str = "matmul", d: int = 2, meshed: bool = True, bias: bool = False,
               rows_sharded: bool = False) -> tuple[FusionDefinition, list]:
    """`out` of a matmul [M, K] x [K, N] (a linear [M, K] x [N, K] (+ bias [N])) with K split
    by `d` and rfactored: `local_out` the partial products over each part, `out` their sum.
    Meshed: K sharded on both operands, local_out's part axis on mesh_x."""
    k, n = 4 * d, 3
    mesh = md.DeviceMesh(torch.arange(d))
    with FusionDefinition() as fd:
        a = fd.define_tensor([-1, k])
        if op == "matmul":
            b = fd.define_tensor([k, n])
            out = fd.ops.matmul(a, b)
            ins = [a, b]
        else:
            b = fd.define_tensor([n, k])
            ins = [a, b]
            if bias:
                ins.append(fd.define_tensor([n]))
            out = fd.ops.linear(*ins)
        fd.add_output(out)
        if meshed:
            for t in (*ins, out):
                t.set_device_mesh(mesh)
            a.outer_split(1, d)
            a.axis(1).parallelize(DIDX)
            kb = 0 if op == "matmul" else 1
            b.outer_split(kb, d)
            b.axis(kb).parallelize(DIDX)
        out.outer_split(-1, d)
        local_out = out.rfactor(axes=[-1])
        if meshed:
            local_out.set_device_mesh(mesh)
            local_out.axis(-2).parallelize(DIDX)
        if rows_sharded:
            out.outer_split(0, d)
            out.axis(0).parallelize(DIDX)
    xs = [torch.randn(2 * d, k), torch.randn(k, n) if op == "matmul" else torch.randn(n, k)]
    if bias:
        xs.append(torch.randn(n))
    return fd, xs


def _plain(op: str, xs: list) -> torch.Tensor:
    return xs[0] @ xs[1] if op == "matmul" else torch.nn.functional.linear(*xs)


def test_rfactor_of_a_matmul_splits_it_into_partial_products_and_their_sum() -> None:
    fd, _ = _rfactored(meshed=False)
    text = str(fd.fusion)
    # local_out [M, N, d, r(K/d)] = matmul(...), out [M, N, r(d)] = its sum.
    assert "T3_l_float[iS9{i0}, iS10{3}, iS12{2}rf, rS13{4}rf]\n   = matmul(T0_g_float" in text
    assert "T2_g_float[iS14{i0}, iS15{3}, rS16{2}]\n   = reduction( T3_l_float" in text and "op = add" in text
    assert type(fd.fusion.exprs()[0]).__name__ == "RFactorMatmulOp"


@pytest.mark.parametrize("op, bias", [("matmul", False), ("linear", False), ("linear", True)])
def test_rfactored_matmul_on_one_device_equals_the_plain_one(op: str, bias: bool) -> None:
    """No mesh: the reference evaluator and the compiled fusion (an ATen segment for the
    partial products, a reduction kernel for their sum, emulated) give the plain values; a
    linear's bias is added once, after the sum."""
    fd, xs = _rfactored(op, meshed=False, bias=bias)
    want = _plain(op, xs)
    (got,) = evaluate(fd.fusion, xs)
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
    require_gxx()
    cf = compile_fusion(fd, xs)
    (got,) = cf.run(xs, backend="emulate")
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)


def test_rfactored_linear_bias_is_added_once_after_the_sum() -> None:
    fd, _ = _rfactored("linear", meshed=False, bias=True)
    exprs = fd.fusion.exprs()
    names = [type(e).__name__ for e in exprs]
    assert names == ["RFactorLinearOp", "ReductionOp", "BroadcastOp", "BinaryOp"]
    assert len(exprs[0].inputs) == 2  # the partial products have no bias
    assert fd.fusion.outputs == [exprs[-1].output]  # the biased sum took the output's place


def test_rfactor_of_an_unsplit_matmul_is_refused_naming_the_tensor() -> None:
    with FusionDefinition() as fd:
        out = fd.ops.matmul(fd.define_tensor([-1, 8]), fd.define_tensor([8, 3]))
        fd.add_output(out)
        before = str(fd.fusion)
        with pytest.raises(ScheduleError, match=r"T2: rfactor of a matmul needs its reduction axis rS\d+\{8\} split"):
            out.rfactor(axes=[-1])
    assert str(fd.fusion) == before


@pytest.mark.parametrize("axes, message", [
    ([0], r"T2: rfactor axis iS\d+\{i0\} is not a reduction axis"),
    ([-2, -1], "T2: rfactor must leave at least one reduction axis to the consumer"),
])
def test_rfactor_of_a_matmul_on_other_axes_is_refused_naming_the_tensor(axes: list[int], message: str) -> None:
    with FusionDefinition() as fd:
        out = fd.ops.matmul(fd.define_tensor([-1, 8]), fd.define_tensor([8, 3]))
        fd.add_output(out)
        out.outer_split(-1, 2)
        before = str(fd.fusion)
        with pytest.raises(ScheduleError, match=message):
            out.rfactor(axes=axes)
    assert str(fd.fusion) == before


def test_rfactor_of_the_partial_products_again_is_refused() -> None:
    with FusionDefinition() as fd:
        out = fd.ops.linear(fd.define_tensor([-1, 8]), fd.define_tensor([3, 8]))
        fd.add_output(out)
        out.outer_split(-1, 2)
        local_out = out.rfactor(axes=[-1])
        with pytest.raises(ScheduleError, match="T3: rfactor of a partial linear"):
            local_out.rfactor(axes=[-1])


@pytest.mark.parametrize("op, bias", [("matmul", False), ("linear", True)])
def test_rfactored_row_parallel_matmul_is_one_allreduce(op: str, bias: bool) -> None:
    fd, _ = _rfactored(op, bias=bias)
    prog = md.program_of(fd)
    assert [c.kind for c in prog.communications] == ["Allreduce"]
    lines = [ln.strip() for ln in str(prog.host_ir(0)).splitlines()]
    comm = next(ln for ln in lines if ln.startswith("Communication 0"))
    # The sum over the devices' parts of K, partial on each device (rdeviceIdx.x), reduced.
    assert "rdeviceIdx.x" in comm.split("output=")[0]
    # Each device's partial product holds one part of K: [M, N, 1] locally.
    region = prog.regions[0].fusion
    assert "deviceIdx" not in str(region)
    partial = region.exprs()[0].output
    assert [str(i.extent.inline()) for i in partial.domain.logical[1:]] == ["3", "1", "4"]
    assert str(partial.domain.root[-1].extent.inline()) == "4"


@pytest.mark.parametrize("op, bias", [("matmul", False), ("linear", True)])
def test_rfactored_row_parallel_matmul_with_rows_sharded_is_one_reduce_scatter(op: str, bias: bool) -> None:
    fd, _ = _rfactored(op, bias=bias, rows_sharded=True)
    assert [c.kind for c in md.program_of(fd).communications] == ["ReduceScatter"]


def test_rfactored_partial_products_without_sharded_operands_cut_them_locally() -> None:
    """Replicated operands, the partial product's part of K on the devices: each device cuts
    its block of K from them (no communication), then one Allreduce."""
    mesh = md.DeviceMesh(torch.arange(2))
    with FusionDefinition() as fd:
        a = fd.define_tensor([-1, 8])
        b = fd.define_tensor([8, 3])
        out = fd.ops.matmul(a, b)
        fd.add_output(out)
        for t in (a, b, out):
            t.set_device_mesh(mesh)
        out.outer_split(-1, 2)
        out.rfactor(axes=[-1]).axis(-2).parallelize(DIDX)
    assert [c.kind for c in md.program_of(fd).communications] == ["ShardByDevice", "ShardByDevice", "Allreduce"]


def _k_sharded_matmul(mesh: md.DeviceMesh, schedule) -> tuple[FusionDefinition, object, object]:
    """[-1, 16] x [16, 3], K sharded in blocks on both operands; `schedule(out, mesh)` rfactors."""
    with FusionDefinition() as fd:
        a = fd.define_tensor([-1, 16])
        b = fd.define_tensor([16, 3])
        out = fd.ops.matmul(a, b)
        fd.add_output(out)
        for t in (a, b):
            t.set_device_mesh(mesh)
        a.outer_split(1, 2)
        a.axis(1).parallelize(DIDX)
        b.outer_split(0, 2)
        b.axis(0).parallelize(DIDX)
        schedule(out, mesh)
    return fd, a, b


def _parts_in_4(out, mesh: md.DeviceMesh) -> None:
    """K in 4 parts over 2 devices (propagated from the operands: the part axis split by
    the devices): each device sums its 2 parts locally."""
    out.outer_split(-1, 4)
    out.rfactor(axes=[-1])


def _blocks_split_again(out, mesh: md.DeviceMesh) -> None:
    """K in 2 blocks, one per device (by hand), each in parts of 4 that the partial products
    keep."""
    out.outer_split(-1, 2)
    out.split(-1, 4)
    local_out = out.rfactor(axes=[-1])
    local_out.set_device_mesh(mesh)
    local_out.axis(-3).parallelize(DIDX)


@pytest.mark.parametrize("schedule", [_parts_in_4, _blocks_split_again])
def test_rfactored_parts_of_k_in_blocks_of_the_devices_are_one_allreduce(schedule) -> None:
    mesh = md.DeviceMesh(torch.arange(2))
    fd, a, b = _k_sharded_matmul(mesh, schedule)
    prog = md.program_of(fd)
    assert [c.kind for c in prog.communications] == ["Allreduce"]
    ar, br = torch.randn(4, 16), torch.randn(16, 3)
    region = prog.regions[0].fusion
    parts = [evaluate(region, [md.shard_tensor(ar, a, k), md.shard_tensor(br, b, k)])[0] for k in range(2)]
    torch.testing.assert_close(parts[0] + parts[1], ar @ br, rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("split, axis", [(lambda t: t.split(-1, 4), -2), (lambda t: t.outer_split(-1, 2), -1)])
def test_rfactored_parts_of_k_cut_otherwise_are_refused_naming_the_tensor(split, axis: int) -> None:
    """Only the outer part of K, one index per device, is cut over devices: not 4 parts on
    2 devices without a split, nor the part each device sums."""
    mesh = md.DeviceMesh(torch.arange(2))
    with FusionDefinition() as fd:
        a = fd.define_tensor([-1, 16])
        b = fd.define_tensor([16, 3])
        out = fd.ops.matmul(a, b)
        fd.add_output(out)
        for t in (a, b, out):
            t.set_device_mesh(mesh)
        split(out)
        out.rfactor(axes=[-1]).axis(axis).parallelize(DIDX)
    with pytest.raises(md.MultiDeviceError, match="T3: .* of the parts of K only the outer one can be cut"):
        md.program_of(fd)


def test_rfactored_partial_products_reducing_the_devices_part_are_refused() -> None:
    """rfactor(axes=[-2]) of [r{d}, r{K/d}] reduces the part of K the operands hold on the
    devices within the partial products: refused, naming them."""
    def reduce_outer(out, mesh: md.DeviceMesh) -> None:
        out.outer_split(-1, 2)
        out.rfactor(axes=[-2])

    fd, _, _ = _k_sharded_matmul(md.DeviceMesh(torch.arange(2)), reduce_outer)
    with pytest.raises(md.MultiDeviceError, match="T3: these partial products of an rfactor reduce the part of K"):
        md.program_of(fd)


@pytest.mark.parametrize("merge", [False, True])
def test_a_reshape_of_sharded_heads_is_localized_and_one_kernel(merge: bool) -> None:
    # Attention's head split of a column-sharded projection ([b, s, h*dh] -> [b, h, s, dh])
    # and the merge back: each device's region reshapes its own h/d heads. The reshape's
    # root and its split are this device's part, so one pointwise kernel computes it (with
    # the whole h*dh left as the root, the kernel could not be lowered).
    require_gxx()
    d, b, s, h, dh = 2, 2, 3, 4, 4
    mesh = md.DeviceMesh(torch.arange(d))
    with FusionDefinition() as fd:
        if merge:
            x = fd.define_tensor([b, h, s, dh], contiguity=True, dtype=DataType.Float)
            y = fd.ops.reshape(fd.ops.permute(x, dims=[0, 2, 1, 3]), [b, s, h * dh])
            axis, local = 1, torch.randn(b, h // d, s, dh)
            want = local.permute(0, 2, 1, 3).reshape(b, s, h * dh // d)
        else:
            x = fd.define_tensor([b, s, h * dh], contiguity=True, dtype=DataType.Float)
            y = fd.ops.permute(fd.ops.reshape(x, [b, s, h, dh]), dims=[0, 2, 1, 3])
            axis, local = 2, torch.randn(b, s, h * dh // d)
            want = local.reshape(b, s, h // d, dh).permute(0, 2, 1, 3)
        fd.add_output(fd.ops.mul(y, fd.define_scalar(0.5)))
        x.set_device_mesh(mesh)
        x.outer_split(axis, d)
        x.axis(axis).parallelize(ParallelType.mesh_x)
    (region,) = md.program_of(fd).regions
    view = next(e for e in region.fusion.exprs() if type(e).__name__ == "ViewOp")
    root = [int(i.extent.value) for i in view.output.domain.maybe_root]
    assert root == ([b, s, h // d, dh] if merge else [b, s, h * dh // d])
    cf = compile_fusion(region.fusion, [local])
    assert [seg.scheduler for seg in cf.segments] == ["pointwise"]
    (out,) = cf.run([local], backend="emulate")
    torch.testing.assert_close(out, want * 0.5)
