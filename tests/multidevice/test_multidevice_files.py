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


# nvFuser's test_row_parallel_matmul (tests/python/multidevice/test_matmul.py), its body as written.
ROW_PARALLEL_RFACTOR = """\
import torch
import nvfuser_direct as nvfuser
from nvfuser_direct import FusionDefinition, DataType

d, e = 2, 8
with FusionDefinition() as fd:
    inp_tv = fd.define_tensor([-1, d * e], contiguity=True, dtype=DataType.Half)
    weight_tv = fd.define_tensor([d * e, e], contiguity=True, dtype=DataType.Half)
    out = fd.ops.matmul(inp_tv, weight_tv)
    fd.add_output(out)

    mesh = nvfuser.multidevice.DeviceMesh(torch.arange(d))
    for t in [inp_tv, weight_tv, out]:
        t.set_device_mesh(mesh)

    inp_tv.outer_split(-1, d)
    inp_tv.axis(-2).parallelize(nvfuser.ParallelType.mesh_x)
    weight_tv.outer_split(0, d)
    weight_tv.axis(0).parallelize(nvfuser.ParallelType.mesh_x)

    # [i{M}, i{N}, r{K}]
    out.outer_split(-1, d)
    # [i{M}, i{N}, r{d}, r{K//d}]
    local_out = out.rfactor(axes=[-1])
    # local_out = [i{M}, i{N}, i{d}, r{K//d}]
    # out = [i{M}, i{N}, r{d}]
    local_out.set_device_mesh(mesh)
    local_out.axis(-2).parallelize(nvfuser.ParallelType.mesh_x)
"""


def test_manual_rfactor_spelling_loads_and_is_written_back_the_same() -> None:
    fd = loads_fusion(ROW_PARALLEL_RFACTOR)
    partial, total = (e.output for e in fd.fusion.exprs())
    assert describe(partial) == "mesh_x on axis 2 of DeviceMesh{0 1}"
    assert [c.kind for c in md.program_of(fd).communications] == ["Allreduce"]
    text = dumps_fusion(fd)
    assert ("    T2.set_device_mesh(mesh0)\n    T2.outer_split(2, 2)\n    T3 = T2.rfactor(axes=[3])\n"
            "    T3.axis(2).parallelize(ParallelType.mesh_x)\n") in text
    again = loads_fusion(text)
    assert dumps_fusion(again) == text
    assert str(again.fusion) == str(fd.fusion)


def test_manual_rfactor_of_a_linear_with_bias_round_trips() -> None:
    body = ROW_PARALLEL_RFACTOR.replace(
        "weight_tv = fd.define_tensor([d * e, e], contiguity=True, dtype=DataType.Half)\n"
        "    out = fd.ops.matmul(inp_tv, weight_tv)",
        "weight_tv = fd.define_tensor([e, d * e], contiguity=True, dtype=DataType.Half)\n"
        "    bias_tv = fd.define_tensor([e], contiguity=True, dtype=DataType.Half)\n"
        "    out = fd.ops.linear(inp_tv, weight_tv, bias_tv)").replace(
        "weight_tv.outer_split(0, d)\n    weight_tv.axis(0)", "weight_tv.outer_split(1, d)\n    weight_tv.axis(1)")
    fd = loads_fusion(body)
    assert [c.kind for c in md.program_of(fd).communications] == ["Allreduce"]
    text = dumps_fusion(fd)
    again = loads_fusion(text)
    assert dumps_fusion(again) == text and str(again.fusion) == str(fd.fusion)


def test_manual_rfactor_without_a_mesh_round_trips() -> None:
    fd = loads_fusion(_file("y = fd.ops.matmul(x, fd.define_tensor([4, 3]))\nfd.add_output(y)\n"
                            "y.outer_split(-1, 2)\nlocal_y = y.rfactor([-1])"))
    text = dumps_fusion(fd)
    assert "    T3.outer_split(2, 2)\n    T4 = T3.rfactor(axes=[3])\n" in text
    assert dumps_fusion(loads_fusion(text)) == text


@pytest.mark.parametrize("body, message", [
    ("x.rfactor(axes=[0])", r":7: .*T0: rfactor needs a tensor defined by a reduction"),
    ("y = fd.ops.sum(x, dims=[1])\ny.rfactor(axes=[-1])", r":8: .*T2: rfactor must leave at least one reduction"),
    ("y = fd.ops.matmul(x, x)\ny.rfactor(axes=[-1])", r":8: .*needs its reduction axis .* split first"),
    ("x.rfactor(axes=1)", r":7: .*axes must be a list of integers"),
    ("x.rfactor()", r":7: .*takes the axes: rfactor\(axes=\[...\]\)"),
])
def test_bad_rfactor_calls_name_the_line(body: str, message: str) -> None:
    with pytest.raises(FusionFileError, match=message):
        loads_fusion(_file(body))
