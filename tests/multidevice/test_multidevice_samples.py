"""The bundled multi-device samples: their programs, compile_fusion's refusal of them (they
run through engine.multidevice), their round trip through the writer, and their values on 2
CPU ranks against the unsharded reference."""

from __future__ import annotations

import pytest

import engine.multidevice as md
from engine import CompileError, dumps_fusion, load_fusion, loads_fusion
from engine.compile import compile_fusion
from tests.multidevice.harness import spawn
from tests.multidevice.samples import MULTIDEVICE, SAMPLES


def test_the_list_holds_every_sample_with_a_mesh() -> None:
    meshed = {p.stem for p in SAMPLES.glob("*.py")
              if any(tv.device_mesh is not None for tv in load_fusion(p).fusion.tensors())}
    assert meshed == set(MULTIDEVICE)


@pytest.mark.parametrize("name", sorted(MULTIDEVICE))
def test_sample_program_and_compile_refusal(name: str) -> None:
    fd = load_fusion(SAMPLES / f"{name}.py")
    assert [c.kind for c in md.program_of(fd).communications] == MULTIDEVICE[name]
    with pytest.raises(CompileError, match="has a device mesh"):
        compile_fusion(fd, fd.example_inputs(seed=0))
    text = dumps_fusion(fd)
    assert dumps_fusion(loads_fusion(text)) == text


@pytest.mark.parametrize("case", ["sample_tp_mlp", "sample_sp_mlp"])
def test_sample_on_two_ranks(case: str) -> None:
    spawn(case, world=2, backend="reference")
