"""The cuda back end: NVRTC compile + disk cache, driver launch on torch tensors, faults, profiling.

Tests marked gpu need a CUDA GPU and cupy (run on the device machine with
`python -m pytest -m gpu tests/engine/runtime`); the others check what can be
checked without one.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

from engine.errors import CompileError, ExecutionError
from engine.runtime.abi import LaunchConfig, ScalarArg, TensorArg
from engine.runtime.executor import cuda_available, load_kernel
from engine.runtime.nvrtc import cache_dir, cache_key, error_lines, format_compile_error

REPO = Path(__file__).resolve().parents[3]

# A Tensor struct laid out as engine/runtime/abi.py packs it: pointer, N sizes, A strides.
PRELUDE = """\
typedef long long i64;  // NVRTC has no <cstdint>; a name of our own avoids clashing with one
template <typename T, int N, int A>
struct Tensor {
  T* data;
  i64 logical_size[N];
  i64 alloc_stride[A];
};
"""

# out = beta * a + (use_b ? alpha * b : 0), any strides; mixes scalar sizes (4, 8, 1, 8 bytes).
ADD_SOURCE = PRELUDE + """\
extern "C" __global__ void add2d(Tensor<float, 2, 2> a, Tensor<float, 2, 2> b,
                                 Tensor<float, 2, 2> out, float alpha, double beta,
                                 bool use_b, i64 n) {
  i64 idx = (i64)blockIdx.x * blockDim.x + threadIdx.x;
  if (idx >= n) return;
  i64 n1 = out.logical_size[1];
  i64 i = idx / n1, j = idx % n1;
  float va = a.data[i * a.alloc_stride[0] + j * a.alloc_stride[1]];
  float vb = b.data[i * b.alloc_stride[0] + j * b.alloc_stride[1]];
  out.data[i * out.alloc_stride[0] + j * out.alloc_stride[1]] =
      (float)beta * va + (use_b ? alpha * vb : 0.0f);
}
"""
ADD_SPECS = [
    TensorArg("T0", "float", 2, 2), TensorArg("T1", "float", 2, 2), TensorArg("T2", "float", 2, 2),
    ScalarArg("alpha", "float"), ScalarArg("beta", "double"), ScalarArg("use_b", "bool"),
    ScalarArg("n", "int64_t"),
]

COPY_SOURCE = PRELUDE + """\
extern "C" __global__ void copy1d(Tensor<float, 1, 1> in, Tensor<float, 1, 1> out) {
  i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < in.logical_size[0]) out.data[i] = in.data[i];
}
"""
COPY_SPECS = [TensorArg("T0", "float", 1, 1), TensorArg("T1", "float", 1, 1)]

gpu = pytest.mark.skipif(not cuda_available(), reason="needs a CUDA GPU and cupy")


def _grid(n: int, threads: int = 128) -> LaunchConfig:
    return LaunchConfig(grid=((n + threads - 1) // threads, 1, 1), block=(threads, 1, 1))


@pytest.fixture
def fresh_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("FUSESCOPE_CACHE", str(tmp_path))
    return tmp_path / "cubin"


# ---------------------------------------------------------------- without a GPU


def test_compile_error_message_quotes_numbered_lines():
    source = "int a;\nint b;\nint c = x;\nint d;\nint e;\n"
    log = ('fusion.cu(3): error: identifier "x" is undefined\n\n'
           "1 error detected in the compilation of \"fusion.cu\".\n")
    assert error_lines(log) == [3]
    msg = format_compile_error(source, log, "fusion.cu", "sm_90")
    assert "NVRTC failed to compile fusion.cu for sm_90" in msg
    assert 'identifier "x" is undefined' in msg
    assert "> 3 | int c = x;" in msg
    assert "  1 | int a;" in msg and "  5 | int e;" in msg


def test_compile_error_lines_catastrophic_and_repeats():
    log = ("k.cu(7): catastrophic error: cannot open source file \"nope.h\"\n"
           "k.cu(7): error: again\nk.cu(2): warning: unused\nk.cu(9): error: other\n")
    assert error_lines(log) == [7, 9]


def test_cache_key_depends_on_every_input():
    base = cache_key("src", "sm_90", ("-a",), (13, 0))
    assert base == cache_key("src", "sm_90", ("-a",), (13, 0))
    assert len({base, cache_key("src2", "sm_90", ("-a",), (13, 0)),
                cache_key("src", "sm_80", ("-a",), (13, 0)),
                cache_key("src", "sm_90", ("-b",), (13, 0)),
                cache_key("src", "sm_90", ("-a",), (12, 9))}) == 5


def test_cache_dir_follows_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("FUSESCOPE_CACHE", str(tmp_path))
    assert cache_dir() == tmp_path / "cubin"
    monkeypatch.delenv("FUSESCOPE_CACHE")
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    assert cache_dir() == Path.home() / ".cache" / "fusescope" / "cubin"


def test_unknown_backend_is_refused():
    with pytest.raises(ValueError, match="unknown kernel back end 'metal'"):
        load_kernel(ADD_SOURCE, "add2d", ADD_SPECS, "metal")


def test_import_engine_does_not_import_cupy():
    code = ("import sys, engine, engine.runtime.executor, engine.runtime.cuda, "
            "engine.runtime.profiler, engine.runtime.nvrtc; assert 'cupy' not in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=REPO)


def test_validate_args_names_kernel_and_argument():
    from engine.runtime.cuda import validate_args

    dev = torch.device("cuda", 0)
    a = torch.zeros(2, 2)
    with pytest.raises(ExecutionError, match=r"add2d takes 7 arguments \(T0, T1, T2, alpha"):
        validate_args("add2d", ADD_SPECS, [a], dev)
    with pytest.raises(ExecutionError, match="add2d: argument T0 is on cpu"):
        validate_args("add2d", ADD_SPECS, [a, a, a, 1.0, 1.0, True, 4], dev)
    with pytest.raises(ExecutionError, match=r"argument T1 \(Tensor<float, 2, 2>\) must be a tensor"):
        validate_args("add2d", ADD_SPECS, [a, 1.0, a, 1.0, 1.0, True, 4], torch.device("cpu"))
    with pytest.raises(ExecutionError, match="argument alpha .* must be a Python scalar"):
        validate_args("add2d", ADD_SPECS, [a, a, a, a, 1.0, True, 4], torch.device("cpu"))


# ---------------------------------------------------------------- on a GPU


@pytest.mark.gpu
@gpu
def test_pointwise_add_noncontiguous_with_scalars(fresh_cache):
    dev = torch.device("cuda")
    a = torch.randn(64, 96, device=dev).t()  # 96 x 64, strides (1, 96)
    b = torch.randn(64, device=dev).expand(96, 64)  # broadcast rows, strides (0, 1)
    out = torch.empty(96, 64 * 2, device=dev)[:, ::2]  # strided output, strides (128, 2)
    n = out.numel()
    kernel = load_kernel(ADD_SOURCE, "add2d", ADD_SPECS, "cuda")
    kernel.launch([a, b, out, 0.5, 2.0, True, n], _grid(n))
    torch.testing.assert_close(out, 2.0 * a + 0.5 * b)
    kernel.launch([a, b, out, 0.5, 3.0, False, n], _grid(n))
    torch.testing.assert_close(out, 3.0 * a)
    assert kernel.attributes.registers > 0
    assert kernel.attributes.local_bytes == 0
    occ = kernel.occupancy(_grid(n))
    assert occ.active_blocks_per_sm > 0 and 0 < occ.fraction <= 1


@pytest.mark.gpu
@gpu
def test_launch_argument_errors_name_the_argument(fresh_cache):
    kernel = load_kernel(COPY_SOURCE, "copy1d", COPY_SPECS, "cuda")
    x = torch.zeros(8, device="cuda")
    with pytest.raises(ExecutionError, match="copy1d takes 2 arguments"):
        kernel.launch([x], _grid(8))
    with pytest.raises(ExecutionError, match="argument T1 is on cpu"):
        kernel.launch([x, torch.zeros(8)], _grid(8))
    with pytest.raises(ExecutionError, match="T0: kernel expects 1 sizes"):
        kernel.launch([x.view(2, 4), x], _grid(8))


@pytest.mark.gpu
@gpu
def test_compile_error_names_the_line(fresh_cache):
    source = PRELUDE + 'extern "C" __global__ void bad(Tensor<float, 1, 1> t) {\n' \
        "  t.data[0] = undefined_thing;\n}\n"
    bad_line = source.splitlines().index("  t.data[0] = undefined_thing;") + 1
    with pytest.raises(CompileError) as info:
        load_kernel(source, "bad", [TensorArg("T0", "float", 1, 1)], "cuda")
    msg = str(info.value)
    assert "undefined_thing" in msg
    assert re.search(rf"^> +{bad_line} \|   t\.data\[0\] = undefined_thing;$", msg, re.MULTILINE), msg
    assert info.value.lines == [bad_line]
    assert not fresh_cache.exists() or not list(fresh_cache.glob("*.cubin"))


@pytest.mark.gpu
@gpu
def test_missing_kernel_name_is_a_compile_error(fresh_cache):
    with pytest.raises(CompileError, match="kernel nope is not in the compiled module"):
        load_kernel(COPY_SOURCE, "nope", COPY_SPECS, "cuda")


@pytest.mark.gpu
@gpu
def test_disk_cache_hit_on_second_load(fresh_cache):
    first = load_kernel(COPY_SOURCE, "copy1d", COPY_SPECS, "cuda")
    assert not first.cached and first.compile_time_s > 0
    assert first.binary.path is not None and first.binary.path.parent == fresh_cache
    assert [p.name for p in fresh_cache.glob("*.cubin")] == [f"{first.binary.key}.cubin"]
    second = load_kernel(COPY_SOURCE, "copy1d", COPY_SPECS, "cuda")
    assert second.cached and second.binary.key == first.binary.key
    assert second.binary.cubin == first.binary.cubin
    assert second.compile_time_s < first.compile_time_s
    x = torch.arange(1000, dtype=torch.float32, device="cuda")
    y = torch.empty_like(x)
    second.launch([x, y], _grid(1000))
    torch.testing.assert_close(y, x)


@pytest.mark.gpu
@gpu
def test_damaged_cache_entry_is_recompiled(fresh_cache):
    first = load_kernel(COPY_SOURCE, "copy1d", COPY_SPECS, "cuda")
    first.binary.path.write_bytes(b"not a cubin")
    again = load_kernel(COPY_SOURCE, "copy1d", COPY_SPECS, "cuda")
    assert not again.cached
    assert first.binary.path.read_bytes() == first.binary.cubin


OOB_SCRIPT = textwrap.dedent("""
    import sys, torch
    from engine.errors import ExecutionError
    from engine.runtime.abi import LaunchConfig, TensorArg
    from engine.runtime.cuda import CudaKernel
    source = sys.argv[1]
    k = CudaKernel(source, "oob_write", [TensorArg("T0", "float", 1, 1)])
    t = torch.zeros(16, device="cuda")
    try:
        k.launch([t], LaunchConfig(grid=(1, 1, 1), block=(32, 1, 1)))
    except ExecutionError as e:
        print("EXECUTION_ERROR:", e)
        sys.exit(0)
    print("no error raised")
    sys.exit(1)
""")


@pytest.mark.gpu
@gpu
def test_out_of_bounds_write_is_an_execution_error(fresh_cache):
    # Far past the 64-byte allocation (1 TiB), where no memory is mapped, so the
    # write faults instead of landing in a neighbour. In a subprocess: the fault
    # is sticky and would poison this process's CUDA context.
    source = PRELUDE + """\
extern "C" __global__ void oob_write(Tensor<float, 1, 1> t) {
  t.data[threadIdx.x + ((i64)1 << 38)] = 1.0f;
}
"""
    env = dict(os.environ, PYTHONPATH=str(REPO))
    proc = subprocess.run([sys.executable, "-c", OOB_SCRIPT, source], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "EXECUTION_ERROR: kernel oob_write failed while running" in proc.stdout
    assert "poisoned the CUDA context" in proc.stdout


@pytest.mark.gpu
@gpu
def test_profiler_numbers_are_consistent(fresh_cache):
    from engine.runtime.profiler import profile_kernel, tensor_bytes

    n = 1 << 24
    x = torch.randn(n, device="cuda")
    y = torch.empty_like(x)
    kernel = load_kernel(COPY_SOURCE, "copy1d", COPY_SPECS, "cuda")
    launch = _grid(n, 256)
    prof = profile_kernel(kernel, [x, y], launch, warmup=2, repeat=10,
                          bytes_read=tensor_bytes(x), bytes_written=tensor_bytes(y))
    torch.testing.assert_close(y, x)
    assert prof.bytes_read == prof.bytes_written == 4 * n
    assert 0 < prof.time_ms_min <= prof.time_ms <= prof.time_ms_max
    assert prof.gbps == pytest.approx(8 * n / (prof.time_ms * 1e-3) / 1e9)
    assert 0 < prof.peak_fraction < 1.5  # 134 MB does not fit in L2, so DRAM bounds it
    assert prof.peak_bandwidth_gbps > 1000
    assert prof.registers > 0 and prof.local_bytes == 0
    assert 0 < prof.occupancy <= 1 and prof.active_blocks_per_sm > 0
    assert prof.blocks == launch.grid[0] and prof.threads == launch.grid[0] * 256
    assert prof.compile_time_s is not None and prof.compile_cached is False
    text = str(prof)
    assert text.startswith("copy1d [cuda]") and "GB/s" in text and "% of peak" in text


@pytest.mark.gpu
@gpu
def test_large_dynamic_shared_memory_is_allowed(fresh_cache):
    source = PRELUDE + """\
extern "C" __global__ void smem_copy(Tensor<float, 1, 1> in, Tensor<float, 1, 1> out) {
  extern __shared__ float buf[];
  i64 n = in.logical_size[0];
  for (i64 i = threadIdx.x; i < n; i += blockDim.x) buf[i] = in.data[i];
  __syncthreads();
  for (i64 i = threadIdx.x; i < n; i += blockDim.x) out.data[n - 1 - i] = buf[i];
}
"""
    n = 24 * 1024  # 96 KiB of floats: over the 48 KiB default
    kernel = load_kernel(source, "smem_copy", COPY_SPECS, "cuda")
    x = torch.randn(n, device="cuda")
    y = torch.empty_like(x)
    launch = LaunchConfig(grid=(1, 1, 1), block=(256, 1, 1), shared_mem_bytes=4 * n)
    kernel.launch([x, y], launch)
    torch.testing.assert_close(y, x.flip(0))
    assert kernel.occupancy(launch).active_blocks_per_sm >= 1
