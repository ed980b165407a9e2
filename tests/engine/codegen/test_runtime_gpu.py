"""The runtime headers and ops_table on a real GPU (NVRTC, PTX conversions, hardware warp
shuffles and atomics): the emulator tests' kernels and checks, run through the cuda back end.
Run on the device machine with `python -m pytest -m gpu tests/engine/codegen`."""

from __future__ import annotations

import pytest
import torch

from engine.runtime.executor import cuda_available

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not cuda_available(), reason="needs a CUDA GPU and cupy")]


class OnGpu:
    """A CudaKernel with the emulator's calling convention: CPU tensors in, written in place."""

    def __init__(self, kernel) -> None:
        self.kernel = kernel

    def launch(self, args, launch) -> None:
        dev = [a.cuda() if isinstance(a, torch.Tensor) else a for a in args]
        self.kernel.launch(dev, launch)
        torch.cuda.synchronize()
        for a, d in zip(args, dev):
            if isinstance(a, torch.Tensor):
                a.copy_(d.cpu())


def compile_gpu(kernels):
    from codegen_helpers import kernel_source

    from engine.runtime.executor import load_kernel

    return [OnGpu(load_kernel(kernel_source(body), name, specs, "cuda")) for body, name, specs in kernels]


@pytest.fixture(scope="module")
def kernels():
    import test_runtime_headers as t

    parts = {"conversions": t._conversion_kernel(), "block_reduce": t._block_kernel(),
             "grid_reduce": t._grid_kernel(), "nvfp4": t._nvfp4_kernel()}
    built = compile_gpu([(body, name, specs) for name, (body, specs) in parts.items()])
    return dict(zip(parts, built))


def test_conversions_gpu(kernels):
    import test_runtime_headers as t

    t.test_conversions_match_torch_bit_for_bit(kernels)


@pytest.mark.parametrize("block", [(96, 3, 1), (7, 5, 3), (32, 4, 2), (32, 1, 1), (64, 2, 2)])
def test_block_reduce_gpu(kernels, block):
    import test_runtime_headers as t

    t.test_block_all_reduce_and_welford(kernels, block)


@pytest.mark.parametrize("block", [(32, 3, 1), (48, 3, 1)])
def test_grid_reduce_gpu(kernels, block):
    import test_runtime_headers as t

    t.test_grid_reduce_and_welford_over_seven_blocks(kernels, block)


def test_nvfp4_gpu(kernels):
    import test_runtime_headers as t

    t.test_nvfp4_quantization_and_layouts_byte_for_byte(kernels)


@pytest.mark.parametrize("kind", ["unary", "binary", "ternary"])
def test_ops_gpu(kind):
    import test_ops_table as t

    global _ops_results
    if _ops_results is None:
        _ops_results = t.run_all(compile_gpu)
    t.test_every_op_matches_reference(_ops_results, kind)


_ops_results = None
