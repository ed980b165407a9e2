"""Exports of the segment graph of every sample: DOT, JSON and Mermaid, read back."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from engine import FusionFileError, load_fusion
from engine.segment import SegmentedFusion, segment_fusion
from engine.segment import export as ex
from tests.multidevice.samples import single_device

SAMPLES = Path(__file__).resolve().parents[2] / "sample_fusions"
# The multi-device samples are not segmented whole (compile_fusion refuses device meshes): their
# step graph (regions and communications) is exported by tests/fusescope/test_multidevice_cli.py.
ALL = sorted(p.name for p in single_device(list(SAMPLES.glob("*.py"))))


def bigger_inputs(name: str) -> list[torch.Tensor] | None:
    """The nvfp4 samples' own inputs are too small for the quantization's vectorization
    (the pointwise scheduler refuses them); these keep their structure at a size it takes."""
    g = torch.Generator().manual_seed(0)
    if name == "seed004_nvfp4_quantize.py":
        return [torch.randn(256, 1024, generator=g).bfloat16(), torch.full((), 200.0)]
    if name == "seed000_moe_layout_op.py":
        m, k, m0 = 2048, 64, 1000
        return [
            torch.randn(m, k, generator=g).bfloat16(),
            (torch.randint(0, 256, (2 * k // 2 * 128,), dtype=torch.uint8, generator=g)
             .as_strided((2, k // 2, 128), (k // 2 * 128, 1, k // 2)).view(torch.float4_e2m1fn_x2)),
            (torch.rand(2, 128, k // 16, generator=g) + 0.5).to(torch.float8_e4m3fn),
            torch.rand(2, generator=g) + 0.5,
            torch.tensor([[m0, 128, k], [m - m0, 128, k]], dtype=torch.int32),
            torch.tensor([0, m0], dtype=torch.int32),
            torch.tensor([0, 1024], dtype=torch.int32),
        ]
    return None


def segmented(name: str) -> SegmentedFusion:
    fd = load_fusion(SAMPLES / name)
    xs = fd.example_inputs(device="cpu", seed=0)
    # The nvfp4 samples segment at their own sizes too (pointwise takes 16-element blocks);
    # larger inputs also exercise the swizzle-sized groups.
    big = bigger_inputs(name)
    if big is not None:
        segment_fusion(load_fusion(SAMPLES / name).fusion, xs)
        xs = big
    return segment_fusion(fd.fusion, xs)


@pytest.mark.parametrize("name", ALL)
def test_every_sample_exports_and_reads_back(name):
    sf = segmented(name)
    nodes = {g.name: g for g in sf.groups}
    edges = sorted((e.producer.name, e.consumer.name, e.val.short_name, e.bytes) for e in sf.edges)

    dot = ex.to_dot(sf)
    gd = ex.parse_dot(dot)
    assert set(gd.nodes) == set(nodes)
    for n, g in nodes.items():
        assert gd.nodes[n]["scheduler"] == g.scheduler and gd.nodes[n]["ops"] == len(g.exprs)
        assert gd.nodes[n]["fillcolor"] == ex.COLORS[g.scheduler]
        assert gd.nodes[n]["label"] == f"{n}\n{g.scheduler}\n{len(g.exprs)} ops"
    assert sorted((a, b, d["tensor"], d["bytes"]) for a, b, d in gd.edges(data=True)) == edges
    assert all(d["label"].startswith(d["tensor"] + "\n") for _, _, d in gd.edges(data=True))

    text = ex.to_json(sf)
    data = json.loads(text)
    assert data["schema"] == ex.SCHEMA and data["version"] == ex.SCHEMA_VERSION
    gj = ex.graph_from_json(text)
    assert {gj.nodes[i]["name"] for i in gj.nodes} == set(nodes)
    assert sorted((gj.nodes[a]["name"], gj.nodes[b]["name"], d["tensor"], d["bytes"])
                  for a, b, d in gj.edges(data=True)) == edges
    for i in gj.nodes:
        g = sf.groups[i]
        assert gj.nodes[i]["inputs"] == [v.short_name for v in g.inputs]
        assert gj.nodes[i]["outputs"] == [v.short_name for v in g.outputs]

    mm = ex.to_mermaid(sf)
    gm = ex.parse_mermaid(mm)
    assert {n: gm.nodes[n]["scheduler"] for n in gm.nodes} == {n: g.scheduler for n, g in nodes.items()}
    assert sorted((a, b, d["tensor"], d["bytes"]) for a, b, d in gm.edges(data=True)) == edges

    # the networkx graph agrees with the exports
    nxg = sf.to_networkx()
    assert nxg.number_of_nodes() == len(nodes)
    assert sum(len(d["tensors"]) for _, _, d in nxg.edges(data=True)) == len(edges)


def test_json_reader_names_the_path_at_fault():
    sf = segmented("cross_entropy.py")
    data = ex.to_json_data(sf)
    with pytest.raises(FusionFileError, match=r"\$\.version: unknown version 99"):
        ex.graph_from_json(json.dumps({**data, "version": 99}))
    broken = json.loads(json.dumps(data))
    del broken["edges"][0]["bytes"]
    with pytest.raises(FusionFileError, match=r"\$\.edges\[0\]: missing field 'bytes'"):
        ex.graph_from_json(json.dumps(broken))
    broken = json.loads(json.dumps(data))
    broken["edges"][0]["to"] = 7
    with pytest.raises(FusionFileError, match=r"\$\.edges\[0\]\.to: no node with id 7"):
        ex.graph_from_json(json.dumps(broken))


def test_export_writes_files_and_images_need_graphviz(tmp_path, monkeypatch):
    sf = segmented("cross_entropy.py")
    for fmt in ("dot", "json", "mermaid"):
        out = tmp_path / f"g.{fmt}"
        text = ex.export(sf, fmt, out)
        assert out.read_text() == text
    monkeypatch.setattr(ex.shutil, "which", lambda *a, **k: None)
    with pytest.raises(ex.GraphvizNotFoundError, match="needs the graphviz-pure package"):
        ex.export(sf, "svg", tmp_path / "g.svg")
    with pytest.raises(ValueError, match="unknown export format"):
        ex.export(sf, "gif")


@pytest.mark.skipif(ex.layout_program() is None, reason="neither graphviz-pure nor graphviz is installed")
def test_images_through_the_layout_program():
    sf = segmented("cross_entropy.py")
    svg = ex.render(sf, "svg").decode()
    assert "<svg" in svg and all(f"<title>{g.name}</title>" in svg for g in sf.groups)
    assert ex.render(sf, "png").startswith(b"\x89PNG")


def test_the_layout_program_is_found_beside_python_without_path(monkeypatch):
    """A virtual environment's scripts folder need not be on PATH (fusescope run by its full path)."""
    import sysconfig

    if ex.shutil.which("graphviz-pure", path=sysconfig.get_path("scripts")) is None:
        pytest.skip("graphviz-pure is not installed in this environment")
    monkeypatch.setenv("PATH", "")
    assert ex.layout_program() is not None and ex.layout_program().endswith("graphviz-pure")
