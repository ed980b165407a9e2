"""One writer per element of a global output (engine.lower.predicates
.redundant_write_predicates): an output whose loops bind no launched block dimension has the
same address in every block along it, and only block 0 of that dimension writes it."""

from __future__ import annotations

import torch

from engine import DataType, FusionDefinition
from engine.compile import compile_fusion
from engine.config import Options
from engine.reference import evaluate
from tests.emulation import needs_gxx


def _iota_beside_rows(fd: FusionDefinition, m: int, n: int) -> None:
    # As iota_runtime_start_step: an [N] iota output, and x * iota + iota over [M, N] rows.
    x = fd.define_tensor(shape=[m, n], contiguity=[True, True], dtype=DataType.Float)
    start = fd.define_scalar(None, dtype=DataType.Int)
    idx = fd.ops.iota(fd.ops.size(x, 1), start, fd.define_scalar(3, dtype=DataType.Int), dtype=DataType.Int)
    fd.add_output(fd.ops.add(fd.ops.mul(x, fd.ops.broadcast_in_dim(fd.ops.cast(idx, DataType.Float), [m, n], [1])),
                             fd.ops.broadcast_in_dim(idx, [m, n], [1])))
    fd.add_output(idx)


@needs_gxx
def test_an_output_no_loop_of_which_binds_blockidx_y_is_written_by_row_block_zero():
    m, n = 48, 512
    with FusionDefinition() as fd:
        _iota_beside_rows(fd, m, n)
    xs = [torch.randn(m, n), 7]
    cf = compile_fusion(fd, xs, Options(device_model="H200"))
    (seg,) = [s for s in cf.segments if s.is_kernel]
    assert "GridDim.y = 48" in str(seg.launch)
    (iota_out,) = [name for name in seg.outputs if name != seg.outputs[0]]
    body = seg.cuda_source[seg.cuda_source.index("__global__"):]
    guard = body.index("if (blockIdx.y == 0) {")
    write = body.index(f"&{iota_out}[")
    # The [N] output's write is the guarded statement; the [M, N] rows are written by all.
    assert guard < write and body.count("blockIdx.y == 0") == 1
    for o, r in zip(cf.run(xs, backend="emulate"), evaluate(fd.fusion, xs)):
        torch.testing.assert_close(o, r)
