"""Inputs larger than L2 that a kernel streams through get evict_last vector loads
(engine.schedule.l2_hints, loadGlobalEvictLast); inputs that fit keep plain loads. The hinted
load's fallback (the emulator, pre-sm_80) computes the same values."""

import re
from dataclasses import replace

import pytest
import torch

from engine import DataType, FusionDefinition
from engine.compile import compile_fusion
from engine.dtypes import from_torch
from engine.reference import evaluate
from engine.runtime import device
from tests.emulation import needs_gxx


def bias_add() -> FusionDefinition:
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
        b = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float)
        y = fd.ops.add(x, fd.ops.broadcast_in_dim(b, shape=x.shape(), broadcast_dims=[1]))
        fd.add_output(fd.ops.mul(y, y))
    return fd


def kernel_loads(cf) -> list[str]:  # noqa: ANN001
    src = cf.segments[0].cuda_source
    return re.findall(r"(load\w+)<[^>]*>\(&\w+\[[^\]]*\], &(T\d+)\[", src[src.rindex("__global__"):])


def test_only_inputs_larger_than_l2_get_evict_last_loads(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(device, "query", lambda index=0: device.model("H100"))  # any machine: 50 MiB L2
    x = torch.empty(4096, 4096)  # 64 MiB
    b = torch.empty(4096)
    cf = compile_fusion(bias_add(), [x, b])
    loads = set(kernel_loads(cf))
    assert ("loadGlobalEvictLast", "T0") in loads
    assert ("loadGeneric", "T1") in loads
    assert not any(t == "T1" and f == "loadGlobalEvictLast" for f, t in loads)
    notes = [e.message for e in cf.trace.events if "evict_last" in e.message]
    assert notes == ["vector loads keep L2 lines (evict_last): 64 MiB input, larger than the 50 MiB L2"]

    small = compile_fusion(bias_add(), [torch.empty(1024, 1024), torch.empty(1024)])
    assert all(f != "loadGlobalEvictLast" for f, _ in kernel_loads(small))


@needs_gxx
def test_evict_last_loads_compute_the_reference_values(monkeypatch: pytest.MonkeyPatch):
    tiny = replace(device.model("H100"), l2_cache_bytes=1024)
    monkeypatch.setattr(device, "query", lambda index=0: tiny)
    x, b = torch.randn(256, 1024), torch.randn(1024)
    cf = compile_fusion(bias_add(), [x, b])
    assert ("loadGlobalEvictLast", "T0") in kernel_loads(cf)
    (out,) = cf.run([x, b], backend="emulate")
    torch.testing.assert_close(out, evaluate(bias_add().fusion, [x, b])[0])


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_evict_last_loads_on_the_gpu(monkeypatch: pytest.MonkeyPatch, dtype: torch.dtype):
    """The hinted 16-byte loads (float x 4, bf16 x 8) on the GPU, against torch. The 8- and
    4-byte forms are compile-checked with the runtime headers."""
    tiny = replace(device.query(), l2_cache_bytes=1024)
    monkeypatch.setattr(device, "query", lambda index=0: tiny)
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=from_torch(dtype))
        fd.add_output(fd.ops.mul(x, x))
    xs = [torch.randn(512, 1024, device="cuda", dtype=dtype)]
    cf = compile_fusion(fd, xs)
    assert ("loadGlobalEvictLast", "T0") in kernel_loads(cf)
    (out,) = cf.run(xs, backend="cuda")
    torch.testing.assert_close(out, xs[0] * xs[0])
