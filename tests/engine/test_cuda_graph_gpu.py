"""fd.execute(..., cuda_graph=True): the run captured as a CUDA graph and replayed on the same
input buffers (engine.runtime.graphs), values against the reference each call."""

from __future__ import annotations

import pytest
import torch

from engine import DataType, FusionDefinition
from engine.reference import evaluate

pytestmark = pytest.mark.gpu


@pytest.fixture(autouse=True)
def _gpu() -> None:
    if not torch.cuda.is_available():
        pytest.skip("no CUDA GPU")


def _softmax_bias() -> FusionDefinition:
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1], contiguity=True, dtype=DataType.BFloat16)
        b = fd.define_tensor(shape=[-1], contiguity=True, dtype=DataType.BFloat16)
        s = fd.define_scalar(dtype=DataType.Double)
        y = fd.ops.mul(fd.ops.add(fd.ops.cast(x, DataType.Float), fd.ops.cast(b, DataType.Float)), s)
        m = fd.ops.broadcast_in_dim(fd.ops.max(y, dims=[1]), shape=[-1, 1], broadcast_dims=[0])
        e = fd.ops.exp(fd.ops.sub(y, m))
        z = fd.ops.div(e, fd.ops.broadcast_in_dim(fd.ops.sum(e, dims=[1]), shape=[-1, 1], broadcast_dims=[0]))
        fd.add_output(fd.ops.cast(z, DataType.BFloat16))
    return fd


def test_replays_follow_the_input_buffers_and_scalars() -> None:
    fd = _softmax_bias()
    x = torch.randn(64, 1000, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(1000, device="cuda", dtype=torch.bfloat16)
    for _ in range(4):
        x.normal_()  # new data in the same buffer: the replay reads it
        (out,) = fd.execute([x, b, 0.5], cuda_graph=True)
        (want,) = evaluate(fd.fusion, [x, b, 0.5])
        torch.testing.assert_close(out.float(), want.float(), rtol=1e-2, atol=1e-2)
    graphs = fd.__dict__["_last_graphs"]
    assert graphs.refused is None and graphs.captures == 1 and graphs.replays == 3
    # Another scalar and another buffer each capture a graph of their own.
    (out,) = fd.execute([x, b, 2.0], cuda_graph=True)
    torch.testing.assert_close(out.float(), evaluate(fd.fusion, [x, b, 2.0])[0].float(), rtol=1e-2, atol=1e-2)
    y = x.clone().normal_()
    (out,) = fd.execute([y, b, 0.5], cuda_graph=True)
    torch.testing.assert_close(out.float(), evaluate(fd.fusion, [y, b, 0.5])[0].float(), rtol=1e-2, atol=1e-2)
    assert graphs.captures == 3
    # Another signature compiles and gets its own replays; the plain path is unchanged.
    z = torch.randn(8, 32, device="cuda", dtype=torch.bfloat16)
    c = torch.randn(32, device="cuda", dtype=torch.bfloat16)
    for _ in range(3):
        (out,) = fd.execute([z, c, 1.0], cuda_graph=True)
    torch.testing.assert_close(out.float(), evaluate(fd.fusion, [z, c, 1.0])[0].float(), rtol=1e-2, atol=1e-2)
    (plain,) = fd.execute([z, c, 1.0])
    assert torch.equal(plain, out)


def test_a_host_program_that_reads_device_data_runs_without_a_graph() -> None:
    """scatter checks its indices on the host (a device read): capturing fails, every call
    runs plainly, and the reason is kept."""
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1], contiguity=True, dtype=DataType.Float)
        idx = fd.define_tensor(shape=[-1], contiguity=True, dtype=DataType.Int)
        src = fd.define_tensor(shape=[-1], contiguity=True, dtype=DataType.Float)
        fd.add_output(fd.ops.exp(fd.ops.scatter(fd.ops.mul(x, 2.0), idx, src, dim=0)))
    xs = [torch.zeros(6, device="cuda"), torch.tensor([4, 1], device="cuda"), torch.tensor([1.0, 2.0], device="cuda")]
    for _ in range(3):
        (out,) = fd.execute(xs, cuda_graph=True)
        torch.testing.assert_close(out, evaluate(fd.fusion, xs)[0])
    graphs = fd.__dict__["_last_graphs"]
    assert graphs.refused and graphs.captures == 0 and graphs.replays == 0
