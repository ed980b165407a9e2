"""A persistent row kept in half or bfloat16 and read in several passes (softmax's max, then
its exp-sum): each read converts on its own where the converted row would not fit the
registers beside the narrow one (op_values._converted_apart), so the compiler cannot keep
the converted copy alive across the block reduction between the passes."""

import pytest
import torch

from engine import DataType, FusionDefinition
from engine.codegen import ops_table
from engine.compile import compile_fusion
from engine.reference import evaluate
from tests.emulation import needs_gxx


def log_sum_exp(dt: DataType) -> FusionDefinition:
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=dt)
        xf = fd.ops.cast(x, DataType.Float)
        m = fd.ops.max(xf, dims=[1], keepdim=True)
        s = fd.ops.sum(fd.ops.exp(fd.ops.sub(xf, m)), dims=[1], keepdim=True)
        fd.add_output(fd.ops.add(fd.ops.log(s), m))
    return fd


def _kernel(fd: FusionDefinition, xs: list) -> str:
    cf = compile_fusion(fd, xs)
    (seg,) = [s for s in cf.segments if s.is_kernel]
    assert seg.scheduler == "inner_persistent" and not seg.params.smem_persistent_buffers
    return seg.cuda_source[seg.cuda_source.rindex("__global__"):]


@pytest.mark.parametrize("dt, tdt, fn", [(DataType.BFloat16, torch.bfloat16, "fsBfloatToFloatEach"),
                                         (DataType.Half, torch.float16, "fsHalfToFloatEach")])
def test_a_wide_narrow_row_is_converted_at_each_read(dt: DataType, tdt: torch.dtype, fn: str):
    # A vocabulary-wide row: 64 elements a thread of 501 threads, 32 registers narrow, 96
    # with the converted copy beside it, of the 128 a block of 512 threads allows.
    body = _kernel(log_sum_exp(dt), [torch.empty(4096, 32064, dtype=tdt, device="meta")])
    assert body.count(f"{fn}(") == 2
    # A narrow row converts as any cast does: the compiler may share the conversion.
    body = _kernel(log_sum_exp(dt), [torch.empty(4096, 1024, dtype=tdt, device="meta")])
    assert fn not in body


def test_the_conversion_of_each_read_is_the_cast():
    for dt in (DataType.BFloat16, DataType.Half):
        each = ops_table.cast("x", dt, DataType.Float, each=True)
        assert each != ops_table.cast("x", dt, DataType.Float) and each.endswith("(x)")
    # Other types have one conversion.
    assert ops_table.cast("x", DataType.Float8_e4m3fn, DataType.Float, each=True) == \
        ops_table.cast("x", DataType.Float8_e4m3fn, DataType.Float)


@needs_gxx
def test_values_of_a_row_converted_at_each_read():
    fd = log_sum_exp(DataType.BFloat16)
    x = torch.randn(160, 32064, generator=torch.Generator().manual_seed(0)).bfloat16()
    cf = compile_fusion(fd, [x])
    src = cf.segments[0].cuda_source
    assert "fsBfloatToFloatEach(" in src[src.rindex("__global__"):]
    (out,), (ref,) = cf.run([x], backend="emulate"), evaluate(fd.fusion, [x])
    torch.testing.assert_close(out, ref, rtol=1e-5, atol=1e-5)
