# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on nvFuser's pytest files for the direct bindings
# (tests/python/direct/test_python_frontend.py), pasted whole into an issue: no fusion at
# the top level, only test functions taking the `nvfuser_direct_test` fixture. The first
# that builds a fusion (an inputs list, a nested fusion_func, the with block and
# fd.execute) is read as the script; its slice to zero width is dead code next to the
# output, and the second test is skipped unread.
import pytest
import torch
from nvfuser_direct import FusionDefinition, DataType


def test_slice_zero(nvfuser_direct_test):
    inputs = [torch.randn(6, 10, device="cuda"), torch.randn(10, device="cuda")]

    def fusion_func(fd: FusionDefinition) -> None:
        T0 = fd.from_pytorch(inputs[0])
        T1 = fd.from_pytorch(inputs[1])
        T2 = fd.ops.slice(T0, start_indices=[0, 3], end_indices=[6, 3], strides=[1, 1])
        T3 = fd.ops.broadcast_in_dim(T1, shape=[6, 10], broadcast_dims=[1])
        T4 = fd.ops.mul(T0, T3)
        fd.add_output(T2)
        fd.add_output(T4)

    with FusionDefinition() as fd:
        fusion_func(fd)
    nvf_out = fd.execute(inputs)
    assert nvf_out[0].shape == (6, 0)
    nvfuser_direct_test.assertEqual(nvf_out[1], inputs[0] * inputs[1])


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_cast_roundtrip(nvfuser_direct_test, dtype):
    inputs = [torch.randn(4, 4, device="cuda", dtype=dtype)]

    def fusion_func(fd: FusionDefinition) -> None:
        T0 = fd.from_pytorch(inputs[0])
        fd.add_output(fd.ops.cast(fd.ops.cast(T0, DataType.Float), DataType.Half))

    nvf_out, _ = nvfuser_direct_test.exec_nvfuser(fusion_func, inputs)
