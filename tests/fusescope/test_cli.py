"""`fusescope show | list` and the command line's error handling, in-process and as a process."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from engine.ir.printer import transforms_block
from fusescope import samples
from fusescope.cli import main
from tests.fusescope.fusions import build_seed001


def run_cli(*args: str, env_samples: Path | None = None) -> subprocess.CompletedProcess[str]:
    """The real entry point in a child process: exit codes and stderr as a user sees them."""
    import os

    env = dict(os.environ)
    if env_samples is not None:
        env["FUSESCOPE_SAMPLES"] = str(env_samples)
    return subprocess.run(
        [sys.executable, "-m", "fusescope", *args], capture_output=True, text=True, env=env, timeout=120
    )


def test_show_ir_prints_the_fusion_listing(seed001_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["show", str(seed001_file), "--ir"]) == 0
    out = capsys.readouterr().out
    assert out == str(build_seed001().fusion)
    assert out.startswith("Inputs:\n  T0_g_float[bS0{1}, iS1{4096}, iS2{4096}]\n")


def test_show_transforms_prints_the_tensor_block(seed001_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["show", str(seed001_file), "--transforms", "T0"]) == 0
    out = capsys.readouterr().out
    t0 = build_seed001().fusion.inputs[0]
    assert out == transforms_block(t0)
    assert " allocation domain : (iS1{4096}, bS0{1}, iS2{4096})" in out
    # A bare number means the same tensor.
    assert main(["show", str(seed001_file), "--transforms", "0"]) == 0
    assert capsys.readouterr().out == out


def test_show_unknown_tensor_exits_2_and_lists_the_known_ones(seed001_file: Path) -> None:
    r = run_cli("show", str(seed001_file), "--transforms", "T99")
    assert r.returncode == 2
    assert "no tensor T99" in r.stderr and "T6" in r.stderr
    assert "Traceback" not in r.stderr


def test_show_malformed_file_exits_2_naming_the_error_and_line(malformed_file: Path) -> None:
    r = run_cli("show", str(malformed_file), "--ir")
    assert r.returncode == 2
    assert r.stdout == ""
    assert "FusionFileError" in r.stderr and "3" in r.stderr
    assert "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


def test_show_missing_file_exits_2_with_one_line() -> None:
    r = run_cli("show", "no/such/fusion.py", "--ir")
    assert r.returncode == 2
    assert r.stderr.strip() == "fusescope: error: no such file: no/such/fusion.py"


def test_tui_on_a_missing_file_exits_2_before_starting() -> None:
    # The TUI is never started for a file that cannot be read: the error is on the terminal.
    r = run_cli("no/such/fusion.py")
    assert r.returncode == 2
    assert "no such file: no/such/fusion.py" in r.stderr
    assert "Traceback" not in r.stderr


def test_show_needs_ir_or_transforms() -> None:
    r = run_cli("show", "whatever.py")
    assert r.returncode == 2
    assert ("one of the arguments --ir --transforms --schedule --why --segments --cuda --kernel-ir --host-ir "
            "--runs is required") in r.stderr


def test_list_prints_each_sample_with_its_summary(tmp_path: Path) -> None:
    (tmp_path / "b_sum.py").write_text('"""A row sum."""\n')
    (tmp_path / "a_copy.py").write_text("# Copy a tensor\n# more words\n")
    (tmp_path / "_private.py").write_text("")
    (tmp_path / "notes.txt").write_text("not a sample")
    r = run_cli("list", env_samples=tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == ["a_copy  Copy a tensor more words", "b_sum   A row sum."]


def test_list_without_samples_exits_2(tmp_path: Path) -> None:
    r = run_cli("list", env_samples=tmp_path / "missing")
    assert r.returncode == 2
    assert "no bundled samples" in r.stderr


def test_bundled_samples_are_listed(capsys: pytest.CaptureFixture[str]) -> None:
    found = samples.list_samples()
    if not found:
        pytest.skip("sample_fusions/ has no samples yet")
    assert main(["list"]) == 0
    names = [line.split()[0] for line in capsys.readouterr().out.splitlines()]
    assert names == [s.name for s in found]


def test_a_sample_name_resolves_to_its_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "seed001_inner_outer_alloc.py").write_text("")
    (tmp_path / "other.py").write_text("")
    monkeypatch.setenv("FUSESCOPE_SAMPLES", str(tmp_path))
    assert samples.resolve("other") == tmp_path / "other.py"
    assert samples.resolve("other.py") == tmp_path / "other.py"
    assert samples.default_sample().path == tmp_path / "seed001_inner_outer_alloc.py"
    # Not a sample and not a file: handed back as a path for the loader to report.
    assert samples.resolve("nope") == Path("nope")


def test_show_every_bundled_sample(capsys: pytest.CaptureFixture[str]) -> None:
    # In this process (the child-process entry point is checked by the tests above): one
    # interpreter start instead of one per sample.
    found = samples.list_samples()
    if not found:
        pytest.skip("sample_fusions/ has no samples yet")
    for s in found:
        code = main(["show", s.name, "--ir"])
        out, err = capsys.readouterr()
        assert code == 0, f"{s.name}: {err}"
        assert "%kernel_math {" in out
        # A multi-device sample's listing has the sharding column under it.
        assert ("\nSharding (" in out) == s.name.startswith("multidevice_"), s.name


# ---- --schedule / --why: real scheduler output on bundled samples -------------------------
def _sample(name: str) -> Path:
    path = samples.resolve(name)
    # The samples ship with the project: a missing one is a failure, not a skip.
    assert path.exists(), f"bundled sample {name} is missing"
    return path


def test_show_schedule_gelu_bias_is_pointwise(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["show", str(_sample("gelu_bias")), "--schedule"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("1 segment(s) (forwarding on, 4 streams)\n\nSegment g0: ")
    assert "Scheduler _pointwise_ ***accepted***\n" in out
    assert "Scheduler _reduction_ ***rejected*** because : No reduction op to schedule\n" in out
    assert "Accepted by: pointwise\n" in out
    assert "===== Pointwise Parameters ========" in out and "vectorization_factor: " in out
    assert "\nDerivation:\n" in out
    ir = out.split("Scheduled IR:\n", 1)[1]
    assert "%kernel_math {" in ir
    # Scheduled: parallel types and inlining positions appear, which the raw listing lacks.
    assert "threadIdx.x" in ir and "ca_pos(" in ir
    # The verdicts come in nvFuser's priority order, one per scheduler.
    verdict_lines = [ln for ln in out.splitlines() if ln.startswith("Scheduler _")]
    assert [ln.split("_")[1] for ln in verdict_lines][:3] == ["expr", "no", "matmul"]
    assert len(verdict_lines) == 10


def test_show_schedule_softmax_refuses_pointwise_for_its_reductions(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["show", str(_sample("softmax")), "--schedule"]) == 0
    out = capsys.readouterr().out
    assert "Scheduler _pointwise_ ***rejected*** because : no support for reduction ops\n" in out
    assert "Accepted by: inner_persistent\n" in out
    assert "===== Reduction Parameters ========" in out and "Persistent Kernel" in out


def test_show_schedule_cross_entropy_has_one_part_per_segment(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["show", str(_sample("cross_entropy")), "--schedule"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("2 segment(s) ")
    heads = [ln.split(":")[0] for ln in out.splitlines() if ln.startswith("Segment g")]
    assert heads == ["Segment g0", "Segment g1"]
    assert [ln for ln in out.splitlines() if ln.startswith("Accepted by: ")] == [
        "Accepted by: inner_persistent", "Accepted by: reduction"]


def test_show_why_lists_decisions_one_per_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["show", str(_sample("softmax")), "--why"]) == 0
    # A verdict asked again (by the segmenter, then by the scheduling step) is one line, "(x2)".
    lines = [re.sub(r" \(x\d+\)$", "", ln) for ln in capsys.readouterr().out.splitlines()]
    assert "[can_schedule] g0: Scheduler _pointwise_ ***rejected*** because : no support for reduction ops" in lines
    assert "[can_schedule] g0: Scheduler _inner_persistent_ ***accepted***" in lines
    assert any(ln.startswith("[heuristic] g0: ") and "persistent buffer" in ln for ln in lines)
    assert lines[0].startswith("[segment] fusion: ")
    # Every line is one event; transforms are the scheduled IR's business, not the decisions'.
    assert all(ln.startswith(("[segment] ", "[merge] ", "[forward] ", "[can_schedule] ", "[heuristic] ",
                              "[launch] ")) for ln in lines)
    # 16 rows, fewer than the SMs: one row a block, its 1000 values as 250 threads x 4 (the
    # batch rule's largest block); the launch line is the compiled kernel's.
    assert "[heuristic] g0: TIDx 250 x batches 1 x vector 4 covers 1000; TIDy 1 rows per block" in lines
    assert "[launch] g0: grid (16, 1, 1), block (250, 1, 1), 2000 B dynamic shared memory = " \
           "2000 B block-reduction workspace" in lines


def test_show_why_gelu_bias_names_the_vectorization(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["show", str(_sample("gelu_bias")), "--why"]) == 0
    lines = [re.sub(r" \(x\d+\)$", "", ln) for ln in capsys.readouterr().out.splitlines()]
    assert "[can_schedule] g0: Scheduler _pointwise_ ***accepted***" in lines
    assert any(ln.startswith("[heuristic] g0: ") and "vectoriz" in ln for ln in lines)


def test_show_schedule_without_inputs_list_exits_2_with_one_line(symbolic_file: Path) -> None:
    # No `inputs = [...]` and symbolic sizes: no sizes, so nothing can be scheduled.
    for flag in ("--schedule", "--why"):
        r = run_cli("show", str(symbolic_file), flag)
        assert r.returncode == 2, r.stderr
        assert r.stdout == ""
        assert r.stderr.startswith("fusescope: error: compilation failed: no example inputs: ")
        assert "Traceback" not in r.stderr
        assert len(r.stderr.strip().splitlines()) == 1


def test_show_notes_the_skipped_checking_code_on_stderr(capsys: pytest.CaptureFixture[str]) -> None:
    script = Path(__file__).parents[1] / "realworld" / "scripts" / "softmax_bwd_numpy_allclose_trailer.py"
    assert main(["show", str(script), "--ir"]) == 0
    out, err = capsys.readouterr()
    assert out.startswith("Inputs:")  # the listing alone on stdout
    assert err.count("\n") == 1 and "statements after the run skipped, not evaluated" in err and "lines 30, 32-37" in err
