"""benchmarks/ without a GPU: the benchmark fusions are the bundled samples' definitions, they
evaluate with the reference at small sizes and match their hand-written torch twins; minimal
bytes, error figures, ratios and the table; the nvFuser mirror against a fake frontend; the
timing helpers on the CPU."""

from __future__ import annotations

import json
import math
import types
from pathlib import Path

import pytest
import torch

from benchmarks import fusions as F  # noqa: N812 - short names for the two modules under test
from benchmarks import report as R  # noqa: N812
from benchmarks.nvf import mirror
from benchmarks.timing import input_sets_needed, time_calls
from engine import DataType, load_fusion
from engine.reference import evaluate

SAMPLES = Path(__file__).resolve().parents[2] / "sample_fusions"


# ---- the definitions are the samples' ------------------------------------------------------------

@pytest.mark.parametrize("sample, build", [
    ("gelu_bias.py", lambda: F.gelu_bias(DataType.Half, 128, 384)),
    ("rms_norm.py", lambda: F.rms_norm(DataType.BFloat16, 64, 512)),
    ("layer_norm.py", lambda: F.layer_norm(DataType.BFloat16, 32, 256)),
    ("softmax.py", lambda: F.softmax(DataType.Float, 16, 1000)),
    ("seed001_inner_outer_alloc.py", lambda: F.inner_outer(4096)),
    ("outer_reduction.py", lambda: F.outer_sum(DataType.BFloat16, 1024, 64)),
    ("seed003_rope_bwd.py", lambda: F.rope_bwd(8192, 1)),
    ("seed003_rope_bwd_small.py", lambda: F.rope_bwd(16, 1)),
    ("seed004_nvfp4_quantize.py", lambda: F.nvfp4_quantize(DataType.BFloat16, 32, 128)),
    ("seed004_nvfp4_quantize_swizzled.py", lambda: F.nvfp4_quantize_swizzled(DataType.Float, 256, 128)),
    ("transpose.py", lambda: F.transpose(DataType.Float, 64, 96)),
])
def test_builder_is_the_sample(sample, build):
    assert str(build().fusion) == str(load_fusion(SAMPLES / sample).fusion)


def test_full_list_has_the_issue_sizes():
    by = {f.name: f for f in F.benchmark_fusions("full")}
    assert by["gelu_bias"].shape == "bf16 [8192, 8192]"
    assert by["rms_norm"].shape == "bf16 [16384, 4096]"
    assert by["layer_norm"].shape == "fp32 [8192, 4096]"
    assert by["softmax"].shape == "bf16 [16384, 4096]"
    assert by["inner_outer"].shape == "fp32 [1, 4096, 4096]"
    assert by["outer_sum"].shape == "fp32 [32768, 4096]"
    assert by["rope_bwd"].shape == "bf16 B=2 S=8192"
    assert by["nvfp4"].shape == by["nvfp4_swizzled"].shape == by["transpose"].shape == "bf16 [8192, 8192]"
    # defining at full size builds IR only (no tensors): cheap
    fd = by["rms_norm"].build()
    assert [t.dtype for t in fd.fusion.inputs] == [DataType.BFloat16, DataType.BFloat16]


SMALL = F.benchmark_fusions("small")


@pytest.mark.parametrize("bf", SMALL, ids=[f.name for f in SMALL])
def test_small_fusion_evaluates_and_matches_its_torch_twin(bf):
    fd = bf.build()
    xs = bf.make_inputs("cpu", 0)
    for x in xs:
        if isinstance(x, torch.Tensor) and x.dtype.is_floating_point:
            assert (x != 0).all(), "benchmark inputs are non-zero"
    refs = evaluate(fd.fusion, xs)
    twin = bf.torch_fn(*xs)
    twin = list(twin) if isinstance(twin, tuple) else [twin]
    cmp = R.compare(twin, refs)
    assert cmp["ok"], cmp
    assert cmp.get("max_rel_err", 0.0) < 1e-6
    assert cmp.get("bytes_differ", 0) == 0
    # fresh inputs per seed (rotating sets differ)
    other = bf.make_inputs("cpu", 1)
    assert not torch.equal(xs[0], other[0])


# ---- arithmetic ------------------------------------------------------------------------------------

def test_minimal_bytes():
    x = torch.zeros(64, 96, dtype=torch.bfloat16)
    b = torch.zeros(96, dtype=torch.bfloat16)
    y = torch.zeros(64, 96, dtype=torch.bfloat16)
    assert R.minimal_bytes([x, b], [y]) == 64 * 96 * 2 * 2 + 96 * 2
    # an expanded (stride 0) input is read once; numbers cost nothing
    assert R.minimal_bytes([b.expand(64, 96), 2.0], []) == 96 * 2
    # seed 001's input [1, n, n] with strides (n, n, 1): n*n floats
    n = 8
    t = torch.zeros(n * n).as_strided((1, n, n), (n, n, 1))
    assert R.minimal_bytes([t], []) == n * n * 4


def test_minimal_bytes_of_the_full_fusions_by_formula():
    # from the reference outputs' shapes at small sizes, checked against each fusion's formula
    by = {f.name: f for f in SMALL}
    m, k = F.SMALL_SIZES["nvfp4"]
    xs = by["nvfp4"].make_inputs("cpu", 0)
    outs = evaluate(by["nvfp4"].build().fusion, xs)
    assert R.minimal_bytes(xs, outs) == m * k * 2 + 4 + m * k // 2 + m * k // 16
    b, s = F.SMALL_SIZES["rope_bwd"]
    xs = by["rope_bwd"].make_inputs("cpu", 0)
    outs = evaluate(by["rope_bwd"].build().fusion, xs)
    assert R.minimal_bytes(xs, outs) == 2 * (2 * s * 128 + 2 * b * 32 * s * 128) + 2 * b * s * 6144
    m, n = F.SMALL_SIZES["rms_norm"]
    xs = by["rms_norm"].make_inputs("cpu", 0)
    outs = evaluate(by["rms_norm"].build().fusion, xs)
    assert R.minimal_bytes(xs, outs) == 2 * m * n + 2 * n + 2 * m * n + 4 * m


def test_compare():
    e = torch.tensor([1.0, -2.0, 4.0])
    assert R.compare([e.clone()], [e]) == {"ok": True, "max_rel_err": 0.0}
    c = R.compare([e + torch.tensor([0.0, 0.0, 0.04])], [e])
    assert math.isclose(c["max_rel_err"], 0.01, rel_tol=1e-6)
    q = torch.tensor([1, 2, 3], dtype=torch.uint8)
    assert R.compare([torch.tensor([1, 9, 3], dtype=torch.uint8)], [q]) == {"ok": True, "bytes_differ": 1}
    assert R.compare([torch.ones(2)], [torch.ones(3)])["ok"] is False
    assert R.compare([torch.tensor([float("nan")])], [torch.ones(1)])["ok"] is False
    assert R.compare([], [e])["ok"] is False
    assert R.error_text({"ok": True, "bytes_differ": 0}) == "exact"
    assert R.error_text({"ok": True, "max_rel_err": 3.1e-3}) == "3.1e-03"


def test_derive_ratios_and_bandwidth():
    row = {"name": "f", "bytes_min": 3_000_000_000,
           "times_ms": {"engine_run": 2.0, "engine_kernels": 1.5, "eager_ref": 8.0, "compile_default": 1.0,
                        "compile_mat": 0.8, "nvfuser": None}}
    R.derive(row, copy_gbps=3000.0)
    assert row["engine_gbps"] == pytest.approx(1500.0)
    assert row["engine_pct_copy"] == pytest.approx(50.0)
    assert row["engine_kernels_pct_copy"] == pytest.approx(100 * 2000 / 3000)
    assert row["copy_floor_ms"] == pytest.approx(1.0)
    assert row["ratio_engine_eager"] == pytest.approx(0.25)
    assert row["ratio_engine_compile"] == pytest.approx(2.5)  # against the faster mode
    assert (row["best_peer"], row["best_peer_ms"]) == ("compile_mat", 0.8)
    assert R.geomean([50.0, 200.0, None]) == pytest.approx(100.0)


def test_compile_ratios_use_the_engine_timed_beside_torch_compile():
    times = {"engine_run": 1.0, "engine_run_late": 0.9, "compile_default": 0.95, "compile_mat": 1.2,
             "nvfuser": 0.97}
    row = R.derive({"name": "f", "bytes_min": 1, "times_ms": dict(times)}, copy_gbps=1.0)
    assert row["ratio_engine_compile"] == pytest.approx(0.9 / 0.95)
    assert (row["best_peer"], row["ratio_engine_best_peer"]) == ("compile_default", pytest.approx(0.9 / 0.95))
    assert row["engine_gbps"] == pytest.approx(1e-6)  # bandwidth stays the core phase's figure
    row = R.derive({"name": "f", "bytes_min": 1, "times_ms": {**times, "nvfuser": 0.5}}, copy_gbps=1.0)
    assert row["ratio_engine_best_peer"] == pytest.approx(2.0)  # nvFuser ran beside the core-phase time
    del times["engine_run_late"]
    row = R.derive({"name": "f", "bytes_min": 1, "times_ms": times}, copy_gbps=1.0)
    assert row["ratio_engine_compile"] == pytest.approx(1.0 / 0.95)


def test_table_format():
    ok = R.derive({"name": "gelu_bias", "shape": "bf16 [8192, 8192]", "kernels": 1, "bytes_min": 268_451_840,
                   "engine_check": {"ok": True, "max_rel_err": 0.0039},
                   "times_ms": {"engine_run": 0.1, "engine_kernels": 0.095, "eager_ref": 0.5, "eager_torch": 0.45,
                                "compile_default": 0.105, "compile_mat": 0.11, "nvfuser": 0.101},
                   "compile_ms": 120.0, "recompile_ms": 90.0, "recompile_cached": True}, 3000.0)
    bad = R.derive({"name": "x|y", "shape": "fp32", "engine_error": "compile: CompileError: no",
                    "times_ms": {"eager_ref": 1.0}, "skipped": {"nvfuser": "does not import"}}, 3000.0)
    text = R.format_table([ok, bad])
    lines = text.splitlines()
    ncol = len(R.table_columns())
    assert len(lines) == 4
    for line in lines:
        assert line.startswith("|") and line.endswith("|")
        assert line.count("|") == ncol + 1
    cells = [c.strip() for c in lines[2].strip("|").split("|")]
    head = [c.strip() for c in lines[0].strip("|").split("|")]
    got = dict(zip(head, cells))
    assert got["engine run us"] == "100.0" and got["nvFuser us"] == "101.0"
    assert got["engine err"] == "3.9e-03"
    assert got["best peer"] == "nvFuser 101.0" and got["eng/best"] == "0.99"
    assert got["eng/eager"] == "0.20" and got["eng/compile"] == "0.95"
    assert got["MB"] == "268.5" and got["% copy"] == "89.5"
    assert "x/y" in lines[3] and "FAILED" in lines[3]
    full = R.format_report([ok, bad], {"device": "H100", "copy_gbps": 3000.0})
    assert full.splitlines()[0] == "## fusescope benchmarks on H100"
    assert "engine failed in compile: CompileError: no" in full
    assert "nvfuser not timed (x|y): does not import" in full
    assert "89.5% (1 fusions); from kernel times: 94.2%" in full
    json.dumps([ok, bad])  # rows are JSON


# ---- nvFuser mirror, against a fake frontend ---------------------------------------------------------

class _FakeNvf:
    """Records what the mirror calls; tensors are strings naming the call that made them."""

    def __init__(self):
        self.calls = []
        self.DataType = types.SimpleNamespace(**{d.name: f"nvf.{d.name}" for d in DataType})
        fake = self

        class FD:
            def __init__(self):
                self.ops = types.SimpleNamespace()
                for name in ("cast", "nv_block_quantize", "sum", "broadcast_in_dim", "add", "mul", "erf", "div",
                             "rsqrt", "var_mean", "sub"):
                    setattr(self.ops, name, self._op(name))

            def _op(self, name):
                def op(*args, **kwargs):
                    fake.calls.append((name, args, kwargs))
                    n = len(fake.calls)
                    return (f"{name}{n}.0", f"{name}{n}.1") if name in ("nv_block_quantize", "var_mean") \
                        else f"{name}{n}"
                return op

            def __enter__(self):
                return self

            def __exit__(self, *exc):
                return False

        for name in ("define_tensor", "define_scalar", "add_output"):
            setattr(FD, name, lambda self, *a, _n=name, **k: FD._op(self, _n)(*a, **k))
        self.FusionDefinition = FD


def test_mirror_replays_the_calls():
    nvf = _FakeNvf()
    mirror(F.nvfp4_quantize_swizzled(DataType.BFloat16, 256, 128), nvf)
    names = [c[0] for c in nvf.calls]
    assert names == ["define_tensor", "nv_block_quantize", "add_output", "add_output"]
    _, args, kwargs = nvf.calls[1]
    assert args == ("define_tensor1",)
    assert kwargs == {"swizzle_block_scales": True, "block_size": 16, "dtype": "nvf.Float4_e2m1fn"}
    assert nvf.calls[0][2]["dtype"] == "nvf.BFloat16"
    assert nvf.calls[2][1] == ("nv_block_quantize2.0",) and nvf.calls[3][1] == ("nv_block_quantize2.1",)


def test_mirror_layer_norm_maps_every_value():
    nvf = _FakeNvf()
    mirror(F.layer_norm(DataType.Float, 8, 16), nvf)
    outs = [c[1][0] for c in nvf.calls if c[0] == "add_output"]
    assert len(outs) == 3 and outs[1].startswith("var_mean") and outs[1].endswith(".1")
    bcast = [c for c in nvf.calls if c[0] == "broadcast_in_dim"]
    assert bcast[0][2] == {"shape": [8, 16], "broadcast_dims": [0]}


# ---- timing helpers ------------------------------------------------------------------------------------

def test_input_sets_needed():
    l2 = 50 << 20
    assert input_sets_needed(300 << 20, l2) == 2  # five L2s: one set still left lines for the next call
    assert input_sets_needed(200 << 20, l2) == 2
    assert input_sets_needed(128 << 20, l2) == 2  # 2.5 L2s: one set left lines for the next call
    assert input_sets_needed(64 << 20, l2) == 4
    assert input_sets_needed(1 << 20, l2) == 8
    assert input_sets_needed(0, l2) == 1


def test_time_calls_on_cpu_rotates_sets():
    seen = []
    r = time_calls(lambda s: seen.append(s), ["a", "b", "c"], device="cpu", warmup=2, target_ms=1.0,
                   min_reps=6, max_reps=6)
    assert r["reps"] == 6 and r["sets"] == 3 and r["median_ms"] >= 0
    assert seen[2:] == ["a", "b", "c", "a", "b", "c"]
