"""Vector loads of inputs that the reference reaches only in part: an input split by a
reshape before a per-head norm (the innermost D elements of its H*D axis are the
reference's whole innermost axis), and a cross entropy's logits that a take_along_axis
looks up while the reduction reads them element by element (the lookup reads global
memory, the reduction a vectorized cache)."""

import re

import torch

from engine import DataType, FusionDefinition, compile_fusion
from engine.analysis.vectorize import vectorization_factor
from engine.reference import evaluate
from engine.runtime.device import current
from engine.schedule.runtime_info import SchedulerRuntimeInfo


def _per_head_rms_norm(heads: int, d: int) -> FusionDefinition:
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.BFloat16)
        w = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.BFloat16)
        n = fd.ops.size(x, 0)
        h = fd.ops.cast(fd.ops.reshape(x, new_shape=[n, heads, d]), dtype=DataType.Float)
        ms = fd.ops.sum(fd.ops.mul(h, h), dims=[2], keepdim=True)
        y = fd.ops.mul(h, fd.ops.rsqrt(fd.ops.add(fd.ops.div(ms, float(d)), 1e-6)))
        wf = fd.ops.broadcast_in_dim(fd.ops.cast(w, dtype=DataType.Float), shape=[n, heads, d],
                                     broadcast_dims=[2])
        fd.add_output(fd.ops.cast(fd.ops.mul(y, wf), dtype=DataType.BFloat16))
    return fd


def _kernel_body(src: str) -> str:
    return src[src.index("__global__"):]


def test_an_input_split_by_a_reshape_continues_the_vector_region():
    fd = _per_head_rms_norm(4, 128)
    xs = [torch.randn(6, 512).bfloat16(), torch.randn(128).bfloat16()]
    fusion = fd.fusion
    red = next(e for e in fusion.exprs() if type(e).__name__ == "ReductionOp")
    ref = red.inputs[0]
    info = SchedulerRuntimeInfo(fusion, xs, current())
    res = vectorization_factor(fusion, ref, info, break_point=len(ref.domain.logical) - 1)
    x = fusion.inputs[0]
    assert x not in res.apart
    assert res.per_tensor[x.short_name] == 8
    assert any("128 elements of" in line and "continue the region" in line for line in res.derivation)


def test_a_per_head_norm_loads_its_input_in_vectors():
    fd = _per_head_rms_norm(4, 128)
    xs = [torch.randn(6, 512).bfloat16(), torch.randn(128).bfloat16()]
    cf = compile_fusion(fd, xs)
    (seg,) = [s for s in cf.segments if s.is_kernel]
    x = seg.fusion.inputs[0].short_name
    assert re.search(rf"load\w*<__bfloat, 8>\(&T\d+\[0\], &{x}\[", _kernel_body(seg.cuda_source))
    for out, want in zip(cf.run(xs, backend="emulate"), evaluate(fd.fusion, xs), strict=True):
        torch.testing.assert_close(out.float(), want.float(), rtol=1e-2, atol=1e-2)


def _cross_entropy() -> FusionDefinition:
    """Llama 3's loss as Thunder traces it: log-softmax, the label's entry looked up in it."""
    with FusionDefinition() as fd:
        logits = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.BFloat16)
        labels = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Int)
        x = fd.ops.cast(logits, dtype=DataType.Float)
        shifted = fd.ops.sub(x, fd.ops.max(x, dims=[1], keepdim=True))
        logp = fd.ops.sub(shifted, fd.ops.log(fd.ops.sum(fd.ops.exp(shifted), dims=[1], keepdim=True)))
        idx = fd.ops.broadcast_in_dim(labels, shape=[fd.ops.size(logits, 0), 1], broadcast_dims=[0])
        fd.add_output(fd.ops.sum(fd.ops.neg(fd.ops.take_along_axis(logp, idx, dim=1)), dims=[0, 1]))
    return fd


def test_a_looked_up_input_is_still_read_in_vectors_by_its_reduction():
    # A vocabulary too wide for a persistent row: non-persistent reduction kernels.
    g = torch.Generator().manual_seed(0)
    xs = [torch.randn(3, 128256, generator=g).bfloat16(), torch.randint(0, 128256, (3,), generator=g)]
    fd = _cross_entropy()
    cf = compile_fusion(fd, xs)
    readers = [s for s in cf.segments if s.is_kernel and "T0" in s.inputs]
    assert {s.scheduler for s in readers} == {"reduction"}
    vector_reads = lookups = 0
    for seg in readers:
        body = _kernel_body(seg.cuda_source)
        vector_reads += len(re.findall(r"load\w*<__bfloat, 8>\(&T\d+\[0\], &T0\[", body))
        # Every element read of the logits is a vector; a scalar read is the label's lookup.
        for index in re.findall(r"[^&\w]T0\[([^;]*)\]", body):
            assert "(nvfuser_index_t)(" in index, (seg.id, index)
            lookups += 1
    assert vector_reads >= 2 and lookups >= 1
    (out,) = cf.run(xs, backend="emulate")
    torch.testing.assert_close(out, evaluate(fd.fusion, xs)[0], rtol=1e-5, atol=1e-3)


def test_a_rows_values_are_read_and_written_once_outside_the_reduction_loops():
    # The row's max (read by the sum's kernel, [N, 1]) and the label's logit minus it (an
    # output, [N, 1]) do not vary along the vocabulary: computed before or after its loops.
    g = torch.Generator().manual_seed(0)
    xs = [torch.randn(3, 128256, generator=g).bfloat16(), torch.randint(0, 128256, (3,), generator=g)]
    cf = compile_fusion(_cross_entropy(), xs)
    checked = 0
    for seg in (s for s in cf.segments if s.is_kernel):
        body = _kernel_body(seg.cuda_source)
        if "for (nvfuser_index_t" not in body:
            continue
        start = body.index("for (nvfuser_index_t")
        loops = body[start:re.search(r"blockAllReduce|gridReduce", body[start:]).start() + start]
        for t in seg.fusion.inputs + seg.fusion.outputs:
            if t.ndim == 2 and t.domain.logical[-1].is_broadcast:
                assert not re.search(rf"[^&\w]{t.short_name}\[", loops), (seg.id, t.short_name)
                checked += 1
    assert checked >= 2
