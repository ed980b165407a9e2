"""Multi-device cases, each run on every rank by tests.multidevice.harness.spawn.

Each builds a fusion with the multidevice API inside the `with FusionDefinition()` block,
gives every rank its shards of the same unsharded tensors (seeded alike), runs the fusion
and compares this rank's outputs with the unsharded computation in torch (sharded alike).
`backend`: reference or emulate (CPU tensors, gloo) or cuda (CUDA tensors, NCCL).
"""

from __future__ import annotations

from collections import Counter

import torch
import torch.nn.functional as F  # noqa: N812 - torch's usual name

import engine.multidevice as md
from engine import DataType, FusionDefinition, ParallelType

DIDX = ParallelType.mesh_x


def _setup(backend: str) -> tuple[md.Communicator, int, torch.device]:
    comm = md.Communicator.instance()
    torch.manual_seed(0)
    dev = (torch.device("cuda", comm.local_rank() % torch.cuda.device_count()) if backend == "cuda"
           else torch.device("cpu"))
    return comm, comm.size(), dev


def _run(fd: FusionDefinition, ins: list[torch.Tensor], backend: str) -> list[torch.Tensor]:
    if backend == "reference":
        return fd.execute(ins)
    return md.execute(fd, ins, backend=backend)


def _kinds(fd: FusionDefinition) -> list[str]:
    return [c.kind for c in md.program_of(fd).communications]


def _shard(t: torch.Tensor, tv: object, dev: torch.device) -> torch.Tensor:
    return md.shard_tensor(t, tv).to(dev)


def _close(out: torch.Tensor, expect: torch.Tensor, **tol: float) -> None:
    torch.testing.assert_close(out.cpu(), expect.cpu(), **tol)


def pointwise_logical_gather(backend: str) -> None:
    """nvFuser's test_pointwise: a [d, 4] input with its device axis on mesh_x; the ops'
    outputs are on the mesh but not parallelized, so the input is gathered first."""
    comm, d, dev = _setup(backend)
    mesh = md.DeviceMesh(torch.arange(d))
    with FusionDefinition() as fd:
        inp = fd.define_tensor((-1, -1), contiguity=False, dtype=DataType.Float)
        t1 = fd.ops.relu(inp)
        t2 = fd.ops.add(t1, t1)
        fd.add_output(t2)
        for tv in (inp, t1, t2):
            tv.set_device_mesh(mesh)
        inp.axis(0).parallelize(DIDX)
    ref = torch.randn(d, 4)
    (out,) = _run(fd, [_shard(ref, inp, dev)], backend)
    assert _kinds(fd) == ["Allgather"]
    _close(out, ref.relu() * 2)


def pointwise_sharded(backend: str) -> None:
    """Outputs left alone take the input's sharding: no communication, local shards out."""
    comm, d, dev = _setup(backend)
    mesh = md.DeviceMesh(torch.arange(d))
    with FusionDefinition() as fd:
        inp = fd.define_tensor((-1, -1), dtype=DataType.Float)
        out_tv = fd.ops.mul(fd.ops.exp(inp), inp)
        fd.add_output(out_tv)
        inp.set_device_mesh(mesh)
        inp.outer_split(1, d)
        inp.axis(1).parallelize(DIDX)
    ref = torch.randn(3, 4 * d)
    (out,) = _run(fd, [_shard(ref, inp, dev)], backend)
    assert _kinds(fd) == []
    prog = md.program_of(fd)
    _close(out, md.shard_tensor(ref.exp() * ref, prog.outputs[0]))
    assert out.shape == (3, 4)


def column_parallel_linear(backend: str) -> None:
    comm, d, dev = _setup(backend)
    mesh = md.DeviceMesh(torch.arange(d))
    e = 6
    with FusionDefinition() as fd:
        inp = fd.define_tensor([-1, -1, e])
        w = fd.define_tensor([d * e, e])
        b = fd.define_tensor([d * e])
        out_tv = fd.ops.linear(inp, w, b)
        fd.add_output(out_tv)
        for t in (inp, w, b):
            t.set_device_mesh(mesh)
        for t in (w, b):
            t.outer_split(0, d)
            t.axis(0).parallelize(DIDX)
    x, wr, br = torch.randn(2, 5, e), torch.randn(d * e, e), torch.randn(d * e)
    (out,) = _run(fd, [_shard(x, inp, dev), _shard(wr, w, dev), _shard(br, b, dev)], backend)
    assert _kinds(fd) == []
    _close(out, mesh.shard_tensor(F.linear(x, wr, br), 2), rtol=1.3e-6, atol=1e-4)


def row_parallel_linear_with_bias(backend: str) -> None:
    """K sharded: partial products, one Allreduce, the bias added once after it."""
    comm, d, dev = _setup(backend)
    mesh = md.DeviceMesh(torch.arange(d))
    e = 5
    with FusionDefinition() as fd:
        inp = fd.define_tensor([-1, -1, d * e])
        w = fd.define_tensor([e, d * e])
        b = fd.define_tensor([e])
        out_tv = fd.ops.linear(inp, w, b)
        fd.add_output(out_tv)
        for t in (inp, w):
            t.set_device_mesh(mesh)
            t.outer_split(-1, d)
            t.axis(-2).parallelize(DIDX)
        b.set_device_mesh(mesh)
    x, wr, br = torch.randn(2, 3, d * e), torch.randn(e, d * e), torch.randn(e)
    (out,) = _run(fd, [_shard(x, inp, dev), _shard(wr, w, dev), _shard(br, b, dev)], backend)
    assert _kinds(fd) == ["Allreduce"]
    _close(out, F.linear(x, wr, br), rtol=1.3e-6, atol=1e-4)


def linear_reduce_scatter(backend: str) -> None:
    """nvFuser's test_linear_reduce_scatter: K sharded on the inputs, the output sharded on
    tokens: one ReduceScatter."""
    comm, d, dev = _setup(backend)
    b_, s, e = 3, 5, 7
    mesh = md.DeviceMesh(torch.arange(d))
    with FusionDefinition() as fd:
        inp = fd.define_tensor([-1, d * s, d * e], dtype=DataType.BFloat16)
        w = fd.define_tensor([-1, d * e], dtype=DataType.BFloat16)
        bias = fd.define_tensor([e], dtype=DataType.BFloat16)
        out_tv = fd.ops.linear(inp, w, bias)
        fd.add_output(out_tv)
        bias.set_device_mesh(mesh)
        for tv in (inp, w, out_tv):
            tv.set_device_mesh(mesh)
            tv.split(-1, d, inner_split=False)
            tv.axis(-2).parallelize(DIDX)
        out_tv.outer_split(1, d)
        out_tv.axis(1).parallelize(DIDX)
    x = torch.randint(-2, 3, (b_, d * s, d * e)).to(torch.bfloat16)
    wr = torch.randint(-2, 3, (e, d * e)).to(torch.bfloat16)
    br = torch.randint(-2, 3, (e,)).to(torch.bfloat16)
    (out,) = _run(fd, [_shard(x, inp, dev), _shard(wr, w, dev), _shard(br, bias, dev)], backend)
    assert _kinds(fd) == ["ReduceScatter"]
    _close(out, md.shard_tensor(F.linear(x, wr, br), out_tv))


def _mlp(d: int, h: int, dtype: DataType, sequence_parallel: bool, chunks: int = 1,
         ring: bool = False) -> tuple[FusionDefinition, list]:
    """`chunks`: the SP Allgather in that many stream chunks; `ring`: nvFuser's ring-based
    spelling (the gathered copy of the tokens split by the devices on a stream axis)."""
    mesh = md.DeviceMesh(torch.arange(d))
    with FusionDefinition() as fd:
        x = fd.define_tensor([-1, h], dtype=dtype, contiguity=True)
        w1 = fd.define_tensor([4 * h, h], dtype=dtype, contiguity=True)
        b1 = fd.define_tensor([4 * h], dtype=dtype, contiguity=True)
        w2 = fd.define_tensor([h, 4 * h], dtype=dtype, contiguity=True)
        b2 = fd.define_tensor([h], dtype=dtype, contiguity=True)
        xs = fd.ops.set(x) if ring else x
        y = fd.ops.linear(xs, w1, b1)
        y = fd.ops.gelu(fd.ops.cast(y, DataType.Float))
        y = fd.ops.cast(y, dtype)
        z = fd.ops.linear(y, w2, b2)
        fd.add_output(z)
        tvs = [x, w1, b1, w2, b2]
        for tv in tvs:
            tv.set_device_mesh(mesh)
        for tv, axis in ((w1, 0), (b1, 0), (w2, 1)):
            tv.outer_split(axis, d)
            tv.axis(axis).parallelize(DIDX)
        if sequence_parallel:
            z.set_device_mesh(mesh)
            for tv in (x, z):
                tv.outer_split(0, d)
                tv.axis(0).parallelize(DIDX)
            if chunks > 1:
                x.outer_split(1, chunks)
                x.axis(1).parallelize(ParallelType.stream)
            if ring:
                xs.set_device_mesh(mesh)
                xs.outer_split(0, d)
                xs.axis(0).parallelize(ParallelType.stream)
    return fd, tvs + [z]


def _mlp_ref(x: torch.Tensor, w1: torch.Tensor, b1: torch.Tensor, w2: torch.Tensor, b2: torch.Tensor) -> torch.Tensor:
    y = F.gelu(F.linear(x, w1, b1).float()).to(x.dtype)
    return F.linear(y, w2, b2)


def _mlp_case(backend: str, sequence_parallel: bool) -> None:
    comm, d, dev = _setup(backend)
    h, t = 8, 4 * d
    fd, tvs = _mlp(d, h, DataType.Float, sequence_parallel)
    ws = [torch.randn(t, h), torch.randn(4 * h, h) / 3, torch.randn(4 * h), torch.randn(h, 4 * h) / 6, torch.randn(h)]
    ins = [_shard(a, tv, dev) for a, tv in zip(ws, tvs)]
    (out,) = _run(fd, ins, backend)
    expect = _mlp_ref(*ws)
    if sequence_parallel:
        assert _kinds(fd) == ["Allgather", "ReduceScatter"]
        _close(out, md.shard_tensor(expect, tvs[-1]), rtol=1e-4, atol=1e-4)
    else:
        assert _kinds(fd) == ["Allreduce"]
        _close(out, expect, rtol=1e-4, atol=1e-4)


def _pipelined(timeline: list) -> bool:
    """The SP MLP's timeline in 2 stream chunks: each chunk's Allgather and ReduceScatter on
    the communication stream, its compute on the main one, then the bias region."""
    rows = Counter((s.stream, s.kind) for s in timeline)
    chunks = [s.step for s in timeline if "chunk" in s.step]
    return rows == Counter({("comm", "Allgather"): 2, ("main", "compute"): 3, ("comm", "ReduceScatter"): 2}) and \
        len(chunks) == 6 and all(s.start <= s.end for s in timeline)


def sp_mlp_overlap(backend: str) -> None:
    """Sequence parallel with the Allgather split in 2 stream chunks, each overlapping the
    MLP's compute on the chunk before: the same values, one overlapped step."""
    comm, d, dev = _setup(backend)
    h, t = 8, 4 * d
    fd, tvs = _mlp(d, h, DataType.Float, True, chunks=2)
    ws = [torch.randn(t, h), torch.randn(4 * h, h) / 3, torch.randn(4 * h), torch.randn(h, 4 * h) / 6, torch.randn(h)]
    ins = [_shard(a, tv, dev) for a, tv in zip(ws, tvs)]
    timeline: list = []
    (out,) = md.execute(fd, ins, backend=backend, timeline=timeline)
    assert _pipelined(timeline), timeline
    assert "FOR StreamIdx in" in str(md.program_of(fd).host_ir(comm.rank()))
    _close(out, md.shard_tensor(_mlp_ref(*ws), tvs[-1]), rtol=1e-4, atol=1e-4)


def _ring_steps(timeline: list, d: int) -> bool:
    """A ring pipeline's timeline on d devices: d - 1 shifts of the gathered blocks on the
    communication stream, a compute per block on the main one (this device's own block
    first)."""
    comm = md.Communicator.instance()
    rows = Counter((s.stream, s.kind) for s in timeline if "ring step" in s.step or "block" in s.step)
    want = Counter({("comm", "Allgather"): d - 1, ("main", "compute"): d})
    blocks = [s.step for s in timeline if " block " in s.step]
    return rows == want and blocks[0].endswith(f"block {comm.rank()}")


def sp_mlp_ring(backend: str) -> None:
    """Sequence parallel in nvFuser's ring-based spelling: the gathered copy of the tokens
    (`set`) split by the devices on a stream axis. Each device computes its own block of
    tokens first while the next arrives from its neighbour; the partial sums are then
    reduce-scattered: the same values as the unsharded MLP."""
    comm, d, dev = _setup(backend)
    h, t = 8, 4 * d
    fd, tvs = _mlp(d, h, DataType.Float, True, ring=True)
    ws = [torch.randn(t, h), torch.randn(4 * h, h) / 3, torch.randn(4 * h), torch.randn(h, 4 * h) / 6, torch.randn(h)]
    ins = [_shard(a, tv, dev) for a, tv in zip(ws, tvs)]
    timeline: list = []
    (out,) = md.execute(fd, ins, backend=backend, timeline=timeline)
    assert _ring_steps(timeline, d), timeline
    assert [s.kind for s in timeline if "ring step" not in s.step and " block " not in s.step] == \
        ["ReduceScatter", "compute"], timeline
    text = str(md.program_of(fd).host_ir(comm.rank()))
    loop, after = text.split("SetCurrentStream to Stream 0")
    assert "FOR StreamIdx in iStreamIdx" in loop and "Communication 0 (type=SendRecv" in loop, text
    assert "Communication 1 (type=ReduceScatter" in after, text
    _close(out, md.shard_tensor(_mlp_ref(*ws), tvs[-1]), rtol=1e-4, atol=1e-4)


def column_parallel_linear_ring(backend: str) -> None:
    """nvFuser's test_column_parallel_linear_forward: the tokens gathered block by block
    around the ring into a column-parallel linear, whose output keeps every token."""
    comm, d, dev = _setup(backend)
    h, t = 2, 6 * d
    mesh = md.DeviceMesh(torch.arange(d))
    with FusionDefinition() as fd:
        inp = fd.define_tensor((-1, h), contiguity=True, dtype=DataType.Float)
        weight = fd.define_tensor((4 * h, h), contiguity=True, dtype=DataType.Float)
        ag = fd.ops.set(inp)
        out_tv = fd.ops.linear(ag, weight)
        fd.add_output(out_tv)
        for tv in (inp, weight):
            tv.set_device_mesh(mesh)
            tv.outer_split(0, d)
            tv.axis(0).parallelize(DIDX)
        ag.set_device_mesh(mesh)
        ag.outer_split(0, d)
        ag.axis(0).parallelize(ParallelType.stream)
    x, w = torch.randn(t, h), torch.randn(4 * h, h)
    timeline: list = []
    (out,) = md.execute(fd, [_shard(x, inp, dev), _shard(w, weight, dev)], backend=backend, timeline=timeline)
    assert _ring_steps(timeline, d), timeline
    assert tuple(out.shape) == (t, 4 * h // d)
    _close(out, md.shard_tensor(F.linear(x, w), md.program_of(fd).outputs[0]), rtol=1e-5, atol=1e-5)


def linear_logical_split(backend: str) -> None:
    """nvFuser's test_linear_logical_split: a weight [d, e, e] and bias [d, e] whose leading
    axis is the device axis itself; the output [d, b, s, e] is sharded on it, with no
    communication."""
    comm, d, dev = _setup(backend)
    b, s, e = 2, 4, 8
    mesh = md.DeviceMesh(torch.arange(d))
    with FusionDefinition() as fd:
        inp = fd.define_tensor([b, s, e])
        weight = fd.define_tensor([d, e, e], contiguity=True)
        bias = fd.define_tensor([d, e], contiguity=True)
        fd.add_output(fd.ops.linear(inp, weight, bias))
        for t in (inp, weight, bias):
            t.set_device_mesh(mesh)
        for t in (weight, bias):
            t.axis(0).parallelize(DIDX)
    x, w, bs = torch.randn(b, s, e), torch.randn(d, e, e), torch.randn(d, e)
    (out,) = _run(fd, [_shard(x, inp, dev), _shard(w, weight, dev), _shard(bs, bias, dev)], backend)
    assert _kinds(fd) == []
    want = F.linear(x, w.view(-1, e), bs.view(-1)).view(b, s, d, e).permute(2, 0, 1, 3)
    _close(out, mesh.shard_tensor(want, 0), rtol=1.3e-6, atol=1e-4)


def sp_mlp_overlap_uneven_rows(backend: str) -> None:
    """Tokens whose rows on a device do not split into the stream chunks: an ExecutionError
    naming the tensor, and the same fusion then runs on rows that do."""
    import pytest

    from engine.errors import ExecutionError

    comm, d, dev = _setup(backend)
    h = 8
    fd, tvs = _mlp(d, h, DataType.Float, True, chunks=2)
    for t, fits in ((3 * d, False), (4 * d, True)):
        ws = [torch.randn(t, h), torch.randn(4 * h, h) / 3, torch.randn(4 * h), torch.randn(h, 4 * h) / 6,
              torch.randn(h)]
        ins = [_shard(a, tv, dev) for a, tv in zip(ws, tvs)]
        if not fits:
            with pytest.raises(ExecutionError, match="T0: its 3 rows on this device do not split into 2 stream"):
                md.execute(fd, ins, backend=backend)
            continue
        (out,) = md.execute(fd, ins, backend=backend)
        _close(out, md.shard_tensor(_mlp_ref(*ws), tvs[-1]), rtol=1e-4, atol=1e-4)


def tp_mlp(backend: str) -> None:
    """Tensor parallel: weights sharded column then row, one Allreduce."""
    _mlp_case(backend, sequence_parallel=False)


def sp_mlp(backend: str) -> None:
    """Sequence parallel: tokens sharded in and out: Allgather, then ReduceScatter."""
    _mlp_case(backend, sequence_parallel=True)


def ddp_batch(backend: str) -> None:
    """Data parallel: the batch sharded, weights replicated: no communication forward."""
    comm, d, dev = _setup(backend)
    mesh = md.DeviceMesh(torch.arange(d))
    with FusionDefinition() as fd:
        x = fd.define_tensor([-1, -1, 8])
        w = fd.define_tensor([6, 8])
        y = fd.ops.linear(x, w)
        z = fd.ops.sum(fd.ops.mul(y, y), dims=[2])
        fd.add_output(z)
        for tv in (x, w):
            tv.set_device_mesh(mesh)
        x.outer_split(0, d)
        x.axis(0).parallelize(DIDX)
    xr, wr = torch.randn(2 * d, 3, 8), torch.randn(6, 8)
    (out,) = _run(fd, [_shard(xr, x, dev), _shard(wr, w, dev)], backend)
    assert _kinds(fd) == []
    _close(out, mesh.shard_tensor(F.linear(xr, wr).square().sum(2), 0), rtol=1e-5, atol=1e-4)


def sum_over_devices(backend: str) -> None:
    """A sum and a max over the sharded axis: local partials, then Allreduce (sum, max)."""
    comm, d, dev = _setup(backend)
    mesh = md.DeviceMesh(torch.arange(d))
    with FusionDefinition() as fd:
        x = fd.define_tensor([-1, -1])
        s = fd.ops.sum(x, dims=[1])
        m = fd.ops.max(x, dims=[1])
        fd.add_output(s)
        fd.add_output(m)
        x.set_device_mesh(mesh)
        x.outer_split(1, d)
        x.axis(1).parallelize(DIDX)
    xr = torch.randn(5, 3 * d)
    s_out, m_out = _run(fd, [_shard(xr, x, dev)], backend)
    assert _kinds(fd) == ["Allreduce", "Allreduce"]
    _close(s_out, xr.sum(1), rtol=1e-5, atol=1e-5)
    _close(m_out, xr.amax(1))


def row_parallel_matmul(backend: str) -> None:
    comm, d, dev = _setup(backend)
    mesh = md.DeviceMesh(torch.arange(d))
    e = 8
    with FusionDefinition() as fd:
        a = fd.define_tensor([-1, d * e], contiguity=True)
        b = fd.define_tensor([d * e, e], contiguity=True)
        out_tv = fd.ops.matmul(a, b)
        fd.add_output(out_tv)
        for t in (a, b):
            t.set_device_mesh(mesh)
        a.outer_split(-1, d)
        a.axis(-2).parallelize(DIDX)
        b.outer_split(0, d)
        b.axis(0).parallelize(DIDX)
    ar, br = torch.randn(4, d * e), torch.randn(d * e, e)
    (out,) = _run(fd, [_shard(ar, a, dev), _shard(br, b, dev)], backend)
    assert _kinds(fd) == ["Allreduce"]
    _close(out, ar @ br, rtol=1e-5, atol=1e-4)


def _k_sharded_matmul(fd: FusionDefinition, mesh: md.DeviceMesh, d: int, e: int) -> tuple:
    """a [M, d*e] @ b [d*e, e] with K sharded on both operands, its output's K split by the
    devices and rfactored by hand: (a, b, out, the partial matmul)."""
    a = fd.define_tensor([-1, d * e], contiguity=True)
    b = fd.define_tensor([d * e, e], contiguity=True)
    out_tv = fd.ops.matmul(a, b)
    fd.add_output(out_tv)
    for t in (a, b, out_tv):
        t.set_device_mesh(mesh)
    a.outer_split(-1, d)
    a.axis(-2).parallelize(DIDX)
    b.outer_split(0, d)
    b.axis(0).parallelize(DIDX)
    # [i{M}, i{N}, r{K}] -> [i{M}, i{N}, r{d}, r{K/d}]
    out_tv.outer_split(-1, d)
    # local_out [i{M}, i{N}, i{d}, r{K/d}]; out [i{M}, i{N}, r{d}]
    local_out = out_tv.rfactor(axes=[-1])
    local_out.axis(-2).parallelize(DIDX)
    return a, b, out_tv, local_out


def row_parallel_matmul_manual_rfactor(backend: str) -> None:
    """nvFuser's test_row_parallel_matmul: K sharded on both operands, and the output's K
    split by the devices and rfactored by hand. The partial matmul holds this device's
    part of K (its axis of d on mesh_x), the sum over that axis is one Allreduce."""
    comm, d, dev = _setup(backend)
    mesh = md.DeviceMesh(torch.arange(d))
    e = 8
    with FusionDefinition() as fd:
        a, b, _, local_out = _k_sharded_matmul(fd, mesh, d, e)
        local_out.set_device_mesh(mesh)
    ar, br = torch.randn(4, d * e), torch.randn(d * e, e)
    (out,) = _run(fd, [_shard(ar, a, dev), _shard(br, b, dev)], backend)
    assert _kinds(fd) == ["Allreduce"]
    _close(out, ar @ br, rtol=1e-5, atol=1e-4)


def row_parallel_linear_manual_rfactor(backend: str) -> None:
    """A row-parallel linear rfactored by hand: partial products on each device, one
    Allreduce, the bias added once after it."""
    comm, d, dev = _setup(backend)
    mesh = md.DeviceMesh(torch.arange(d))
    e = 5
    with FusionDefinition() as fd:
        inp = fd.define_tensor([-1, -1, d * e])
        w = fd.define_tensor([e, d * e])
        b = fd.define_tensor([e])
        out_tv = fd.ops.linear(inp, w, b)
        fd.add_output(out_tv)
        for t in (inp, w, b, out_tv):
            t.set_device_mesh(mesh)
        for t in (inp, w):
            t.outer_split(-1, d)
            t.axis(-2).parallelize(DIDX)
        out_tv.outer_split(-1, d)
        local_out = out_tv.rfactor(axes=[-1])
        local_out.axis(-2).parallelize(DIDX)
    x, wr, br = torch.randn(2, 3, d * e), torch.randn(e, d * e), torch.randn(e)
    (out,) = _run(fd, [_shard(x, inp, dev), _shard(wr, w, dev), _shard(br, b, dev)], backend)
    assert _kinds(fd) == ["Allreduce"]
    _close(out, F.linear(x, wr, br), rtol=1.3e-6, atol=1e-4)


def row_parallel_matmul_manual_rfactor_scatter(backend: str) -> None:
    """The rfactored row-parallel matmul with its output's rows sharded too: the sum over
    the devices' parts of K is one ReduceScatter."""
    comm, d, dev = _setup(backend)
    mesh = md.DeviceMesh(torch.arange(d))
    e = 8
    with FusionDefinition() as fd:
        a, b, out_tv, _ = _k_sharded_matmul(fd, mesh, d, e)
        out_tv.outer_split(0, d)
        out_tv.axis(0).parallelize(DIDX)
    ar, br = torch.randn(3 * d, d * e), torch.randn(d * e, e)
    (out,) = _run(fd, [_shard(ar, a, dev), _shard(br, b, dev)], backend)
    assert _kinds(fd) == ["ReduceScatter"]
    _close(out, md.shard_tensor(ar @ br, out_tv), rtol=1e-5, atol=1e-4)


def pipeline_send_recv(backend: str) -> None:
    """Stage 0 on device 0, stage 1 on the last device: a SendRecv between them; then a
    Broadcast of stage 1's result to every device."""
    comm, d, dev = _setup(backend)
    m0, m1, everyone = md.DeviceMesh([0]), md.DeviceMesh([d - 1]), md.DeviceMesh(torch.arange(d))
    with FusionDefinition() as fd:
        x = fd.define_tensor([-1, -1])
        y = fd.ops.exp(x)
        z = fd.ops.mul(y, y)
        w = fd.ops.add(z, z)
        fd.add_output(w)
        for tv in (x, y):
            tv.set_device_mesh(m0)
        z.set_device_mesh(m1)
        w.set_device_mesh(everyone)
    xr = torch.randn(3, 5)
    x_local = xr.to(dev) if comm.rank() == 0 else xr.new_empty(0, 0).to(dev)
    (out,) = _run(fd, [x_local], backend)
    assert _kinds(fd) == ["SendRecv", "Broadcast"]
    _close(out, xr.exp().square() * 2)


def mesh_2d(backend: str) -> None:
    """A (d, 1) mesh: mesh_y runs along its first dimension (d devices), mesh_x along the
    second (one device)."""
    comm, d, dev = _setup(backend)
    mesh = md.DeviceMesh(torch.arange(d).reshape(d, 1))
    with FusionDefinition() as fd:
        x = fd.define_tensor([-1, -1])
        y = fd.ops.sum(fd.ops.neg(x), dims=[0])
        fd.add_output(y)
        x.set_device_mesh(mesh)
        x.outer_split(0, d)
        x.axis(0).parallelize(ParallelType.mesh_y)
    xr = torch.randn(2 * d, 3)
    (out,) = _run(fd, [_shard(xr, x, dev)], backend)
    assert _kinds(fd) == ["Allreduce"]
    _close(out, -xr.sum(0), rtol=1e-5, atol=1e-5)


def _sample(name: str, backend: str) -> None:
    """A bundled multi-device sample as `fusescope run --ranks` runs it: the file's global
    inputs (one seed on every rank), this rank's shards, values against this rank's shard of
    the unsharded reference."""
    from engine import load_fusion
    from engine.reference import evaluate
    from tests.multidevice.samples import MULTIDEVICE, SAMPLES

    comm, d, dev = _setup(backend)
    fd = load_fusion(SAMPLES / f"{name}.py")
    xs = fd.example_inputs(device="cpu", seed=0)
    ins = [_shard(x, tv, dev) for x, tv in zip(xs, fd.fusion.inputs)]
    outs = md.execute(fd, ins, backend=backend)
    prog = md.program_of(fd)
    assert _kinds(fd) == MULTIDEVICE[name]
    for k, (out, ref) in enumerate(zip(outs, evaluate(fd.fusion, xs))):
        _close(out, md.shard_tensor(ref, prog.outputs[k]), rtol=1e-4, atol=1e-4)


def sample_tp_mlp(backend: str) -> None:
    _sample("multidevice_tp_mlp", backend)


def sample_sp_mlp(backend: str) -> None:
    _sample("multidevice_sp_mlp", backend)


def reshape_keeps_sharded_axis(backend: str) -> None:
    """A reshape that merges the unsharded axes and keeps the sharded one whole: the
    sharding follows it, no communication."""
    comm, d, dev = _setup(backend)
    mesh = md.DeviceMesh(torch.arange(d))
    with FusionDefinition() as fd:
        x = fd.define_tensor([2, 3, 4 * d])
        y = fd.ops.reshape(x, [6, 4 * d])
        z = fd.ops.mul(y, y)
        fd.add_output(z)
        x.set_device_mesh(mesh)
        x.outer_split(2, d)
        x.axis(2).parallelize(DIDX)
    xr = torch.randn(2, 3, 4 * d)
    (out,) = _run(fd, [_shard(xr, x, dev)], backend)
    assert _kinds(fd) == []
    _close(out, mesh.shard_tensor((xr * xr).reshape(6, 4 * d), 1))


def mean_over_devices(backend: str) -> None:
    """A mean over the sharded axis of symbolic extent: the divisor is the whole axis'
    extent, which the region after the Allreduce holds no tensor of."""
    comm, d, dev = _setup(backend)
    mesh = md.DeviceMesh(torch.arange(d))
    with FusionDefinition() as fd:
        x = fd.define_tensor([-1, -1])
        m = fd.ops.mean(x, dims=[1])
        fd.add_output(fd.ops.add(m, m))
        x.set_device_mesh(mesh)
        x.outer_split(1, d)
        x.axis(1).parallelize(DIDX)
    xr = torch.randn(5, 3 * d)
    (out,) = _run(fd, [_shard(xr, x, dev)], backend)
    _close(out, xr.mean(1) * 2, rtol=1e-5, atol=1e-5)


def compiled_program(backend: str) -> None:
    """compile_fusion on each rank: its host IR names its team, its run gives fd.execute's
    values, the overlapped SP form included."""
    from engine import compile_fusion

    comm, d, dev = _setup(backend)
    h, t = 8, 4 * d
    fd, tvs = _mlp(d, h, DataType.Float, True, chunks=2)
    ws = [torch.randn(t, h), torch.randn(4 * h, h) / 3, torch.randn(4 * h), torch.randn(h, 4 * h) / 6, torch.randn(h)]
    ins = [_shard(a, tv, dev) for a, tv in zip(ws, tvs)]
    cf = compile_fusion(fd, ins)
    assert cf.rank == comm.rank()
    text = str(cf.host_ir)
    assert "FOR StreamIdx in" in text and "Communication 1 (type=ReduceScatter, team=(0 1)" in text
    (out,) = cf.run(ins, backend=backend, timeline=True)
    assert _pipelined(cf.last_timeline), cf.last_timeline
    _close(out, md.shard_tensor(_mlp_ref(*ws), tvs[-1]), rtol=1e-4, atol=1e-4)


def column_parallel_matmul(backend: str) -> None:
    """nvFuser's test_column_parallel_matmul: the weight's N and the output's N sharded by the
    user (the output's loop split at its N axis, before the reduction axis)."""
    comm, d, dev = _setup(backend)
    e = 8
    mesh = md.DeviceMesh(torch.arange(d))
    with FusionDefinition() as fd:
        inp = fd.define_tensor([-1, -1, e])
        w = fd.define_tensor([e, d * e])
        out_tv = fd.ops.matmul(inp, w)
        fd.add_output(out_tv)
        for t in (inp, w, out_tv):
            t.set_device_mesh(mesh)
        w.outer_split(-1, d)
        w.axis(-2).parallelize(DIDX)
        out_tv.outer_split(-2, d)
        out_tv.axis(-3).parallelize(DIDX)
    x, wr = torch.randn(2, 5, e), torch.randn(e, d * e)
    (out,) = _run(fd, [_shard(x, inp, dev), _shard(wr, w, dev)], backend)
    assert _kinds(fd) == []
    _close(out, mesh.shard_tensor(x @ wr, 2), rtol=1e-5, atol=1e-4)


def sharded_then_replicated_output(backend: str) -> None:
    """A user-annotated replicated output of an op on a sharded input: the input is gathered
    (nvFuser inserts the Allgather), the output whole on every rank."""
    comm, d, dev = _setup(backend)
    mesh = md.DeviceMesh(torch.arange(d))
    with FusionDefinition() as fd:
        x = fd.define_tensor([-1, -1])
        y = fd.ops.mul(x, x)
        z = fd.ops.sum(y, dims=[0])
        fd.add_output(y)
        fd.add_output(z)
        for t in (x, y):
            t.set_device_mesh(mesh)
        x.outer_split(0, d)
        x.axis(0).parallelize(DIDX)
    xr = torch.randn(2 * d, 3)
    y_out, z_out = _run(fd, [_shard(xr, x, dev)], backend)
    _close(y_out, xr * xr)
    _close(z_out, (xr * xr).sum(0), rtol=1e-5, atol=1e-5)


def communication_ops(backend: str) -> None:
    """nvFuser's communication tests in one: a `set` from sharded to replicated is an
    Allgather; a sum over a logical device axis into an output sharded on another axis is a
    ReduceScatter, into a replicated one an Allreduce."""
    comm, d, dev = _setup(backend)
    mesh = md.DeviceMesh(torch.arange(d))
    with FusionDefinition() as fd:
        a = fd.define_tensor([d * 4])
        b = fd.define_tensor([d, d * 3])
        gathered = fd.ops.set(a)
        scattered = fd.ops.sum(b, [0])
        reduced = fd.ops.sum(b, [0])
        for t in (gathered, scattered, reduced):
            fd.add_output(t)
        for t in (a, b, gathered, scattered, reduced):
            t.set_device_mesh(mesh)
        a.outer_split(0, d)
        a.axis(0).parallelize(DIDX)
        b.axis(0).parallelize(DIDX)
        scattered.outer_split(-1, d)
        scattered.axis(-2).parallelize(DIDX)
    ar, br = torch.randn(d * 4), torch.randn(d, d * 3)
    g, s, r = _run(fd, [_shard(ar, a, dev), _shard(br, b, dev)], backend)
    assert sorted(_kinds(fd)) == ["Allgather", "Allreduce", "ReduceScatter"]
    _close(g, ar)
    _close(s, mesh.shard_tensor(br.sum(0), 0), rtol=1e-5, atol=1e-5)
    _close(r, br.sum(0), rtol=1e-5, atol=1e-5)


def attention_fwd_bwd(fd: FusionDefinition, shape: list[int]) -> list:
    """q, k, v and the output grad of `shape`, causal attention forward and backward as
    outputs (out, grad_q, grad_k, grad_v); returns the four inputs."""
    q, k, v, go = (fd.define_tensor(shape, contiguity=True, dtype=DataType.Float) for _ in range(4))
    p = fd.define_scalar(0.0, dtype=DataType.Double)
    causal = fd.define_scalar(True, dtype=DataType.Bool)
    out, lse, seed, offset = fd.ops.sdpfa_fwd(q, k, v, dropout_p=p, is_causal=causal)
    for t in (out, *fd.ops.sdpfa_bwd(go, q, k, v, out, lse, p, causal, seed, offset)):
        fd.add_output(t)
    return [q, k, v, go]


def attention_reference(b: int, h: int, s: int, e: int) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
    """Unsharded q, k, v, output grad [b, h, s, e], and torch's (out, grad_q, grad_k, grad_v)."""
    qkv = [torch.randn(b, h, s, e, requires_grad=True) for _ in range(3)]
    gr = torch.randn(b, h, s, e)
    ref = F.scaled_dot_product_attention(*qkv, is_causal=True)
    ref.backward(gr)
    return [t.detach() for t in (*qkv, gr)], [t.detach() for t in (ref, *(t.grad for t in qkv))]


def head_parallel_attention(backend: str) -> None:
    """Attention with its heads sharded (q, k, v outer-split on the head axis): each device
    attends over its own heads, forward and backward, with no communication; the output and
    the grads come out head-sharded."""
    comm, d, dev = _setup(backend)
    b, h, s, e = 2, 2 * d, 16, 8
    mesh = md.DeviceMesh(torch.arange(d))
    with FusionDefinition() as fd:
        tvs = attention_fwd_bwd(fd, [b, h, s, e])
        for t in tvs:
            t.set_device_mesh(mesh)
            t.outer_split(1, d)
            t.axis(1).parallelize(DIDX)
    ins, wants = attention_reference(b, h, s, e)
    outs = _run(fd, [_shard(t, tv, dev) for t, tv in zip(ins, tvs)], backend)
    assert _kinds(fd) == []
    for got, want in zip(outs, wants):
        _close(got, mesh.shard_tensor(want, 1), rtol=1e-4, atol=1e-4)


def whole_tensor_for_a_shard(backend: str) -> None:
    """The whole tensor passed where this rank's shard is due: an error naming the input, its
    axis and the sizes, on every rank, before anything runs."""
    import pytest

    from engine import ExecutionError

    comm, d, dev = _setup(backend)
    fd, tvs = _mlp(d, 8, DataType.Float, False)
    ws = [torch.randn(4, 8), torch.randn(32, 8), torch.randn(32), torch.randn(8, 32), torch.randn(8)]
    ins = [_shard(a, tv, dev) for a, tv in zip(ws, tvs)]
    ins[1] = ws[1].to(dev)
    with pytest.raises(ExecutionError, match=rf"T1: axis 0 of its input has 32 elements on rank {comm.rank()}; "
                       rf"sharded on mesh_x over {d} devices it holds {32 // d} of 32"):
        _run(fd, ins, backend)


# Cases kept in modules of their own, found here by the harness.
from tests.multidevice.cases_layouts import (  # noqa: E402
    attention_device_axis,
    expand_to_sharded_axis,
    heads_from_sharded_reshape,
    heads_merged_back,
    linear_backward_symbolic_tokens,
    permuted_between_regions,
    sharded_expanded_input,
    sp_layer_norm,
    tp_attention_block,
)

__all__ = ["attention_device_axis", "expand_to_sharded_axis", "heads_from_sharded_reshape", "heads_merged_back", "linear_backward_symbolic_tokens",
           "permuted_between_regions", "sharded_expanded_input", "sp_layer_norm",
           "tp_attention_block"]
