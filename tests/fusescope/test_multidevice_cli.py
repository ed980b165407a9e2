"""The command line on multi-device fusions (the bundled TP and SP MLP samples): `run --ranks 2`
on worker processes over gloo (reference and emulate back ends), a rank that fails or runs
too long reported by rank, `show --ir | --segments | --host-ir --rank R`, and the step graph's
exports. Every run spawns 2 processes (a few seconds each): few of them here."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
import torch

import engine.multidevice as md
from engine import load_fusion
from fusescope import samples
from fusescope.cli import main
from fusescope.md_run import run_ranks

TP = "multidevice_tp_mlp"
SP = "multidevice_sp_mlp"


def _out(capsys: pytest.CaptureFixture[str], *argv: str, code: int = 0) -> str:
    assert main(list(argv)) == code
    return capsys.readouterr().out


def test_run_two_ranks_on_the_reference(capsys: pytest.CaptureFixture[str]) -> None:
    out = _out(capsys, "run", TP, "--ranks", "2", "--backend", "reference")
    lines = out.splitlines()
    head = lines.index("rank  outputs    max error  verdict  time")
    for rank in (0, 1):
        row = lines[head + 1 + rank].split()
        assert row[:4] == [str(rank), "T7", "[8,", "8]"] and row[5] == "pass", row
        assert float(row[4]) < 1e-4  # the rank's output against its shard of the unsharded reference
    assert "Timeline (ms since each rank's run started):" in out
    rank0 = out[out.index("rank 0\n"):out.index("rank 1\n")]
    assert [ln.split()[:3] for ln in rank0.splitlines()[1:]] == [
        ["region", "0", "compute"], ["Communication", "0", "Allreduce"], ["region", "1", "compute"]]
    assert lines[-1] == "ok: all 2 ranks match their shards of the reference"


def test_run_two_ranks_emulated_with_the_overlapped_allgather(capsys: pytest.CaptureFixture[str]) -> None:
    data = json.loads(_out(capsys, "run", SP, "--ranks", "2", "--backend", "emulate", "--json"))
    assert data["status"] == "ok" and data["ranks"] == 2 and data["backend"] == "emulate"
    for rank, r in enumerate(data["results"]):
        assert r["rank"] == rank and r["status"] == "ok", r
        (o,) = r["outputs"]
        # 8 tokens over 2 ranks: each holds 4 rows of the [8, 8] output, within tolerance.
        assert o["name"] == "T7" and o["shape"] == [4, 8] and o["ok"] and o["max_error"] <= o["tolerance"]
        # Per chunk: its Allgather, its compute, its ReduceScatter; then the bias region.
        rows = [(s["step"], s["kind"], s["stream"]) for s in r["timeline"]]
        assert rows == [("Communication 0 chunk 0", "Allgather", "comm"), ("region 0 chunk 0", "compute", "main"),
                        ("Communication 1 chunk 0", "ReduceScatter", "comm"),
                        ("Communication 0 chunk 1", "Allgather", "comm"), ("region 0 chunk 1", "compute", "main"),
                        ("Communication 1 chunk 1", "ReduceScatter", "comm"), ("region 1", "compute", "main")]
        assert all(s["end_ms"] >= s["start_ms"] for s in r["timeline"])
        computes = [s for s in r["timeline"] if s["kind"] == "compute"]
        assert all(a["end_ms"] <= b["start_ms"] for a, b in zip(computes, computes[1:]))  # one compute stream


def test_failing_ranks_are_reported_by_rank(capsys: pytest.CaptureFixture[str]) -> None:
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU: the cuda back end would run")
    assert main(["run", TP, "--ranks", "2", "--backend", "cuda"]) == 4
    captured = capsys.readouterr()
    for rank in (0, 1):
        assert f"rank {rank} error: RuntimeError: the cuda back end needs a GPU per rank" in captured.out
    assert "fusescope: error: rank 0 error; rank 1 error" in captured.err


def test_a_run_past_its_timeout_is_stopped_and_reported() -> None:
    source = samples.resolve(TP).read_text()
    start = time.perf_counter()
    result = run_ranks(source, "tp.py", 2, "reference", timeout=0.3)
    assert time.perf_counter() - start < 10  # the ranks are killed, not waited for
    assert result.status == "error"
    assert [(r.rank, r.status) for r in result.results] == [(0, "timeout"), (1, "timeout")]
    assert result.results[0].message == "no result after 0.3 s (timeout): stopped"


def test_ranks_on_a_single_device_fusion_and_too_few_ranks(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "softmax", "--ranks", "2"]) == 2
    assert "softmax.py is not a multi-device fusion (no tensor has a device mesh): run it without --ranks" \
        in capsys.readouterr().err
    assert main(["run", TP, "--ranks", "1"]) == 2
    assert "--ranks 1: the fusion's meshes (DeviceMesh{0 1}) need 2 ranks" in capsys.readouterr().err


def test_without_ranks_the_mesh_size_is_used(capsys: pytest.CaptureFixture[str]) -> None:
    from fusescope.cli_multidevice import ranks_for
    from fusescope.model import load_session

    info = load_session(samples.resolve(TP)).multidevice()
    assert ranks_for(info, None) == 2
    assert "running on 2 ranks, its meshes' size (--ranks N to choose)" in capsys.readouterr().err
    assert ranks_for(info, 3) == 3


def test_show_host_ir_of_rank_1_is_the_engines(capsys: pytest.CaptureFixture[str]) -> None:
    out = _out(capsys, "show", TP, "--host-ir", "--rank", "1")
    fd = load_fusion(samples.resolve(TP))
    assert out == str(md.program_of(fd).host_ir(1))
    lines = out.splitlines()
    comm = next(ln for ln in lines if ln.lstrip().startswith("Communication 0"))
    assert comm == ("  Communication 0 (type=Allreduce, team=(0 1), input=T8_l_float[iS28{i0}, iS29{8}, "
                    "rdeviceIdx.x31{2}, rS32{16}] (DeviceMesh{0 1}), output=T9_l_float[iS33{i0}, iS34{8}] "
                    "(DeviceMesh{0 1}), backend=NCCL)")
    assert lines[lines.index(comm) + 1] == "  Wait(Communication 0)"
    assert main(["show", TP, "--host-ir", "--rank", "2"]) == 2
    assert "rank 2 is not on the mesh: ranks 0 to 1" in capsys.readouterr().err


def test_show_ir_has_the_sharding_column(capsys: pytest.CaptureFixture[str]) -> None:
    out = _out(capsys, "show", TP, "--ir")
    assert out.startswith(str(load_fusion(samples.resolve(TP)).fusion))
    table = out[out.index("Sharding ("):].splitlines()[1:]
    assert table == [
        "  T0  DeviceMesh{0 1}  replicated                     file",
        "  T1  DeviceMesh{0 1}  mesh_x on axis 0 (split by 2)  file",
        "  T2  DeviceMesh{0 1}  mesh_x on axis 0 (split by 2)  file",
        "  T3  DeviceMesh{0 1}  mesh_x on axis 1 (split by 2)  file",
        "  T4  DeviceMesh{0 1}  replicated                     file",
        "  T5  DeviceMesh{0 1}  mesh_x on axis 1 (split by 2)  propagated",
        "  T6  DeviceMesh{0 1}  mesh_x on axis 1 (split by 2)  propagated",
        "  T7  DeviceMesh{0 1}  replicated                     propagated (as T11 after the decomposition)",
    ]
    block = _out(capsys, "show", TP, "--transforms", "T3")
    assert block.splitlines()[-1] == "sharding: mesh_x on axis 1 (split by 2) of DeviceMesh{0 1} (file)"
    assert block.splitlines()[-2] == " loop domain : (iS5{8}, ideviceIdx.x20{2}, iS21{16})"


def test_show_segments_lists_regions_and_communications(capsys: pytest.CaptureFixture[str]) -> None:
    out = _out(capsys, "show", SP, "--segments")
    assert out.splitlines()[:5] == [
        "multi-device program on 2 ranks (DeviceMesh{0 1}): 2 region(s), 2 communication(s)",
        "",
        "Steps (run order):",
        "  Communication 0 type=Allgather  in: T0  out: T8",
        "      overlapped with the next region in 2 stream chunks (host IR: FOR StreamIdx)",
    ]
    assert "  region 0 on DeviceMesh{0 1}  in: T8, T1, T2, T3  out: T9\n      T5 = linear(T8, T1, T2)\n" in out
    assert "  Communication 1 type=ReduceScatter  in: T9  out: T10\n" in out
    assert main(["show", SP, "--cuda"]) == 2
    assert "--cuda shows one single-device compilation; multidevice_sp_mlp.py is a multi-device fusion" \
        in capsys.readouterr().err


def test_export_json_and_dot_draw_communications_apart(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    data = json.loads(_out(capsys, "export", TP, "--format", "json", "-o", "-"))
    kinds = [(n["id"], n["kind"], n["type"]) for n in data["nodes"]]
    assert kinds == [("r0", "region", None), ("c0", "communication", "Allreduce"), ("r1", "region", None)]
    assert data["nodes"][1]["teams"] == ["0 1", "0 1"]
    assert data["nodes"][0]["exprs"] == ["T5 = linear(T0, T1, T2)", "T6 = gelu(T5)", "T8 = linear(T6, T3)"]
    assert data["edges"] == [{"from": "r0", "to": "c0", "tensor": "T8"}, {"from": "c0", "to": "r1", "tensor": "T9"}]
    dot = tmp_path / "g.dot"
    assert main(["export", TP, "--format", "dot", "-o", str(dot)]) == 0
    text = dot.read_text()
    assert ('c0 [shape=hexagon, style="filled,dashed", fillcolor="#f6d5a8", color="#c05000", '
            'label="Communication 0\\nAllreduce\\nteam=(0 1)"];') in text
    assert 'r0 [shape=box' in text and 'r0 -> c0 [label="T8"];' in text and 'c0 -> r1 [label="T9"];' in text
    mermaid = _out(capsys, "export", TP, "--format", "mermaid", "-o", "-").splitlines()
    assert mermaid[:4] == ["flowchart TD", '  r0["region 0 (3 exprs)"]',
                           '  c0{{"Communication 0: Allreduce team=(0 1)"}}', '  r1["region 1 (2 exprs)"]']
    assert mermaid[-1] == "  class c0 comm"
    svg = tmp_path / "g.svg"
    assert main(["export", TP, "--format", "svg", "-o", str(svg)]) == 0
    drawn = svg.read_text()
    assert drawn.lstrip().startswith(("<?xml", "<svg", "<!DOCTYPE")) and "<svg" in drawn
    assert ">Allreduce</text>" in drawn and ">team=(0 1)</text>" in drawn and "<polygon" in drawn
    assert main(["export", TP, "--format", "png", "-o", str(tmp_path / "g.png")]) == 2
    assert "exports its step graph as dot, json, mermaid, svg, not png" in capsys.readouterr().err
