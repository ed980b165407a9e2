"""The bundled multi-device samples (sample_fusions/multidevice_*.py) and the communications
their programs make. Tests that iterate the bundled samples take these out of their
single-device checks (a fusion with device meshes runs on several ranks; compile_fusion gives
one rank's program) and check them the multi-device way: tests/multidevice/test_multidevice_samples.py runs them on 2 ranks,
tests/fusescope/test_multidevice_cli.py through the debugger."""

from __future__ import annotations

from pathlib import Path

SAMPLES = Path(__file__).resolve().parents[2] / "sample_fusions"

# Sample name -> the kinds of its program's communications, in run order.
MULTIDEVICE = {
    "multidevice_sp_mlp": ["Allgather", "ReduceScatter"],
    "multidevice_tp_mlp": ["Allreduce"],
}


def single_device(paths: list[Path]) -> list[Path]:
    """`paths` without the multi-device samples."""
    return [p for p in paths if p.stem not in MULTIDEVICE]
