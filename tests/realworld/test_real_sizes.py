"""Real sizes of the real-world scripts (scripts/scales.py): the `# real-sizes:` header line, the
scale it makes, and its reduction to the GPU tests' bounded sizes, on the CPU."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch

from engine import load_fusion, loads_fusion
from engine.reference import evaluate
from scripts import scales as S  # noqa: N812 - the module under test
from tests.realworld.test_realworld import SCRIPTS, WORKS

ROOT = Path(__file__).resolve().parents[2]

# Rows of [S, H] split into heads (H = heads x head_dim), weighted and summed per head.
HEADS = '''# A test script.
# real-sizes: {sizes}
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id0(fd: FusionDefinition) -> None:
    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False)
    T1 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float, is_cpu=False)
    T2 = fd.ops.reshape(T0, new_shape=[10, 3, 8])
    T3 = fd.ops.cast(T2, dtype=DataType.Float)
    T4 = fd.ops.broadcast_in_dim(T1, shape=[10, 3, 8], broadcast_dims=[2])
    T5 = fd.ops.mul(T3, T4)
    T6 = fd.ops.sum(T5, dims=[2], keepdim=False, dtype=DataType.Null)
    fd.add_output(T6)


with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.randn((10, 24), dtype=torch.bfloat16, device='cuda:0'),
    torch.randn((8,), dtype=torch.float32, device='cuda:0'),
]
fd.execute(inputs)
'''


def _script(tmp_path: Path, sizes: str) -> Path:
    p = tmp_path / "heads.py"
    p.write_text(HEADS.format(sizes=sizes))
    return p


def _at(p: Path, scale: S.Scale) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
    """The inputs and reference outputs of script `p` at `scale` (CPU)."""
    fd0 = load_fusion(p)
    xs0 = fd0.example_inputs(seed=0)
    fd, xs = S.scaled_fusion(p, p.read_text(), scale, xs0, fd0.input_specs, cap=1 << 24)
    return xs, evaluate(fd.fusion, xs)


def test_real_scale_reads_the_header_line():
    s = S.real_scale("# about\n# real-sizes: 64=8192 24=16384  67=20481\nimport torch\n")
    assert (s.label, s.chosen, s.multiples) == ("real", {64: 8192, 24: 16384, 67: 20481}, True)
    assert s(64 * 24) == 8192 * 16384  # a product of sizes (a reshape's B*S) maps with them
    assert S.real_scale("# no such line\nimport torch\n") is None


@pytest.mark.parametrize("line", ["# real-sizes: 64:8192", "# real-sizes: 1=8", "# real-sizes: 8=x",
                                  "# real-sizes: 8=16 8=32", "# real-sizes:"])
def test_a_malformed_header_line_is_an_error(line):
    with pytest.raises(ValueError, match="real-sizes"):
        S.real_scale(line + "\n")


def test_the_real_scale_rewrites_script_and_inputs(tmp_path):
    p = _script(tmp_path, "10=40 3=4 8=16 24=64")
    xs, outs = _at(p, S.real_scale(p.read_text()))
    assert [tuple(x.shape) for x in xs] == [(40, 64), (16,)]
    assert [x.dtype for x in xs] == [torch.bfloat16, torch.float32]
    assert [tuple(o.shape) for o in outs] == [(40, 4)]


def test_shrink_keeps_oddness_and_the_power_of_two_up_to_16():
    assert S._shrink(64, 8192, 8) == 1024  # exact where it divides
    assert S._shrink(5, 6144, 8) == 768  # keeps the factor 3
    odd = S._shrink(67, 20481, 8)
    assert odd % 2 == 1 and abs(odd - 20481 / 8) < 2
    four = S._shrink(7, 4100, 4)  # 4 x 1025: 4 x an odd number
    assert four % 4 == 0 and four % 8 != 0
    assert S._shrink(67, 20481, 1 << 12) == 67  # never below the script's own size
    assert S._shrink(64, 8192, 1) == 8192


def test_reduced_scale_is_the_real_one_when_it_fits():
    real = S.Scale("real", {64: 8192, 24: 16384})
    assert S.reduced_scale(real, [(64, 24)], 8192 * 16384) == real


def test_reduced_scale_bounds_the_largest_input_and_keeps_products(tmp_path):
    p = _script(tmp_path, "10=8192 3=32 8=128 24=4096")
    real = S.real_scale(p.read_text())
    bound = 1 << 16
    red = S.reduced_scale(real, [(10, 24), (8,)], bound)
    assert red.label.startswith("real/")
    assert red.chosen[24] == red.chosen[3] * red.chosen[8]  # hidden = heads x head_dim
    assert all(v <= red.chosen[v] <= real.chosen[v] for v in real.chosen)
    xs, outs = _at(p, red)  # the rewritten reshape holds at the reduced sizes
    assert max(x.numel() for x in xs) <= bound
    assert tuple(outs[0].shape) == (red.chosen[10], red.chosen[3])
    assert red.chosen[10] * red.chosen[24] > bound // 4  # divided no further than needed


def test_reduced_scale_stops_at_the_scripts_own_sizes():
    red = S.reduced_scale(S.Scale("real", {64: 8192, 67: 20481}), [(64, 67)], 16)
    assert red.chosen == {64: 64, 67: 67}


def test_without_the_line_the_model_scale_is_reduced_with_one_multiplier():
    xs = [torch.zeros(16, 1000), torch.zeros(1000)]
    assert S.reduced_real_scale("import torch\n", xs, max_elems=1 << 20) == S.Scale(
        "model(x8)", {16: 128, 1000: 8000})  # the model scale itself fits
    assert S.reduced_real_scale("import torch\n", xs, max_elems=1 << 16) == S.Scale(
        "model(x2)", {16: 32, 1000: 2000})  # neither 128 x 8000 nor 64 x 4000 does
    assert S.reduced_real_scale("import torch\n", xs, max_elems=16 * 1000) is None  # own size
    assert S.reduced_real_scale("import torch\n", [torch.zeros(3, 4)]) is None  # no dim >= 5


def test_to_device_keeps_strides_of_expanded_and_padded_inputs():
    expanded = torch.randn(4, 1).expand(4, 6)
    padded = torch.randn(5, 8)[:, :6]
    for x in (expanded, padded, torch.randn(3, 5).t()):
        y = S.to_device(x, "meta")
        assert y.device.type == "meta" and y.shape == x.shape and y.stride() == x.stride()
    assert S.to_device(padded, "cpu") is padded


def test_scaled_inputs_draw_from_their_seed(tmp_path):
    p = _script(tmp_path, "10=40 3=4 8=16 24=64")
    fd0 = load_fusion(p)
    xs0 = fd0.example_inputs(seed=0)
    real = S.real_scale(p.read_text())
    a, b = (S.scaled_inputs(real, xs0, fd0.input_specs, 1 << 24, "cpu", seed) for seed in (0, 1))
    assert a[0].shape == b[0].shape == (40, 64) and not torch.equal(a[0], b[0])
    assert torch.equal(a[0], S.scaled_inputs(real, xs0, fd0.input_specs, 1 << 24, "cpu", 0)[0])


def _gpu_test_files() -> list[Path]:
    from tests.engine.test_files_gpu import _files

    return _files()


def test_every_file_of_the_gpu_tests_has_bounded_reduced_sizes():
    """The GPU tests' sizes (reduced_real_scale) keep every input within 16M elements, and a
    script's `# real-sizes:` line rewrites it at its real and its reduced sizes."""
    files = _gpu_test_files()
    assert len(files) >= len(WORKS)
    for p in files:
        text = p.read_text()
        fd = load_fusion(p)
        xs = fd.example_inputs(seed=0)
        s = S.reduced_real_scale(text, xs)
        if s is None:
            continue
        big = max((math.prod(s(n) for n in x.shape) for x in xs if isinstance(x, torch.Tensor)), default=0)
        assert big <= 16 << 20, f"{p.stem} at {s.label}: {big} elements"
        real = S.real_scale(text)
        if real is not None:
            for scale in (real, s):
                loads_fusion(S.rewrite(text, scale), filename=f"{p.stem}@{scale.label}")


def test_the_gpu_tests_realistic_size_of_a_file(tmp_path):
    from tests.engine.test_files_gpu import _realistic

    fd, xs, label = _realistic(_script(tmp_path, "10=20 3=4 8=16 24=64"), device="cpu")
    assert label == "real" and [tuple(x.shape) for x in xs] == [(20, 64), (16,)]
    fd, xs, label = _realistic(ROOT / "sample_fusions" / "softmax.py", device="cpu")
    assert label == "model(x8)" and tuple(xs[0].shape) == (128, 8000)
    # a reshape the model scale does not keep: the file's own size
    fd, xs, label = _realistic(ROOT / "sample_fusions" / "reshape_chain.py", device="cpu")
    assert label.startswith("own (UnscalableError") and xs[0].shape == load_fusion(
        ROOT / "sample_fusions" / "reshape_chain.py").example_inputs()[0].shape
    # real sizes that do not fit the script (24 is no longer 3 x 8) fail the test
    with pytest.raises(pytest.fail.Exception, match="do not fit the script"):
        _realistic(_script(tmp_path, "10=20 3=4 8=16 24=100"), device="cpu")


def test_the_gpu_tests_attention_backward_gets_the_forwards_state():
    """sdpa_bwd_gqa_repeat_sum_permute_cat_qkv_grad_bf16 at its real size [1, 32, 2048, 128]:
    its saved output and log-sum-exp were drawn at random, so scale * q.k - lse reached 131,
    exp() overflowed in the backward and the reference's grads held 2.3M NaN and 4M
    infinities (the H200 run compared NaN with -inf). The GPU test's inputs take them from
    the forward now: the log-sum-exp is that of the causal scores, and every grad is finite."""
    from tests.engine.test_files_gpu import _realistic

    fd, xs, label = _realistic(SCRIPTS / "sdpa_bwd_gqa_repeat_sum_permute_cat_qkv_grad_bf16.py", device="cpu")
    assert label == "real"
    q, k, lse = xs[1], xs[2], xs[5]
    s = (q[0, 0].float() @ k[0, 0].float().T) * 0.25
    s = s.masked_fill(~torch.ones_like(s, dtype=torch.bool).tril(), float("-inf"))
    torch.testing.assert_close(lse[0, 0], torch.logsumexp(s, dim=-1), rtol=1e-5, atol=1e-4)
    (out,) = evaluate(fd.fusion, xs)
    assert out.shape == (1, 2048, (32 + 2 * 8) * 128) and bool(out.float().isfinite().all())
