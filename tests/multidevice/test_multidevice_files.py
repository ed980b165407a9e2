"""Fusion files in nvfuser_direct's multidevice spelling: loaded (never run), written back the
same, and bad multidevice calls refused naming the line."""

from pathlib import Path

import pytest

import engine.multidevice as md
from engine import FusionFileError, dumps_fusion, load_fusion, loads_fusion
from engine.multidevice.sharding import describe

HERE = Path(__file__).parent


def test_direct_spelling_loads_with_its_shardings() -> None:
    fd = load_fusion(HERE / "tp_mlp_direct.py")
    x, w1, w2 = fd.fusion.inputs
    assert describe(x) == "replicated of DeviceMesh{0 1}"
    assert describe(w1) == "mesh_x on axis 0 (split by 2) of DeviceMesh{0 1}"
    assert describe(w2) == "mesh_x on axis 1 (split by 2) of DeviceMesh{0 1}"
    assert [c.kind for c in md.program_of(fd).communications] == ["Allreduce"]


def test_written_back_the_same() -> None:
    text = dumps_fusion(load_fusion(HERE / "tp_mlp_direct.py"))
    assert "T2.outer_split(1, 2)\n    T2.axis(1).parallelize(ParallelType.mesh_x)" in text
    assert dumps_fusion(loads_fusion(text)) == text


def _file(body: str) -> str:
    return ("import torch\nimport nvfuser_direct as nvfuser\nfrom nvfuser_direct import FusionDefinition, DataType\n"
            "with FusionDefinition() as fd:\n    x = fd.define_tensor([-1, 4])\n    fd.add_output(fd.ops.neg(x))\n"
            + "".join(f"    {line}\n" for line in body.splitlines()))


def test_mesh_of_a_meshes_reshape_and_list() -> None:
    fd = loads_fusion(_file("m = nvfuser.multidevice.DeviceMesh(torch.arange(4).reshape(2, 2))\n"
                            "x.set_device_mesh(m)\nx.axis(1).parallelize(nvfuser.ParallelType.mesh_y)"))
    assert str(fd.fusion.inputs[0].device_mesh) == "DeviceMesh{{0 1}{2 3}}"
    fd = loads_fusion(_file("x.set_device_mesh(nvfuser.multidevice.DeviceMesh([3, 1]))"))
    assert fd.fusion.inputs[0].device_mesh.devices == [3, 1]


@pytest.mark.parametrize("body, message", [
    ("m = nvfuser.multidevice.DeviceMesh(open('x'))", ":7: "),
    ("x.set_device_mesh(2)", r":7: .*expected a DeviceMesh"),
    ("x.axis(0).parallelize(3)", r":7: .*takes one ParallelType"),
    ("x.outer_split(5, 2)", r":7: .*out of range"),
    ("m = nvfuser.multidevice.DeviceMesh([0, 0])", r":7: .*repeat"),
])
def test_bad_multidevice_calls_name_the_line(body: str, message: str) -> None:
    with pytest.raises(FusionFileError, match=message):
        loads_fusion(_file(body))
