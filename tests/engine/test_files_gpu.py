"""Every fusion file the CPU tests emulate also runs on the GPU: the real-world scripts that
load and compile, the regression fusions the fuzzer found, and the bundled samples. Each is
compiled at its example inputs on the device, run with the cuda back end as a user would, and
compared with the reference evaluator within the fuzz harness's tolerances; then again at
realistic sizes (its real sizes, or the model scale, brought down to at most 16M elements per
input), where no kernel may keep more than 1 KB of local memory per thread."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from engine import compile_fusion, load_fusion
from engine.errors import ExecutionError, FusionDefinitionError
from engine.reference import evaluate
from scripts.attention_state import attention_state_from_the_forward
from scripts.scales import Scale, UnscalableError, real_scale, reduced_real_scale, rescalable, scaled_fusion
from tests.fuzz.harness import run_compiled
from tests.multidevice.samples import single_device
from tests.realworld.test_realworld import SCRIPTS, WORKS

pytestmark = pytest.mark.gpu

ROOT = Path(__file__).parents[2]
REALISTIC_ELEMS = 16 << 20  # the most elements of one input at the realistic size
LOCAL_LIMIT = 1024  # bytes of local memory (spills, local arrays) a kernel's thread may use


def _files() -> list[Path]:
    regressions = [p for p in sorted((ROOT / "tests" / "regressions" / "fusions").glob("*.py"))
                   if "# expect refused:" not in p.read_text()]
    # The multi-device samples run on 2 GPUs in tests/multidevice/test_multidevice_gpu.py.
    samples = single_device(sorted((ROOT / "sample_fusions").glob("*.py")))
    return [*(SCRIPTS / f"{name}.py" for name in WORKS), *regressions, *samples]


@pytest.mark.parametrize("path", _files(), ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_fusion_file_runs_on_the_gpu(path: Path) -> None:
    fd = load_fusion(path)
    xs = fd.example_inputs(device="cuda", seed=0)
    assert any(isinstance(x, torch.Tensor) and x.is_cuda for x in xs) or not xs
    outcome = run_compiled(fd, xs, backend="cuda")
    assert outcome.kind == "pass", f"{outcome.category}: {outcome.detail}"


def _realistic(path: Path, device: str = "cuda") -> tuple[object, list[object], str]:
    """The file's fusion and inputs (on `device`) at its realistic size, and its label. A
    rewrite that does not hold together is tried again mapping exact values only (as
    size_sweep does); a file without a `# real-sizes:` line that no rewrite fits runs at its
    own size, one with the line fails."""
    text = path.read_text()
    fd0 = load_fusion(path)
    xs0 = fd0.example_inputs(device="cpu", seed=0)
    scale = reduced_real_scale(text, xs0, REALISTIC_ELEMS)
    why = "no input dim is 5 or more"
    if scale is not None:
        specs = fd0.input_specs or [None] * len(xs0)
        for s in (scale, Scale(scale.label, scale.chosen, multiples=False)):
            try:
                fd, xs = scaled_fusion(path, text, s, xs0, specs, cap=1 << 28, device=device)
                xs = attention_state_from_the_forward(fd, xs)
                evaluate(fd.fusion, xs)  # the sizes fit the fusion's own constants
                return fd, xs, s.label
            except (UnscalableError, ExecutionError, FusionDefinitionError) as e:
                why = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
        if real_scale(text) is not None:
            pytest.fail(f"the real sizes reduced to {scale.label} do not fit the script: {why}")
    return fd0, fd0.example_inputs(device=device, seed=0), f"own ({why})"


def _rescalable(path: Path) -> bool:
    return rescalable(path.read_text(), path.stem)


@pytest.mark.parametrize("path", [p for p in _files() if _rescalable(p)], ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_fusion_file_runs_on_the_gpu_at_a_realistic_size(path: Path) -> None:
    fd, xs, label = _realistic(path)
    outcome = run_compiled(fd, xs, backend="cuda")
    assert outcome.kind == "pass", f"at {label}: {outcome.category}: {outcome.detail}"
    cf = compile_fusion(fd, xs)  # the compile run_compiled made (a fusion-cache hit)
    spills = [f"{s.kernel_name} ({s.scheduler}): {s.kernel('cuda').attributes.local_bytes} bytes"
              for s in cf.segments if s.is_kernel and s.kernel("cuda").attributes.local_bytes > LOCAL_LIMIT]
    assert not spills, f"at {label}, local memory per thread over {LOCAL_LIMIT} bytes: {'; '.join(spills)}"
