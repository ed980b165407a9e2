"""The bundled multi-device samples: their programs, compile_fusion for rank 0's shards (the
rank's program, its regions compiled), their round trip through the writer, and their values
on 2 CPU ranks against the unsharded reference."""

from __future__ import annotations

import pytest

import engine.multidevice as md
from engine import dumps_fusion, load_fusion, loads_fusion
from engine.compile import compile_fusion
from tests.multidevice.harness import batched
from tests.multidevice.samples import MULTIDEVICE, SAMPLES


def test_the_list_holds_every_sample_with_a_mesh() -> None:
    meshed = {p.stem for p in SAMPLES.glob("*.py")
              if any(tv.device_mesh is not None for tv in load_fusion(p).fusion.tensors())}
    assert meshed == set(MULTIDEVICE)


@pytest.mark.parametrize("name", sorted(MULTIDEVICE))
def test_sample_program_and_rank_compile(name: str) -> None:
    fd = load_fusion(SAMPLES / f"{name}.py")
    assert [c.kind for c in md.program_of(fd).communications] == MULTIDEVICE[name]
    shards = [md.shard_tensor(x, tv, device=0) for x, tv in zip(fd.example_inputs(seed=0), fd.fusion.inputs)]
    cf = compile_fusion(fd, shards)
    assert isinstance(cf, md.MultiDeviceCompiledFusion) and cf.rank == 0 and cf.segments
    text = str(cf.host_ir)
    assert [k for k in MULTIDEVICE[name] if f"type={k}, team=(0 1)" not in text] == []
    text = dumps_fusion(fd)
    assert dumps_fusion(loads_fusion(text)) == text


@pytest.mark.parametrize("case", ["sample_tp_mlp", "sample_sp_mlp"])
def test_sample_on_two_ranks(case: str, request: pytest.FixtureRequest) -> None:
    batched(request, case, world=2, backend="reference")
