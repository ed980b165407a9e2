"""Where a run's outputs are (engine.runtime.placement): on the device the run computes on,
by one rule for every back end; a fusion without tensor inputs (factories only) follows the
device asked for instead of landing on the CPU."""

from __future__ import annotations

import pytest
import torch

from engine import DataType, FusionDefinition, compile_fusion
from engine.errors import ExecutionError
from engine.reference import evaluate
from engine.runtime.placement import run_device
from tests.emulation import needs_gxx


def _factories() -> FusionDefinition:
    """iota, full and uniform only: no input tells where to compute."""
    with FusionDefinition() as fd:
        seed = fd.define_scalar(None, dtype=DataType.Int)
        i = fd.ops.iota(fd.define_scalar(8, dtype=DataType.Int), fd.define_scalar(0, dtype=DataType.Int),
                        fd.define_scalar(1, dtype=DataType.Int), dtype=DataType.Int)
        row = fd.ops.broadcast_in_dim(fd.ops.cast(i, dtype=DataType.Float), shape=[4, 8], broadcast_dims=[1])
        full = fd.ops.full(shape=[4, 8], fill_value=2.0, dtype=DataType.Float)
        u = fd.ops.uniform(0.0, 1.0, shape=[4, 8], rng_seed=seed, rng_offset=fd.define_scalar(0, dtype=DataType.Int),
                           dtype=DataType.Float)
        fd.add_output(fd.ops.add(fd.ops.mul(full, u), row))
        fd.add_output(i)
    return fd


def test_the_rule_for_each_back_end() -> None:
    cpu, meta = torch.device("cpu"), torch.device("meta")
    on_meta = torch.empty(2, device="meta")
    # cuda: the GPU whatever the inputs' device (they are moved there); a torch.device needs no GPU.
    assert run_device("cuda").type == "cuda" and run_device("cuda", [torch.ones(2)]).type == "cuda"
    assert run_device("cuda", [], "cuda:1") == torch.device("cuda:1")
    assert run_device("emulate") == cpu and run_device("emulate", [on_meta]) == cpu
    # reference: asked for, else the inputs', else the CPU.
    assert run_device("reference") == cpu and run_device("reference", [3, on_meta]) == meta
    assert run_device("reference", [torch.ones(2)], "meta") == meta
    with pytest.raises(ExecutionError, match="the emulate back end runs on the CPU, not on device 'meta'"):
        run_device("emulate", [], "meta")
    with pytest.raises(ExecutionError, match="the cuda back end runs on the GPU, not on device 'cpu'"):
        run_device("cuda", [], "cpu")


@pytest.mark.parametrize("device", ["cpu", "meta"])
def test_the_reference_back_end_puts_a_fusion_without_inputs_on_the_device_asked_for(device: str) -> None:
    fd = _factories()
    cf = compile_fusion(fd, [7])
    outs = cf.run([7], backend="reference", device=device)
    assert [o.device for o in outs] == [torch.device(device)] * 2
    assert [tuple(o.shape) for o in outs] == [(4, 8), (8,)]
    assert [o.device for o in fd.execute([7], device=device)] == [torch.device(device)] * 2
    assert [o.device for o in evaluate(fd.fusion, [7], device=device)] == [torch.device(device)] * 2
    if device == "cpu":
        want = evaluate(fd.fusion, [7])
        assert all(torch.equal(a, b) for a, b in zip(outs, want))


def test_without_a_device_the_reference_follows_the_inputs_then_the_cpu() -> None:
    fd = _factories()
    cf = compile_fusion(fd, [7])
    assert [o.device for o in cf.run([7], backend="reference")] == [torch.device("cpu")] * 2
    with FusionDefinition() as one:
        t0 = one.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float)
        one.add_output(one.ops.add(t0, one.ops.full(shape=[4], fill_value=1.0, dtype=DataType.Float)))
    x = torch.empty(4, device="meta")
    cf = compile_fusion(one, [torch.zeros(4)])
    assert cf.run([x], backend="reference")[0].device == torch.device("meta")


@needs_gxx
def test_the_emulator_computes_on_the_cpu_and_refuses_another_device() -> None:
    fd = _factories()
    cf = compile_fusion(fd, [7])
    outs = cf.run([7], backend="emulate")
    assert [o.device for o in outs] == [torch.device("cpu")] * 2
    assert all(torch.equal(a, b) for a, b in zip(outs, evaluate(fd.fusion, [7])))
    with pytest.raises(ExecutionError, match="the emulate back end runs on the CPU"):
        cf.run([7], backend="emulate", device="meta")


@pytest.mark.gpu
def test_on_a_gpu_the_reference_and_cuda_back_ends_put_the_outputs_on_the_gpu() -> None:
    fd = _factories()
    cf = compile_fusion(fd, [7])
    got = cf.run([7], backend="cuda")
    ref = cf.run([7], backend="reference", device="cuda")
    assert all(o.is_cuda for o in [*got, *ref])
    assert [o.device for o in fd.execute([7], device="cuda")] == [got[0].device] * 2
    for a, b in zip(got, ref):
        torch.testing.assert_close(a, b)
