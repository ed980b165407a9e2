"""Every fusion file the CPU tests emulate also runs on the GPU: the real-world scripts that
load and compile, the regression fusions the fuzzer found, and the bundled samples. Each is
compiled at its example inputs on the device, run with the cuda back end as a user would, and
compared with the reference evaluator within the fuzz harness's tolerances."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from engine import load_fusion
from tests.fuzz.harness import run_compiled
from tests.realworld.test_realworld import SCRIPTS, WORKS

pytestmark = pytest.mark.gpu

ROOT = Path(__file__).parents[2]


def _files() -> list[Path]:
    regressions = [p for p in sorted((ROOT / "tests" / "regressions" / "fusions").glob("*.py"))
                   if "# expect refused:" not in p.read_text()]
    samples = sorted((ROOT / "sample_fusions").glob("*.py"))
    return [*(SCRIPTS / f"{name}.py" for name in WORKS), *regressions, *samples]


@pytest.mark.parametrize("path", _files(), ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_fusion_file_runs_on_the_gpu(path: Path) -> None:
    fd = load_fusion(path)
    xs = fd.example_inputs(device="cuda", seed=0)
    assert any(isinstance(x, torch.Tensor) and x.is_cuda for x in xs) or not xs
    outcome = run_compiled(fd, xs, backend="cuda")
    assert outcome.kind == "pass", f"{outcome.category}: {outcome.detail}"
