"""The emulate back end: hand-written CUDA kernels (conftest.py) compiled with g++ and run on CPU
tensors, compared with torch."""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

import pytest
import torch

from engine.errors import CompileError, ExecutionError
from engine.runtime.abi import LaunchConfig, ScalarArg, TensorArg
from engine.runtime.emulate import EmulatedKernel, make_shim
from tests.emulation import needs_gxx

pytestmark = needs_gxx


def T(name: str, ctype: str, ndims: int, alloc: int | None = None) -> TensorArg:  # noqa: N802
    return TensorArg(name, ctype, ndims, ndims if alloc is None else alloc)


SPECS = {
    "index2d": [T("T0", "float", 2), T("T1", "double", 2), T("T2", "float", 0), ScalarArg("s0", "double"),
                ScalarArg("s1", "float"), ScalarArg("s2", "int64_t"), ScalarArg("s3", "int"),
                ScalarArg("s4", "bool")],
    "index3d": [T("T0", "int", 1), T("T1", "int", 1)],
    "reverse": [T("T0", "float", 1), T("T1", "float", 1)],
    "warp_reduce": [T("T0", "float", 2), T("T1", "float", 1), T("T2", "double", 1), T("T3", "long long", 1)],
    "warp_misc": [T("T0", "int", 1), T("T1", "int", 1), T("T2", "int", 1), T("T3", "unsigned int", 1)],
    "last_block": [T("T0", "float", 1), T("partial", "float", 1), T("counter", "unsigned int", 0),
                   T("T1", "float", 1), T("T2", "double", 1), T("T3", "int", 1),
                   T("T4", "unsigned long long", 1)],
    "dyn_smem": [T("T0", "float", 1), T("T1", "float", 1)],
    "deadlock": [T("T0", "float", 1)],
    "warp_deadlock": [T("T0", "float", 1)],
    "trap": [T("T0", "float", 1)],
    "fault": [T("T0", "int", 1), ScalarArg("mode", "int")],
    "syntax_error": [T("T0", "float", 1)],
}


def line_of(source: str, needle: str) -> int:
    return next(i for i, ln in enumerate(source.splitlines(), start=1) if needle in ln)


@pytest.fixture(scope="module")
def kernel(cuda_kernels: dict[str, str]):
    """kernel(name) -> EmulatedKernel; all are compiled once per module, in parallel (a cold
    cache costs one g++ run per kernel)."""
    names = [n for n in SPECS if n != "syntax_error"]
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        built = dict(zip(names, pool.map(lambda n: EmulatedKernel(cuda_kernels[n], n, SPECS[n]), names)))
    return built.__getitem__


def test_2d_grid_strided_tensors_and_scalars(kernel) -> None:
    k = kernel("index2d")
    h, w = 37, 50
    base = torch.randn(w, h)
    x = base.t()  # non-contiguous: strides (1, h)
    out_storage = torch.zeros(w, h, dtype=torch.float64)
    out = out_storage.t()
    scale = torch.tensor(0.5)
    launch = LaunchConfig(grid=((w + 15) // 16, (h + 7) // 8, 1), block=(16, 8, 1))
    k.launch([x, out, scale, 2.0, 0.25, 3, 4, True], launch)
    expected = -(x.double() * 2.0 + 0.25 + 7 * 0.5)
    torch.testing.assert_close(out, expected)
    assert k.stats.blocks == 4 * 5 and k.stats.threads == 20 * 128
    assert k.stats.barriers == 0


def test_alloc_strides_override_the_tensors_own(kernel) -> None:
    # The kernel indexes with the strides it is given: here those of a transposed allocation.
    k = kernel("index2d")
    x = torch.arange(12.0).reshape(3, 4)
    out = torch.zeros(3, 4, dtype=torch.float64)
    launch = LaunchConfig(grid=(1, 1, 1), block=(4, 3, 1))
    k.launch([x, out, torch.tensor(0.0), 1.0, 0.0, 0, 0, False], launch, alloc_strides={"T1": [1, 3]})
    assert torch.equal(out.flatten(), x.t().reshape(-1).double())


def test_3d_grid_block_and_block_votes(kernel) -> None:
    k = kernel("index3d")
    grid, block = (3, 2, 2), (8, 4, 2)
    n = 64 * 12
    ids, votes = torch.empty(n, dtype=torch.int32), torch.empty(n, dtype=torch.int32)
    k.launch([ids, votes], LaunchConfig(grid=grid, block=block))
    expected = [
        ((((bz * 16 + by) * 16 + bx) * 16 + tz) * 16 + ty) * 16 + tx
        for bz in range(2) for by in range(2) for bx in range(3)
        for tz in range(2) for ty in range(4) for tx in range(8)
    ]
    assert ids.tolist() == expected
    warp_sums = [sum(range(32)), sum(range(32, 64))]
    assert votes.tolist() == [32 * 1000000 + 100000 + warp_sums[t // 32] for t in range(64)] * 12
    assert k.stats.barriers == 3 * 12 and k.stats.warp_syncs == 2 * 12


def test_syncthreads_block_reversal(kernel) -> None:
    k = kernel("reverse")
    blocks, n = 6, 256
    x = torch.randn(blocks * n)
    out = torch.empty_like(x)
    k.launch([x, out], LaunchConfig(grid=(blocks, 1, 1), block=(n, 1, 1)))
    rev = x.view(blocks, n).flip(1) * 2
    expected = rev + rev.roll(-1, dims=1)
    torch.testing.assert_close(out.view(blocks, n), expected)
    assert k.stats.barriers == 3 * blocks
    assert k.stats.threads == blocks * n


def test_warp_shuffle_reductions_across_warps(kernel) -> None:
    k = kernel("warp_reduce")
    rows, cols = 5, 1000
    x = torch.randn(rows, cols)
    f, d, i = torch.empty(rows), torch.empty(rows, dtype=torch.float64), torch.empty(rows, dtype=torch.int64)
    for threads in (256, 96):  # 8 warps, and 3 warps (fewer partial sums than lanes)
        k.launch([x, f, d, i], LaunchConfig(grid=(rows, 1, 1), block=(threads, 1, 1)))
        torch.testing.assert_close(f, x.sum(1), rtol=1e-5, atol=1e-4)
        torch.testing.assert_close(d, x.sum(1).double(), rtol=1e-5, atol=1e-4)
        assert i.tolist() == [threads * (threads + 1) // 2] * rows
    # Each warp: 3 types x 5 shuffle steps; then warp 0 another 15.
    assert k.stats.warp_syncs == rows * (3 * 15 + 15)


def test_ucontext_fallback_runs_the_same_kernel(cuda_kernels) -> None:
    # Where the hand-written x86-64 switch is unavailable, glibc's swapcontext runs the fibers.
    k = EmulatedKernel(cuda_kernels["warp_reduce"], "warp_reduce", SPECS["warp_reduce"],
                       extra_flags=("-DFS_EMU_USE_UCONTEXT",))
    x = torch.randn(3, 300)
    f, d, i = torch.empty(3), torch.empty(3, dtype=torch.float64), torch.empty(3, dtype=torch.int64)
    k.launch([x, f, d, i], LaunchConfig(grid=(3, 1, 1), block=(128, 1, 1)))
    torch.testing.assert_close(f, x.sum(1), rtol=1e-5, atol=1e-4)
    assert i.tolist() == [128 * 129 // 2] * 3


def test_warp_scan_broadcast_votes(kernel) -> None:
    k = kernel("warp_misc")
    g = torch.Generator().manual_seed(0)
    x = torch.randint(-20, 100, (4 * 64,), generator=g, dtype=torch.int32)
    scan, info = torch.empty_like(x), torch.empty_like(x)
    xor = torch.empty(x.shape, dtype=torch.int32)  # unsigned int, read back as int32 bits
    k.launch([x, scan, info, xor], LaunchConfig(grid=(4, 1, 1), block=(64, 1, 1)))
    w = x.view(-1, 32)
    assert torch.equal(scan.view(-1, 32), w.cumsum(1).int())
    total = w.sum(1, keepdim=True)
    positive = (w > 0).sum(1, keepdim=True)
    any_big = (w > 90).any(1, keepdim=True).int()
    all_pos = (w > 0).all(1, keepdim=True).int()
    assert torch.equal(info.view(-1, 32), (total * 1000 + positive * 10 + any_big * 2 + all_pos).expand(-1, 32))
    pairs = w.view(-1, 16, 2)
    assert torch.equal(xor.view(-1, 16, 2), (pairs ^ pairs.flip(2)).int())


def test_atomics_and_last_block_done_counter(kernel) -> None:
    k = kernel("last_block")
    n, threads = 1000, 128
    blocks = (n + threads - 1) // threads
    x = torch.randint(0, 50, (n,)).float()  # integers: sums are exact in any order
    partial = torch.zeros(blocks)
    counter = torch.zeros((), dtype=torch.int32)  # unsigned int, 4 bytes
    f = torch.zeros(2)
    d = torch.zeros(1, dtype=torch.float64)
    i = torch.tensor([-1, 0, 0, 0], dtype=torch.int32)
    u = torch.zeros(1, dtype=torch.int64)  # unsigned long long
    for _ in range(2):  # the last block resets the counter, so a second launch works too
        f.zero_()
        k.launch([x, partial, counter, f, d, i, u], LaunchConfig(grid=(blocks, 1, 1), block=(threads, 1, 1)))
        assert f[0].item() == x.sum().item()
        assert f[1].item() == x.sum().item()
        assert counter.item() == 0
    assert k.total_stats.launches >= 2 and k.stats.launches == 1
    assert d.item() == 2 * x.sum().item()
    assert i.tolist() == [int(x.max().item()), 2 * n, 100, 7]  # CAS: block 0 wins the first launch
    assert u.item() == 2 * (n * (n - 1) // 2)


def test_dynamic_shared_memory(kernel) -> None:
    k = kernel("dyn_smem")
    blocks, n = 3, 128
    x = torch.randn(blocks * n)
    out = torch.empty_like(x)
    k.launch([x, out], LaunchConfig(grid=(blocks, 1, 1), block=(n, 1, 1), shared_mem_bytes=2 * n * 4))
    expected = x.view(blocks, n).roll(-1, dims=1) + torch.arange(n - 1, -1, -1).float()
    torch.testing.assert_close(out.view(blocks, n), expected)


def test_dynamic_shared_memory_too_large_is_an_execution_error(kernel) -> None:
    k = kernel("dyn_smem")
    x = torch.zeros(32)
    with pytest.raises(ExecutionError, match="dyn_smem.*dynamic shared memory"):
        k.launch([x, x.clone()], LaunchConfig(grid=(1, 1, 1), block=(32, 1, 1), shared_mem_bytes=1 << 20))


def test_deadlock_is_an_execution_error(kernel, cuda_kernels) -> None:
    k = kernel("deadlock")
    with pytest.raises(ExecutionError) as e:
        k.launch([torch.zeros(64)], LaunchConfig(grid=(2, 1, 1), block=(64, 1, 1)))
    msg = str(e.value)
    line = line_of(cuda_kernels["deadlock"], "__syncthreads")
    assert "deadlock" in msg and "emulated kernel deadlock" in msg
    assert "32 wait at __syncthreads" in msg and f"line {line}" in msg and "32 have exited" in msg
    # The library stays usable after a failed launch.
    k2 = kernel("reverse")
    x = torch.arange(256.0)
    out = torch.empty_like(x)
    k2.launch([x, out], LaunchConfig(grid=(1, 1, 1), block=(256, 1, 1)))
    assert out[0].item() == 2 * (255 + 254)


def test_warp_barrier_deadlock(kernel, cuda_kernels) -> None:
    k = kernel("warp_deadlock")
    with pytest.raises(ExecutionError, match="wait at a warp barrier") as e:
        k.launch([torch.zeros(32)], LaunchConfig(grid=(1, 1, 1), block=(32, 1, 1)))
    assert f"line {line_of(cuda_kernels['warp_deadlock'], '__shfl_xor_sync')}" in str(e.value)


def test_failed_device_assert_is_an_execution_error(kernel) -> None:
    k = kernel("trap")
    x = torch.ones(256)
    k.launch([x], LaunchConfig(grid=(2, 1, 1), block=(128, 1, 1)))
    assert torch.equal(x, torch.full((256,), 2.0))
    x[200] = -1.0
    with pytest.raises(ExecutionError, match=r"block \(1,0,0\) thread \(72,0,0\): assertion"):
        k.launch([x], LaunchConfig(grid=(2, 1, 1), block=(128, 1, 1)))


@pytest.mark.parametrize("mode, message", [
    (0, r"SIGSEGV: invalid memory access at address 0x"),
    (1, r"stack overflow \(each thread has 64 KiB; set FUSESCOPE_EMU_STACK_KIB\)"),
    (2, r"SIGFPE \(integer division by zero"),
])
def test_faults_are_execution_errors_naming_the_thread(kernel, mode: int, message: str) -> None:
    k = kernel("fault")
    x = torch.arange(64, dtype=torch.int32)
    with pytest.raises(ExecutionError, match=r"emulated kernel fault .*block \(1,0,0\) thread \(5,0,0\): "
                       + message):
        k.launch([x, mode], LaunchConfig(grid=(2, 1, 1), block=(32, 1, 1)))
    k.launch([x, 3], LaunchConfig(grid=(2, 1, 1), block=(32, 1, 1)))  # and the library still works
    assert torch.equal(x, torch.arange(64, dtype=torch.int32))


def test_syntax_error_is_a_compile_error_with_the_line(cuda_kernels) -> None:
    src = cuda_kernels["syntax_error"]
    with pytest.raises(CompileError) as e:
        EmulatedKernel(src, "syntax_error", SPECS["syntax_error"])
    line = line_of(src, "T0.data[i] = 1.0f;")  # the statement after the missing ';'
    assert ("syntax_error.cu", line) in e.value.locations
    assert f">{line:5d} |   T0.data[i] = 1.0f;" in str(e.value)
    assert "error" in e.value.log


def test_abi_layout_mismatch_is_a_compile_error(cuda_kernels) -> None:
    # A Tensor with 32-bit sizes and strides: the shim's check of the ABI layout fails.
    src = cuda_kernels["reverse"].replace("long long logical_size", "int logical_size")
    src = src.replace("long long alloc_stride", "int alloc_stride")
    with pytest.raises(CompileError, match="must be laid out as the kernel ABI says"):
        EmulatedKernel(src, "reverse", SPECS["reverse"])


def test_argument_validation(kernel) -> None:
    k = kernel("reverse")
    launch = LaunchConfig(grid=(1, 1, 1), block=(256, 1, 1))
    x = torch.zeros(256)
    with pytest.raises(ValueError, match="takes 2 arguments, got 1"):
        k.launch([x], launch)
    with pytest.raises(TypeError, match="T1 is float .*float64"):
        k.launch([x, x.double()], launch)
    with pytest.raises(TypeError, match="T1 must be a tensor"):
        k.launch([x, 1.0], launch)
    with pytest.raises(ExecutionError, match="exceeds 1024 threads"):
        k.launch([x, x], LaunchConfig(grid=(1, 1, 1), block=(2048, 1, 1)))


def test_shim_unpacks_every_argument_in_order() -> None:
    shim = make_shim("k", [T("T0", "__half", 3, 2), ScalarArg("s", "double")])
    assert 'static_assert(sizeof(Tensor<__half, 3, 2>) == 48' in shim
    assert "std::memcpy(&a.a0, args[0], 48);" in shim and "std::memcpy(&a.a1, args[1], 8);" in shim
    assert "  k(a->a0, a->a1);" in shim
    with pytest.raises(ValueError):
        make_shim("not a name", [])
