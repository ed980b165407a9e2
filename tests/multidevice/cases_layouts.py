"""Multi-device cases about layouts (run by tests.multidevice.harness through cases.py):
expanded broadcasts over sharded axes, and tensors passed between regions laid out
otherwise than the next region declares (a permute's output, a gathered expansion)."""

from __future__ import annotations

import torch
import torch.nn.functional as F  # noqa: N812 - torch's usual name

import engine.multidevice as md
from engine import DataType, FusionDefinition, ParallelType
from tests.multidevice.cases import (
    _close,
    _kinds,
    _run,
    _setup,
    _shard,
    attention_fwd_bwd,
    attention_reference,
)

DIDX = ParallelType.mesh_x


def sp_layer_norm(backend: str) -> None:
    """A LayerNorm written out in ops over a tensor sharded on its rows (sequence
    parallel): the mean and rstd broadcast and expanded to the row's full width, which each
    device expands to its own rows. No communication."""
    comm, d, dev = _setup(backend)
    mesh = md.DeviceMesh(torch.arange(d))
    n, h = 4 * d, 8
    with FusionDefinition() as fd:
        x = fd.define_tensor([n, h], contiguity=True, dtype=DataType.Float)
        w = fd.define_tensor([h], contiguity=True, dtype=DataType.Float)
        var, mean = fd.ops.var_mean(x, dims=[1], correction=0, keepdim=False)
        mean_b = fd.ops.broadcast_in_dim(mean, shape=[n, h], broadcast_dims=[0])
        rstd = fd.ops.rsqrt(fd.ops.add(var, fd.define_scalar(1e-5)))
        rstd_b = fd.ops.broadcast_in_dim(rstd, shape=[n, h], broadcast_dims=[0])
        w_b = fd.ops.broadcast_in_dim(w, shape=[n, h], broadcast_dims=[1])
        fd.add_output(fd.ops.mul(fd.ops.mul(fd.ops.sub(x, mean_b), rstd_b), w_b))
        for tv in (x, w):
            tv.set_device_mesh(mesh)
        x.outer_split(0, d)
        x.axis(0).parallelize(DIDX)
    xs, ws = torch.randn(n, h), torch.randn(h)
    (out,) = _run(fd, [_shard(xs, x, dev), ws.to(dev)], backend)
    assert _kinds(fd) == []
    want = torch.nn.functional.layer_norm(xs, [h], ws, None, 1e-5)
    _close(out, mesh.shard_tensor(want, 0), rtol=1e-4, atol=1e-4)


def expand_to_sharded_axis(backend: str) -> None:
    """A replicated [r] tensor broadcast and expanded to [r, n] and added to x sharded on n:
    the expansion is cut like x (each device expands to its part)."""
    comm, d, dev = _setup(backend)
    mesh = md.DeviceMesh(torch.arange(d))
    with FusionDefinition() as fd:
        x = fd.define_tensor([3, 4 * d], contiguity=True, dtype=DataType.Float)
        r = fd.define_tensor([3], contiguity=True, dtype=DataType.Float)
        fd.add_output(fd.ops.add(x, fd.ops.broadcast_in_dim(r, [3, 4 * d], [0])))
        for tv in (x, r):
            tv.set_device_mesh(mesh)
        x.outer_split(1, d)
        x.axis(1).parallelize(DIDX)
    xs, rs = torch.randn(3, 4 * d), torch.randn(3)
    (out,) = _run(fd, [_shard(xs, x, dev), rs.to(dev)], backend)
    assert _kinds(fd) == []
    _close(out, mesh.shard_tensor(xs + rs[:, None], 1))


def sharded_expanded_input(backend: str) -> None:
    """An input whose expanded broadcast axis is the sharded one: each rank passes its part
    of the expansion (a stride-0 view of its own length)."""
    comm, d, dev = _setup(backend)
    mesh = md.DeviceMesh(torch.arange(d))
    with FusionDefinition() as fd:
        b = fd.define_tensor([2, 3 * d], contiguity=[True, None], dtype=DataType.Float,
                             stride_order=[1, 0])
        fd.add_output(fd.ops.mul(b, fd.define_scalar(2.0)))
        b.set_device_mesh(mesh)
        b.outer_split(1, d)
        b.axis(1).parallelize(DIDX)
    col = torch.randn(2, 1)
    local = col.expand(2, 3).to(dev)
    (out,) = _run(fd, [local], backend)
    _close(out, (col * 2).expand(2, 3))


def permuted_between_regions(backend: str) -> None:
    """A permute's output (a transposed view) handed to the region after an Allreduce: the
    next region reads it laid out as it declares."""
    comm, d, dev = _setup(backend)
    mesh = md.DeviceMesh(torch.arange(d))
    with FusionDefinition() as fd:
        x = fd.define_tensor([4, 2 * d], contiguity=True, dtype=DataType.Float)
        s = fd.ops.sum(x, dims=[1])  # partial over devices: an Allreduce
        p = fd.ops.permute(fd.ops.mul(x, x), dims=[1, 0])
        sb = fd.ops.broadcast_in_dim(s, shape=[2 * d, 4], broadcast_dims=[1])
        fd.add_output(fd.ops.add(fd.ops.exp(p), sb))
        x.set_device_mesh(mesh)
        x.outer_split(1, d)
        x.axis(1).parallelize(DIDX)
    xs = torch.randn(4, 2 * d)
    (out,) = _run(fd, [_shard(xs, x, dev)], backend)
    want = torch.exp((xs * xs).t()) + xs.sum(1)[None, :]
    assert "Allreduce" in _kinds(fd)
    _close(out, mesh.shard_tensor(want, 0), rtol=1e-5, atol=1e-5)


def heads_from_sharded_reshape(backend: str) -> None:
    """Attention's head split of a column-parallel projection: [b, s, h * dh] sharded on
    its last axis reshaped to [b, s, h, dh] and permuted to [b, h, s, dh]: each device's
    block of columns is whole heads, so the heads stay sharded and nothing is gathered."""
    comm, d, dev = _setup(backend)
    mesh = md.DeviceMesh(torch.arange(d))
    b, s, h, dh = 2, 3, 2 * d, 4
    with FusionDefinition() as fd:
        x = fd.define_tensor([b, s, h * dh], contiguity=True, dtype=DataType.Float)
        heads = fd.ops.permute(fd.ops.reshape(x, [b, s, h, dh]), dims=[0, 2, 1, 3])
        fd.add_output(fd.ops.mul(heads, fd.define_scalar(0.5)))
        x.set_device_mesh(mesh)
        x.outer_split(2, d)
        x.axis(2).parallelize(DIDX)
    xs = torch.randn(b, s, h * dh)
    (out,) = _run(fd, [_shard(xs, x, dev)], backend)
    assert _kinds(fd) == []
    want = (xs.reshape(b, s, h, dh).permute(0, 2, 1, 3) * 0.5)
    _close(out, mesh.shard_tensor(want, 1))


def linear_backward_symbolic_tokens(backend: str) -> None:
    """A column-parallel linear's weight gradient as DTensor's backward spells it, with
    symbolic batch and sequence sizes: grad [b, s, n] sharded on n reshaped to [-1, n]
    (n stays sharded: the reshape keeps its trailing axis) and contracted with x over the
    tokens: grad_w comes back sharded on its rows, with no communication."""
    comm, d, dev = _setup(backend)
    mesh = md.DeviceMesh(torch.arange(d))
    b, s, e, n = 2, 3, 5, 4 * d
    with FusionDefinition() as fd:
        x = fd.define_tensor([-1, -1, e], contiguity=True, dtype=DataType.Float)
        g = fd.define_tensor([-1, -1, n], contiguity=True, dtype=DataType.Float)
        g2 = fd.ops.reshape(g, [-1, n])
        x2 = fd.ops.reshape(x, [-1, e])
        fd.add_output(fd.ops.matmul(fd.ops.permute(g2, dims=[1, 0]), x2))
        for tv in (x, g):
            tv.set_device_mesh(mesh)
        g.outer_split(2, d)
        g.axis(2).parallelize(DIDX)
    xs, gs = torch.randn(b, s, e), torch.randn(b, s, n)
    (gw,) = _run(fd, [xs.to(dev), _shard(gs, g, dev)], backend)
    assert _kinds(fd) == []
    _close(gw, mesh.shard_tensor(gs.reshape(-1, n).t() @ xs.reshape(-1, e), 0), rtol=1e-5, atol=1e-5)


def heads_merged_back(backend: str) -> None:
    """Attention's output [b, h, s, dh] sharded on its heads, permuted to [b, s, h, dh] and
    reshaped to [b, s, h * dh] (the merge of the sharded heads with dh as its outer input):
    each device's heads are a contiguous block of the merged columns, so the output stays
    sharded on them, ready for a row-parallel projection; nothing is gathered."""
    comm, d, dev = _setup(backend)
    mesh = md.DeviceMesh(torch.arange(d))
    b, h, s, dh = 2, 2 * d, 3, 4
    with FusionDefinition() as fd:
        o = fd.define_tensor([b, h, s, dh], contiguity=True, dtype=DataType.Float)
        merged = fd.ops.reshape(fd.ops.permute(o, dims=[0, 2, 1, 3]), [b, s, h * dh])
        fd.add_output(fd.ops.mul(merged, fd.define_scalar(2.0)))
        o.set_device_mesh(mesh)
        o.outer_split(1, d)
        o.axis(1).parallelize(DIDX)
    os_ = torch.randn(b, h, s, dh)
    (out,) = _run(fd, [_shard(os_, o, dev)], backend)
    assert _kinds(fd) == []
    want = os_.permute(0, 2, 1, 3).reshape(b, s, h * dh) * 2
    _close(out, mesh.shard_tensor(want, 2))


def tp_attention_block(backend: str) -> None:
    """Megatron's tensor-parallel attention, written as the frontend would: q, k and v from
    column-parallel linears (weights sharded on their output rows), split into heads by a
    reshape, attention over each device's heads, the heads merged back by a reshape and a
    row-parallel output linear (weight sharded on its input columns). One Allreduce, at the
    end; the heads stay sharded from the projections to the output linear."""
    comm, d, dev = _setup(backend)
    mesh = md.DeviceMesh(torch.arange(d))
    b, s, e, h = 2, 8, 16, 2 * d
    dh = e // h
    with FusionDefinition() as fd:
        x = fd.define_tensor([b, s, e], contiguity=True, dtype=DataType.Float)
        ws = [fd.define_tensor([e, e], contiguity=True, dtype=DataType.Float) for _ in range(4)]
        heads = [fd.ops.permute(fd.ops.reshape(fd.ops.linear(x, w), [b, s, h, dh]), dims=[0, 2, 1, 3])
                 for w in ws[:3]]
        o, _, _, _ = fd.ops.sdpfa_fwd(*heads, dropout_p=fd.define_scalar(0.0, dtype=DataType.Double),
                                      is_causal=fd.define_scalar(True, dtype=DataType.Bool))
        merged = fd.ops.reshape(fd.ops.permute(o, dims=[0, 2, 1, 3]), [b, s, e])
        fd.add_output(fd.ops.linear(merged, ws[3]))
        for tv in (x, *ws):
            tv.set_device_mesh(mesh)
        for w in ws[:3]:
            w.outer_split(0, d)
            w.axis(0).parallelize(DIDX)
        ws[3].outer_split(1, d)
        ws[3].axis(1).parallelize(DIDX)
    xs = torch.randn(b, s, e)
    wr = [torch.randn(e, e) / e ** 0.5 for _ in range(4)]
    ins = [xs.to(dev), *(_shard(w, tv, dev) for w, tv in zip(wr, ws))]
    (out,) = _run(fd, ins, backend)
    assert _kinds(fd) == ["Allreduce"]
    q, k, v = (F.linear(xs, w).reshape(b, s, h, dh).permute(0, 2, 1, 3) for w in wr[:3])
    att = F.scaled_dot_product_attention(q, k, v, is_causal=True).permute(0, 2, 1, 3).reshape(b, s, e)
    _close(out, F.linear(att, wr[3]), rtol=1e-4, atol=1e-4)


def attention_device_axis(backend: str) -> None:
    """nvFuser's logical-split attention: q, k, v and the output grad [D, N, H / D, L, E] with
    the device axis parallelized directly, forward and backward; each device attends over
    its own heads, with no communication."""
    comm, d, dev = _setup(backend)
    b, h, s, e = 2, 2 * d, 8, 8
    mesh = md.DeviceMesh(torch.arange(d))
    with FusionDefinition() as fd:
        for t in attention_fwd_bwd(fd, [d, b, h // d, s, e]):
            t.set_device_mesh(mesh)
            t.axis(0).parallelize(DIDX)
    ins, wants = attention_reference(b, h, s, e)

    def mine(t: torch.Tensor) -> torch.Tensor:  # this rank's heads, with the device axis first
        return t.reshape(b, d, h // d, s, e)[:, comm.rank()].unsqueeze(0).contiguous()

    outs = _run(fd, [mine(t).to(dev) for t in ins], backend)
    assert _kinds(fd) == []
    for got, want in zip(outs, wants):
        _close(got, mine(want), rtol=1e-4, atol=1e-4)
