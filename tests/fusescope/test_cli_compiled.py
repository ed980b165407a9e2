"""`fusescope show --segments | --cuda | --kernel-ir | --host-ir`, `fusescope run` and
`fusescope export` on small bundled samples, in-process (fast) and as a process (exit codes
and stderr as a user sees them)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import torch

from fusescope import samples
from fusescope.cli import EXIT_MISMATCH, EXIT_RUN_FAILED, main
from fusescope.model import CompileOptions, RunResult, Session, load_session
from tests.fusescope.test_cli import run_cli


def sample(name: str) -> Path:
    path = samples.resolve(name)
    # The samples ship with the project: a missing one is a failure, not a skip.
    assert path.exists(), f"bundled sample {name} is missing"
    return path


def out_of(capsys: pytest.CaptureFixture[str], *argv: str, status: int = 0) -> str:
    assert main(list(argv)) == status
    return capsys.readouterr().out


# ---- show ----------------------------------------------------------------------------------------
def test_show_segments_of_cross_entropy(capsys: pytest.CaptureFixture[str]) -> None:
    out = out_of(capsys, "show", str(sample("cross_entropy")), "--segments")
    lines = out.splitlines()
    assert lines[0].startswith("2 segment(s) (forwarding on, 4 streams); ")
    assert any(ln.split()[:3] == ["g0", "inner_persistent", "12"] for ln in lines)
    assert any(ln.split()[:3] == ["g1", "reduction", "3"] for ln in lines)
    assert "  g0 -> g1  T13  128 B" in lines
    assert any("not merged, no scheduler accepts the merged group" in ln for ln in lines)
    assert any(ln.strip().startswith("pointwise: ") for ln in lines)  # each refusing scheduler's reason
    assert "Segmented_Fusion{ \n" in out


def test_show_segments_json_of_rope_bwd(capsys: pytest.CaptureFixture[str]) -> None:
    data = json.loads(out_of(capsys, "show", str(sample("seed003_rope_bwd_small")), "--segments", "--json"))
    assert len(data["segments"]) == 4 and data["error"] is None
    assert {s["scheduler"] for s in data["segments"]} == {"pointwise", "resize", "reduction"}
    assert all(e["bytes"] > 0 and e["tensors"] for e in data["edges"])
    assert any(d["kind"] == "forward" for d in data["decisions"])
    assert data["boundary_bytes"] == sum(e["bytes"] for e in data["edges"])


def test_show_cuda_of_one_segment_is_the_kernel_alone(capsys: pytest.CaptureFixture[str]) -> None:
    # As NVFUSER_DUMP=cuda_kernel prints it: the kernel, not the runtime headers before it.
    path = sample("softmax")
    out = out_of(capsys, "show", str(path), "--cuda", "--segment", "0")
    seg = load_session(path).compile().segment(0)
    assert out == seg.kernel_source and out.startswith('extern "C" __global__ void __launch_bounds__')
    assert f"{seg.kernel_name}(" in out and len(out.splitlines()) < 200
    assert "struct Tensor" not in out and seg.cuda_source is not None and "struct Tensor" in seg.cuda_source


def test_show_cuda_with_runtime_is_the_standalone_file(capsys: pytest.CaptureFixture[str]) -> None:
    path = sample("softmax")
    out = out_of(capsys, "show", str(path), "--cuda", "--segment", "0", "--with-runtime")
    seg = load_session(path).compile().segment(0)
    assert out == seg.cuda_source and seg.runtime_lines > 1000
    every = out_of(capsys, "show", str(path), "--cuda", "--with-runtime")
    assert every.startswith("// segment 0 (") and every.endswith(seg.cuda_source)


def test_show_cuda_of_every_segment_heads_each_with_a_comment(capsys: pytest.CaptureFixture[str]) -> None:
    out = out_of(capsys, "show", str(sample("cross_entropy")), "--cuda")
    heads = [ln for ln in out.splitlines() if re.match(r"// segment \d+ \(", ln)]
    assert heads == [
        "// segment 0 (inner_persistent): nvfuser_inner_persistent_f0_c0_r0_g0",
        "// segment 1 (reduction): nvfuser_reduction_f0_c0_r0_g1",
    ]
    assert out.count('extern "C" __global__') == 2
    assert "struct Tensor" not in out  # each kernel alone


def test_show_kernel_ir_and_its_stages(capsys: pytest.CaptureFixture[str]) -> None:
    out = out_of(capsys, "show", str(sample("gelu_bias")), "--kernel-ir", "--segment", "0")
    assert out.startswith("%kernel nvfuser_pointwise_f0_c0_r0_g0(")
    data = json.loads(out_of(capsys, "show", str(sample("gelu_bias")), "--kernel-ir", "--json"))
    assert data[0]["kernel_ir"] == out and {"loop_nests", "parallel_dims", "kernel_ir"} <= data[0]["stages"].keys()


def test_show_cuda_of_a_segment_without_kernel_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    path = str(sample("seed000_moe_layout_op"))
    assert main(["show", path, "--cuda", "--segment", "1"]) == 2
    assert "segment 1 (expr_eval) has no kernel" in capsys.readouterr().err
    assert main(["show", path, "--cuda", "--segment", "12"]) == 2
    assert "no segment 12 (segments: 0, 1" in capsys.readouterr().err


def test_show_host_ir_says_whether_the_engine_has_it(capsys: pytest.CaptureFixture[str]) -> None:
    path = sample("softmax")
    host_ir = load_session(path).compile().host_ir
    status = main(["show", str(path), "--host-ir"])
    captured = capsys.readouterr()
    if host_ir is None:
        assert status == 2 and captured.err.startswith("fusescope: error: host IR is not available yet")
    else:
        assert status == 0 and captured.out == host_ir


def test_show_flag_combinations_that_make_no_sense_exit_2() -> None:
    r = run_cli("show", "softmax", "--ir", "--json")
    assert r.returncode == 2 and r.stderr.strip() == (
        "fusescope: error: --json goes with --segments, --cuda, --kernel-ir or --host-ir")
    r = run_cli("show", "softmax", "--segments", "--segment", "0")
    assert r.returncode == 2 and "--segment goes with --cuda or --kernel-ir" in r.stderr


def test_show_segments_without_example_inputs_exits_2(symbolic_file: Path) -> None:
    r = run_cli("show", str(symbolic_file), "--segments")
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.startswith("fusescope: error: compilation failed: no example inputs")
    # which sizes are missing, and how to give them
    assert "T0 [i0, i2] (axes 0, 1), T1 [i3] (axis 0)" in r.stderr
    assert "--size T0=i0,i2 --size T1=i3, or --size N" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


def test_size_gives_the_sizes_of_a_file_without_inputs(symbolic_file: Path) -> None:
    for sizes in (["--size", "T0=8,16", "--size", "T1=8"], ["--size", "8"], ["--size", "T0=8,16", "--size", "i3=8"],
                  ["--size", "i0=8", "--size", "16"]):
        r = run_cli("show", str(symbolic_file), "--segments", "--json", *sizes)
        assert r.returncode == 0, (sizes, r.stderr)
        assert json.loads(r.stdout)["segments"], sizes
    r = run_cli("show", str(symbolic_file), "--segments", "--size", "T0=8,16", "--size", "T1=9")
    assert r.returncode == 2 and "compilation failed" in r.stderr  # 8 rows, 9 to add: the sizes disagree
    for bad in ("T0=8,x", "=8", "1.5"):
        r = run_cli("show", str(symbolic_file), "--segments", "--size", bad)
        assert r.returncode == 2 and "--size" in r.stderr and "NAME=N" in r.stderr, bad
    r = run_cli("show", str(symbolic_file), "--segments", "--size", "T7=8")
    assert r.returncode == 2 and "'T7' names no input or symbolic size" in r.stderr


def test_run_and_export_take_sizes(symbolic_file: Path, tmp_path: Path) -> None:
    r = run_cli("run", str(symbolic_file), "--size", "T0=4,8", "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["options"]["input_sizes"] == {"T0": [4, 8]}
    r = run_cli("run", str(symbolic_file))  # no sizes: the run fails, saying which are missing
    assert r.returncode == EXIT_RUN_FAILED and "--size T0=i0,i2" in r.stderr
    out = tmp_path / "graph.json"
    r = run_cli("export", str(symbolic_file), "--format", "json", "-o", str(out), "--size", "8")
    assert r.returncode == 0, r.stderr
    assert json.loads(out.read_text())["nodes"]


def test_size_is_refused_for_a_file_with_inputs() -> None:
    r = run_cli("show", "softmax", "--segments", "--size", "64")
    assert r.returncode == 2 and "sizes are for a fusion without an inputs list" in r.stderr


def test_a_file_without_inputs_but_concrete_sizes_compiles(seed001_file: Path) -> None:
    # seed 001's shape is static: its example input is made from the definition, laid out
    # as its stride order says
    r = run_cli("show", str(seed001_file), "--segments", "--json")
    assert r.returncode == 0, r.stderr
    assert [s["scheduler"] for s in json.loads(r.stdout)["segments"]] == ["inner_outer_persistent"]


# ---- run -----------------------------------------------------------------------------------------
def test_run_cross_entropy_on_the_emulator(capsys: pytest.CaptureFixture[str]) -> None:
    out = out_of(capsys, "run", str(sample("cross_entropy")), "--profile")
    lines = out.splitlines()
    assert lines[0] == "backend emulate (CPU emulator (g++)); forwarding on, 4 streams"
    rows = [ln.split() for ln in lines if ln.startswith("g")]
    assert [r[:2] for r in rows] == [["g0", "inner_persistent"], ["g1", "reduction"]]
    assert lines[-2].startswith("output T16: max error ") and lines[-2].endswith(" ok")
    assert lines[-1] == "ok: 1 output(s) match the reference"


def test_run_json_of_rope_bwd(capsys: pytest.CaptureFixture[str]) -> None:
    data = json.loads(out_of(capsys, "run", str(sample("seed003_rope_bwd_small")), "--json"))
    assert data["status"] == "ok" and data["backend"] == "emulate"
    assert len(data["segments"]) == 4 and all(s["max_error"] is not None for s in data["segments"])
    assert [o["ok"] for o in data["outputs"]] == [True]


def test_run_on_the_reference(capsys: pytest.CaptureFixture[str]) -> None:
    out = out_of(capsys, "run", str(sample("gelu_bias")), "--backend", "reference")
    assert "output T12: max error 0.000e+00" in out


def test_run_on_cuda_without_gpu_exits_4_with_one_line() -> None:
    if torch.cuda.is_available():
        pytest.skip("a GPU is present")
    r = run_cli("run", "softmax", "--backend", "cuda")
    assert r.returncode == EXIT_RUN_FAILED and r.stdout == ""
    assert r.stderr.strip().splitlines() == [
        "fusescope: error: ExecutionError: the cuda back end needs a GPU (torch sees none here); "
        "use emulate or reference"]


def test_run_mismatch_exits_3(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    # A wrong kernel cannot be asked for; what the CLI does with the worker's verdict is tested.
    def mismatched(self: Session, backend: str, options: CompileOptions | None = None, **kw: object) -> RunResult:
        return RunResult(backend, "mismatch", "T9 differs from the reference by 5.000e-01 (tolerance 1.0e-05)",
                         options or CompileOptions(), False)

    monkeypatch.setattr(Session, "run", mismatched)
    assert main(["run", str(sample("softmax"))]) == EXIT_MISMATCH
    err = capsys.readouterr().err
    assert err == "fusescope: mismatch: T9 differs from the reference by 5.000e-01 (tolerance 1.0e-05)\n"


def test_run_usage_errors_exit_2() -> None:
    assert run_cli("run", "no/such.py").returncode == 2
    r = run_cli("run", "softmax", "--timeout", "0")
    assert r.returncode == 2 and r.stderr.strip() == "fusescope: error: --timeout must be positive"
    r = run_cli("run", "softmax", "--backend", "tpu")
    assert r.returncode == 2 and "invalid choice: 'tpu'" in r.stderr


# ---- export --------------------------------------------------------------------------------------
@pytest.mark.parametrize("fmt", ["dot", "json", "mermaid"])
def test_export_text_formats(fmt: str, tmp_path: Path) -> None:
    out = tmp_path / f"graph.{fmt}"
    assert main(["export", str(sample("cross_entropy")), "--format", fmt, "-o", str(out)]) == 0
    text = out.read_text()
    if fmt == "json":
        data = json.loads(text)
        assert len(data["nodes"]) == 2 and len(data["edges"]) == 1
    elif fmt == "dot":
        assert text.startswith("digraph ") and "inner_persistent" in text
    else:
        assert text.startswith("flowchart ") and 'g0 -->|"T13 (128 B)"| g1' in text


def test_export_to_stdout(capsys: pytest.CaptureFixture[str]) -> None:
    out = out_of(capsys, "export", str(sample("softmax")), "--format", "mermaid", "-o", "-")
    assert out.startswith("flowchart ")


def test_export_svg_and_png_without_a_system_graphviz(tmp_path: Path) -> None:
    """The images come from the pip install alone: with PATH holding no `dot` (nor anything
    else), the SVG is well-formed XML with a node per segment of the JSON export, edges labelled
    with their tensors, and the PNG is a PNG."""
    env = {**os.environ, "PATH": str(tmp_path)}  # an empty folder: no dot, no graphviz-pure

    def export(fmt: str) -> Path:
        out = tmp_path / f"graph.{fmt}"
        r = subprocess.run([sys.executable, "-m", "fusescope", "export", "seed003_rope_bwd", "--format", fmt,
                            "-o", str(out)], capture_output=True, text=True, env=env, timeout=120)
        assert r.returncode == 0, r.stderr
        return out

    nodes = json.loads(export("json").read_text())
    root = ET.parse(export("svg")).getroot()
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    ns = {"s": "http://www.w3.org/2000/svg"}
    groups = {g.get("class"): [] for g in root.iterfind(".//s:g", ns)}
    for g in root.iterfind(".//s:g", ns):
        groups[g.get("class")].append(g)
    titles = {g.findtext("s:title", namespaces=ns) for g in groups["node"]}
    assert titles == {n["name"] for n in nodes["nodes"]} and len(titles) == 4
    texts = [t.text for t in root.iterfind(".//s:text", ns)]
    for n in nodes["nodes"]:
        assert n["scheduler"] in texts
    edges = {g.findtext("s:title", namespaces=ns) for g in groups["edge"]}
    names = {n["id"]: n["name"] for n in nodes["nodes"]}
    assert edges == {f"{names[e['from']]}->{names[e['to']]}" for e in nodes["edges"]}
    for e in nodes["edges"]:
        assert e["tensor"] in texts
    assert export("png").read_bytes().startswith(b"\x89PNG\r\n\x1a\n")


def test_export_errors_exit_2(tmp_path: Path) -> None:
    r = run_cli("export", "softmax", "--format", "gif", "-o", str(tmp_path / "x.gif"))
    assert r.returncode == 2 and "invalid choice: 'gif'" in r.stderr
    r = run_cli("export", "softmax", "--format", "png", "-o", "-")
    assert r.returncode == 2 and "png is written to a file" in r.stderr
    r = run_cli("export", "softmax", "--format", "dot", "-o", str(tmp_path / "missing" / "x.dot"))
    assert r.returncode == 2 and r.stderr.startswith("fusescope: error: ") and "Traceback" not in r.stderr


def test_attention_with_dropout_shows_and_its_run_fails_naming_op_and_segment(
        capsys: pytest.CaptureFixture[str]) -> None:
    """Every `show` view works on a file with dropout inside attention; `run` exits 4 with the
    engine's refusal, which names the segment and the op."""
    path = str(Path(__file__).parents[1] / "engine" / "fixtures" / "attention_dropout.py")
    assert "dropout_p = 0.1" in out_of(capsys, "show", path, "--ir")
    segments = out_of(capsys, "show", path, "--segments")
    assert re.search(r"g1\s+expr_eval", segments) and re.search(r"g3\s+pointwise", segments)
    assert "expr_eval" in out_of(capsys, "show", path, "--schedule")
    assert "__global__" in out_of(capsys, "show", path, "--cuda")
    assert "sdpa(" in out_of(capsys, "show", path, "--host-ir")
    assert main(["run", path, "--backend", "reference"]) == EXIT_RUN_FAILED
    err = capsys.readouterr().err
    assert err.startswith("fusescope: error: ExecutionError: segment 1 (expr_eval): sdpfa_fwd producing T7, T8, "
                          "T9, T10: dropout_p = 0.1: attention with dropout is not run")
