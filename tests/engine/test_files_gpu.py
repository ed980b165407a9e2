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


def attention_state_from_the_forward(fd: object, xs: list[object]) -> list[object]:
    """`xs` with each sdpfa_bwd's saved output and log-sum-exp replaced by those of the forward
    (sdpfa_fwd of its query, key and value, with its dropout, causality and scale, evaluated
    by the reference as on the device) where all five are fusion inputs. Drawn at random they
    are no attention state: at [1, 32, 2048, 128] (sdpa_bwd_gqa_repeat_sum_permute_cat_qkv_
    grad_bf16) scale * q.k - lse reaches 131, exp() overflows in the backward, and the grads'
    infinities summed over the GQA repeats give NaN or -inf by the order of the additions."""
    from engine import FusionDefinition
    from engine.dtypes import from_torch
    from engine.ir.exprs import SdpaBwdOp

    fusion = fd.fusion  # type: ignore[attr-defined]
    at = {id(v): k for k, v in enumerate(fusion.inputs)}
    xs = list(xs)

    def value(s: object) -> object:
        return xs[at[id(s)]] if id(s) in at else s.value  # type: ignore[attr-defined]

    for e in fusion.exprs():
        if not isinstance(e, SdpaBwdOp):
            continue
        _grad, q, k, v, o, lse, dropout_p, causal = e.inputs[:8]
        if not all(id(t) in at for t in (q, k, v, o, lse)):
            continue
        qkv = [xs[at[id(t)]].contiguous() for t in (q, k, v)]  # type: ignore[union-attr]
        scale = None if e.scale is None else value(e.scale)
        with FusionDefinition() as f:
            ts = [f.define_tensor(shape=[-1] * 4, contiguity=[True] * 4, dtype=from_torch(x.dtype)) for x in qkv]
            out, logsumexp, _seed, _offset = f.ops.sdpfa_fwd(
                *ts, dropout_p=float(value(dropout_p)), is_causal=bool(value(causal)),
                scale=None if scale is None else float(scale))
            f.add_output(out)
            f.add_output(logsumexp)
        for t, got in zip((o, lse), evaluate(f.fusion, qkv)):
            old = xs[at[id(t)]]
            new = torch.empty_like(old)  # type: ignore[call-overload]
            new.copy_(got)
            xs[at[id(t)]] = new
    return xs


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
